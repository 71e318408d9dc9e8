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

import hashlib
import math
from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from ..config.errors import ScenarioError, TraceError
from .conversation import Conversation
from .trace_common import (CHARS_PER_TOKEN, CSV_COLUMNS, FORMATS, MAX_TRACE_BYTES, MAX_TRACE_CONVERSATIONS,  # noqa: F401 (re-exported)
                           MAX_TRACE_REQUESTS, MAX_TRACE_SPAN_S, MAX_TRACE_TOKENS, MAX_TRACE_TURNS,
                           MOONCAKE_BLOCK_TOKENS, UNASSIGNED_ARRIVAL, TraceSource, _detect, estimate_tokens, _load_text, _renumber,
                           _show)
from .trace_formats import _parse_csv, _parse_mooncake, _parse_sharegpt

# ---- public API ----------------------------------------------------------------------------------------

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


__all__ = ["FORMATS", "CHARS_PER_TOKEN", "CSV_COLUMNS", "MOONCAKE_BLOCK_TOKENS", "UNASSIGNED_ARRIVAL", "MAX_TRACE_BYTES",
           "MAX_TRACE_CONVERSATIONS", "MAX_TRACE_REQUESTS", "MAX_TRACE_SPAN_S", "MAX_TRACE_TOKENS", "MAX_TRACE_TURNS",
           "TraceSource", "estimate_tokens", "detect_format", "load_trace", "assign_arrivals", "trace_digest"]
