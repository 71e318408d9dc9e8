"""The documentation fits its readers (issue #30): a short README that points into a MkDocs site, the site
builds strictly (no broken link, no page left out of the navigation), and its generated reference pages
carry every scenario key and every command."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = Path(sys.executable).with_name("mkdocs")


def test_readme_is_short_and_has_the_two_commands_and_the_tour():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    assert "bash scripts/app.sh" in text and "bash scripts/test.sh" in text
    tour = re.findall(r"<(http://localhost:8501/\?[^>]+)>", text)
    assert len(tour) == 3
    from ppd_core.config.page_keys import parse_link
    from ui.presets import PRESETS
    for link in tour:                  # every tour link is a valid scenario and one of Explore's presets
        sc, ignored = parse_link(link)
        assert ignored == ["preset"]
        assert any(p.scenario() == sc for p in PRESETS), link


def test_readme_links_point_at_files_that_exist():
    text = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(((?:docs|data)/[^)#]+)\)", text):
        assert (ROOT / target).exists(), target


@pytest.mark.skipif(not MKDOCS.exists(), reason="mkdocs is not installed in this venv (requirements-dev.txt)")
def test_site_builds_strictly_with_generated_reference(tmp_path):
    r = subprocess.run([str(MKDOCS), "build", "--strict", "-q", "-d", str(tmp_path / "site")], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    keys = (ROOT / "docs" / "reference" / "scenario-keys.md").read_text()
    from ppd_core.config.fields import FIELDS
    for f in FIELDS:
        assert f"| `{f.key}` |" in keys, f.key
    cli = (ROOT / "docs" / "reference" / "cli-help.md").read_text()
    from ppd_core.cli import COMMANDS
    for name in COMMANDS:
        assert f"## `{name}`" in cli and f"usage: python -m ppd_core {name}" in cli
    # every page of docs/ is in the navigation (strict mode turns an omitted page into a failure too)
    assert (tmp_path / "site" / "fidelity" / "index.html").exists()
