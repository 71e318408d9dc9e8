"""Property tests (hypothesis) of every untrusted-input parser: scenarios (mapping, string, key=value list,
URL) and trace import. Bad input must only ever raise the library's one-line errors.

Fast by default (the whole file well under 30 s). ``PPD_LONG_TESTS=1`` selects the long profile: 2,000
examples for each of the 7 tests below, i.e. 14,000 generated inputs (hypothesis counts valid examples).
"""
from __future__ import annotations

import json
import os
import string
from typing import Any

from hypothesis import HealthCheck, example, given, reject, settings
from hypothesis import strategies as st

from ppd_core.config import scenario as scn
from ppd_core.config.errors import ScenarioError, TraceError
from ppd_core.config.scenario import FIELDS, SPEC, Scenario, parse, parse_lenient
from ppd_core.workloads.traces import CSV_COLUMNS, FORMATS, MAX_TRACE_TOKENS, MAX_TRACE_TURNS, load_trace
from ppd_core.workloads import Conversation

# ---- settings profiles (registered here, not in conftest.py; applied per test so that other test files'
# hypothesis settings are untouched) ------------------------------------------------------------------------
_COMMON = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ppd-fuzz-fast", parent=_COMMON, max_examples=60)
settings.register_profile("ppd-fuzz-long", parent=_COMMON, max_examples=2_000)
FUZZ = settings.get_profile("ppd-fuzz-long" if os.environ.get("PPD_LONG_TESTS") == "1" else "ppd-fuzz-fast")

HUGE_INT = 10**5000            # str() of it raises ValueError: a past bug in the scenario parser
OTHER_KEYS = ("query", "argument")


# ---- checks --------------------------------------------------------------------------------------------

def check_scenario_error(exc: ScenarioError) -> None:
    """One line, starting with a key name: a scenario key, an unknown key as given, or query/argument."""
    msg = str(exc)
    assert len(msg.splitlines()) == 1, msg
    assert isinstance(exc.key, str) and exc.key and exc.key.isprintable(), repr(exc.key)
    assert msg.startswith(exc.key + ": "), msg
    if not ("unknown key" in msg or "expected KEY=VALUE" in msg):
        assert exc.key in SPEC or exc.key in OTHER_KEYS, msg


def check_parse(source: Any) -> None:
    try:
        sc = parse(source)
    except ScenarioError as exc:
        check_scenario_error(exc)
    else:
        assert isinstance(sc, Scenario)
        assert parse(sc.to_query()) == sc


def check_lenient(source: Any) -> None:
    sc, problems = parse_lenient(source)
    assert isinstance(sc, Scenario)
    assert Scenario(**{f.key: getattr(sc, f.key) for f in FIELDS}) == sc   # valid: re-validates cleanly
    for p in problems:
        assert isinstance(p, ScenarioError)
        check_scenario_error(p)


# ---- strategies: raw, mostly invalid scenario input ------------------------------------------------------

keys = st.one_of(st.sampled_from(sorted(SPEC)), st.text(max_size=12),
                 st.sampled_from(sorted(SPEC)).map(str.upper))
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=30),
                         # built by map: hypothesis repr()s st.just() arguments, which fails for this int
                         st.sampled_from([1, -1]).map(lambda sign: sign * HUGE_INT))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                                 st.dictionaries(st.text(max_size=5), inner,
                                                                                 max_size=3)), max_leaves=8)


def _choice_like() -> st.SearchStrategy[str]:
    names = [c for f in FIELDS if f.kind == "choice" for c in f.choice_list()]
    return st.sampled_from(names).flatmap(lambda c: st.sampled_from([c, c.upper(), f" {c} ", c[:-1]]))


layout_like = st.lists(st.tuples(st.integers(-2, 300), st.sampled_from(["R", "P", "D", "pD", "pd", "X", ""])),
                       max_size=5).map(lambda parts: "_".join(f"{n}{r}" for n, r in parts))
number_text = st.one_of(st.integers(-10**6, 10**12).map(str), st.floats().map(repr), st.floats().map(str),
                        st.sampled_from(["nan", "-inf", "1e999", "0x10", "1_000", " 5 ", "", "1,2,3", "2.",
                                         "\u0663", "9" * 400, "1e-400"]))
value_text = st.one_of(number_text, _choice_like(), layout_like, st.text(max_size=40),
                       st.lists(number_text, max_size=10).map(",".join))
raw_values = st.one_of(json_values, value_text)
percent_junk = st.lists(st.one_of(st.sampled_from(["%", "%2", "%zz", "%E2%82", "%FF", "%00", "%0A", "&", "=", ";",
                                                   "+", "?", "#", "[", "]", "//", "%25", "&&", "=="]),
                                  keys, value_text), max_size=20).map("".join)


@st.composite
def query_strings(draw: st.DrawFn) -> str:
    pairs: list[tuple[str, str]] = draw(st.lists(st.tuples(keys, value_text), max_size=12))
    repeat: bool = draw(st.booleans())
    if pairs and repeat:   # repeated keys: the last one wins
        k = pairs[0][0]
        pairs += [(k, v) for v in draw(st.lists(value_text, min_size=1, max_size=4))]
    query = "&".join(f"{k}={v}" for k, v in pairs) + draw(st.one_of(st.just(""), percent_junk))
    return draw(st.sampled_from(["", "?", "https://example.org/app?", "/?", "http://[::1]:8501/?",
                                 "http://[broken/?", "ppd://x?y?"])) + query


@st.composite
def big_strings(draw: st.DrawFn) -> str:
    """~100 kB strings (beyond MAX_QUERY_CHARS) or just under the cap, built by repetition (fast to draw)."""
    unit = draw(st.one_of(query_strings(), percent_junk, st.text(min_size=1, max_size=20)))
    target = draw(st.sampled_from([100_000, scn.MAX_QUERY_CHARS - 1, scn.MAX_QUERY_CHARS + 1]))
    text = (unit or "a") * (target // max(1, len(unit or "a")) + 1)
    return text[:target]


# ---- (a) parse / parse_lenient on arbitrary input --------------------------------------------------------

@FUZZ
@given(st.dictionaries(keys, raw_values, max_size=8))
@example({"qps": HUGE_INT})
@example({"tp": HUGE_INT, "a\nb": 1, "": 2})
def test_parse_mapping(source: dict[str, Any]) -> None:
    check_parse(source)
    check_lenient(source)


@FUZZ
@given(st.one_of(query_strings(), st.text(max_size=200), percent_junk))
@example("http://[::1/?qps=2")
@example("layout=2P\n_2pD&\u2028=1")
def test_parse_string(source: str) -> None:
    check_parse(source)
    check_lenient(source)


@FUZZ
@given(st.lists(st.one_of(st.tuples(keys, value_text).map("=".join), st.text(max_size=30), query_strings()),
                max_size=8))
@example(["qps", "\n"])
@example(["qps=5", "https://h/?qps=6&qps=7"])
def test_parse_key_value_list(source: list[str]) -> None:
    check_parse(source)
    check_lenient(source)


# ---- (b) round trip of valid scenarios -----------------------------------------------------------------

def _field_values(spec: scn.FieldSpec) -> st.SearchStrategy[Any]:
    if spec.kind == "choice":
        return st.sampled_from(spec.choice_list()).flatmap(lambda c: st.sampled_from([c, c.lower(), c.upper()]))
    if spec.kind == "layout":
        return layouts()
    assert spec.lo is not None and spec.hi is not None   # every numeric field has both bounds
    if spec.kind == "int":
        return st.integers(int(spec.lo), int(spec.hi))
    floats = st.floats(spec.lo, spec.hi, exclude_min=spec.lo_open, allow_nan=False)
    if spec.kind == "floats":
        return st.lists(floats, min_size=1, max_size=8).map(tuple)
    return floats


@st.composite
def layouts(draw: st.DrawFn) -> str:
    n_r = draw(st.integers(0, 64))
    n_p = draw(st.integers(0, 64))
    n_d, n_pd = (draw(st.integers(0, 64)), draw(st.integers(0, 64))) if n_p else (0, 0)
    if n_p and not (n_d or n_pd):
        n_d = 1
    if not (n_r or n_p):
        n_r = 1
    parts = [f"{n}{r}" for n, r in ((n_r, "R"), (n_p, "P"), (n_d, "D"), (n_pd, "pD")) if n]
    return "_".join(draw(st.permutations(parts)))   # any order parses to the canonical R, P, D, pD order


@st.composite
def valid_scenarios(draw: st.DrawFn) -> Scenario:
    chosen = draw(st.sets(st.sampled_from([f.key for f in FIELDS])))
    kwargs = {k: draw(_field_values(SPEC[k])) for k in sorted(chosen)}
    try:
        return Scenario(**kwargs)
    except ScenarioError as exc:   # a cross-field cap (arrival span, request count, a node wider than its
        check_scenario_error(exc)  # server): allowed, not a round trip
        assert exc.key in ("qps", "turns", "conversations", "gpus_per_server"), str(exc)
        reject()


@FUZZ
@given(valid_scenarios())
def test_round_trip(sc: Scenario) -> None:
    q = sc.to_query()
    assert parse(q) == sc
    assert parse(sc.to_query(include_defaults=True)) == sc
    assert parse("https://ppd.example/?" + q) == sc
    assert parse(sc.to_params()) == sc
    assert parse([f"{k}={v}" for k, v in sc.to_params().items()]) == sc
    assert parse(sc.to_dict()) == sc
    assert parse_lenient(q) == (sc, [])


# ---- (c) URLs and query strings ------------------------------------------------------------------------

@FUZZ
@given(st.one_of(big_strings(), query_strings(), st.text(alphabet=string.printable, max_size=300)))
@example("k=" + "%" * 100_000)
@example("https://h/?" + "qps=1&" * 20_000)
def test_url_strings(source: str) -> None:
    check_parse(source)
    check_lenient(source)
    check_parse([source])
    check_lenient([source])


# ---- (d) trace import ----------------------------------------------------------------------------------

def check_trace(data: bytes, fmt: str | None = None) -> None:
    try:
        convs = load_trace(data, fmt=fmt, name="fuzz.bin")
    except TraceError as exc:
        msg = str(exc)
        assert len(msg.splitlines()) == 1 and msg.startswith("fuzz.bin"), msg
        assert exc.line is None or (exc.line >= 1 and f"line {exc.line}:" in msg), msg
        return
    assert isinstance(convs, tuple) and convs
    assert [c.cid for c in convs] == list(range(len(convs)))
    assert [c.arrival_s for c in convs] == sorted(c.arrival_s for c in convs)
    for c in convs:
        assert isinstance(c, Conversation) and 1 <= len(c.turns) <= MAX_TRACE_TURNS
        assert c.arrival_s == -1.0 or c.arrival_s >= 0
        assert all(1 <= t.new_input <= MAX_TRACE_TOKENS and 1 <= t.output <= MAX_TRACE_TOKENS for t in c.turns)


json_loose = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-5, 2_000_000), st.floats(),
                                    st.text(max_size=20)),
                          lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                  st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                          max_leaves=10)
# Valid building blocks, and the same mixed with junk: half the generated traces are clean apart from the
# optional damage below, so the parsers' success paths and late checks (caps, grouping) run too.
valid_tokens = st.integers(1, 3000)
tokens = st.one_of(valid_tokens, st.integers(-3, 70), st.floats(-1, 70), st.just(2_000_000), st.text(max_size=3))
valid_ids = st.lists(st.integers(0, 6), max_size=6)
mooncake_valid = st.fixed_dictionaries({"timestamp": st.integers(0, 10**6), "input_length": valid_tokens,
                                        "output_length": valid_tokens, "hash_ids": valid_ids})
mooncake_mixed = st.fixed_dictionaries(
    {"timestamp": st.one_of(st.integers(-10, 10**9), st.floats())},
    optional={"input_length": tokens, "output_length": tokens, "hash_ids": st.one_of(valid_ids, json_loose),
              "extra": json_loose})
message_valid = st.fixed_dictionaries({"from": st.sampled_from(["human", "gpt"]), "value": st.text(max_size=40)})
message_mixed = st.one_of(message_valid, st.fixed_dictionaries({}, optional={
    "from": st.sampled_from(["human", "gpt", "user", "assistant", "system", "robot", ""]),
    "role": st.sampled_from(["user", "assistant", "x"]), "value": st.one_of(st.text(max_size=40), json_loose),
    "content": st.text(max_size=20)}))
sharegpt_valid = st.fixed_dictionaries({"id": st.integers(), "conversations": st.lists(message_valid, max_size=10)})
sharegpt_mixed = st.one_of(
    st.fixed_dictionaries({"id": json_loose}, optional={"conversations": st.lists(message_mixed, max_size=8),
                                                       "conversation": st.lists(message_mixed, max_size=4)}),
    json_loose)
csv_valid = st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(1, 4), st.floats(0, 100),
                      valid_tokens, valid_tokens).map(lambda r: [str(x) for x in r])
csv_mixed = st.one_of(csv_valid, st.lists(st.one_of(
    st.integers(-2, 70).map(str), st.sampled_from(["", "a", "b", "nan", "1.5", "1e3", '"x,y"', "inf", "0", "2000000"]),
    st.text(max_size=6)), min_size=4, max_size=6))


@st.composite
def near_valid_traces(draw: st.DrawFn) -> bytes:
    """Structured inputs that get past format detection, so the parsers' inner checks are exercised."""
    kind = draw(st.sampled_from(FORMATS))
    clean = draw(st.booleans())
    if kind == "mooncake":
        lines = draw(st.lists(mooncake_valid if clean else st.one_of(mooncake_valid, mooncake_mixed),
                              min_size=1, max_size=12))
        text = "\n".join(json.dumps(d) for d in lines)
    elif kind == "sharegpt":
        records = draw(st.lists(sharegpt_valid if clean else st.one_of(sharegpt_valid, sharegpt_mixed),
                                min_size=1, max_size=6))
        text = json.dumps(records, indent=draw(st.sampled_from([None, 1]))) if draw(st.booleans()) else \
            "\n".join(json.dumps(r) for r in records)
    else:
        header = draw(st.permutations(list(CSV_COLUMNS)))
        order = [CSV_COLUMNS.index(h) for h in header]
        if clean:   # whole conversations (turns 1..n), rows shuffled
            sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
            rows = draw(st.permutations([[f"c{i}", str(k), *draw(csv_valid)[2:]]
                                         for i, n in enumerate(sizes) for k in range(1, n + 1)]))
        else:
            rows = draw(st.lists(csv_mixed, max_size=12))
        text = "\n".join([",".join(header)] + [",".join(r[i] for i in order) if len(r) == 5 else ",".join(r)
                                                for r in rows])
    data = text.encode("utf-8")
    if draw(st.integers(0, 3)) == 0:   # damage: cut it somewhere and splice in raw bytes
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + draw(st.binary(max_size=4)) + data[cut + draw(st.integers(0, 3)):]
    return data


@FUZZ
@given(st.binary(max_size=2_000), st.sampled_from((None,) + FORMATS))
@example(b"\xef\xbb\xbf", None)
@example(b"[" * 50_000, None)
@example(b'{"timestamp": 0, "input_length": 1' + b"0" * 5000 + b"}", None)
def test_trace_arbitrary_bytes(data: bytes, fmt: str | None) -> None:
    check_trace(data, fmt)


@FUZZ
@given(near_valid_traces(), st.sampled_from((None,) + FORMATS))
def test_trace_near_valid(data: bytes, fmt: str | None) -> None:
    check_trace(data, fmt)
