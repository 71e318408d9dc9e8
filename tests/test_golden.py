"""Golden outputs: ``run --json`` of 50 scenarios, ``validate --json`` on a sample, ``paper --quick --json`` (a
subset), a small ``sweep`` and ``advise`` must stay byte-identical to tests/golden/*.json (recorded before the
layering refactor of issue 9). A change that moves numbers on purpose regenerates them in the same commit
(``.venv/bin/python tests/golden/make_golden.py``) and says why."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"
_spec = importlib.util.spec_from_file_location("make_golden", GOLDEN / "make_golden.py")
make_golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_golden)

pytestmark = pytest.mark.skipif(not make_golden.MEASURED.is_dir(), reason="measured data folder not present")


@pytest.fixture(scope="module")
def computed() -> dict[str, str]:
    return make_golden.compute_all()


@pytest.mark.parametrize("name", ["run.json", "validate.json", "paper.json", "sweep.json", "advise.json"])
def test_golden_identical(computed, name):
    want = (GOLDEN / name).read_text(encoding="utf-8")
    got = computed[name]
    if got != want:
        import difflib
        diff = "".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "golden", "now"))[:60])
        pytest.fail(f"{name} differs from the golden output:\n{diff}")
