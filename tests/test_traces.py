"""Trace import (ppd_core.workloads.traces): the three formats, every refusal, caps, bytes/path equivalence, digest."""
from __future__ import annotations

import io
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from ppd_core.workloads import trace_common, traces
from ppd_core.config.errors import ScenarioError, TraceError
from ppd_core.workloads.traces import (
    MAX_TRACE_BYTES,
    UNASSIGNED_ARRIVAL,
    assign_arrivals,
    detect_format,
    describe_replay,
    estimate_tokens,
    import_trace,
    load_trace,
    native_rate,
    time_scale,
    trace_digest,
)
from ppd_core.workloads import Conversation, Turn

DATA = Path(__file__).resolve().parent.parent / "data" / "traces"
EXAMPLES = {"example_sharegpt.json": ("sharegpt", 20, 36),
            "example_mooncake.jsonl": ("mooncake", 12, 27),
            "example.csv": ("csv", 15, 41)}


def shape(convs: tuple[Conversation, ...]) -> list[tuple[float, list[tuple[int, int]]]]:
    return [(c.arrival_s, [(t.new_input, t.output) for t in c.turns]) for c in convs]


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def refused(data: str | bytes, fmt: str | None = None, name: str = "t.txt") -> TraceError:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with pytest.raises(TraceError) as info:
        load_trace(raw, fmt=fmt, name=name)
    msg = str(info.value)
    assert len(msg.splitlines()) == 1 and msg.startswith(name), msg
    return info.value


def refused_at(data: str | bytes, line: int, fmt: str | None = None) -> TraceError:
    err = refused(data, fmt)
    assert err.line == line and f"line {line}:" in str(err), str(err)
    return err


def mooncake(*reqs: tuple) -> str:
    """Lines from (timestamp_ms, input_length, output_length, hash_ids)."""
    return "".join(json.dumps({"timestamp": t, "input_length": i, "output_length": o, "hash_ids": h}) + "\n"
                   for t, i, o, h in reqs)


def mooncake_shaped(convs: list[tuple[int, list[tuple[int, int]]]], block: int = 512, gap_ms: int = 30_000) -> str:
    """A trace in the public Mooncake shape from (start ms, [(new input, output), ...]) per conversation.

    Turn k's prompt is the whole history plus its new input. Every request has ceil(input / block) hash
    ids: its full blocks, then (if the input is not a multiple of block) one partial block whose id is
    fresh each time. Block 0 is a shared system prompt (id 0 in every request of >= block tokens); the
    other full blocks are the conversation's own and stay the same from turn to turn. Turns are gap_ms
    apart; lines are in timestamp order, so conversations interleave.
    """
    ids = iter(range(1, 10**9))
    reqs = []
    for start, turns in convs:
        blocks: list[int] = []   # the conversation's full blocks so far
        ctx = 0
        for k, (new_in, out) in enumerate(turns):
            length = ctx + new_in
            n_full = length // block
            while len(blocks) < n_full:
                blocks.append(next(ids) if blocks else 0)
            partial = [next(ids)] if length % block else []
            reqs.append((start + k * gap_ms, length, out, blocks[:n_full] + partial))
            ctx = length + out
    reqs.sort(key=lambda r: r[0])
    assert all(len(h) == -(-i // block) for _, i, _, h in reqs)   # the Mooncake invariant
    return mooncake(*reqs)


CSV_HEADER = "conversation,turn,arrival,input_tokens,output_tokens\n"


# ---- examples ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_parse(name: str) -> None:
    fmt, n_convs, n_turns = EXAMPLES[name]
    path = DATA / name
    assert path.stat().st_size < 30 * 1024
    assert detect_format(path) == fmt
    convs = load_trace(path)
    assert len(convs) == n_convs and sum(len(c.turns) for c in convs) == n_turns
    assert [c.cid for c in convs] == list(range(n_convs))
    assert [c.arrival_s for c in convs] == sorted(c.arrival_s for c in convs)
    assert all(1 <= t.new_input <= 1_000_000 and 1 <= t.output <= 1_000_000 for c in convs for t in c.turns)
    if fmt == "sharegpt":
        assert all(c.arrival_s == UNASSIGNED_ARRIVAL for c in convs)
    else:
        assert convs[0].arrival_s >= 0
    assert load_trace(path.read_bytes(), name=name) == convs


def test_sharegpt_example_first_conversation() -> None:
    # ex-01: "How long should I boil an egg for a soft yolk?" is 46 characters -> 12 tokens.
    first = load_trace(DATA / "example_sharegpt.json")[0]
    assert first.turns[0].new_input == estimate_tokens("How long should I boil an egg for a soft yolk?") == 12


# ---- ShareGPT ------------------------------------------------------------------------------------------

def test_estimate_tokens() -> None:
    assert traces.CHARS_PER_TOKEN == 4
    assert [estimate_tokens("x" * n) for n in (0, 1, 4, 5, 8, 9)] == [1, 1, 1, 2, 2, 3]
    assert estimate_tokens("\u00e9t\u00e9") == 1   # characters, not bytes


def test_sharegpt_pairs_turns(tmp_path: Path) -> None:
    records = [
        {"id": "a", "conversations": [
            {"from": "gpt", "value": "x" * 40},          # nothing to answer yet: skipped
            {"from": "human", "value": "x" * 8},         # 2
            {"from": "human", "value": "x" * 5},         # 2 -> one input of 4
            {"from": "gpt", "value": "x" * 9},           # 3
            {"from": "human", "value": "x" * 4},         # 1
            {"from": "gpt", "value": "x" * 40},          # 10
            {"from": "gpt", "value": "x"},               # 1 -> one output of 11
            {"from": "human", "value": "unanswered"}]},  # dropped
        {"id": "b", "conversations": [{"from": "human", "value": "only a question"}]},   # skipped
        {"id": "c", "conversation": [                    # WildChat style
            {"role": "system", "content": "x" * 12},      # 3, part of the first prompt
            {"role": "user", "content": "x" * 3},         # 1
            {"role": "assistant", "content": ""}]},       # 1
    ]
    path = write(tmp_path, "s.json", json.dumps(records, indent=2))
    convs = load_trace(path)
    assert shape(convs) == [(-1.0, [(4, 3), (1, 11)]), (-1.0, [(4, 1)])]
    assert [c.cid for c in convs] == [0, 1]
    # the same records as JSONL, and a single JSONL record
    jsonl = write(tmp_path, "s.jsonl", "\n".join(json.dumps(r) for r in records) + "\n")
    assert load_trace(jsonl) == convs
    assert detect_format(jsonl) == "sharegpt"
    assert shape(load_trace(json.dumps(records[2]).encode())) == [(-1.0, [(4, 1)])]


def test_sharegpt_messages_key_and_empty_list() -> None:
    data = json.dumps([{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}])
    assert shape(load_trace(data.encode())) == [(-1.0, [(1, 1)])]
    assert shape(load_trace(b"\n  [\n " + data.encode()[1:-1] + b" \n ]  \n")) == [(-1.0, [(1, 1)])]
    err = refused(" [ ] ")
    assert "no conversation with a complete turn" in str(err)


def test_sharegpt_errors_name_the_line() -> None:
    ok = '{"id": 1, "conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}'
    refused_at(f"[\n{ok},\n{ok},\n{{\"id\": 3, \"conversations\": [}}\n]", 4)                  # malformed
    refused_at(f"[\n{ok},\n{ok}\n{ok}\n]", 4)                                                  # missing comma
    refused_at(f"[\n{ok}\n]\nextra", 4)                                                        # trailing data
    refused_at(f"[\n{ok},\n  42\n]", 3)                                                        # not an object
    refused_at(f"[\n{ok},\n{{\"id\": 2, \"turns\": []}}\n]", 3)                               # no message list
    refused_at(f"[\n{ok},\n{{\"conversations\": {{}}}}\n]", 3)                                 # not a list
    err = refused_at(f"{ok}\n\n{{\"conversations\": [{{\"from\": \"robot\", \"value\": \"x\"}}]}}\n", 3, "sharegpt")
    assert "role 'robot'" in str(err) and "human" in str(err)
    refused_at(f"{ok}\n{{\"conversations\": [{{\"from\": \"human\", \"value\": 7}}]}}\n", 2)   # value not text
    refused_at(f"{ok}\n{{\"conversations\": [\"hello\"]}}\n", 2)                               # message not object
    refused_at(f"{ok}\n{ok[:-5]}\n", 2)                                                        # bad JSONL line
    refused_at("[" + "[" * 100_000, 1)                                                         # nesting


def test_sharegpt_turn_cap() -> None:
    msgs = [{"from": f, "value": "x"} for _ in range(65) for f in ("human", "gpt")]
    ok = json.dumps({"conversations": msgs[:128]})
    assert len(load_trace(ok.encode())[0].turns) == 64
    err = refused_at(ok + "\n" + json.dumps({"id": "long", "conversations": msgs}) + "\n", 2)
    assert "more than 64 turns" in str(err) and "'long'" in str(err)


def test_sharegpt_message_token_cap() -> None:
    big = json.dumps([{"conversations": [{"from": "human", "value": "x" * 4_000_004},
                                         {"from": "gpt", "value": "y"}]}])
    err = refused_at(big, 1)
    assert "1000000" in str(err)


# ---- Mooncake ------------------------------------------------------------------------------------------

def test_mooncake_shape_recovers_interleaved_conversations() -> None:
    rng = random.Random(5)
    convs, t = [], 0
    for i in range(40):
        if i % 4 == 0:   # multi-turn: turn 1 has >= 2 full blocks (a shorter one cannot be told from block 0)
            turns = [(rng.randint(1024, 4000), rng.randint(1, 800))] + \
                    [(rng.randint(1, 900), rng.randint(1, 800)) for _ in range(rng.randint(1, 11))]
        else:            # one-turn requests sharing only block 0 (some have no second full block at all)
            turns = [(rng.randint(512, 6000), rng.randint(1, 800))]
        convs.append((t, turns))
        t += rng.randint(0, 4000)   # turns are 30 s apart: conversations interleave
    got, stats = import_trace(mooncake_shaped(convs).encode(), name="mc.jsonl")
    assert shape(got) == [((start - convs[0][0]) / 1000, turns) for start, turns in convs]
    n_req = sum(len(turns) for _, turns in convs)
    assert (stats.requests, stats.conversations, stats.continuations) == (n_req, 40, n_req - 40)
    assert stats.multi_turn == 10 and stats.max_turns == max(len(turns) for _, turns in convs)
    assert stats.first_block_only == 39 and stats.length_rejected == 0   # all but the first share block 0
    assert stats.block_tokens == 512 and "ceil(input / 512)" in stats.block_note
    assert stats.time_unit == "ms" and "documented" in stats.time_unit_note
    text = stats.describe()
    assert f"{n_req} requests -> 40 conversations" in text and "up to" in text and "full 512-token blocks" in text
    assert "39 requests share only the first block" in text


def test_mooncake_block_size_detected_or_given() -> None:
    convs = [(0, [(300, 10), (40, 10), (50, 10)]), (500, [(280, 5)]), (900, [(400, 20), (70, 5)])]
    text = mooncake_shaped(convs, block=128).encode()
    got, stats = import_trace(text)
    assert stats.block_tokens == 128 and "detected" in stats.block_note
    assert [len(c.turns) for c in got] == [3, 1, 2]
    got, stats = import_trace(text, block_tokens=512)   # the wrong size, given: full blocks are input // 512
    assert stats.block_tokens == 512 and "given" in stats.block_note and len(got) == 6
    with pytest.raises(TraceError, match=r"^t: block size 0 is not allowed; must be an integer in \[1, "):
        import_trace(text, name="t", block_tokens=0)


def test_mooncake_continuation_rule_edges() -> None:
    text = mooncake(
        (0, 1100, 100, [0, 1, 2]),              # A: full blocks [0, 1]
        (1000, 1600, 50, [0, 1, 3, 4]),         # A turn 2 (1600 >= 1100 + 100): full blocks [0, 1, 3]
        (2000, 1100, 10, [0, 1, 5]),            # B: a branch of A's first turn (its tail is now [0, 1, 3])
        (3000, 1200, 10, [0, 1, 6]),            # B turn 2: extends B's [0, 1] (A's tail no longer matches)
        (4000, 1000, 10, [0, 7]),               # one full block only: never continued
        (5000, 2200, 10, [0, 1, 3, 8, 9]),      # A turn 3: A's [0, 1, 3] is longer than B's [0, 1]
        (6000, 1205, 10, [0, 1, 10]),           # extends B's [0, 1] but 1205 < 1200 + 10: a new conversation
        (7000, 1100, 5, [0, 7, 11]),            # starts with the one-block request's ids: not merged
    )
    got, stats = import_trace(text.encode())
    assert shape(got) == [
        (0.0, [(1100, 100), (400, 50), (550, 10)]),
        (2.0, [(1100, 10), (90, 10)]),
        (4.0, [(1000, 10)]),
        (6.0, [(1205, 10)]),
        (7.0, [(1100, 5)]),
    ]
    # a request too short for the longest match falls back to a shorter one that it does cover
    fallback = mooncake((0, 1100, 10, [0, 1, 2]), (1, 1600, 500, [0, 1, 3, 4]), (2, 1100, 10, [0, 1, 5]),
                        (3, 1700, 5, [0, 1, 3, 6]))   # A's [0, 1, 3] needs 2100; B's [0, 1] needs 1110
    assert shape(load_trace(fallback.encode(), time_unit="s")) == [(0.0, [(1100, 10), (490, 500)]),
                                                                   (2.0, [(1100, 10), (590, 5)])]
    assert stats.length_rejected == 1 and stats.continuations == 3
    # the most recent of two open conversations with the same full blocks
    twins = mooncake((0, 1100, 10, [0, 1, 2]), (1, 1100, 20, [0, 1, 3]), (2, 1200, 5, [0, 1, 4]))
    assert shape(load_trace(twins.encode())) == [(0.0, [(1100, 10)]), (0.001, [(1100, 20), (80, 5)])]


def test_mooncake_sorts_by_timestamp_and_accepts_integral_floats() -> None:
    text = mooncake((2000, 1700.0, 10, [1, 2, 3, 4]), (1000, 1500, 20, [1, 2, 3]), (1500, 40, 5, [7]))
    assert shape(load_trace(text.encode())) == [(0.0, [(1500, 20), (180, 10)]), (0.5, [(40, 5)])]


def test_mooncake_empty_hash_ids_never_chain() -> None:
    text = mooncake((0, 100, 10, []), (1, 200, 10, []), (2, 300, 10, [4]))
    assert len(load_trace(text.encode())) == 3


@pytest.mark.parametrize("field,value", [
    ("input_length", float("nan")), ("input_length", float("inf")), ("output_length", -5),
    ("output_length", 0), ("input_length", 1_000_001), ("input_length", "12"), ("input_length", 12.5),
    ("output_length", True), ("input_length", None),
])
def test_mooncake_bad_token_counts(field: str, value: object) -> None:
    bad = {"timestamp": 10, "input_length": 5, "output_length": 5, "hash_ids": [1]}
    bad[field] = value
    text = mooncake((0, 5, 5, [1])) + "\n" + json.dumps(bad) + "\n"   # blank line 2 still counts
    err = refused_at(text, 3)
    assert field in str(err) and "[1, 1000000]" in str(err)


@pytest.mark.parametrize("line,needle", [
    ('{"timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": [1', "malformed JSON"),
    ('{"timestamp": 1, "input_length": 5, "hash_ids": []}', "missing output_length"),
    ('{"timestamp": -1, "input_length": 5, "output_length": 5, "hash_ids": []}', "timestamp -1"),
    ('{"timestamp": NaN, "input_length": 5, "output_length": 5, "hash_ids": []}', "timestamp nan"),
    ('{"timestamp": "0", "input_length": 5, "output_length": 5, "hash_ids": []}', "timestamp '0'"),
    ('{"timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": [1, "2"]}', "hash_ids"),
    ('{"timestamp": 1, "input_length": 5, "output_length": 5, "hash_ids": 3}', "hash_ids"),
    ('[1, 2]', "expected a JSON object"),
    ('{"timestamp": 1, "input_length": ' + "9" * 5000 + ', "output_length": 5}', "malformed JSON"),
])
def test_mooncake_bad_lines(line: str, needle: str) -> None:
    err = refused_at(mooncake((0, 5, 5, [1]), (1, 5, 5, [2])) + line + "\n", 3, fmt="mooncake")
    assert needle in str(err), str(err)


def test_mooncake_turn_cap() -> None:
    assert len(load_trace(mooncake_shaped([(0, [(1100, 5)] + [(100, 5)] * 63)], gap_ms=1).encode())[0].turns) == 64
    err = refused_at(mooncake_shaped([(0, [(1100, 5)] + [(100, 5)] * 64)], gap_ms=1), 65)
    assert "more than 64 turns" in str(err) and "line 1" in str(err)


def test_mooncake_time_units() -> None:
    reqs = [(k * 2, 600, 5, [0, k + 1]) for k in range(101)]   # 101 one-turn requests over 200 units
    text = mooncake(*reqs).encode()
    convs, stats = import_trace(text)
    assert convs[-1].arrival_s == 0.2 and stats.time_unit == "ms" and "--time-unit" in stats.describe()
    assert "arrivals span 0.2 s" in stats.describe()   # the assumption and its consequence are printed
    convs, stats = import_trace(text, time_unit="s")
    assert convs[-1].arrival_s == 200.0 and "timestamps in s (given)" in stats.describe()
    assert import_trace(text, time_unit=" US ")[0][-1].arrival_s == pytest.approx(2e-4)
    # seconds with fractions are not silently milliseconds
    err = refused_at(mooncake((0, 600, 5, [0]), (0.5, 600, 5, [1]), (1.25, 600, 5, [2])), 2)
    assert "timestamp 0.5 has a fraction" in str(err) and "s, ms or us" in str(err)
    assert load_trace(mooncake((0, 600, 5, [0]), (0.5, 600, 5, [1])).encode(), time_unit="s")[1].arrival_s == 0.5
    for bad in ("min", "", 1, None.__class__):
        with pytest.raises(TraceError, match=r"^m\.jsonl: time unit .* is not allowed; allowed: s, ms, us$"):
            load_trace(text, name="m.jsonl", time_unit=bad)
    # the day cap applies in seconds, after the unit
    load_trace(mooncake((0, 5, 5, [1]), (86_400, 5, 5, [2])).encode(), time_unit="s")
    with pytest.raises(TraceError, match="line 2: arrival 86401 s is past the cap"):
        load_trace(mooncake((0, 5, 5, [1]), (86_401, 5, 5, [2])).encode(), time_unit="s")


def test_csv_time_units() -> None:
    rows = "a,1,1500,5,5\nb,1,3000,5,5\n"
    convs, stats = import_trace((CSV_HEADER + rows).encode(), time_unit="ms")
    assert [c.arrival_s for c in convs] == [1.5, 3.0] and stats.time_unit_note == "given"
    stats = import_trace((CSV_HEADER + "a,1,1.5,5,5\n").encode())[1]
    assert stats.time_unit == "s" and "documented" in stats.time_unit_note
    ms_header = CSV_HEADER.replace("arrival", "arrival_ms")
    convs, stats = import_trace((ms_header + rows).encode())
    assert [c.arrival_s for c in convs] == [1.5, 3.0] and "arrival_ms column" in stats.time_unit_note
    assert load_trace((ms_header + rows).encode(), time_unit="ms") == convs
    with pytest.raises(TraceError, match=r"^t\.csv line 1: the header's arrival_ms column is in ms but the time "
                                         "unit given is s"):
        load_trace((ms_header + rows).encode(), name="t.csv", time_unit="s")
    err = refused_at("conversation,turn,arrival,arrival_s,input_tokens,output_tokens\na,1,1,1,5,5\n", 1)
    assert "2 arrival columns" in str(err)
    assert import_trace((CSV_HEADER + "a,1,,5,5\n").encode(), time_unit="ms")[1].time_unit is None


def test_mooncake_span_cap() -> None:
    refused_at(mooncake((0, 5, 5, [1]), (86_400_001, 5, 5, [2])), 2)


# ---- CSV -----------------------------------------------------------------------------------------------

def test_csv_any_row_order(tmp_path: Path) -> None:
    text = CSV_HEADER + "\n".join([
        "b,2,,30,40",          # later turns may leave arrival blank
        "a,1,2.5,100,10",
        "b,1,1.0,7,8",
        "a,3,99,5,6",          # a later turn's arrival is ignored
        "a,2,3.0,1e2,20.0",    # integral numbers in any notation
        "",
        "c,1,,9,9",            # no arrival: unassigned
    ]) + "\n"
    convs = load_trace(write(tmp_path, "t.csv", text))
    assert shape(convs) == [(-1.0, [(9, 9)]), (1.0, [(7, 8), (30, 40)]), (2.5, [(100, 10), (100, 20), (5, 6)])]


def test_csv_column_order_extra_columns_quotes_bom_crlf() -> None:
    text = '\ufeff"Turn",arrival,note,conversation,output_tokens,input_tokens\r\n1,0.5,"a, quoted",x,3,4\r\n'
    assert shape(load_trace(text.encode())) == [(0.5, [(4, 3)])]


@pytest.mark.parametrize("cell,needle", [
    ("nan", "not finite"), ("inf", "not finite"), ("1e999", "out of range"), ("-1", "out of range"),
    ("0", "out of range"), ("1000001", "out of range"), ("abc", "not a number"), ("1.5", "not an integer"),
    ("", "not a number"), ("1_000", "not a number"), ("\u0661\u0662", "not a number"), ("9" * 5000, "out of range"),
])
def test_csv_bad_token_cells(cell: str, needle: str) -> None:
    err = refused_at(CSV_HEADER + "a,1,0,5,5\n" + f"b,1,0,{cell},5\n", 3)
    assert needle in str(err) and "input_tokens" in str(err) and "[1, 1000000]" in str(err)


@pytest.mark.parametrize("rows,line,needle", [
    (["a,1,0,5,5", "a,3,0,5,5"], 3, "no turn 2"),
    (["a,2,0,5,5", "b,1,0,5,5"], 2, "no turn 1"),
    (["a,1,0,5,5", "a,1,0,6,6"], 3, "repeats line 2"),
    (["a,1,0,5,5", "a,65,0,5,5"], 3, "[1, 64]"),
    (["a,0,0,5,5"], 2, "turn"),
    (["a,1,-2,5,5"], 2, "negative"),
    (["a,1,nan,5,5"], 2, "arrival"),
    (["a,1,90000,5,5"], 2, "one simulated day"),
    (["a,1,0,5"], 2, "4 fields, the header has 5"),
    (["a,1,0,5,5", " ,1,0,5,5"], 3, "conversation is empty"),
])
def test_csv_bad_rows(rows: list[str], line: int, needle: str) -> None:
    err = refused_at(CSV_HEADER + "\n".join(rows) + "\n", line)
    assert needle in str(err), str(err)


def test_csv_header_problems() -> None:
    err = refused_at("conversation,turn,arrival,input_tokens\na,1,0,5\n", 1)
    assert "lacks output_tokens" in str(err)
    refused_at("\nconversation,turn,arrival,tokens\n", 2, fmt="csv")
    assert "no data rows" in str(refused(CSV_HEADER))


# ---- input handling, detection, caps -------------------------------------------------------------------

def test_unknown_format_and_empty_and_encoding() -> None:
    err = refused_at("\n\nhello world\n", 3)
    assert all(f in str(err) for f in ("ShareGPT", "Mooncake", "conversation,turn,arrival"))
    err = refused_at('{"foo": 1}\n', 1)
    assert "neither ShareGPT nor Mooncake" in str(err)
    assert "empty" in str(refused(b""))
    assert "empty" in str(refused(b" \n\t\r\n"))
    err = refused_at(b"conversation,turn\n\xff\xfe,1\n", 2)
    assert "UTF-8" in str(err)
    assert "sharegpt, mooncake, csv" in str(refused(CSV_HEADER + "a,1,0,5,5\n", fmt="parquet"))


def test_explicit_format_overrides_detection() -> None:
    text = mooncake((0, 5, 5, [1]))
    assert detect_format(text.encode()) == "mooncake"
    err = refused_at(text, 1, fmt="sharegpt")
    assert "conversation 1" in str(err)
    assert load_trace(text.encode(), fmt=" MoonCake ") == load_trace(text.encode())


def test_size_cap_bytes_and_path(tmp_path: Path) -> None:
    err = refused(b" " * (MAX_TRACE_BYTES + 1))
    assert "52,428,800" in str(err) and "50 MiB" in str(err)
    big = tmp_path / "big.csv"
    with big.open("wb") as fh:   # sparse: nothing is written
        fh.truncate(MAX_TRACE_BYTES + 1)
    with pytest.raises(TraceError, match=r"^big\.csv: .*cap of 52,428,800 bytes"):
        load_trace(big)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"^nope\.csv: cannot read"):
        load_trace(tmp_path / "nope.csv")
    with pytest.raises(TraceError, match="cannot read"):
        load_trace(str(tmp_path))


def test_one_turn_conversations_are_capped_by_requests_only(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = "".join(f"c{i},1,{i / 100},5,5\n" for i in range(25_000))   # > 20,000: the scenario's cap
    convs, stats = import_trace((CSV_HEADER + rows).encode())
    assert len(convs) == stats.conversations == stats.requests == 25_000 and stats.max_turns == 1
    assert not hasattr(traces, "MAX_TRACE_CONVERSATIONS") and not hasattr(trace_common, "MAX_TRACE_CONVERSATIONS")
    assert traces.MAX_TRACE_REQUESTS == 200_000
    monkeypatch.setattr(trace_common, "MAX_TRACE_REQUESTS", 3)   # the caps live with the readers
    err = refused_at(mooncake(*[(k, 5, 5, [k]) for k in range(4)]), 4)
    assert "more than 3 requests" in str(err)
    ok = '{"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}\n'
    assert "more than 3 requests" in str(refused_at(ok * 4, 4))
    assert "more than 3 requests" in str(refused_at(CSV_HEADER + rows, 5))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_bytes_path_and_file_objects_agree(name: str) -> None:
    path = DATA / name
    raw = path.read_bytes()
    want = load_trace(path)
    for source in (str(path), raw, bytearray(raw), memoryview(raw), io.BytesIO(raw)):
        assert load_trace(source) == want
    assert trace_digest(load_trace(raw)) == trace_digest(want)


def test_error_labels() -> None:
    with pytest.raises(TraceError, match=r"^upload\.csv line 1: "):
        load_trace(b"junk\n", name="upload.csv")
    with pytest.raises(TraceError, match=r"^'bad\\nname' line 1: "):
        load_trace(b"junk\n", name="bad\nname")


# ---- arrivals and digest -------------------------------------------------------------------------------

def test_assign_arrivals() -> None:
    convs = (Conversation(0, -1.0, (Turn(1, 1),)), Conversation(1, 0.25, (Turn(2, 2),)),
             Conversation(2, -1.0, (Turn(3, 3),)))
    out = assign_arrivals(convs, qps=2.0, seed=7)
    assert out == assign_arrivals(convs, qps=2.0, seed=7)
    assert out != assign_arrivals(convs, qps=2.0, seed=8)
    assert [c.cid for c in out] == [0, 1, 2]
    assert all(c.arrival_s >= 0 for c in out) and [c.arrival_s for c in out] == sorted(c.arrival_s for c in out)
    assert any(c.arrival_s == 0.25 and c.turns == (Turn(2, 2),) for c in out)
    assert sorted(c.turns[0].new_input for c in out) == [1, 2, 3]
    many = assign_arrivals([Conversation(i, -1.0, (Turn(1, 1),)) for i in range(4000)], qps=4.0, seed=1)
    assert math.isclose(many[-1].arrival_s / 4000, 0.25, rel_tol=0.05)   # mean gap 1/qps
    for bad in (0, -1.0, float("nan"), float("inf"), True):
        with pytest.raises(ScenarioError, match="^qps: "):
            assign_arrivals(convs, qps=bad, seed=1)


def test_assign_arrivals_on_example_gives_poisson_times() -> None:
    convs = assign_arrivals(load_trace(DATA / "example_sharegpt.json"), qps=4.0, seed=42)
    assert len(convs) == 20 and all(c.arrival_s > 0 for c in convs)


def test_digest_stability() -> None:
    convs = (Conversation(0, 0.0, (Turn(10, 20), Turn(5, 6))), Conversation(1, 1.5, (Turn(7, 8),)))
    d = trace_digest(convs)
    assert d == "6a2478db8467b75c" and len(d) == 16   # pinned: scenarios refer to traces by this value
    assert trace_digest(list(convs)) == d
    assert trace_digest((Conversation(5, 0, (Turn(10, 20), Turn(5, 6))), convs[1])) == d   # cid, int arrival
    assert trace_digest((convs[0], Conversation(1, 1.5, (Turn(7, 9),)))) != d
    assert trace_digest(convs[::-1]) != d
    assert trace_digest((Conversation(0, 0.0, (Turn(10, 20),)), Conversation(1, 0.0, (Turn(5, 6),)))) != \
        trace_digest((Conversation(0, 0.0, (Turn(10, 20), Turn(5, 6))),))


# ---- qps as a time scale on timestamped traces ---------------------------------------------------------

def test_qps_scales_a_timestamped_trace() -> None:
    convs = load_trace(DATA / "example.csv")
    rate = native_rate(convs)
    span = convs[-1].arrival_s - convs[0].arrival_s
    assert rate == pytest.approx((len(convs) - 1) / span)
    t0 = convs[0].arrival_s
    for k in (0.5, 1.0, 2.0, 8.0):
        out = assign_arrivals(convs, qps=k * rate, seed=1)
        assert time_scale(convs, k * rate) == pytest.approx(k)
        assert [c.turns for c in out] == [c.turns for c in convs]          # same conversations, same order
        assert [c.arrival_s - t0 for c in out] == pytest.approx([(c.arrival_s - t0) / k for c in convs])
        assert native_rate(out) == pytest.approx(k * rate)                 # the run's rate is the qps asked
        assert assign_arrivals(convs, qps=k * rate, seed=2) == out         # no randomness in a replay
    assert assign_arrivals(convs, 1.0, 1) != assign_arrivals(convs, 2.0, 1)
    line = describe_replay(convs, 2 * rate)
    assert f"load x2 of the trace's own {rate:.4g} conv/s" in line and "k = qps / native rate" in line
    with pytest.raises(ScenarioError, match=r"^qps: 0\.0001 spreads the trace's 15 conversations over"):
        assign_arrivals(convs, qps=1e-4, seed=1)


def test_qps_on_traces_without_a_rate() -> None:
    one = (Conversation(0, 3.0, (Turn(1, 1),)),)
    assert native_rate(one) is None and time_scale(one, 5.0) is None
    assert assign_arrivals(one, 5.0, 1)[0].arrival_s == 3.0
    assert "all arrive at once" in describe_replay(one, 5.0)
    free = load_trace(DATA / "example_sharegpt.json")
    assert native_rate(free) is None and "20 conversations without a timestamp get Poisson" in \
        describe_replay(free, 2.0)


def test_cli_run_prints_the_import_and_scales_by_qps(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from ppd_core.cli import main
    import pandas as pd
    arrivals = {}
    for qps in (1, 4):
        rec = tmp_path / f"r{qps}.csv"
        assert main(["run", "--trace", str(DATA / "example_mooncake.jsonl"), f"qps={qps}", "--json",
                     "--records", str(rec)]) == 0
        cap = capsys.readouterr()
        summary = json.loads(cap.out)
        assert "27 requests -> 12 conversations" in cap.err and "timestamps in ms" in cap.err
        assert f"qps={qps}: timestamps replayed at qps={qps} conv/s: load x" in cap.err
        assert "turn2plus: figures rest on 15 requests (fewer than 100); treat them as noisy" in summary["warnings"]
        df = pd.read_csv(rec)
        arrivals[qps] = df[df.turn == 1].sort_values("conversation").arrival_s.to_numpy()
    assert arrivals[1] - arrivals[1][0] == pytest.approx(4 * (arrivals[4] - arrivals[4][0]))
    assert main(["run", "--trace", str(DATA / "example.csv"), "conversations=5"]) == 0
    assert "warning: turn2plus: figures rest on 26 requests" in capsys.readouterr().out
    assert main(["run", "--time-unit", "s"]) == 2
    err = capsys.readouterr().err
    assert err == "error: --time-unit: applies only to a trace; add --trace FILE\n"
    with pytest.raises(SystemExit) as info:
        main(["run", "--trace", str(DATA / "example.csv"), "--time-unit", "min"])
    assert info.value.code == 2 and "invalid choice: 'min' (choose from 's', 'ms', 'us')" in capsys.readouterr().err


def test_cli_run_replays_a_timestamped_trace_at_its_own_rate_unless_qps_is_given(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Issue #30: without qps a timestamped trace is replayed as recorded (k = 1), not at the default qps=4;
    the summary and the text say the rate used."""
    from ppd_core.cli import main
    import pandas as pd
    path = DATA / "example_mooncake.jsonl"
    own = native_rate(load_trace(path))
    rec = tmp_path / "own.csv"
    assert main(["run", "--trace", str(path), "--json", "--records", str(rec)]) == 0
    cap = capsys.readouterr()
    summary = json.loads(cap.out)
    assert summary["scenario"]["qps"] == own and own != 4.0
    assert summary["arrivals"] == {"qps": own, "trace_qps": own, "load_factor": 1.0,
                                   "rule": "the trace's own rate (no qps given)"}
    assert f"the trace replays at its own rate, {own:.4g} conv/s" in cap.err
    df = pd.read_csv(rec)
    first = df[df.turn == 1].sort_values("arrival_s").arrival_s.to_numpy()
    stamps = sorted(c.arrival_s for c in load_trace(path))
    assert first - first[0] == pytest.approx(np.array(stamps) - stamps[0])     # as recorded
    assert main(["run", "--trace", str(path), "qps=4"]) == 0
    out = capsys.readouterr().out
    assert f"arrivals: the trace replays at 4 conv/s, x{4 / own:.3g} its own {own:.4g} conv/s (qps given)" in out
    assert main(["run", "--trace", str(DATA / "example_sharegpt.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["arrivals"]["rule"].startswith("default: the trace has no arrival")
    assert main(["run", "conversations=5", "workload=small_tiny", "--json"]) == 0
    assert "arrivals" not in json.loads(capsys.readouterr().out)        # synthetic runs: summary as before


def test_sample_warnings_only_below_100() -> None:
    from ppd_core.metrics import MIN_SAMPLE, sample_warnings
    groups = {"turn1": {"count": 100}, "turn2plus": {"count": 99}, "all": {"count": 0}}
    assert MIN_SAMPLE == 100
    assert sample_warnings(groups) == ["turn2plus: figures rest on 99 requests (fewer than 100); treat them as noisy",
                                       "all: no successful requests; its figures are empty"]
    assert sample_warnings({"turn2plus": {"count": 1_000}}) == []


def test_mooncake_many_open_conversations_with_one_prefix_stay_fast() -> None:
    import time
    # 10,000 requests with the same two full blocks, none long enough to continue another: bounded work
    reqs = [(k, 1100, 10, [0, 1, k + 2]) for k in range(10_000)] + [(10_000, 1200, 5, [0, 1, 3, 7])]
    start = time.perf_counter()
    convs, stats = import_trace(mooncake(*reqs).encode())
    assert time.perf_counter() - start < 10   # unbounded, the 10,000 x 10,000 scan takes minutes
    assert stats.conversations == 10_000 and stats.length_rejected == 9_999
    assert convs[-1].turns == (Turn(1100, 10), Turn(90, 5))   # the most recent open one is continued
