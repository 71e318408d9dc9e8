"""Checking files visitors upload before anything reads them: size caps (the documented 50 MiB per file,
which ``.streamlit/config.toml`` ``server.maxUploadSize`` matches), names, encoding and the CSV schema of the
measured calibration set (the schemas ``ppd_core.calibration.measured`` simulates). No server path ever comes from a
visitor: uploads are written under a fresh temporary folder with sanitised names."""
from __future__ import annotations

import csv
import io
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

import streamlit as st

from ppd_core.config.errors import PPDError
from ppd_core.calibration.measured import read_dir
from ppd_core.workloads.trace_stats import TraceStats
from ppd_core.workloads.traces import MAX_TRACE_BYTES, TIME_UNITS, import_trace

MAX_FILE_BYTES = MAX_TRACE_BYTES          # 50 MiB, the trace cap
MAX_FILES = 16
SCHEMAS_HELP = ("the schemas of ../shared/data/ppd-measured: comprehensive (config, context_class, t2_type, turn, "
                "...), trace runs (config, turn_group, qps, ...) or scaling (config, scope, turn, ...)")


def _name(raw: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]", "_", Path(raw).name)[:80]
    if not name.lower().endswith(".csv"):
        raise PPDError(f"{raw[:60]!r}: only .csv files are accepted ({SCHEMAS_HELP})")
    return name


def check_measured_csvs(files: Sequence[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """(sanitised name, bytes) per file, or ``PPDError`` naming the first bad file and why."""
    if not files:
        raise PPDError("no files uploaded")
    if len(files) > MAX_FILES:
        raise PPDError(f"{len(files)} files uploaded; at most {MAX_FILES}")
    out, seen = [], set()
    for raw_name, data in files:
        name = _name(raw_name)
        if name in seen:
            raise PPDError(f"{name}: uploaded twice")
        seen.add(name)
        if len(data) > MAX_FILE_BYTES:
            raise PPDError(f"{name}: {len(data) / 2**20:.1f} MiB is over the cap of {MAX_FILE_BYTES // 2**20} MiB")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PPDError(f"{name}: not valid UTF-8 (byte offset {exc.start})") from None
        try:
            header = next(csv.reader(io.StringIO(text)), None)
        except csv.Error as exc:
            raise PPDError(f"{name}: malformed CSV ({exc})") from None
        if not header:
            raise PPDError(f"{name}: empty file; expected {SCHEMAS_HELP}")
        out.append((name, data))
    with materialised(out) as folder:             # the core's own schema check and row parsing
        try:
            rows, notes = read_dir(folder)
        except PPDError:
            raise
        except (ValueError, KeyError, csv.Error) as exc:
            raise PPDError(f"a row could not be read ({type(exc).__name__}: {str(exc)[:200]})") from None
    skipped = [n.split(":")[0] for n in notes]
    if skipped:
        raise PPDError(f"{', '.join(skipped)}: columns not in {SCHEMAS_HELP}")
    if not rows:
        raise PPDError("no measured rows in the uploaded files")
    return out


@contextmanager
def materialised(files: Sequence[tuple[str, bytes]]) -> Iterator[str]:
    """The checked files in a fresh temporary folder (removed afterwards); yields its path."""
    with tempfile.TemporaryDirectory(prefix="ppd-upload-") as tmp:
        for name, data in files:
            (Path(tmp) / name).write_bytes(data)
        yield tmp


TIME_UNIT_CHOICES = ("auto", *TIME_UNITS)     # auto: the format's documented unit (Mooncake integer ms, CSV s)


@st.cache_data(max_entries=8, show_spinner=False)
def import_trace_upload(data: bytes, name: str, time_unit: str = "auto") -> tuple[tuple, TraceStats]:
    """A visitor's trace upload through ``ppd_core.workloads.traces.import_trace`` (format detected; its size,
    encoding and every line checked there): (conversations, ``TraceStats``), or ``TraceError`` naming the line.
    ``time_unit``: one of ``TIME_UNIT_CHOICES``."""
    if time_unit not in TIME_UNIT_CHOICES:
        raise PPDError(f"time unit {str(time_unit)[:20]!r} is not allowed; must be one of {', '.join(TIME_UNIT_CHOICES)}")
    return import_trace(data, name=_trace_name(name), time_unit=None if time_unit == "auto" else time_unit)


def _trace_name(raw: str) -> str:
    """The upload's file name as a label only (never a path)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", Path(str(raw)).name)[:80] or "trace"
