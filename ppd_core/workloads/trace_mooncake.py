"""The Mooncake-style JSONL reader: requests grouped into conversations by their full hash-id blocks.

In the public Mooncake traces each hash id names one block of ``MOONCAKE_BLOCK_TOKENS`` (512) prompt tokens
and a request has ceil(input / 512) of them, so its last block is partial and changes from turn to turn; a
follow-up shares only the earlier turn's *full* blocks, and every request starts with block 0 (a shared
system prompt). The grouping rule is in ``ppd_core.workloads.traces`` and ``TraceStats.describe``.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from ..config.errors import TraceError
from .conversation import Turn
from .trace_common import (MAX_PREFIX_CANDIDATES, MAX_TRACE_TOKENS, MIN_SHARED_BLOCKS, MOONCAKE_BLOCK_TOKENS,
                           TIME_UNITS, _MOONCAKE_KEYS, _Builder, _check_requests, _check_span, _check_turns,
                           _iter_lines, _json_line, _show, _tokens)

_BLOCK_CANDIDATES = tuple(2 ** i for i in range(4, 17))   # 16 .. 65,536 tokens: block sizes detection tries


@dataclass(frozen=True)
class _Request:
    line: int
    timestamp: float               # in the file's unit
    input_len: int
    output_len: int
    hash_ids: tuple[int, ...]


@dataclass
class _Tail:
    """An open conversation's latest request: what a continuation must extend."""
    full: tuple[int, ...]          # its full blocks' hash ids
    key: int                       # chained hash of ``full``
    input_len: int
    output_len: int


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
        raise TraceError(f"timestamp {_show(ts)} is not allowed; must be a number >= 0 (milliseconds, or "
                         f"the unit given: {', '.join(TIME_UNITS)})", line=line, source=label)
    ids = obj.get("hash_ids", [])
    if not isinstance(ids, list) or not all(type(i) is int for i in ids):   # json gives exact ints; no bools
        raise TraceError("hash_ids must be a list of integers", line=line, source=label)
    return _Request(line, float(ts), _tokens(obj["input_length"], "input_length", line, label),
                    _tokens(obj["output_length"], "output_length", line, label), tuple(ids))


def _block_size(requests: list[_Request], given: int | None) -> tuple[int, str]:
    """Tokens per hash id and how it was chosen. Detection: the block sizes B (powers of two, 16..65,536)
    for which every request with hash ids has exactly ceil(input / B) of them; the default 512 when it is
    one of them or none is, the single other one when exactly one is."""
    if given is not None:
        return given, f"{given} tokens (given)"
    lo, hi = 1, MAX_TRACE_TOKENS
    for r in requests:
        n = len(r.hash_ids)
        if n:   # ceil(L / B) == n  <=>  L / n <= B < L / (n - 1)
            lo = max(lo, -(-r.input_len // n))
            if n > 1:
                hi = min(hi, -(-r.input_len // (n - 1)) - 1)
    fits = [b for b in _BLOCK_CANDIDATES if lo <= b <= hi]
    if MOONCAKE_BLOCK_TOKENS in fits:
        return MOONCAKE_BLOCK_TOKENS, (f"{MOONCAKE_BLOCK_TOKENS} tokens (Mooncake's; every hash_ids list has "
                                       "ceil(input / 512) entries)")
    if len(fits) == 1:
        return fits[0], f"{fits[0]} tokens (detected: every hash_ids list has ceil(input / {fits[0]}) entries)"
    why = "several sizes fit" if fits else "no power of two fits every hash_ids length"
    return MOONCAKE_BLOCK_TOKENS, (f"{MOONCAKE_BLOCK_TOKENS} tokens (default; {why}; a request's full blocks are "
                                   "its first min(len(hash_ids), input // 512) ids; set block_tokens to change)")


def _mooncake_unit(requests: list[_Request], unit: str | None, label: str) -> tuple[str, str]:
    if unit is not None:
        return unit, "given"
    frac = next((r for r in requests if not r.timestamp.is_integer()), None)
    if frac is not None:
        raise TraceError(f"timestamp {frac.timestamp:g} has a fraction, so its unit is not Mooncake's integer "
                         "milliseconds for sure; give the unit (time_unit / --time-unit: s, ms or us)",
                         line=frac.line, source=label)
    return "ms", "Mooncake's documented unit, integer timestamps; --time-unit s|ms|us to override"


def _parse_mooncake(text: str, label: str, unit: str | None,
                    block_tokens: int | None) -> tuple[list[tuple[float, list[Turn]]], dict[str, Any]]:
    """Group requests into conversations by full-block prefixes (see ``TraceStats.describe``)."""
    requests: list[_Request] = []
    for lineno, line in _iter_lines(text):
        if line.strip():
            requests.append(_mooncake_request(_json_line(line, lineno, label), lineno, label))
            _check_requests(len(requests), lineno, label)
    requests.sort(key=lambda r: (r.timestamp, r.line))
    unit, unit_note = _mooncake_unit(requests, unit, label)
    block, block_note = _block_size(requests, block_tokens)
    per_s, t0 = TIME_UNITS[unit], requests[0].timestamp
    convs: list[_Builder] = []
    tails: list[_Tail] = []
    # chained hash of an open conversation's full blocks -> those conversations (a dict used as an ordered
    # set: oldest tail first, O(1) removal). Chaining gives the hash of every prefix of a request's ids in
    # one pass; a hit is confirmed by comparing the ids, so a hash collision can never merge conversations.
    # Only tails with >= MIN_SHARED_BLOCKS full blocks are indexed.
    by_key: dict[int, dict[int, None]] = {}
    first_ids: set[int] = set()
    first_pairs: set[tuple[int, int]] = set()
    first_block_only = length_rejected = 0
    for req in requests:
        ids = req.hash_ids
        prefix = [0]
        for b in ids:
            prefix.append(hash((prefix[-1], b)))
        best, matched = -1, False
        for k in range(len(ids), MIN_SHARED_BLOCKS - 1, -1):   # the longest shared prefix first
            # then the most recent conversation (of the MAX_PREFIX_CANDIDATES newest with these blocks)
            candidates = by_key.get(prefix[k])
            if not candidates:
                continue
            want = ids[:k]
            for ci in itertools.islice(reversed(candidates), MAX_PREFIX_CANDIDATES):
                tail = tails[ci]
                if tail.full != want:
                    continue
                matched = True
                if req.input_len >= tail.input_len + tail.output_len:
                    best = ci
                    break
            if best >= 0:
                break
        n_full = min(len(ids), req.input_len // block)
        full = ids[:n_full]
        if best >= 0:
            tail = tails[best]
            old = by_key[tail.key]
            del old[best]
            if not old:
                del by_key[tail.key]
            conv = convs[best]
            conv.turns.append(Turn(max(1, req.input_len - tail.input_len - tail.output_len), req.output_len))
            _check_turns(len(conv.turns), req.line, label, f"the conversation starting at line {conv.line}")
        else:
            if matched:
                length_rejected += 1
            elif ids and ids[0] in first_ids and (len(ids) < 2 or (ids[0], ids[1]) not in first_pairs):
                first_block_only += 1
            best = len(convs)
            arrival = (req.timestamp - t0) / per_s
            _check_span(arrival, req.line, label)
            convs.append(_Builder(arrival, req.line, [Turn(req.input_len, req.output_len)]))
            tails.append(_Tail((), 0, 0, 0))
        if ids:
            first_ids.add(ids[0])
            if len(ids) > 1:
                first_pairs.add((ids[0], ids[1]))
        tails[best] = _Tail(full, prefix[n_full], req.input_len, req.output_len)
        if n_full >= MIN_SHARED_BLOCKS:
            by_key.setdefault(prefix[n_full], {})[best] = None
    extra = {"time_unit": unit, "time_unit_note": unit_note, "block_tokens": block, "block_note": block_note,
             "first_block_only": first_block_only, "length_rejected": length_rejected}
    return [(c.arrival, c.turns) for c in convs], extra
