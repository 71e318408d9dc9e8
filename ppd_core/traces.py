"""Trace import: users' own multi-turn traffic as a tuple of ``Conversation``s.

Three formats are read (``FORMATS``); ``detect_format`` tells them apart from the first non-blank line.

``sharegpt``
    ShareGPT-style JSON: a list (or JSONL, one object per line) of
    ``{"id": ..., "conversations": [{"from": "human"|"gpt", "value": text}, ...]}``. WildChat / LMSYS /
    OpenAI style records are read too: the message list may be under ``conversation`` or ``messages`` and
    each message may be ``{"role": "user"|"assistant", "content": text}``. The files hold text, not
    tokens: token counts are *estimated* as ``max(1, ceil(len(text) / 4))`` (``CHARS_PER_TOKEN``, Unicode
    characters), the chars/4 rule the PPD benchmark's proxy used. Messages are paired in order: user text
    (including ``system`` messages, which are part of the prompt) up to the next assistant message is one
    turn's new input, the assistant text up to the next user message is its output; consecutive messages
    of one side are summed. Assistant messages before any user text are skipped, a trailing unanswered
    user message is dropped, and records left without a complete turn are skipped. There are no
    timestamps: every arrival is ``UNASSIGNED_ARRIVAL`` (-1.0) until ``assign_arrivals`` draws Poisson
    arrivals for them.

``mooncake``
    Mooncake-style JSONL, one request per line:
    ``{"timestamp": ms, "input_length": tokens, "output_length": tokens, "hash_ids": [ints]}``
    (hash ids name 512-token prompt blocks; ``MOONCAKE_BLOCK_TOKENS``). Requests are taken in timestamp
    order (file order breaks ties) and grouped into conversations by one simple rule: a request continues
    the most recent conversation whose last request's ``hash_ids`` (non-empty) are a proper prefix of the
    request's own ``hash_ids``; otherwise it starts a new conversation. A continuation's new input is
    ``max(1, input_length - previous input_length - previous output_length)``. A conversation arrives at
    its first request's timestamp / 1000, shifted so the earliest request in the file arrives at 0 s.
    The timestamps of later requests are not kept: in the simulator turn k+1 is sent when turn k finishes
    plus the scenario's ``think_time_s``, so the trace's own think times are lost.

``csv``
    A header ``conversation,turn,arrival,input_tokens,output_tokens`` (any column order, extra columns
    ignored) and one row per turn, rows in any order. ``conversation`` is any non-empty label, turns are
    1..n with no gaps or repeats, ``arrival`` is in seconds. A conversation arrives at its turn-1 arrival
    (blank = unassigned, see above); later turns' arrivals may be blank and are ignored, like Mooncake's.

Every problem raises ``TraceError``: one line naming the file, the 1-based line where it applies, and what
is allowed. Size caps (``MAX_TRACE_*``) match the scenario's, so no trace can make a run unbounded.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .errors import ScenarioError, TraceError
from .scenario import MAX_ARRIVAL_SPAN_S, MAX_CONVERSATIONS, MAX_REQUESTS, MAX_TURNS
from .workload import Conversation, Turn

FORMATS = ("sharegpt", "mooncake", "csv")
CHARS_PER_TOKEN = 4                 # ShareGPT token estimate: ceil(chars / 4), as the PPD benchmark's proxy
MOONCAKE_BLOCK_TOKENS = 512         # tokens per Mooncake hash id (documentation only: grouping compares ids)
UNASSIGNED_ARRIVAL = -1.0           # "no timestamp yet": assign_arrivals fills these in

MAX_TRACE_BYTES = 50 * 1024 * 1024
MAX_TRACE_CONVERSATIONS = MAX_CONVERSATIONS   # 20,000, the scenario's cap
MAX_TRACE_REQUESTS = MAX_REQUESTS             # 200,000 turns in all
MAX_TRACE_TURNS = MAX_TURNS                   # 64 turns per conversation
MAX_TRACE_TOKENS = 1_000_000                  # per turn input / output
MAX_TRACE_SPAN_S = MAX_ARRIVAL_SPAN_S         # conversation arrivals within one simulated day

CSV_COLUMNS = ("conversation", "turn", "arrival", "input_tokens", "output_tokens")

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


# ---- public API ----------------------------------------------------------------------------------------

def estimate_tokens(text: str) -> int:
    """Tokens of a ShareGPT message: ``max(1, ceil(len(text) / CHARS_PER_TOKEN))``."""
    return max(1, -(-len(text) // CHARS_PER_TOKEN))


def detect_format(path_or_bytes: TraceSource, name: str = "trace") -> str:
    """Which of ``FORMATS`` the trace is in, from its first non-blank line; ``TraceError`` if none."""
    text, label = _load_text(path_or_bytes, name)
    return _detect(text, label)


def load_trace(path_or_bytes: TraceSource, fmt: str | None = None, name: str = "trace") -> tuple[Conversation, ...]:
    """Read a trace file (a path) or its content (bytes, e.g. a Streamlit upload, or a binary file object).

    ``fmt`` is one of ``FORMATS`` or None to detect it. ``name`` labels error messages for bytes input
    (a path is labelled by its file name). Returns the conversations sorted by arrival (file order breaks
    ties), with cids renumbered 0..n-1; conversations without timestamps have ``UNASSIGNED_ARRIVAL``.
    """
    text, label = _load_text(path_or_bytes, name)
    if fmt is None:
        fmt = _detect(text, label)
    elif not isinstance(fmt, str) or fmt.strip().lower() not in FORMATS:
        raise TraceError(f"unknown format {_show(fmt)}; allowed: {', '.join(FORMATS)}", source=label)
    parser = {"sharegpt": _parse_sharegpt, "mooncake": _parse_mooncake, "csv": _parse_csv}[fmt.strip().lower()]
    return _renumber(parser(text, label))


def assign_arrivals(convs: Iterable[Conversation], qps: float, seed: int) -> tuple[Conversation, ...]:
    """Poisson arrivals for the conversations whose arrival is unassigned (negative, -1.0 from the importer).

    Gaps are exponential with mean 1/qps from ``numpy.random.Generator(PCG64(seed))``, accumulated from 0
    as in ``workload.arrival_times``, given in the conversations' current order. Conversations that have
    an arrival keep it. Returns all of them sorted by arrival with cids renumbered 0..n-1.
    """
    if isinstance(qps, bool) or not isinstance(qps, (int, float)) or not math.isfinite(qps) or qps <= 0:
        raise ScenarioError("qps", f"{_show(qps)} is not allowed; must be a number > 0")
    out = list(convs)
    todo = [i for i, c in enumerate(out) if c.arrival_s < 0]
    rng = np.random.Generator(np.random.PCG64(seed))
    times = np.cumsum(rng.exponential(1.0 / qps, size=len(todo)))
    for i, t in zip(todo, times, strict=True):
        out[i] = replace(out[i], arrival_s=float(t))
    return _renumber((c.arrival_s, c.turns) for c in out)


def trace_digest(convs: Iterable[Conversation]) -> str:
    """First 16 hex digits of the SHA-256 of a canonical text of the conversations, in the given order
    (arrival and turns; cids are positional and left out), so a scenario can name a trace by content."""
    h = hashlib.sha256(b"ppd-trace-v1\n")
    for c in convs:
        turns = ";".join(f"{int(t.new_input)},{int(t.output)}" for t in c.turns)
        h.update(f"{float(c.arrival_s)!r}|{turns}\n".encode("ascii"))
    return h.hexdigest()[:16]


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


def _check_counts(n_convs: int, n_requests: int, line: int | None, label: str) -> None:
    if n_convs > MAX_TRACE_CONVERSATIONS:
        raise TraceError(f"more than {MAX_TRACE_CONVERSATIONS} conversations, the cap; split the trace",
                         line=line, source=label)
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


def _check_span(arrival: float, line: int | None, label: str) -> None:
    if arrival > MAX_TRACE_SPAN_S:
        raise TraceError(f"arrival {arrival:.0f} s is past the cap of {MAX_TRACE_SPAN_S:.0f} s "
                         "(one simulated day) after the first", line=line, source=label)


# ---- ShareGPT ------------------------------------------------------------------------------------------

def _sharegpt_records(text: str, label: str) -> Iterator[tuple[int, Any]]:
    """(line where the record starts, record) for a JSON list or for JSONL."""
    start = len(text) - len(text.lstrip())
    if not text.startswith("[", start):
        for lineno, line in _iter_lines(text):
            if line.strip():
                yield lineno, _json_line(line, lineno, label)
        return
    # A JSON list, decoded one element at a time so each record knows its line number.
    decoder = json.JSONDecoder()
    pos, line_no, seen = start + 1, 1 + text.count("\n", 0, start), start

    def skip_ws(i: int) -> int:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        return i

    def line_at(i: int) -> int:
        nonlocal line_no, seen
        line_no += text.count("\n", seen, i)
        seen = i
        return line_no

    def fail(i: int, msg: str) -> TraceError:
        return TraceError(f"malformed JSON ({msg}); a ShareGPT file is a JSON list of conversation objects",
                          line=line_at(min(i, len(text))), source=label)

    pos = skip_ws(pos)
    if text.startswith("]", pos):
        pos = skip_ws(pos + 1)
    else:
        while True:
            try:
                record, end = decoder.raw_decode(text, pos)
            except RecursionError:
                raise fail(pos, "nested too deeply") from None
            except json.JSONDecodeError as exc:
                raise fail(exc.pos, f"{exc.msg} at column {exc.colno}") from None
            except ValueError as exc:   # a number of more than 4,300 digits
                raise fail(pos, _one_line(str(exc))) from None
            yield line_at(pos), record
            pos = skip_ws(end)
            if text.startswith(",", pos):
                pos = skip_ws(pos + 1)
            elif text.startswith("]", pos):
                pos = skip_ws(pos + 1)
                break
            else:
                raise fail(pos, "expected ',' or ']' after a conversation")
    if pos < len(text):
        raise fail(pos, "extra data after the closing ']'")


def _parse_sharegpt(text: str, label: str) -> list[tuple[float, list[Turn]]]:
    convs: list[tuple[float, list[Turn]]] = []
    n_requests = 0
    for index, (lineno, record) in enumerate(_sharegpt_records(text, label), 1):
        turns = _sharegpt_turns(record, index, lineno, label)
        if not turns:
            continue   # nothing answered: skipped, as the benchmarks' filters do
        n_requests += len(turns)
        convs.append((UNASSIGNED_ARRIVAL, turns))
        _check_counts(len(convs), n_requests, lineno, label)
    if not convs:
        raise TraceError("no conversation with a complete turn (a user message followed by an assistant reply)",
                         source=label)
    return convs


def _sharegpt_turns(record: Any, index: int, line: int, label: str) -> list[Turn]:
    if not isinstance(record, dict):
        raise TraceError(f"conversation {index} is {type(record).__name__}, not an object "
                         '{"id": ..., "conversations": [...]}', line=line, source=label)
    who = f"conversation {index}" + (f" (id {_show(record['id'])})" if "id" in record else "")
    key = next((k for k in _SHAREGPT_LIST_KEYS if k in record), None)
    if key is None:
        raise TraceError(f"{who} has none of the keys {', '.join(_SHAREGPT_LIST_KEYS)}", line=line, source=label)
    messages = record[key]
    if not isinstance(messages, list):
        raise TraceError(f"{who}: {key!r} must be a list of messages", line=line, source=label)
    turns: list[Turn] = []
    pending_in = pending_out = 0    # token sums of the current turn's user side and assistant side
    for m, msg in enumerate(messages, 1):
        role = msg.get("from", msg.get("role")) if isinstance(msg, dict) else None
        value = msg.get("value", msg.get("content")) if isinstance(msg, dict) else None
        if not isinstance(role, str) or not isinstance(value, str):
            raise TraceError(f"{who} message {m} must be an object with string 'from'/'role' and "
                             "'value'/'content'", line=line, source=label)
        role = role.strip().lower()
        if role in _USER_ROLES:
            if pending_out:   # an answered turn is complete
                turns.append(Turn(pending_in, pending_out))
                pending_in = pending_out = 0
            pending_in += estimate_tokens(value)
        elif role in _ASSISTANT_ROLES:
            if pending_in:    # assistant text before any user text has no prompt: skipped
                pending_out += estimate_tokens(value)
        else:
            raise TraceError(f"{who} message {m} has role {_show(role)}; allowed: "
                             f"{', '.join(sorted(_USER_ROLES | _ASSISTANT_ROLES))}", line=line, source=label)
        if max(pending_in, pending_out) > MAX_TRACE_TOKENS:
            raise TraceError(f"{who} message {m}: about {max(pending_in, pending_out)} tokens in one turn; "
                             f"must be at most {MAX_TRACE_TOKENS}", line=line, source=label)
        _check_turns(len(turns), line, label, who)
    if pending_out:
        turns.append(Turn(pending_in, pending_out))
    _check_turns(len(turns), line, label, who)
    return turns


# ---- Mooncake ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Request:
    line: int
    timestamp_ms: float
    input_len: int
    output_len: int
    hash_ids: tuple[int, ...]


def _mooncake_request(obj: Any, line: int, label: str) -> _Request:
    if not isinstance(obj, dict):
        raise TraceError(f"expected a JSON object with keys {', '.join(_MOONCAKE_KEYS)}, hash_ids",
                         line=line, source=label)
    missing = [k for k in _MOONCAKE_KEYS if k not in obj]
    if missing:
        raise TraceError(f"missing {', '.join(missing)}; a Mooncake request has {', '.join(_MOONCAKE_KEYS)}, hash_ids",
                         line=line, source=label)
    ts = obj["timestamp"]
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts) or ts < 0:
        raise TraceError(f"timestamp {_show(ts)} is not allowed; must be a number >= 0 (milliseconds)",
                         line=line, source=label)
    ids = obj.get("hash_ids", [])
    if not isinstance(ids, list) or not all(type(i) is int for i in ids):   # json gives exact ints; no bools
        raise TraceError("hash_ids must be a list of integers", line=line, source=label)
    return _Request(line, float(ts), _tokens(obj["input_length"], "input_length", line, label),
                    _tokens(obj["output_length"], "output_length", line, label), tuple(ids))


def _parse_mooncake(text: str, label: str) -> list[tuple[float, list[Turn]]]:
    requests: list[_Request] = []
    for lineno, line in _iter_lines(text):
        if line.strip():
            requests.append(_mooncake_request(_json_line(line, lineno, label), lineno, label))
            _check_counts(0, len(requests), lineno, label)
    requests.sort(key=lambda r: (r.timestamp_ms, r.line))
    t0 = requests[0].timestamp_ms
    convs: list[_Builder] = []
    last: list[_Request] = []          # per conversation: its latest request
    last_seq: list[int] = []           # per conversation: position of that request in time order
    last_key: list[int] = []           # per conversation: chained hash of that request's hash_ids
    # Chained hash of each conversation's latest hash_ids -> those conversations, oldest first. Chaining gives
    # the hash of every prefix of a request in one pass (linear, whatever the ids); a hit is confirmed by
    # comparing the ids, so a hash collision can never merge conversations.
    by_key: dict[int, list[int]] = {}
    for seq, req in enumerate(requests):
        ids, h, best = req.hash_ids, 0, -1
        for k, block in enumerate(ids):
            candidates = by_key.get(h) if k else None   # h is the hash of ids[:k], a proper prefix
            if candidates:
                for ci in reversed(candidates):
                    if best >= 0 and last_seq[ci] < last_seq[best]:
                        break   # the rest of the list is older still
                    if last[ci].hash_ids == ids[:k]:
                        best = ci
                        break
            h = hash((h, block))
        if best >= 0:
            prev = last[best]
            old = by_key[last_key[best]]
            old.remove(best)
            if not old:
                del by_key[last_key[best]]
            conv = convs[best]
            conv.turns.append(Turn(max(1, req.input_len - prev.input_len - prev.output_len), req.output_len))
            _check_turns(len(conv.turns), req.line, label, f"the conversation starting at line {conv.line}")
        else:
            best = len(convs)
            arrival = (req.timestamp_ms - t0) / 1000.0
            _check_span(arrival, req.line, label)
            convs.append(_Builder(arrival, req.line, [Turn(req.input_len, req.output_len)]))
            last.append(req)
            last_seq.append(seq)
            last_key.append(h)
            _check_counts(len(convs), 0, req.line, label)
        last[best], last_seq[best], last_key[best] = req, seq, h
        if ids:
            by_key.setdefault(h, []).append(best)
    return [(c.arrival, c.turns) for c in convs]


# ---- CSV -----------------------------------------------------------------------------------------------

def _csv_number(raw: str, what: str, line: int, label: str, allowed: str) -> float:
    text = raw.strip()
    if not _NUMBER.fullmatch(text):
        kind = "not finite" if text.lower().lstrip("+-") in ("nan", "inf", "infinity") else "not a number"
        raise TraceError(f"{what} {_show(text)} is {kind}; must be {allowed}", line=line, source=label)
    value = float(text)
    if not math.isfinite(value):   # a decimal too large for a float
        raise TraceError(f"{what} {_show(text)} is out of range; must be {allowed}", line=line, source=label)
    return value


def _csv_int(raw: str, what: str, line: int, label: str, hi: int, allowed: str) -> int:
    if raw.isascii() and raw.isdigit() and 0 < len(raw) <= 7 and 1 <= int(raw) <= hi:   # the common case
        return int(raw)
    value = _csv_number(raw, what, line, label, allowed)
    if not value.is_integer():
        raise TraceError(f"{what} {_show(raw.strip())} is not an integer; must be {allowed}", line=line, source=label)
    if not 1 <= value <= hi:
        raise TraceError(f"{what} {_show(raw.strip())} is out of range; must be {allowed}", line=line, source=label)
    return int(value)


def _parse_csv(text: str, label: str) -> list[tuple[float, list[Turn]]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    col: dict[str, int] = {}
    width = 0
    # conversation label -> turn number -> (line, arrival or None, input, output); dicts keep file order
    rows: dict[str, dict[int, tuple[int, float | None, int, int]]] = {}
    n_rows = 0
    turn_help = f"an integer in [1, {MAX_TRACE_TURNS}]"
    try:
        for row in reader:
            line = reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):   # a blank line
                continue
            if not col:
                names = [c.strip().strip('"').strip().lower() for c in row]
                missing = [c for c in CSV_COLUMNS if c not in names]
                if missing:
                    raise TraceError(f"the header lacks {', '.join(missing)}; it must name the columns "
                                     f"{','.join(CSV_COLUMNS)}", line=line, source=label)
                col, width = {c: names.index(c) for c in CSV_COLUMNS}, len(row)
                continue
            if len(row) != width:
                raise TraceError(f"{len(row)} fields, the header has {width}", line=line, source=label)
            conv = row[col["conversation"]].strip()
            if not conv:
                raise TraceError("conversation is empty; it must be a label", line=line, source=label)
            turn = _csv_int(row[col["turn"]], "turn", line, label, MAX_TRACE_TURNS, turn_help)
            raw_arrival = row[col["arrival"]].strip()
            arrival = None
            if raw_arrival:
                arrival = _csv_number(raw_arrival, "arrival", line, label, "a number of seconds >= 0 (or blank)")
                if arrival < 0:
                    raise TraceError(f"arrival {_show(raw_arrival)} is negative; must be seconds >= 0 (or blank)",
                                     line=line, source=label)
                _check_span(arrival, line, label)
            tin = _csv_int(row[col["input_tokens"]], "input_tokens", line, label, MAX_TRACE_TOKENS, _TOKENS_HELP)
            tout = _csv_int(row[col["output_tokens"]], "output_tokens", line, label, MAX_TRACE_TOKENS, _TOKENS_HELP)
            turns = rows.setdefault(conv, {})
            if turn in turns:
                raise TraceError(f"conversation {_show(conv)} turn {turn} repeats line {turns[turn][0]}",
                                 line=line, source=label)
            turns[turn] = (line, arrival, tin, tout)
            n_rows += 1
            _check_counts(len(rows), n_rows, line, label)
    except csv.Error as exc:
        raise TraceError(f"malformed CSV ({_one_line(str(exc))})", line=reader.line_num, source=label) from None
    if not col:
        raise TraceError(f"no header; {_FORMATS_HELP}", source=label)
    if not rows:
        raise TraceError("no data rows after the header", source=label)
    convs: list[tuple[float, list[Turn]]] = []
    for conv, turns in rows.items():
        for expected, turn in enumerate(sorted(turns), 1):
            if turn != expected:   # the first gap: name the row after it
                raise TraceError(f"conversation {_show(conv)} has turn {turn} but no turn {expected}; turns must "
                                 "be numbered 1..n", line=turns[turn][0], source=label)
        first = turns[1][1]
        convs.append((UNASSIGNED_ARRIVAL if first is None else first,
                      [Turn(turns[k][2], turns[k][3]) for k in range(1, len(turns) + 1)]))
    return convs
