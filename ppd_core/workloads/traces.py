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
    ``{"timestamp": ms, "input_length": tokens, "output_length": tokens, "hash_ids": [ints]}``.
    In the public Mooncake traces each hash id names one block of ``MOONCAKE_BLOCK_TOKENS`` (512) prompt
    tokens and a request has ceil(input / 512) of them, so its last block is partial and changes from turn
    to turn; a follow-up shares only the earlier turn's *full* blocks, and every request starts with block 0
    (a shared system prompt). Requests are taken in timestamp order (file order breaks ties) and grouped by
    the rule: a request continues an open conversation (one whose latest request it will extend) when that
    latest request's full blocks, its first ``min(len(hash_ids), input // block)`` ids, number at least
    ``MIN_SHARED_BLOCKS`` (2: block 0 alone is everyone's system prompt) and are a prefix of the request's
    ``hash_ids``, and the request's input is at least that request's input + output. Among several, the
    longest shared prefix wins, then the most recently continued conversation (of the
    ``MAX_PREFIX_CANDIDATES`` newest with the same full blocks, which bounds the work on adversarial
    files). Otherwise it starts a new conversation. A continuation's new input is
    ``max(1, input - previous input - previous output)``. The block size is given (``block_tokens``) or
    detected: the one power of two B for which every request has ceil(input / B) hash ids, 512 when 512
    fits or none / several do. Timestamps are in ``time_unit``
    (s | ms | us); by default Mooncake's documented integer milliseconds, and a timestamp with a fraction is
    refused unless the unit is given. A conversation arrives at its first request's timestamp, shifted so
    the earliest request arrives at 0 s. The timestamps of later requests are not kept: in the simulator turn
    k+1 is sent when turn k finishes plus the scenario's ``think_time_s``.

``csv``
    A header ``conversation,turn,arrival,input_tokens,output_tokens`` (any column order, extra columns
    ignored) and one row per turn, rows in any order. ``conversation`` is any non-empty label, turns are
    1..n with no gaps or repeats, ``arrival`` is in seconds (or ``time_unit``; a column named
    ``arrival_s``, ``arrival_ms`` or ``arrival_us`` states its unit). A conversation arrives at its turn-1
    arrival (blank = unassigned, see above); later turns' arrivals may be blank and are ignored, like
    Mooncake's.

``import_trace`` returns the conversations and a ``TraceStats`` (``trace_stats``) (counts, the grouping rule, the unit and
how it was chosen, the trace's own conversation rate); ``TraceStats.describe()`` is what the CLI prints.
For a timestamped trace, a run's ``qps`` is a time scale: ``assign_arrivals`` divides the arrivals by
``k = qps / native_rate`` (native rate = (conversations - 1) / arrival span), so the run offers ``qps``
conversations per second, k times the trace's own load (``describe_replay`` says so in one line;
``trace_replay``).

Every problem raises ``TraceError``: one line naming the file, the 1-based line where it applies, and what
is allowed. Size caps (``MAX_TRACE_*``: bytes, requests, turns per conversation, tokens, arrival span) match
the scenario's, so no trace can make a run unbounded; the number of conversations is bounded by the
request cap only (a one-turn trace of 200,000 requests imports).
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable

from ..config.errors import TraceError
from .conversation import Conversation
from .trace_common import (CHARS_PER_TOKEN, CSV_ARRIVAL_COLUMNS, CSV_COLUMNS, FORMATS,  # noqa: F401 (re-exported)
                           MAX_PREFIX_CANDIDATES, MAX_TRACE_BYTES, MAX_TRACE_REQUESTS, MAX_TRACE_SPAN_S,
                           MAX_TRACE_TOKENS, MAX_TRACE_TURNS, MIN_SHARED_BLOCKS, MOONCAKE_BLOCK_TOKENS, TIME_UNITS,
                           UNASSIGNED_ARRIVAL, TraceSource, _check_unit, _detect, estimate_tokens, _load_text,
                           _renumber, _show)
from .trace_formats import _parse_csv, _parse_sharegpt
from .trace_mooncake import _parse_mooncake
from .trace_replay import (assign_arrivals, describe_rate, describe_replay, native_rate, replay_rate,  # noqa: F401
                           time_scale)  # (re-exported)
from .trace_stats import TraceStats

# ---- public API ----------------------------------------------------------------------------------------

def detect_format(path_or_bytes: TraceSource, name: str = "trace") -> str:
    """Which of ``FORMATS`` the trace is in, from its first non-blank line; ``TraceError`` if none."""
    text, label = _load_text(path_or_bytes, name)
    return _detect(text, label)


def import_trace(path_or_bytes: TraceSource, fmt: str | None = None, name: str = "trace", *,
                 time_unit: str | None = None,
                 block_tokens: int | None = None) -> tuple[tuple[Conversation, ...], TraceStats]:
    """Read a trace file (a path) or its content (bytes, e.g. a Streamlit upload, or a binary file object).

    ``fmt`` is one of ``FORMATS`` or None to detect it. ``name`` labels error messages for bytes input
    (a path is labelled by its file name). ``time_unit`` (s | ms | us) is the timestamps' unit; None takes
    the format's documented unit (Mooncake: integer ms, refused if a timestamp has a fraction; CSV: the
    ``arrival`` column in seconds, or the unit its name gives, ``arrival_ms`` ...). ``block_tokens``: tokens
    per Mooncake hash id; None detects it (see ``TraceStats.block_note``). Returns the conversations sorted
    by arrival (file order breaks ties), with cids renumbered 0..n-1 (no timestamp: ``UNASSIGNED_ARRIVAL``),
    and the ``TraceStats`` of the import.
    """
    text, label = _load_text(path_or_bytes, name)
    if fmt is None:
        fmt = _detect(text, label)
    elif not isinstance(fmt, str) or fmt.strip().lower() not in FORMATS:
        raise TraceError(f"unknown format {_show(fmt)}; allowed: {', '.join(FORMATS)}", source=label)
    fmt = fmt.strip().lower()
    unit = _check_unit(time_unit, label)
    if block_tokens is not None and (isinstance(block_tokens, bool) or not isinstance(block_tokens, int)
                                     or not 1 <= block_tokens <= MAX_TRACE_TOKENS):
        raise TraceError(f"block size {_show(block_tokens)} is not allowed; must be an integer in "
                         f"[1, {MAX_TRACE_TOKENS}] tokens per hash id", source=label)
    if fmt == "mooncake":
        items, extra = _parse_mooncake(text, label, unit, block_tokens)
    elif fmt == "csv":
        items, extra = _parse_csv(text, label, unit)
    else:
        items = _parse_sharegpt(text, label)
        extra = {"time_unit": None,
                 "time_unit_note": "" if unit is None else f" (time unit {unit} ignored: the file has no timestamps)"}
    convs = _renumber(items)
    stamped = [c.arrival_s for c in convs if c.arrival_s >= 0]
    span = (max(stamped) - min(stamped)) if stamped else None
    n_turns = [len(c.turns) for c in convs]
    stats = TraceStats(
        source=label, format=fmt, requests=sum(n_turns), conversations=len(convs),
        continuations=sum(n_turns) - len(convs), multi_turn=sum(1 for n in n_turns if n > 1),
        max_turns=max(n_turns), arrival_span_s=span, native_qps=native_rate(convs),
        **{"time_unit_note": "", **extra})
    return convs, stats


def load_trace(path_or_bytes: TraceSource, fmt: str | None = None, name: str = "trace", *,
               time_unit: str | None = None, block_tokens: int | None = None) -> tuple[Conversation, ...]:
    """The conversations of ``import_trace`` (same arguments), without the stats."""
    return import_trace(path_or_bytes, fmt, name, time_unit=time_unit, block_tokens=block_tokens)[0]


def trace_digest(convs: Iterable[Conversation]) -> str:
    """First 16 hex digits of the SHA-256 of a canonical text of the conversations, in the given order
    (arrival and turns; cids are positional and left out), so a scenario can name a trace by content."""
    h = hashlib.sha256(b"ppd-trace-v1\n")
    for c in convs:
        turns = ";".join(f"{int(t.new_input)},{int(t.output)}" for t in c.turns)
        h.update(f"{float(c.arrival_s)!r}|{turns}\n".encode("ascii"))
    return h.hexdigest()[:16]


__all__ = ["FORMATS", "CHARS_PER_TOKEN", "CSV_COLUMNS", "CSV_ARRIVAL_COLUMNS", "MOONCAKE_BLOCK_TOKENS",
           "MIN_SHARED_BLOCKS", "MAX_PREFIX_CANDIDATES", "TIME_UNITS", "UNASSIGNED_ARRIVAL", "MAX_TRACE_BYTES",
           "MAX_TRACE_REQUESTS", "MAX_TRACE_SPAN_S", "MAX_TRACE_TOKENS", "MAX_TRACE_TURNS", "TraceSource",
           "TraceStats", "estimate_tokens", "detect_format", "import_trace", "load_trace", "native_rate",
           "time_scale", "describe_replay", "assign_arrivals", "replay_rate", "describe_rate", "trace_digest"]
