"""Shared pieces of the trace readers: size caps, the allowed values, reading the text and checking it."""
from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO

from ..config.errors import TraceError
from ..config.scenario import MAX_ARRIVAL_SPAN_S, MAX_REQUESTS, MAX_TURNS
from ..config.workload_catalog import MOONCAKE_BLOCK_TOKENS, TIME_UNITS  # noqa: F401 (re-exported)
from .conversation import Conversation, Turn

FORMATS = ("sharegpt", "mooncake", "csv")
CHARS_PER_TOKEN = 4                 # ShareGPT token estimate: ceil(chars / 4), as the PPD benchmark's proxy
MIN_SHARED_BLOCKS = 2               # a continuation shares >= 2 full blocks: block 0 alone is the system prompt
MAX_PREFIX_CANDIDATES = 256         # open conversations with the same full blocks tried per prefix, newest first
UNASSIGNED_ARRIVAL = -1.0           # "no timestamp yet": assign_arrivals fills these in

MAX_TRACE_BYTES = 50 * 1024 * 1024
MAX_TRACE_REQUESTS = MAX_REQUESTS             # 200,000 requests (turns) in all; conversations are not capped
MAX_TRACE_TURNS = MAX_TURNS                   # 64 turns per conversation
MAX_TRACE_TOKENS = 1_000_000                  # per turn input / output
MAX_TRACE_SPAN_S = MAX_ARRIVAL_SPAN_S         # conversation arrivals within one simulated day

CSV_COLUMNS = ("conversation", "turn", "arrival", "input_tokens", "output_tokens")
CSV_ARRIVAL_COLUMNS = MappingProxyType({"arrival": None, "arrival_s": "s", "arrival_ms": "ms",
                                        "arrival_us": "us"})   # header name -> the unit it states

TraceSource = str | os.PathLike[str] | bytes | bytearray | memoryview | BinaryIO

_FORMATS_HELP = (
    "expected one of: ShareGPT/WildChat JSON (a list or JSONL of "
    '{"conversations": [{"from": "human"|"gpt", "value": text}, ...]}), '
    'Mooncake JSONL (one {"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [...]} per line), '
    "CSV with header " + ",".join(CSV_COLUMNS))
_TOKENS_HELP = f"an integer in [1, {MAX_TRACE_TOKENS}]"
_SHAREGPT_LIST_KEYS = ("conversations", "conversation", "messages")
_USER_ROLES = frozenset({"human", "user", "system"})     # system text is part of the next prompt
_ASSISTANT_ROLES = frozenset({"gpt", "assistant", "chatgpt", "bard", "bing", "model"})
_MOONCAKE_KEYS = ("timestamp", "input_length", "output_length")
# a plain decimal number; ASCII only (float() alone would also take "1_000", "nan" and Arabic-Indic digits)
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def estimate_tokens(text: str) -> int:
    """Tokens of a ShareGPT message: ``max(1, ceil(len(text) / CHARS_PER_TOKEN))``."""
    return max(1, -(-len(text) // CHARS_PER_TOKEN))


# ---- reading and format detection ----------------------------------------------------------------------

def _load_text(source: TraceSource, name: str) -> tuple[str, str]:
    """The decoded text and the label for messages, enforcing the size cap before decoding."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        label, data = _label(name), bytes(source)
    elif hasattr(source, "read"):
        label = _label(name)
        raw = source.read(MAX_TRACE_BYTES + 1)   # type: ignore[union-attr]
        data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    else:
        path = Path(source)
        label = _label(path.name or name)
        try:
            size = path.stat().st_size
            if size > MAX_TRACE_BYTES:
                raise TraceError(_too_big(size), source=label)
            with path.open("rb") as fh:
                data = fh.read(MAX_TRACE_BYTES + 1)   # the file may have grown since stat()
        except OSError as exc:
            raise TraceError(f"cannot read the file ({exc.strerror or type(exc).__name__})", source=label) from None
    if len(data) > MAX_TRACE_BYTES:
        raise TraceError(_too_big(len(data)), source=label)
    if data.startswith(b"\xef\xbb\xbf"):   # UTF-8 byte-order mark (Excel, Notepad)
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceError(f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                         "save the file as UTF-8", line=data.count(b"\n", 0, exc.start) + 1, source=label) from None
    if not text.strip():
        raise TraceError(f"the file is empty; {_FORMATS_HELP}", source=label)
    return text, label


def _too_big(size: int) -> str:
    return (f"the file is {size:,} bytes, over the cap of {MAX_TRACE_BYTES:,} bytes "
            f"({MAX_TRACE_BYTES // (1024 * 1024)} MiB); split the trace")


def _label(name: str) -> str:
    """A file name safe to put in a one-line message."""
    text = str(name)[:80]
    return text if text and text.isprintable() else repr(text)


def _show(value: Any, n: int = 40) -> str:
    """A short one-line rendering of a user value (repr escapes newlines and control characters)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**40:
        return "a huge integer"   # repr() of an int beyond 4,300 digits raises
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."


def _iter_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) over '\\n'-separated lines, without splitting a 50 MB string at once."""
    start, lineno = 0, 1
    while True:
        end = text.find("\n", start)
        if end < 0:
            yield lineno, text[start:]
            return
        yield lineno, text[start:end]
        start, lineno = end + 1, lineno + 1


def _detect(text: str, label: str) -> str:
    lineno, first = next((n, s.strip()) for n, s in _iter_lines(text) if s.strip())
    if first.startswith("["):
        return "sharegpt"
    if first.startswith("{"):
        obj = _json_line(first, lineno, label)
        if isinstance(obj, dict):
            if any(k in obj for k in _SHAREGPT_LIST_KEYS):
                return "sharegpt"
            if any(k in obj for k in (*_MOONCAKE_KEYS, "hash_ids")):
                return "mooncake"
            keys = _show(", ".join(str(k) for k in list(obj)[:8]), 60)
            raise TraceError(f"a JSON object with keys {keys} is neither ShareGPT nor Mooncake; {_FORMATS_HELP}",
                             line=lineno, source=label)
    header = {c.strip().strip('"').strip().lower() for c in first.split(",")}
    if len(header & set(CSV_COLUMNS)) >= 2:
        return "csv"
    raise TraceError(f"unrecognised format (first line {_show(first)}); {_FORMATS_HELP}", line=lineno, source=label)


def _json_line(text: str, lineno: int, label: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise TraceError("JSON nested too deeply", line=lineno, source=label) from None
    except ValueError as exc:   # JSONDecodeError, or int() refusing a number of more than 4,300 digits
        msg = f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise TraceError(f"malformed JSON ({_one_line(msg)}); expected one JSON object per line",
                         line=lineno, source=label) from None


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass
class _Builder:
    """A conversation under construction: its arrival, turns and (for errors) where it started."""
    arrival: float
    line: int | None
    turns: list[Turn] = field(default_factory=list)


def _renumber(items: Iterable[tuple[float, Iterable[Turn]]]) -> tuple[Conversation, ...]:
    ordered = sorted(((float(a), tuple(t)) for a, t in items), key=lambda x: x[0])   # stable: file order on ties
    return tuple(Conversation(i, a, t) for i, (a, t) in enumerate(ordered))


def _check_requests(n_requests: int, line: int | None, label: str) -> None:
    """The request cap (conversations are not capped: a one-turn trace may hold up to the request cap)."""
    if n_requests > MAX_TRACE_REQUESTS:
        raise TraceError(f"more than {MAX_TRACE_REQUESTS} requests (turns), the cap; split the trace",
                         line=line, source=label)


def _tokens(value: Any, what: str, line: int | None, label: str) -> int:
    """A JSON token count: an integer (12 or 12.0) in [1, MAX_TRACE_TOKENS]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TraceError(f"{what} {_show(value)} is not a number; must be {_TOKENS_HELP}", line=line, source=label)
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise TraceError(f"{what} {_show(value)} is not an integer; must be {_TOKENS_HELP}",
                             line=line, source=label)
        value = int(value)
    if not 1 <= value <= MAX_TRACE_TOKENS:
        raise TraceError(f"{what} {_show(value)} is out of range; must be {_TOKENS_HELP}", line=line, source=label)
    return value


def _check_turns(n: int, line: int | None, label: str, who: str) -> None:
    if n > MAX_TRACE_TURNS:
        raise TraceError(f"{who} has more than {MAX_TRACE_TURNS} turns, the cap per conversation",
                         line=line, source=label)


def _check_unit(time_unit: Any, label: str) -> str | None:
    """A given timestamp unit, normalised (" MS " -> "ms"); None stays None (the format's documented unit)."""
    if time_unit is None:
        return None
    if not isinstance(time_unit, str) or time_unit.strip().lower() not in TIME_UNITS:
        raise TraceError(f"time unit {_show(time_unit)} is not allowed; allowed: {', '.join(TIME_UNITS)}",
                         source=label)
    return time_unit.strip().lower()


def _check_span(arrival: float, line: int | None, label: str) -> None:
    if arrival > MAX_TRACE_SPAN_S:
        raise TraceError(f"arrival {arrival:.0f} s is past the cap of {MAX_TRACE_SPAN_S:.0f} s "
                         "(one simulated day) after the first", line=line, source=label)
