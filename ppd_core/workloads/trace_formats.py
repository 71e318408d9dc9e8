"""The ShareGPT and CSV readers (Mooncake: ``trace_mooncake``; ``ppd_core.workloads.traces`` says what each
accepts)."""
from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from typing import Any

from ..config.errors import TraceError
from .conversation import Turn
from .trace_common import (CSV_ARRIVAL_COLUMNS, CSV_COLUMNS, MAX_TRACE_TOKENS, MAX_TRACE_TURNS, TIME_UNITS,
                           UNASSIGNED_ARRIVAL, estimate_tokens, _ASSISTANT_ROLES, _FORMATS_HELP, _NUMBER,
                           _SHAREGPT_LIST_KEYS, _TOKENS_HELP, _USER_ROLES, _check_requests, _check_span,
                           _check_turns, _iter_lines, _json_line, _one_line, _show)


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
        _check_requests(n_requests, lineno, label)
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


def _parse_csv(text: str, label: str,
               unit: str | None) -> tuple[list[tuple[float, list[Turn]]], dict[str, Any]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    col: dict[str, int] = {}
    width = 0
    per_s, unit_note = 1, ""
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
                arrivals = [c for c in names if c in CSV_ARRIVAL_COLUMNS]
                if len(arrivals) > 1:
                    raise TraceError(f"the header has {len(arrivals)} arrival columns ({', '.join(arrivals)}); "
                                     f"allowed: one of {', '.join(CSV_ARRIVAL_COLUMNS)}", line=line, source=label)
                if arrivals:
                    names[names.index(arrivals[0])] = "arrival"
                missing = [c for c in CSV_COLUMNS if c not in names]
                if missing:
                    raise TraceError(f"the header lacks {', '.join(missing)}; it must name the columns "
                                     f"{','.join(CSV_COLUMNS)} (arrival may be arrival_s, arrival_ms or "
                                     "arrival_us)", line=line, source=label)
                col, width = {c: names.index(c) for c in CSV_COLUMNS}, len(row)
                header_unit = CSV_ARRIVAL_COLUMNS[arrivals[0]]
                if unit is not None and header_unit is not None and unit != header_unit:
                    raise TraceError(f"the header's {arrivals[0]} column is in {header_unit} but the time unit "
                                     f"given is {unit}; give {header_unit} or rename the column to arrival",
                                     line=line, source=label)
                if unit is not None:
                    unit_note = "given"
                elif header_unit is not None:
                    unit, unit_note = header_unit, f"the header's {arrivals[0]} column"
                else:
                    unit, unit_note = "s", "the CSV arrival column's documented unit; --time-unit s|ms|us to override"
                per_s = TIME_UNITS[unit]
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
                arrival = _csv_number(raw_arrival, "arrival", line, label, f"a number of {unit} >= 0 (or blank)")
                if arrival < 0:
                    raise TraceError(f"arrival {_show(raw_arrival)} is negative; must be {unit} >= 0 (or blank)",
                                     line=line, source=label)
                arrival /= per_s
                _check_span(arrival, line, label)
            tin = _csv_int(row[col["input_tokens"]], "input_tokens", line, label, MAX_TRACE_TOKENS, _TOKENS_HELP)
            tout = _csv_int(row[col["output_tokens"]], "output_tokens", line, label, MAX_TRACE_TOKENS, _TOKENS_HELP)
            turns = rows.setdefault(conv, {})
            if turn in turns:
                raise TraceError(f"conversation {_show(conv)} turn {turn} repeats line {turns[turn][0]}",
                                 line=line, source=label)
            turns[turn] = (line, arrival, tin, tout)
            n_rows += 1
            _check_requests(n_rows, line, label)
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
    if all(a < 0 for a, _ in convs):   # no timestamps at all: the unit is moot
        return convs, {"time_unit": None, "time_unit_note": "" if unit_note != "given" else
                       f" (time unit {unit} ignored: no arrival is given)"}
    return convs, {"time_unit": unit, "time_unit_note": unit_note}
