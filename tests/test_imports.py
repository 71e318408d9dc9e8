"""Imports on demand (issue #13 item 2): ``import ppd_core``, ``python -m ppd_core run ... --json`` and the other
paths that only need a summary load no library they do not use. Run in fresh subprocesses; what is checked is
sys.modules, not time."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "pyarrow", "scipy", "dask", "distributed", "plotly", "streamlit", "simpy", "kaleido")
# run a snippet, then print the top-level names of every imported module as JSON on the last line
WRAP = ("import json, sys\n{body}\n"
        "print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))")


def _cli(*argv: str) -> str:
    """A snippet running ``python -m ppd_core ARGV`` in-process (so sys.modules is the command's own)."""
    return ("import runpy\n"
            f"sys.argv = ['ppd_core', {', '.join(repr(a) for a in argv)}]\n"
            "try:\n    runpy.run_module('ppd_core', run_name='__main__', alter_sys=True)\nexcept SystemExit as e:\n"
            "    assert not e.code, e.code")


TRACE = str(ROOT / "data" / "traces" / "example_mooncake.jsonl")
# (id, snippet, what its stdout must show: a function of the stdout that raises if the command did not run)
CASES = {
    "import": ("import ppd_core", None),
    "run-json": (_cli("run", "conversations=50", "--json"),
                 lambda out: json.loads(out)["groups"]["all"]["count"] > 0),
    "run-text": (_cli("run", "conversations=30", "layout=2P_2D", "policy=dynamic"),
                 lambda out: "TTFT mean" in out and "SLO attainment" in out),
    "run-baselines-json": (_cli("run", "conversations=20", "--baselines", "--json"),
                           lambda out: set(json.loads(out)["systems"]) == {"PPD", "PD", "Replica"}),
    "run-trace-json": (_cli("run", "--trace", TRACE, "--json"),
                       lambda out: json.loads(out)["scenario"]["workload"] == "trace"),
    "library-summary": ("import ppd_core\n"
                        "r = ppd_core.run(ppd_core.Scenario(conversations=20, layout='2P_2D', policy='dynamic'))\n"
                        "print(json.dumps(r.summary['groups']['turn2plus']))",
                        lambda out: json.loads(out)["count"] > 0),
    "bench-json": (_cli("bench", "--repeat", "1", "--json"),
                   lambda out: [r["layout"] for r in json.loads(out)["rows"]] == ["2P_2D", "2P_2pD"]),
}


def _modules(body: str) -> tuple[set[str], str]:
    out = subprocess.run([sys.executable, "-c", WRAP.format(body=body)], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()
    return set(json.loads(out[-1])), "\n".join(out[:-1])


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_no_heavy_library_is_imported(case):
    body, ran = CASES[case]
    mods, stdout = _modules(body)
    assert "ppd_core" in mods
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))
    if ran is not None:        # the command really ran and printed what it should
        assert ran(stdout), stdout[-500:]


def test_records_still_a_dataframe_when_asked():
    mods, _ = _modules("import ppd_core\nr = ppd_core.run(ppd_core.Scenario(conversations=5))\n"
                       "assert type(r.records).__name__ == 'DataFrame' and len(r.records) == len(r.records)")
    assert "pandas" in mods       # reading res.records imports pandas, and only then


def test_the_check_sees_a_heavy_import():
    """The detector itself: a snippet that imports pandas is seen doing so (else the tests above prove nothing)."""
    mods, _ = _modules("import ppd_core\nimport pandas")
    assert "pandas" in mods
