"""Parameter sweeps: a grid of scenarios -> one tidy row per scenario, on local cores or a Dask cluster.

    >>> from ppd_core.sweep import expand_grid, run_grid
    >>> grid = expand_grid({"workload": "small_tiny", "conversations": 20}, {"layout": ["2P_2D", "2P_2pD"],
    ...                                                                     "qps": [1, 4]})
    >>> df = run_grid(grid)            # 4 rows: every scenario key + the flattened ``run --json`` summary

Columns: every scenario key (SLO threshold lists as text such as ``100,200,500``), ``query`` (the
scenario's URL query, defaults omitted: the Explore link is ``/?`` + query) and the summary figures of
``run --json`` flattened with dots: ``turn2plus.ttft_ms.mean``, ``slo_attainment.ttft_100ms``,
``success_rate``, ``throughput.tokens_per_s``, ``kv.bytes``, ``local_share``, ``sim.events`` ...
``sim.wall_s`` is the wall time of the simulation that produced the row (kept in the cache, so a cached
row repeats it); it is the one column that is not a function of the scenario. Rows are in input order
whatever the executor, worker count or cache state.

Disk cache: Parquet files under ``<cache dir>/<code version>/``, one row per scenario keyed by a hash of
the scenario's full query string (defaults included) and, for ``workload=trace``, the trace's digest.
The code version hashes ``ppd_core/*.py`` and ``data/*.json``, so editing the simulator or a catalog
starts a fresh cache. Default directory: ``$PPD_CACHE_DIR`` or ``.cache/sweeps`` in the repository. A
process whose loaded ppd_core no longer matches the files (edited since it started) bypasses the cache.

Executors: ``local`` runs chunks of scenarios (largest first) in a process pool, or in-process when the
whole grid is small; ``dask`` submits the same chunks to a Dask cluster and refuses workers whose ppd_core
code version differs from the client's.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import math
import os
import sys
import threading
import types
import uuid
import warnings
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from time import perf_counter
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import quote

from .errors import PPDError, ScenarioError
from .scenario import FIELDS, SPEC, Scenario, _coerce, parse, render_value

MAX_GRID = 20_000                 # scenarios per sweep
MAX_WORKERS = 256
CHUNK_MAX = 64                    # scenarios per task: amortises task overhead, keeps progress moving
CHUNKS_PER_WORKER = 8             # at least this many tasks per worker (load balance)
SERIAL_MAX_REQUESTS = 20_000      # below this many expected requests in all, skip the process pool
COMPACT_AFTER = 16                # cache parts per code version before they are merged into one
PAPER_QPS = (0.5, 1, 2, 4, 6, 8, 10, 12, 16, 20)
PAPER_BASE = {"policy": "pd", "arrival_window_s": 10, "client_concurrency": 50, "timeout_s": 120}
OUT_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
EXECUTORS = ("local", "dask")
REPO_ROOT = Path(__file__).resolve().parent.parent
CACHE_SCHEMA = "ppd-sweep-cache-v1"

Progress = Callable[[int, int], None]
Check = Callable[[Any], Any]


class SweepError(PPDError):
    """A sweep could not run (a scenario failed in a worker, a worker runs different code, ...)."""


# ---- grids ---------------------------------------------------------------------------------------------

def expand_grid(base: Scenario | Mapping[str, Any] | None, axes: Mapping[str, Sequence[Any]]) -> list[Scenario]:
    """Every combination of ``axes`` values (first axis slowest) applied to ``base``.

    Keys are scenario keys; every value goes through the scenario parser, so an error names its key.
    Values that parse to the same thing are kept once. More than ``MAX_GRID`` scenarios raise."""
    if base is None:
        base_sc = Scenario()
    elif isinstance(base, Scenario):
        base_sc = base
    elif isinstance(base, Mapping):
        base_sc = parse(base)
    else:
        raise ScenarioError("base", f"must be a Scenario or a mapping of scenario keys, not {type(base).__name__}")
    keys, values = [], []
    for key, raw in axes.items():
        if key not in SPEC:
            raise ScenarioError(str(key)[:40], f"unknown key; allowed keys: {', '.join(SPEC)}")
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Iterable):
            raw = [raw]
        seen = list(dict.fromkeys(_coerce(SPEC[key], v) for v in raw))   # parsed values, each once
        if not seen:
            raise ScenarioError(key, "needs at least one value to sweep")
        keys.append(key)
        values.append(seen)
    n = math.prod(len(v) for v in values)
    check_grid_size(n)
    out = []
    for combo in itertools.product(*values):
        changes = dict(zip(keys, combo))
        try:
            out.append(base_sc.with_(**changes))
        except ScenarioError as exc:
            where = " ".join(f"{k}={render_value(v)}" for k, v in changes.items())
            raise ScenarioError(exc.key, f"{_after_key(exc)} (grid point {where})") from None
    return out


def check_grid_size(n: int) -> None:
    if n > MAX_GRID:
        raise ScenarioError("grid", f"{n:,} scenarios exceed the cap of {MAX_GRID:,} per sweep; sweep fewer values")


def paper_grid_axes() -> dict[str, tuple]:
    """The paper's study: 17 four-GPU layouts x 18 synthetic workloads x 10 QPS (3,060 runs)."""
    from .layout import PAPER_LAYOUTS
    from .workload import SYNTHETIC
    return {"layout": PAPER_LAYOUTS, "workload": SYNTHETIC, "qps": PAPER_QPS}


def _after_key(exc: ScenarioError) -> str:
    text = str(exc)
    prefix = f"{exc.key}: "
    return text[len(prefix):] if text.startswith(prefix) else text


# ---- code version and cache ----------------------------------------------------------------------------

def code_version(root: Path | None = None) -> str:
    """SHA-256 (first 16 hex digits) of ppd_core/*.py and data/*.json: any edit starts a fresh cache."""
    root = Path(root) if root is not None else REPO_ROOT
    h = hashlib.sha256(CACHE_SCHEMA.encode())
    files = sorted((root / "ppd_core").glob("*.py")) + sorted((root / "data").glob("*.json"))
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]


# The code this process runs: ppd_core is loaded with this module (``ppd_core/__init__`` imports the engine),
# so a later edit on disk makes LOADED_VERSION != code_version(); such a stale process neither reads nor
# writes the disk cache (its results belong to no version on disk).
LOADED_VERSION = code_version()


def default_cache_dir() -> Path:
    env = os.environ.get("PPD_CACHE_DIR")
    return Path(env) if env else REPO_ROOT / ".cache" / "sweeps"


def scenario_key(sc: Scenario, trace_id: str = "", full_query: str | None = None) -> str:
    """Cache key of one run: the full query string (defaults included) plus the trace digest, if any."""
    full = sc.to_query(include_defaults=True) if full_query is None else full_query
    text = full + "\n" + (trace_id if sc.workload == "trace" else "")
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def query_strings(scenarios: Iterable[Scenario]) -> list[tuple[str, str]]:
    """(``to_query(include_defaults=True)``, ``to_query()``) of each scenario, rendering each distinct
    (key, value) once: grids repeat values, and URL-quoting dominates a cached sweep otherwise."""
    memo: dict[tuple[str, Any], str] = {}
    out = []
    for sc in scenarios:
        full, short = [], []
        for f in FIELDS:
            v = getattr(sc, f.key)
            piece = memo.get((f.key, v))
            if piece is None:
                piece = memo[(f.key, v)] = f"{f.key}={quote(render_value(v), safe=',._-')}"
            full.append(piece)
            if v != f.default:
                short.append(piece)
        out.append(("&".join(full), "&".join(short)))
    return out


def _cache_read(folder: Path, wanted: set[str]) -> dict[str, dict]:
    """Cached figures (flattened summaries) for the wanted keys; unreadable parts are skipped."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    found: dict[str, dict] = {}
    if not folder.is_dir() or not wanted:
        return found
    for part in sorted(folder.glob("part-*.parquet")):
        try:
            table = pq.read_table(part, columns=["key", "figures"])
        except (OSError, pa.ArrowException):   # removed by a concurrent compaction, or damaged
            continue
        for key, text in zip(table.column("key").to_pylist(), table.column("figures").to_pylist()):
            if key in wanted and key not in found:
                found[key] = json.loads(text)
    return found


def _cache_write(folder: Path, rows: list[tuple[str, str, dict]]) -> None:
    """Append rows (key, full query, figures) as a new part; merge the parts once there are many."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    if not rows:
        return
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.table({"key": [r[0] for r in rows], "query": [r[1] for r in rows],
                      "figures": [json.dumps(r[2], separators=(",", ":")) for r in rows]})
    _atomic_parquet(table, folder)
    parts = sorted(folder.glob("part-*.parquet"))
    if len(parts) > COMPACT_AFTER:
        tables = []
        for part in parts:
            try:
                tables.append(pq.read_table(part))
            except (OSError, pa.ArrowException):
                continue
        if tables:
            merged = pa.concat_tables(tables)
            keys = merged.column("key").to_pylist()
            first = sorted({k: i for i, k in reversed(list(enumerate(keys)))}.values())
            _atomic_parquet(merged.take(pa.array(first, type=pa.int64())), folder)
            for part in parts:
                part.unlink(missing_ok=True)


def _atomic_parquet(table, folder: Path) -> Path:
    import pyarrow.parquet as pq
    name = f"part-{uuid.uuid4().hex}.parquet"
    tmp = folder / f".tmp-{name}"
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, folder / name)
    return folder / name


# ---- running -------------------------------------------------------------------------------------------

def _run_chunk(items: list[tuple[int, Scenario]], trace,
               check: Check | None) -> tuple[str, list[tuple[int, dict | None, str | None]]]:
    """Worker: run scenarios, return (the worker's loaded code version, [(index, flat summary, error)])."""
    from .api import run
    out = []
    for idx, sc in items:
        try:
            conv = None
            if sc.workload == "trace":
                from .traces import assign_arrivals
                conv = assign_arrivals(trace, sc.qps, sc.seed)
            res = run(sc, conv)
        except PPDError as exc:     # e.g. the model does not fit: reported with the scenario by the parent
            out.append((idx, None, str(exc)))
            continue
        if check is not None:
            check(res)
        out.append((idx, flatten(res.summary), None))
    return LOADED_VERSION, out


def flatten(summary: Mapping[str, Any]) -> dict[str, Any]:
    """``run --json`` summary -> flat figures: groups' names lose the ``groups.`` prefix; None -> NaN."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, x: Any) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                walk(f"{prefix}{k}.", v)
        else:
            flat[prefix[:-1]] = math.nan if x is None else x

    for k, v in summary.items():
        if k != "scenario":
            walk("" if k == "groups" else f"{k}.", v)
    return flat


def scenario_columns(sc: Scenario, query: str | None = None) -> dict[str, Any]:
    """Every scenario key (SLO lists as text) and ``query`` (the URL query, defaults omitted)."""
    out: dict[str, Any] = {}
    for f in FIELDS:
        v = getattr(sc, f.key)
        out[f.key] = render_value(v) if isinstance(v, tuple) else v
    out["query"] = sc.to_query() if query is None else query
    return out


def _cost(sc: Scenario, trace) -> float:
    if sc.workload == "trace" and trace is not None:
        return float(sum(len(c.turns) for c in trace))
    return sc.expected_requests()


def _chunks(items: list[tuple[int, Scenario]], costs: dict[int, float], workers: int) -> list[list]:
    """Largest runs first (the tail finishes together), in chunks of similar cost."""
    order = sorted(items, key=lambda it: -costs[it[0]])
    size = max(1, min(CHUNK_MAX, math.ceil(len(order) / (workers * CHUNKS_PER_WORKER))))
    return [order[i:i + size] for i in range(0, len(order), size)]


def _mp_context():
    """fork when this process has a single thread (CLI, benchmark: workers start in milliseconds); otherwise
    (a Streamlit server, a Dask client) forkserver with ppd_core preloaded, never fork from threads."""
    import multiprocessing as mp
    methods = mp.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return mp.get_context("fork")
    if "forkserver" in methods:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["ppd_core.api", "ppd_core.sweep"])
        return ctx
    return mp.get_context("spawn")


@contextlib.contextmanager
def _workers_skip_main_script(ctx):
    """While a spawn/forkserver pool starts its processes, hide a path-only ``__main__`` (a script run by a host
    such as ``streamlit run``: no ``__spec__``) so the workers do not re-execute it as ``__mp_main__``; they
    only need ppd_core. The real module is put back unless someone replaced it meanwhile. (Consequence: a
    ``check`` callable must live in an importable module, not in such a script.)"""
    main = sys.modules.get("__main__")
    hide = (ctx.get_start_method() != "fork" and main is not None and getattr(main, "__spec__", None) is None
            and getattr(main, "__file__", None) is not None)
    if not hide:
        yield
        return
    stand_in = types.ModuleType("__main__", "stand-in while ppd_core.sweep starts worker processes")
    sys.modules["__main__"] = stand_in
    try:
        yield
    finally:
        if sys.modules.get("__main__") is stand_in:
            sys.modules["__main__"] = main


def local_workers() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:
        return os.cpu_count() or 1


def run_grid(scenarios: Sequence[Scenario], *, executor: str = "local", scheduler: str | None = None,
             workers: int | None = None, cache_dir: str | os.PathLike | None = None, cache: bool = True,
             progress: Progress | None = None, trace=None, check: Check | None = None):
    """Run every scenario (cache hits skip the simulation) and return a tidy ``pandas.DataFrame``.

    executor: ``local`` (a process pool over ``workers`` processes, default all local cores) or ``dask``
    (``distributed.Client(scheduler)``, or a small ``LocalCluster`` when ``scheduler`` is None).
    progress: called as ``progress(done, total)`` (cache hits count as done at once).
    trace: the conversations of ``workload=trace`` scenarios (``traces.load_trace``); arrivals the trace
    lacks are drawn per scenario with ``traces.assign_arrivals(trace, qps, seed)``.
    check: called with every ``RunResult`` in the worker (tests pass their invariant checker); cache hits
    are not re-checked, so pass ``cache=False`` to check every run.
    The frame's ``attrs`` hold ``cache_hits``, ``simulated``, ``code_version`` and ``wall_s``."""
    import pandas as pd
    t0 = perf_counter()
    scenarios = list(scenarios)
    check_grid_size(len(scenarios))
    for sc in scenarios:
        if not isinstance(sc, Scenario):
            raise ScenarioError("scenarios", f"expected Scenario objects, got {type(sc).__name__}")
    if executor not in EXECUTORS:
        raise ScenarioError("executor", f"{str(executor)[:40]!r} is not allowed; must be one of {', '.join(EXECUTORS)}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or not 1 <= workers <= MAX_WORKERS):
        raise ScenarioError("workers", f"{workers!r} is out of range; must be an integer in [1, {MAX_WORKERS}]")
    uses_trace = any(sc.workload == "trace" for sc in scenarios)
    if uses_trace and trace is None:
        raise ScenarioError("workload", "'trace' needs an imported trace (CLI --trace FILE, or an upload)")
    trace_id = ""
    if uses_trace:
        from .traces import trace_digest
        trace = tuple(trace)
        trace_id = trace_digest(trace)
    version = code_version()
    stale = version != LOADED_VERSION
    if stale and cache:
        warnings.warn("ppd_core changed on disk since this process loaded it: the sweep cache is off for this "
                      "sweep (restart the process to use it)", RuntimeWarning, stacklevel=2)
    cache = cache and not stale
    folder = (Path(cache_dir) if cache_dir is not None else default_cache_dir()) / version
    queries = query_strings(scenarios)
    keys = [scenario_key(sc, trace_id, full) for sc, (full, _) in zip(scenarios, queries)]
    figures: list[dict | None] = [None] * len(scenarios)
    hits = 0
    if cache:
        found = _cache_read(folder, set(keys))
        for i, k in enumerate(keys):
            if k in found:
                figures[i] = found[k]
                hits += 1
    total = len(scenarios)
    if progress is not None:
        progress(hits, total)
    todo: dict[int, Scenario] = {}
    first_of: dict[str, int] = {}
    copies: dict[int, list[int]] = {}          # the same scenario twice in the input: run it once
    for i, sc in enumerate(scenarios):
        if figures[i] is None:
            if keys[i] in first_of:
                copies.setdefault(first_of[keys[i]], []).append(i)
            else:
                first_of[keys[i]] = i
                todo[i] = sc
    fresh: list[tuple[str, str, dict]] = []
    done = [hits]

    def collect(results: list[tuple[int, dict | None, str | None]]) -> None:
        for idx, flat, error in results:
            if error is not None:
                raise SweepError(f"{error} (scenario {queries[idx][1] or 'with default keys'})")
            for j in (idx, *copies.get(idx, ())):
                figures[j] = flat
            fresh.append((keys[idx], queries[idx][0], flat))
            done[0] += 1 + len(copies.get(idx, ()))
        if progress is not None:
            progress(done[0], total)

    try:
        if todo:
            items = list(todo.items())
            costs = {i: _cost(sc, trace) for i, sc in items}
            if executor == "dask":
                _run_dask(items, costs, trace, check, scheduler, workers, {version, LOADED_VERSION}, collect)
            else:
                n_workers = min(workers or local_workers(), len(items))
                if n_workers <= 1 or sum(costs.values()) <= SERIAL_MAX_REQUESTS:
                    for chunk in _chunks(items, costs, 1):
                        collect(_run_chunk(chunk, trace, check)[1])
                else:
                    _run_local(items, costs, trace, check, n_workers, collect)
    finally:
        if cache and fresh:
            _cache_write(folder, fresh)
    rows = [{**scenario_columns(sc, short), **flat} for sc, (_, short), flat in zip(scenarios, queries, figures)]
    df = pd.DataFrame(rows)
    df.attrs.update(cache_hits=hits, simulated=len(todo), code_version=version, stale_code=stale,
                    wall_s=round(perf_counter() - t0, 3))
    return df


def _run_local(items, costs, trace, check, n_workers, collect) -> None:
    chunks = _chunks(items, costs, n_workers)
    ctx = _mp_context()
    ex = ProcessPoolExecutor(max_workers=n_workers, mp_context=ctx)
    try:
        with _workers_skip_main_script(ctx):    # spawn/forkserver pools start their processes on submit
            pending = {ex.submit(_run_chunk, chunk, trace, check) for chunk in chunks}
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                collect(fut.result()[1])
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _run_dask(items, costs, trace, check, scheduler, workers, versions: set[str], collect) -> None:
    from distributed import Client, LocalCluster, as_completed
    cluster = None
    if scheduler:
        try:
            client = Client(scheduler)
        except (OSError, TimeoutError, ValueError) as exc:
            raise SweepError(f"--scheduler {scheduler[:80]}: cannot reach a Dask scheduler ({exc})") from None
    else:
        cluster = LocalCluster(n_workers=workers or min(2, local_workers()), threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        n = max(1, len(client.scheduler_info().get("workers", {})) or (workers or 1))
        data = client.scatter(trace, broadcast=True) if trace is not None else None
        futures = [client.submit(_run_chunk, chunk, data, check, pure=False)
                   for chunk in _chunks(items, costs, n)]
        for fut in as_completed(futures):
            try:
                worker_version, results = fut.result()
            except (RuntimeError, ModuleNotFoundError) as exc:
                if isinstance(exc, ModuleNotFoundError) or "deserializ" in str(exc):
                    raise SweepError("the Dask scheduler or a worker cannot import ppd_core: start `dask scheduler` "
                                     "and `dask worker` with this repository on PYTHONPATH and the same "
                                     "requirements.txt") from exc
                raise
            if worker_version not in versions:
                raise SweepError(f"a Dask worker runs different ppd_core code (code version {worker_version}, "
                                 f"this client {min(versions)}); install the same commit on every worker")
            collect(results)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# ---- output --------------------------------------------------------------------------------------------

def out_format(path: str) -> str:
    ext = Path(path).suffix.lower()
    if ext not in OUT_FORMATS:
        raise ScenarioError("--out", f"{path[:60]!r}: unknown extension {ext or '(none)'!r}; "
                                     f"use one of {', '.join(OUT_FORMATS)}")
    return OUT_FORMATS[ext]


def write_frame(df, path: str) -> None:
    fmt = out_format(path)
    if fmt == "csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)


SHOW_COLUMNS = ("turn2plus.ttft_ms.mean", "turn2plus.tpot_ms.mean", "success_rate", "throughput.tokens_per_s",
                "local_share")


def format_table(df, swept: Sequence[str], limit: int = 30) -> str:
    """A short text table: the swept keys and a few headline figures."""
    cols = [c for c in swept if c in df.columns]
    slo = [c for c in df.columns if c.startswith("slo_attainment.")][:2]
    cols += [c for c in (*SHOW_COLUMNS[:2], *slo, *SHOW_COLUMNS[2:]) if c in df.columns]
    view = df[cols].head(limit)
    text = view.to_string(index=False, float_format=lambda x: f"{x:,.3f}", na_rep="-")
    if len(df) > limit:
        text += f"\n... {len(df) - limit:,} more rows (write them all with --out FILE.csv or FILE.parquet)"
    return text


# ---- CLI -----------------------------------------------------------------------------------------------

class TextProgress:
    """A one-line progress bar on a stream (stderr), redrawn at most every 0.1 s."""

    def __init__(self, label: str = "sweep", stream=None, width: int = 30):
        self.label, self.stream, self.width = label, stream or sys.stderr, width
        self.t0 = perf_counter()
        self.last = -1.0
        self.open_line = False

    def __call__(self, done: int, total: int) -> None:
        now = perf_counter()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        frac = done / total if total else 1.0
        bar = "#" * round(frac * self.width)
        self.stream.write(f"\r{self.label} [{bar:<{self.width}}] {done:,}/{total:,} runs  {now - self.t0:5.1f} s")
        self.open_line = done < total
        if not self.open_line:
            self.stream.write("\n")
        self.stream.flush()

    def close(self) -> None:
        """End a line left open by an interrupted run, so an error message starts on its own line."""
        if self.open_line:
            self.stream.write("\n")
            self.stream.flush()
            self.open_line = False


def parse_sweep_args(pairs: Sequence[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """``KEY=V`` fixes a key, ``KEY=V1,V2`` sweeps it (``;`` separates the alternatives of the list-valued
    keys slo_ttft_ms / slo_tpot_ms). A whole shared URL sets the base. Returns (base, axes)."""
    base: dict[str, str] = {}
    axes: dict[str, list[str]] = {}
    for item in pairs:
        if "=" not in item.split("?", 1)[0] and ("?" in item or "://" in item):
            base.update(parse(item).to_params())
            continue
        if "=" not in item:
            raise ScenarioError(item[:40], "expected KEY=VALUE or KEY=V1,V2,... (or a whole shared URL)")
        key, raw = item.split("=", 1)
        key = key.strip()
        if key not in SPEC:
            raise ScenarioError(key[:40], f"unknown key; allowed keys: {', '.join(SPEC)}")
        sep = ";" if SPEC[key].kind == "floats" else ","
        vals = [v.strip() for v in raw.split(sep)]
        if any(not v for v in vals):
            raise ScenarioError(key, f"empty value in {raw[:40]!r}; separate alternatives with {sep!r}")
        base.pop(key, None)
        axes.pop(key, None)
        if len(vals) == 1:
            base[key] = vals[0]
        else:
            axes[key] = vals
    return base, axes


def add_executor_args(p) -> None:
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local: a process pool on this machine; dask: a Dask cluster (see --scheduler)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="Dask scheduler address, e.g. tcp://10.0.0.5:8786 (default: a small LocalCluster)")
    p.add_argument("--workers", type=int, metavar="N",
                   help=f"local processes (default: all cores) or LocalCluster workers, 1-{MAX_WORKERS}")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the disk cache ($PPD_CACHE_DIR or .cache/sweeps)")


def add_cli(sub) -> Callable[[Any], int]:
    p = sub.add_parser(
        "sweep", help="run a grid of scenarios (local cores or Dask), write CSV/Parquet",
        description="KEY=V fixes a scenario key, KEY=V1,V2,... sweeps it; the grid is every combination. "
                    "The SLO keys are themselves comma lists, so their alternatives are separated by ';' "
                    "(quote the argument): 'slo_ttft_ms=100,200;500' sweeps (100,200) and (500). "
                    f"At most {MAX_GRID:,} scenarios. Results are cached on disk by scenario and code version.",
        epilog="examples:\n  python -m ppd_core sweep layout=2P_2D,2P_2pD qps=1,2,4 workload=small_tiny\n"
               "  python -m ppd_core sweep --paper-grid --out paper.parquet\n"
               "  python -m ppd_core sweep --paper-grid --executor dask --scheduler tcp://HOST:8786",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pairs", nargs="*", help="KEY=V or KEY=V1,V2,... ('slo_ttft_ms=100,200;500'), or a shared URL")
    p.add_argument("--paper-grid", action="store_true",
                   help="the paper's study: 17 layouts x 18 synthetic workloads x QPS "
                        f"{','.join(f'{q:g}' for q in PAPER_QPS)} (3,060 runs) with "
                        + " ".join(f"{k}={v}" for k, v in PAPER_BASE.items()) + "; KEY=V pairs override")
    p.add_argument("--out", metavar="FILE", help="write all rows to FILE.csv or FILE.parquet")
    p.add_argument("--trace", metavar="FILE", help="replay a trace file (sets workload=trace)")
    add_executor_args(p)
    return _cmd_sweep


def _cmd_sweep(args) -> int:
    if args.out:
        out_format(args.out)          # fail before running
    base, axes = parse_sweep_args(args.pairs)
    if args.paper_grid:
        paper = paper_grid_axes()
        base = {**{k: str(v) for k, v in PAPER_BASE.items()}, **base}
        axes = {**{k: v for k, v in paper.items() if k not in base}, **axes}
    trace = None
    if args.trace:
        from .traces import load_trace
        trace = load_trace(args.trace)
        base["workload"] = "trace"
        axes.pop("workload", None)
    grid = expand_grid(base, axes)
    bar = TextProgress("sweep")
    try:
        df = run_grid(grid, executor=args.executor, scheduler=args.scheduler, workers=args.workers,
                      cache=not args.no_cache, progress=bar, trace=trace)
    finally:
        bar.close()
    a = df.attrs
    print(f"{len(df):,} scenarios: {a['simulated']:,} simulated, {a['cache_hits']:,} from the cache, "
          f"{a['wall_s']:.1f} s", file=sys.stderr)
    if args.out:
        write_frame(df, args.out)
        print(f"wrote {len(df):,} rows x {len(df.columns)} columns to {args.out}", file=sys.stderr)
    else:
        print(format_table(df, list(axes) or ["layout"]))
    return 0
