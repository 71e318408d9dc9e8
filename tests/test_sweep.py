"""Sweep engine: grid expansion, tidy rows, determinism across workers/order, disk cache, CLI, Dask."""
from __future__ import annotations

import math
import shutil
import sys
import threading
import types
from pathlib import Path

import pandas as pd
import pytest
from helpers import check_invariants

from ppd_core import run
from ppd_core.analysis import cache as diskcache
from ppd_core.analysis import executors, grid as gridmod
from ppd_core.analysis.executors import SweepError
from ppd_core.analysis.grid import MAX_GRID, expand_grid, flatten, parse_sweep_args, query_strings
from ppd_core.analysis.sweep import run_grid
from ppd_core.cli import main
from ppd_core.config.errors import ScenarioError
from ppd_core.config.scenario import FIELDS, Scenario
from ppd_core.metrics.result import simulate_scenario
from ppd_core.workloads.traces import assign_arrivals, load_trace

ROOT = Path(__file__).resolve().parents[1]
TINY = {"workload": "small_tiny", "conversations": 6}
TRACE_CSV = (b"conversation,turn,arrival,input_tokens,output_tokens\n"
             b"a,1,,100,40\na,2,,20,30\nb,1,,60,20\nb,2,,10,50\nb,3,,30,10\nc,1,,300,5\n")
TRACE = load_trace(TRACE_CSV, name="tiny.csv")


def _check_trace_run(res):
    """Invariants of a trace run: the conversations are the trace with this scenario's arrivals."""
    sc = res.scenario
    check_invariants(res, trace=assign_arrivals(TRACE, sc.qps, sc.seed))


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a.drop(columns="sim.wall_s"), b.drop(columns="sim.wall_s"))


@pytest.fixture
def stable_code(monkeypatch):
    """Other people edit ppd_core while tests run: pin the on-disk code version to the loaded one."""
    monkeypatch.setattr(diskcache, "is_stale", lambda: False)


def _grid():
    return expand_grid(TINY, {"layout": ["2P_2D", "1P_1pD", "2R"], "policy": ["pd", "dynamic"], "qps": [1, 8]})


# ---- grids ---------------------------------------------------------------------------------------------

def test_expand_grid_order_dedupe_and_validation():
    g = expand_grid(Scenario(**TINY), {"layout": ["2P_2D", " 2P_2D ", "4R"],
                                       "qps": ["1", 2.0, 2]})
    # values go through the parser: "2P_2D" twice and 2.0 == "2" == 2 collapse
    assert [(s.layout, s.qps) for s in g] == [("2P_2D", 1.0), ("2P_2D", 2.0), ("4R", 1.0), ("4R", 2.0)]
    assert all(s.workload == "small_tiny" and s.conversations == 6 for s in g)
    with pytest.raises(ScenarioError) as e:
        expand_grid(TINY, {"qps": [1, -2]})
    assert e.value.key == "qps"
    with pytest.raises(ScenarioError) as e:
        expand_grid(TINY, {"layot": ["2P_2D"]})
    assert e.value.key == "layot"
    with pytest.raises(ScenarioError) as e:
        expand_grid({"turns": 1}, {"layout": ["2P_2D", "2P_2Q"]})
    assert e.value.key == "layout" and "2Q" in str(e.value)
    with pytest.raises(ScenarioError) as e:      # a cross-field cap names the grid point
        expand_grid({"conversations": 20_000}, {"qps": [1, 0.01]})
    assert "grid point qps=0.01" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ScenarioError) as e:
        expand_grid(TINY, {"qps": []})
    assert e.value.key == "qps"


def test_grid_cap_is_one_line_naming_the_cap():
    with pytest.raises(ScenarioError) as e:
        expand_grid(TINY, {"seed": range(MAX_GRID + 1)})
    assert "20,000" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ScenarioError, match="20,000"):
        run_grid([Scenario(**TINY)] * (MAX_GRID + 1), cache=False)


def test_paper_grid_is_3060_runs_in_the_benchmark_setting():
    axes = gridmod.paper_grid_axes()
    assert math.prod(len(v) for v in axes.values()) == 3060
    g = expand_grid(dict(gridmod.PAPER_BASE), axes)
    assert len(g) == 3060 and len(set(g)) == 3060
    s = g[0]
    assert (s.policy, s.arrival_window_s, s.client_concurrency, s.timeout_s) == ("pd", 10, 50, 120)
    assert query_strings(g[:40]) == [(x.to_query(include_defaults=True), x.to_query()) for x in g[:40]]


# ---- running -------------------------------------------------------------------------------------------

def test_rows_are_tidy_checked_and_match_single_runs():
    grid = _grid()
    df = run_grid(grid, cache=False, check=check_invariants)
    assert len(df) == len(grid)
    from ppd_core.config.scenario import OPTIONAL_KEYS
    for f in FIELDS:
        assert (f.key in df.columns) != (f.key in OPTIONAL_KEYS)     # optional keys: a column only when set
    for col in ("turn2plus.ttft_ms.mean", "turn1.tpot_ms.p99", "all.e2e_ms.p50", "slo_attainment.ttft_100ms",
                "slo_attainment.tpot_30ms", "kv.bytes", "local_share", "success_rate", "throughput.tokens_per_s",
                "sim.events", "sim.simulated_s", "query"):
        assert col in df.columns, col
    assert list(df["layout"]) == [s.layout for s in grid] and list(df["qps"]) == [s.qps for s in grid]
    assert (df["slo_ttft_ms"] == "100,200,500").all()
    for i in (0, 5, len(grid) - 1):
        want = flatten(run(grid[i]).summary)
        got = df.iloc[i]
        for k, v in want.items():
            if k != "sim.wall_s":
                assert (math.isnan(v) and math.isnan(got[k])) if isinstance(v, float) and math.isnan(v) \
                    else got[k] == v, k
        assert got["query"] == grid[i].to_query()
    assert df.attrs["simulated"] == len(grid) and df.attrs["cache_hits"] == 0


def test_results_do_not_depend_on_workers_or_order(monkeypatch):
    grid = _grid()
    serial = run_grid(grid, workers=1, cache=False)
    monkeypatch.setattr(executors, "SERIAL_MAX_REQUESTS", 0)       # force the process pool for a tiny grid
    seen = []
    pooled = run_grid(grid, workers=2, cache=False, check=check_invariants,
                      progress=lambda d, t: seen.append((d, t)))
    _same(serial, pooled)
    assert seen[0] == (0, len(grid)) and seen[-1] == (len(grid), len(grid))
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))
    backwards = run_grid(grid[::-1], workers=2, cache=False)
    _same(serial, backwards.iloc[::-1].reset_index(drop=True))


def _note_pid(folder, res) -> None:
    """A check that records which process ran the scenario (picklable: a module function in a partial)."""
    import os
    (Path(folder) / f"{os.getpid()}-{res.scenario.to_query()[:60].replace('/', '_')}").touch()


def test_the_calling_process_runs_chunks_beside_a_pool_only_when_asked(tmp_path):
    """parent_runs=True (a goodput search with its own pool): this process takes chunks from the same queue
    as the pool, every scenario runs once and the rows are those of a serial sweep. A given pool without it
    (the dashboard's: its calling thread is the server's) gets every chunk."""
    import functools
    import os
    from ppd_core.analysis.pool import WorkerPool
    grid = _grid()
    serial = run_grid(grid, workers=1, cache=False)
    with WorkerPool(1) as pool:
        for parent_runs, folder in ((True, tmp_path / "hybrid"), (None, tmp_path / "pooled")):
            folder.mkdir()
            df = run_grid(grid, pool=pool, parent_runs=parent_runs, cache=False,
                          check=functools.partial(_note_pid, folder))
            _same(serial, df)
            ran = [p.name.split("-", 1) for p in folder.iterdir()]
            assert len(ran) == len(grid), "every scenario ran exactly once"
            here = {int(pid) for pid, _ in ran} & {os.getpid()}
            assert bool(here) == bool(parent_runs), (parent_runs, ran)
            assert {int(pid) for pid, _ in ran} <= {os.getpid(), *pool.pids()}


def test_pool_workers_do_not_rerun_the_host_script(tmp_path, monkeypatch):
    """Under a threaded host (streamlit run app.py: __main__ is a path-only module) the pool is spawned via
    forkserver; its workers must not execute the host script again in bare mode."""
    marker = tmp_path / "ran"
    script = tmp_path / "host.py"
    script.write_text(f"open({str(marker)!r}, 'a').write('x')\n")
    host = types.ModuleType("__main__")
    host.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", host)
    monkeypatch.setattr(executors, "SERIAL_MAX_REQUESTS", 0)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)      # a second thread: no fork
    other.start()
    try:
        df = run_grid(_grid()[:4], workers=2, cache=False)
    finally:
        stop.set()
        other.join()
    assert len(df) == 4 and not marker.exists()
    assert sys.modules["__main__"] is host


def test_cache_hits_skip_simulation_and_keep_the_frame(tmp_path, monkeypatch, stable_code):
    grid = _grid()
    cold = run_grid(grid, cache_dir=tmp_path)
    assert cold.attrs["simulated"] == len(grid)

    def boom(*a, **k):
        raise AssertionError("a cached sweep must not simulate")
    monkeypatch.setattr(executors, "simulate_scenario", boom)
    warm = run_grid(grid, cache_dir=tmp_path)
    assert warm.attrs["cache_hits"] == len(grid) and warm.attrs["simulated"] == 0
    _same(cold, warm)
    pd.testing.assert_series_equal(cold["sim.wall_s"], warm["sim.wall_s"])   # the cache keeps the original
    assert list(warm.columns) == list(cold.columns)
    # a partly new grid simulates only the new scenarios (duplicates run once)
    monkeypatch.setattr(executors, "simulate_scenario", simulate_scenario)
    extra = grid[:2] + expand_grid(TINY, {"qps": [3]}) * 2
    mixed = run_grid(extra, cache_dir=tmp_path)
    assert mixed.attrs["cache_hits"] == 2 and mixed.attrs["simulated"] == 1
    _same(mixed.iloc[:2], cold.iloc[:2])
    _same(mixed.iloc[[2]].reset_index(drop=True), mixed.iloc[[3]].reset_index(drop=True))


def test_cache_compaction_keeps_every_row(tmp_path, monkeypatch, stable_code):
    monkeypatch.setattr(diskcache, "COMPACT_AFTER", 2)
    grid = expand_grid(TINY, {"seed": range(5)})
    for sc in grid:
        run_grid([sc], cache_dir=tmp_path)
    parts = list(tmp_path.glob("*/part-*.parquet"))
    assert len(parts) <= 3
    assert run_grid(grid, cache_dir=tmp_path).attrs["cache_hits"] == 5


def test_a_process_running_edited_code_bypasses_the_cache(tmp_path, monkeypatch):
    """Files edited after this process loaded ppd_core: results would belong to no version on disk."""
    monkeypatch.setattr(diskcache, "is_stale", lambda: True)
    with pytest.warns(RuntimeWarning, match="changed on disk"):
        df = run_grid(_grid()[:2], cache_dir=tmp_path)
    assert df.attrs["stale_code"] and df.attrs["simulated"] == 2
    assert not list(tmp_path.rglob("*.parquet"))


def test_code_version_tracks_sources_and_data(tmp_path):
    shutil.copytree(ROOT / "ppd_core", tmp_path / "ppd_core", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "data").mkdir()
    for f in (ROOT / "data").glob("*.json"):
        shutil.copy(f, tmp_path / "data" / f.name)
    v0 = diskcache.code_version(tmp_path)
    assert v0 == diskcache.code_version(tmp_path)
    engine = tmp_path / "ppd_core" / "sim" / "engine.py"     # a module in a subpackage counts too
    engine.write_text(engine.read_text() + "\n# x\n")
    v1 = diskcache.code_version(tmp_path)
    (tmp_path / "data" / "gpus.json").write_text((tmp_path / "data" / "gpus.json").read_text() + " ")
    assert len({v0, v1, diskcache.code_version(tmp_path)}) == 3


def test_trace_sweep_assigns_arrivals_per_qps_and_keys_the_cache_by_trace(tmp_path, stable_code):
    grid = expand_grid({"workload": "trace"}, {"layout": ["2P_2pD", "2R"], "qps": [1, 4]})
    df = run_grid(grid, trace=TRACE, cache_dir=tmp_path, check=_check_trace_run)
    for i, sc in enumerate(grid):
        want = run(sc, assign_arrivals(TRACE, sc.qps, sc.seed)).summary
        assert df.iloc[i]["turn2plus.ttft_ms.mean"] == want["groups"]["turn2plus"]["ttft_ms"]["mean"]
    assert run_grid(grid, trace=TRACE, cache_dir=tmp_path).attrs["cache_hits"] == 4
    other = load_trace(TRACE_CSV.replace(b"c,1,,300,5", b"c,1,,301,5"))
    assert run_grid(grid, trace=other, cache_dir=tmp_path).attrs["cache_hits"] == 0
    with pytest.raises(ScenarioError) as e:
        run_grid(grid, cache=False)
    assert e.value.key == "workload"


def test_errors_are_one_line_ppd_errors():
    bad = Scenario(model="Llama-3.1-70B", tp="1", **TINY)
    with pytest.raises(SweepError) as e:
        run_grid([bad], cache=False)
    assert "model" in str(e.value) and "Llama-3.1-70B" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ScenarioError) as e:
        run_grid([bad], executor="ray")
    assert e.value.key == "executor"
    with pytest.raises(ScenarioError) as e:
        run_grid([bad], workers=0)
    assert e.value.key == "workers"


# ---- CLI -----------------------------------------------------------------------------------------------

def test_sweep_arguments_single_multi_and_slo_lists():
    base, axes = parse_sweep_args(["layout=2P_2D,2P_2pD", "qps=4", "slo_ttft_ms=100,200;500",
                                   "slo_tpot_ms=15,30"])
    assert base == {"qps": "4", "slo_tpot_ms": "15,30"}
    assert axes == {"layout": ["2P_2D", "2P_2pD"], "slo_ttft_ms": ["100,200", "500"]}
    g = expand_grid(base, axes)
    assert [s.slo_ttft_ms for s in g] == [(100.0, 200.0), (500.0,)] * 2
    base, _ = parse_sweep_args(["/?layout=4R&qps=2", "qps=3"])
    assert base == {"layout": "4R", "qps": "3"}
    for bad in (["nokey=1"], ["qps=1,,2"], ["qps"]):
        with pytest.raises(ScenarioError):
            parse_sweep_args(bad)


def test_cli_writes_csv_and_parquet_and_prints_a_table(tmp_path, capsys):
    args = ["sweep", "layout=2P_2D,2R", "qps=1,2", "workload=small_tiny", "conversations=5"]
    assert main(args + ["--no-cache"]) == 0
    out = capsys.readouterr()
    assert "2P_2D" in out.out and "turn2plus.ttft_ms.mean" in out.out
    assert "4/4 runs" in out.err and "4 scenarios: 4 simulated" in out.err
    csv, pq = tmp_path / "s.csv", tmp_path / "s.parquet"
    assert main(args + ["--no-cache", "--out", str(csv)]) == 0
    assert main(args + ["--no-cache", "--out", str(pq)]) == 0
    a, b = pd.read_csv(csv), pd.read_parquet(pq)
    assert len(a) == len(b) == 4 and list(a.columns) == list(b.columns)
    assert list(b["layout"]) == ["2P_2D", "2P_2D", "2R", "2R"]
    capsys.readouterr()
    assert main(args + ["--out", str(tmp_path / "s.xlsx")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out") and ".xlsx" in err and err.count("\n") == 1
    assert main(["sweep", "qps=1,-1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: qps:") and err.count("\n") == 1
    assert main(["sweep", "seed=" + ",".join(map(str, range(150))), "layout=" + ",".join(
        f"{n}R" for n in range(1, 150))]) == 2
    assert "20,000" in capsys.readouterr().err


# ---- Dask ----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_dask_local_cluster_equals_local():
    pytest.importorskip("distributed")
    grid = expand_grid(TINY, {"layout": ["2P_2D", "2P_2pD", "2R"], "qps": [1, 8]})
    local = run_grid(grid, cache=False)
    seen = []
    remote = run_grid(grid, executor="dask", workers=2, cache=False, check=check_invariants,
                      progress=lambda d, t: seen.append(d))
    _same(local, remote)
    assert seen[-1] == len(grid)
