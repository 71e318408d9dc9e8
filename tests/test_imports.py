"""Imports on demand (issue #13 item 2): ``import ppd_core`` and ``python -m ppd_core run ... --json`` load no
library they do not use. Run in fresh subprocesses; what is checked is sys.modules, not time."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "pyarrow", "scipy", "dask", "distributed", "plotly", "streamlit")
# run a snippet, then print the top-level names of every imported module as JSON on the last line
WRAP = ("import json, sys\n{body}\n"
        "print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))")
CLI = ("import runpy\nsys.argv = ['ppd_core', 'run', 'conversations=50', '--json']\n"
       "try:\n    runpy.run_module('ppd_core', run_name='__main__', alter_sys=True)\nexcept SystemExit as e:\n"
       "    assert not e.code, e.code")


def _modules(body: str) -> tuple[set[str], str]:
    out = subprocess.run([sys.executable, "-c", WRAP.format(body=body)], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()
    return set(json.loads(out[-1])), "\n".join(out[:-1])


@pytest.mark.parametrize("body", ["import ppd_core", CLI], ids=["import", "run-json"])
def test_no_heavy_library_is_imported(body):
    mods, stdout = _modules(body)
    assert "ppd_core" in mods
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))
    if body == CLI:       # the run really ran and printed its summary
        assert json.loads(stdout)["groups"]["all"]["count"] > 0


def test_records_still_a_dataframe_when_asked():
    mods, _ = _modules("import ppd_core\nr = ppd_core.run(ppd_core.Scenario(conversations=5))\n"
                       "assert type(r.records).__name__ == 'DataFrame' and len(r.records) == len(r.records)")
    assert "pandas" in mods       # reading res.records imports pandas, and only then
