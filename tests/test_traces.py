"""Trace import (ppd_core.workloads.traces): the three formats, every refusal, caps, bytes/path equivalence, digest."""
from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest

from ppd_core.workloads import trace_common, traces
from ppd_core.config.errors import ScenarioError, TraceError
from ppd_core.workloads.traces import (
    MAX_TRACE_BYTES,
    UNASSIGNED_ARRIVAL,
    assign_arrivals,
    detect_format,
    estimate_tokens,
    load_trace,
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

def test_mooncake_groups_by_hash_prefix(tmp_path: Path) -> None:
    text = mooncake(
        (5000, 1000, 100, [1, 2]),            # conversation A starts (t = 0 s after the shift)
        (5500, 700, 50, [1, 3]),              # shares block 1 only: a new conversation B
        (9000, 1500, 60, [1, 2, 4]),          # A turn 2: new input 1500 - 1000 - 100 = 400
        (9100, 800, 10, [1, 3, 5]),           # B turn 2: 800 - 700 - 50 = 50
        (9200, 800, 10, [1, 3, 5]),           # same ids as B's last: not a proper prefix -> new conversation C
        (9300, 900, 20, [1, 3, 5, 6]),        # continues C (the most recent of B and C with ids [1, 3, 5])
        (12000, 1000, 30, [1, 2, 4, 7, 8]),   # A turn 3: shorter than A's history -> max(1, ...) = 1
        (13000, 300, 40, []),                 # no hash ids: its own conversation D
        (14000, 350, 40, [9]),                # E
    )
    convs = load_trace(write(tmp_path, "m.jsonl", text))
    assert shape(convs) == [
        (0.0, [(1000, 100), (400, 60), (1, 30)]),
        (0.5, [(700, 50), (50, 10)]),
        (4.2, [(800, 10), (90, 20)]),
        (8.0, [(300, 40)]),
        (9.0, [(350, 40)]),
    ]
    assert detect_format(text.encode()) == "mooncake"


def test_mooncake_sorts_by_timestamp_and_accepts_integral_floats() -> None:
    text = mooncake((2000, 600.0, 10, [1, 2, 3]), (1000, 500, 20, [1, 2]), (1500, 40, 5, [7]))
    assert shape(load_trace(text.encode())) == [(0.0, [(500, 20), (80, 10)]), (0.5, [(40, 5)])]


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
    reqs = [(k, 10 + 20 * k, 5, list(range(k + 1))) for k in range(64)]
    assert len(load_trace(mooncake(*reqs).encode())[0].turns) == 64
    err = refused_at(mooncake(*reqs, (64, 2000, 5, list(range(65)))), 65)
    assert "more than 64 turns" in str(err) and "line 1" in str(err)


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


def test_conversation_and_request_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = "".join(f"c{i},1,0,5,5\n" for i in range(20_001))
    err = refused_at(CSV_HEADER + rows, 20_002)
    assert "more than 20000 conversations" in str(err)
    assert len(load_trace((CSV_HEADER + rows[: rows.index("c20000")]).encode())) == 20_000
    monkeypatch.setattr(trace_common, "MAX_TRACE_REQUESTS", 3)   # the caps live with the readers
    err = refused_at(mooncake(*[(k, 5, 5, [k]) for k in range(4)]), 4)
    assert "more than 3 requests" in str(err)
    monkeypatch.setattr(trace_common, "MAX_TRACE_CONVERSATIONS", 2)
    ok = '{"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}\n'
    err = refused_at(ok * 3, 3)
    assert "more than 2 conversations" in str(err)


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
