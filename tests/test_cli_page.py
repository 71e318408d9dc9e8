"""CLI = page (issue #12 item 8): any page link runs, ``--baselines`` prints what Explore shows, ``--help``
lists every key, a closed pipe ends quietly."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import ppd_core
from ppd_core import SPEC, Scenario, baselines
from ppd_core.config.errors import ScenarioError
from ppd_core.config.page_keys import is_page_key, parse_link
from ppd_core.config.scenario import render_value

from helpers import strip_wall
from test_cli import ROOT, cli


def test_parse_link_drops_page_keys_and_keeps_the_scenario():
    sc, dropped = parse_link("http://localhost:8501/learn?conversations=4&learn_step=7&present=1&qps=2")
    assert sc == Scenario(conversations=4, qps=2)
    assert dropped == ["learn_step", "present"]
    with pytest.raises(ScenarioError, match="bogus"):
        parse_link("http://localhost:8501/?bogus=1")


def test_no_scenario_key_is_a_page_key():
    assert not [k for k in SPEC if is_page_key(k)]


def test_every_dashboard_page_control_is_a_page_key():
    """The page-only controls the dashboard defines (scanned in the page and ui sources) are all known to the
    CLI as page-only keys, so any page link runs."""
    import re
    keys = set()
    for path in list((ROOT / "pages").glob("*.py")) + list((ROOT / "ui").glob("*.py")):
        keys |= set(re.findall(r'Control\("([a-z_]+)"', path.read_text()))
    page_only = {k for k in keys if k not in SPEC}
    assert page_only and all(is_page_key(k) for k in page_only), page_only - {k for k in page_only if is_page_key(k)}


def test_run_accepts_a_learn_link_with_a_one_line_note():
    r = cli("run", "http://localhost:8501/learn?conversations=12&learn_step=3&learn_prefills=2", "--json")
    assert r.returncode == 0, r.stderr
    notes = [line for line in r.stderr.splitlines() if line.startswith("note:")]
    assert notes == ["note: page-only keys ignored: learn_step, learn_prefills"]
    lib = ppd_core.run(Scenario(conversations=12)).summary
    assert strip_wall(json.loads(r.stdout)) == strip_wall(json.loads(json.dumps(lib)))


def test_run_baselines_json_is_the_three_usual_run_objects():
    r = cli("run", "conversations=15", "layout=1P_3pD", "--baselines", "--json")
    assert r.returncode == 0, r.stderr
    systems = json.loads(r.stdout)["systems"]
    assert list(systems) == ["PPD", "PD", "Replica"]
    for name, sc in baselines(Scenario(conversations=15, layout="1P_3pD")).items():
        lib = ppd_core.run(sc).summary
        assert strip_wall(systems[name]) == strip_wall(json.loads(json.dumps(lib))), name
    assert systems["PD"]["scenario"]["layout"] == "1P_3D" and systems["Replica"]["scenario"]["layout"] == "4R"


def test_run_baselines_text_has_one_column_per_system():
    r = cli("run", "conversations=10", "--baselines")
    assert r.returncode == 0, r.stderr
    head = next(line for line in r.stdout.splitlines() if "PPD 2P_2pD" in line)
    assert head.split() == ["PPD", "2P_2pD", "PD", "2P_2D", "Replica", "4R"]
    ttft = next(line for line in r.stdout.splitlines() if line.startswith("Turn 2+ TTFT mean"))
    assert len(ttft.split()) == 5 + 3


def test_run_help_lists_every_key_with_default_and_range():
    out = cli("run", "--help").stdout
    for k, spec in SPEC.items():
        line = next((line for line in out.splitlines() if line.strip().startswith(f"{k} = ")), None)
        assert line is not None, k
        assert render_value(spec.default) in line and spec.allowed() in line, line


def test_a_closed_pipe_ends_quietly():
    p = subprocess.Popen([sys.executable, "-m", "ppd_core", "run", "conversations=30", "--baselines"], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()                    # the reader (`| head`) is gone before anything is written
    err = p.stderr.read().decode()
    p.wait(timeout=120)
    assert "Broken pipe" not in err and "Traceback" not in err, err
    assert p.returncode == 0
