"""The compiled engine (mypyc build of ppd_core/config/accel.py's modules) is built by the setup, is used only
when it matches the sources, and gives byte-identical outputs: every golden output of tests/golden (the CLI's
run, sweep, advise, paper and validate cases) recomputed in a process that runs the compiled modules, and a
run through the worker pool (results and errors cross the process boundary)."""
from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ppd_core.config import accel

ROOT = Path(__file__).resolve().parents[1]


def test_setup_built_a_current_compiled_engine():
    problem = accel.build_problem()
    assert problem is None, f"{problem} (scripts/setup.sh builds it; it needs requirements-build.txt and gcc)"


def test_the_suite_itself_runs_the_pure_python_reference():
    assert os.environ.get(accel.ENV) == "0"
    assert accel.engine_build() == "python"


def test_decision_follows_the_variable_and_the_build(tmp_path):
    assert accel.decide("0") is False
    assert accel.decide("auto") is True and accel.decide(None) is True and accel.decide(" 1 ") is True
    with pytest.raises(accel.CompiledEngineError, match=r"^PPD_COMPILED='yes' is not allowed; use one of auto, 0, 1$"):
        accel.decide("yes")
    empty = tmp_path / "none"
    assert accel.decide("auto", empty) is False
    with pytest.raises(accel.CompiledEngineError, match="no compiled build"):
        accel.decide("1", empty)
    stale = tmp_path / "stale"
    shutil.copytree(accel.BUILD_DIR, stale)
    (stale / accel.DIGEST_FILE).write_text("0" * 64 + "\n")        # built from other sources
    assert accel.decide("auto", stale) is False                     # a stale build never runs
    with pytest.raises(accel.CompiledEngineError, match="stale"):
        accel.decide("1", stale)
    partial = tmp_path / "partial"
    shutil.copytree(accel.BUILD_DIR, partial)
    next(partial.rglob("node.*.so")).unlink()
    with pytest.raises(accel.CompiledEngineError, match=r"has no ppd_core/sim/node\."):
        accel.decide("1", partial)
    err = pickle.loads(pickle.dumps(accel.CompiledEngineError("x")))
    assert isinstance(err, accel.CompiledEngineError) and str(err) == "x"


def test_a_bad_variable_is_one_line_from_the_cli():
    env = {**os.environ, accel.ENV: "fast", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "ppd_core", "run", "conversations=2", "--json"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == "error: PPD_COMPILED='fast' is not allowed; use one of auto, 0, 1"


CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import importlib
from ppd_core.config import accel
loaded = {rel: importlib.import_module(rel[:-3].replace("/", ".")).__file__ for rel in accel.COMPILED}
import make_golden
texts = make_golden.compute_all()
import ppd_core
from ppd_core.analysis.pool import WorkerPool
from ppd_core.config.errors import PPDError
sc = ppd_core.parse("layout=2P_2pD&policy=dynamic&conversations=40")
too_big = sc.with_(model="Llama-3.1-70B", tp=1)      # refused by the run, in the worker
with WorkerPool(2) as pool:
    there = pool.result(pool.submit(ppd_core.run, sc)).summary
    try:
        pool.result(pool.submit(ppd_core.run, too_big))
        refused = None
    except PPDError as exc:
        refused = type(exc).__name__
here = ppd_core.run(sc).summary
strip = lambda s: {k: v for k, v in s.items() if k != "sim"}
print(json.dumps({"build": accel.engine_build(), "loaded": loaded, "texts": texts,
                  "pool_equal": strip(there) == strip(here), "refused": refused}))
"""


@pytest.mark.timeout(1200)
def test_compiled_engine_reproduces_every_golden_output_byte_for_byte():
    env = {**os.environ, accel.ENV: "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "tests" / "golden")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=1100)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["build"] == "compiled"
    interpreted = [rel for rel, f in out["loaded"].items() if f.endswith(".py")]
    assert not interpreted, f"ran as Python under PPD_COMPILED=1: {interpreted}"
    for name, text in out["texts"].items():
        want = (ROOT / "tests" / "golden" / name).read_text(encoding="utf-8")
        assert text == want, f"{name}: the compiled engine's output differs from the golden file"
    assert out["pool_equal"], "a run in a compiled worker process differs from the same run here"
    assert out["refused"] == "ScenarioError", "a model that does not fit ran in the worker"
