"""The sweep cache on disk: Parquet files under ``<cache dir>/<code version>/``, one row per scenario keyed
by a hash of the scenario's full query string (defaults included) and, for ``workload=trace``, the trace's
digest. The code version hashes ``ppd_core/**/*.py`` and ``data/*.json``, so editing the simulator or a
catalog starts a fresh cache. Default directory: ``$PPD_CACHE_DIR``, else ``.cache/sweeps`` in a checkout, or
``$XDG_CACHE_HOME/ppd-explorer/sweeps`` (``~/.cache/…``) for an installed package, whose site-packages is no
place for it.

A process whose loaded ppd_core no longer matches the files (edited since it started: ``is_stale()``)
bypasses the cache. The only thing recorded at import is an immutable stamp (path, size, mtime) of the
files; hashing happens when a version is asked for.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import uuid
from pathlib import Path

from ..config.paths import DATA_DIR, INSTALLED, PACKAGE_DIR, REPO_ROOT
from ..config.scenario import Scenario

COMPACT_AFTER = 16                # cache parts per code version before they are merged into one
CACHE_SCHEMA = "ppd-sweep-cache-v1"


def _walk_py(folder: str) -> list[str]:
    """Every ``*.py`` under ``folder`` (``__pycache__`` skipped), by ``os.scandir``: a sweep checks its workers'
    code once per chunk, and ``pathlib.rglob`` costs several milliseconds per call."""
    out: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            if e.name != "__pycache__":
                out += _walk_py(e.path)
        elif e.name.endswith(".py"):
            out.append(e.path)
    return out


def _code_files(root: Path | None) -> list[tuple[str, Path]]:
    if root is None:
        pkg, data, base = PACKAGE_DIR, DATA_DIR, REPO_ROOT
    else:
        base = Path(os.path.abspath(root))
        pkg, data = base / "ppd_core", base / "data"
    base_s = str(base) + os.sep
    py = sorted(Path(f) for f in _walk_py(str(pkg)))
    js = sorted(Path(data / n) for n in _names(str(data)) if n.endswith(".json"))
    return [(str(f)[len(base_s):].replace(os.sep, "/") if str(f).startswith(base_s) else f.name, f)
            for f in py + js]


def _names(folder: str) -> list[str]:
    try:
        return [e.name for e in os.scandir(folder) if e.is_file()]
    except OSError:
        return []


def code_version(root: Path | None = None) -> str:
    """SHA-256 (first 16 hex digits) of ppd_core/**/*.py and data/*.json: any edit starts a fresh cache.
    For the running package it is computed once per stamp of those files (path, size, mtime): an edit
    changes the stamp, so the hash is never older than the files."""
    if root is None:
        return _version_of(_stamp())
    return _hash_files(_code_files(root))


def _hash_files(files: list[tuple[str, Path]]) -> str:
    h = hashlib.sha256(CACHE_SCHEMA.encode())
    for name, f in files:
        h.update(name.encode() + b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=4)
def _version_of(stamp: tuple) -> str:
    """The hash of the files a stamp describes (a pure function of the stamp, memoised like the catalogs)."""
    return _hash_files([(name, Path(path)) for name, path, _, _ in stamp])


def _stamp() -> tuple:
    out = []
    for name, f in _code_files(None):
        st = os.stat(f)
        out.append((name, str(f), st.st_size, st.st_mtime_ns))
    return tuple(out)


_LOADED_STAMP = _stamp()   # the files as this process loaded them (ppd_core/__init__ imports every layer)


def is_stale() -> bool:
    """True when ppd_core's files changed on disk after this process loaded them."""
    return _stamp() != _LOADED_STAMP


def loaded_code_version() -> str:
    """The code version of what this process runs ("stale" if the files changed since it loaded them)."""
    return "stale" if is_stale() else code_version()


def default_cache_dir() -> Path:
    env = os.environ.get("PPD_CACHE_DIR")
    if env:
        return Path(env)
    if INSTALLED:
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ppd-explorer" / "sweeps"
    return REPO_ROOT / ".cache" / "sweeps"


def scenario_key(sc: Scenario, trace_id: str = "", full_query: str | None = None) -> str:
    """Cache key of one run: the full query string (defaults included) plus the trace digest, if any."""
    full = sc.to_query(include_defaults=True) if full_query is None else full_query
    text = full + "\n" + (trace_id if sc.workload == "trace" else "")
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def read(folder: Path, wanted: set[str]) -> dict[str, dict]:
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


def write(folder: Path, rows: list[tuple[str, str, dict]]) -> None:
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
