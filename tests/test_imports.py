"""Imports on demand (issue #13 item 2): ``import ppd_core``, ``python -m ppd_core run ... --json`` and the other
paths that only need a summary load no library they do not use. Run in fresh subprocesses; what is checked is
sys.modules, not time."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "pyarrow", "scipy", "dask", "distributed", "plotly", "streamlit", "simpy", "kaleido")
# ppd_core's own modules a plain run does not use: imported on first use (the packages' lazy re-exports, function-
# level imports), so `run --json` does not load them
NOT_FOR_A_RUN = ("ppd_core.model.microbench", "ppd_core.model.step", "ppd_core.model.interference",
                 "ppd_core.sim.decision_table", "ppd_core.workloads.trace_common")
# run a snippet, then print the name of every imported module as JSON on the last line
WRAP = ("import json, sys\n{body}\n"
        "print(json.dumps(sorted(sys.modules)))")


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


def _all_modules(body: str) -> tuple[set[str], str]:
    """Every module (dotted names) the snippet imported, and its stdout."""
    out = subprocess.run([sys.executable, "-c", WRAP.format(body=body)], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()
    return set(json.loads(out[-1])), "\n".join(out[:-1])


def _modules(body: str) -> tuple[set[str], str]:
    """The top-level names of the modules the snippet imported, and its stdout."""
    mods, stdout = _all_modules(body)
    return {m.split(".")[0] for m in mods}, stdout


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


def test_import_ppd_core_alone_loads_nothing_behind_the_front_door():
    """``import ppd_core`` runs no submodule but the lazy re-export helper: no numpy, no simulator."""
    mods, _ = _all_modules("import ppd_core")
    assert "numpy" not in mods
    assert {m for m in mods if m.startswith("ppd_core.")} <= {"ppd_core.config", "ppd_core.config.lazy"}


def test_run_json_loads_only_what_the_run_uses():
    mods, out = _all_modules(CASES["run-json"][0])
    assert CASES["run-json"][1](out)
    assert not mods & set(NOT_FOR_A_RUN), sorted(mods & set(NOT_FOR_A_RUN))


def test_lazy_reexports_resolve():
    """Every name the packages re-export on first use is there, ``ppd_core.model`` is the sub-package and an
    unknown name is an AttributeError."""
    _, out = _all_modules("import importlib\n"
                          "for p in ('ppd_core', 'ppd_core.model', 'ppd_core.sim', 'ppd_core.workloads', "
                          "'ppd_core.metrics'):\n"
                          "    pkg = importlib.import_module(p)\n"
                          "    assert pkg.__all__ and all(getattr(pkg, n) is not None for n in pkg.__all__), p\n"
                          "    assert set(pkg.__all__) <= set(dir(pkg)), p\n"
                          "    assert not hasattr(pkg, 'no_such_name'), p\n"
                          "import ppd_core\n"
                          "print(ppd_core.model.__name__, ppd_core.Scenario.__module__)")
    assert out.split() == ["ppd_core.model", "ppd_core.config.scenario"]


@pytest.mark.parametrize("user", [None, "2"])
def test_the_cli_imports_numpy_with_one_blas_thread_unless_told(user):
    """``python -m ppd_core`` sets OPENBLAS_NUM_THREADS=1 before numpy is imported (the OpenBLAS pool costs
    ~55 ms at start-up on 2 cores and no number needs it); a value the user set is kept. Linux: threads are
    counted in /proc/self/task."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if user is not None:
        env["OPENBLAS_NUM_THREADS"] = user
    code = ("import os, sys\n" + _cli("run", "conversations=5", "--json") +
            "\nprint(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True).stdout.splitlines()[-1]
    assert out.split()[0] == (user or "1")
    if user is None:
        assert out.split()[1] == "1", out           # the main thread only: no BLAS worker threads
