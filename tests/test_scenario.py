"""The Scenario spec: every key round-trips through the query string, defaults stay out of links, whole URLs
parse, the lenient (dashboard) parser never raises and clamps out-of-range numbers, and size caps are
refused with the cap in the message."""
from __future__ import annotations

import math
from dataclasses import fields

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppd_core import FIELDS, SPEC, Scenario, ScenarioError, parse, parse_lenient
from ppd_core.config.scenario import (OPTIONAL_KEYS, MAX_ARRIVAL_SPAN_S, MAX_CONVERSATIONS, MAX_QUERY_CHARS, MAX_REQUESTS,
                               render_value)

CHOICE_PICKS = {"workload": "large_huge_paste", "model": "Qwen2.5-14B", "gpu": "H200", "tp": "4"}


def nondefault(spec):
    """A valid value of the key that differs from its default (and is not a round number, for floats)."""
    if spec.kind == "layout":
        return "1P_3D"
    if spec.kind == "choice":
        if spec.key in CHOICE_PICKS:
            return CHOICE_PICKS[spec.key]
        return next(c for c in spec.choice_list() if c != spec.default)
    if spec.kind == "floats":
        return (50.0, 250.5)
    step = 1 if spec.kind == "int" else 0.37
    for cand in (spec.default + step, spec.default - step):
        lo_ok = spec.lo is None or (cand > spec.lo if spec.lo_open else cand >= spec.lo)
        if lo_ok and (spec.hi is None or cand <= spec.hi):
            return cand
    raise AssertionError(spec.key)


@pytest.mark.parametrize("spec", FIELDS, ids=[f.key for f in FIELDS])
def test_every_key_round_trips_and_only_non_defaults_are_rendered(spec):
    value = nondefault(spec)
    sc = Scenario(**{spec.key: value})
    assert getattr(sc, spec.key) == value
    q = sc.to_query()
    assert q.startswith(spec.key + "=") and "&" not in q, q   # only the changed key is in the link
    assert parse(q) == sc
    assert parse("?" + q) == sc
    assert parse(f"http://host:8501/explore?{q}#frag") == sc
    assert parse(sc.to_params()) == sc
    assert parse([f"{k}={v}" for k, v in sc.to_params().items()]) == sc
    assert parse(sc.to_dict()) == sc
    assert parse(sc.to_query(include_defaults=True)) == sc
    # explicitly given defaults are still left out
    assert Scenario(**{spec.key: spec.default}).to_query() == ""


def test_all_keys_changed_at_once_round_trip():
    values = {f.key: nondefault(f) for f in FIELDS}
    sc = Scenario(**values)
    q = sc.to_query()
    assert [part.split("=", 1)[0] for part in q.split("&")] == [f.key for f in FIELDS]
    assert parse(q) == sc
    assert hash(parse(q)) == hash(sc)


def test_defaults_render_to_an_empty_query():
    assert Scenario().to_query() == ""
    assert Scenario().to_params() == {}
    assert parse("") == Scenario() == parse({}) == parse([])
    full = Scenario().to_params(include_defaults=True)
    # every key, but the optional ones (per-role hardware, placement), written only when set (links as before)
    assert list(full) == [f.key for f in FIELDS if f.key not in OPTIONAL_KEYS]
    assert parse(full) == Scenario()


def test_dataclass_defaults_equal_field_specs():
    assert [f.name for f in fields(Scenario)] == [s.key for s in FIELDS] == list(SPEC)
    sc = Scenario()
    for f in fields(Scenario):
        spec = SPEC[f.name]
        assert f.default == spec.default, f.name
        assert getattr(sc, f.name) == spec.default, f.name
        assert type(getattr(sc, f.name)) is type(spec.default), f.name


def test_whole_url_parses():
    sc = parse("http://host/explore?qps=2&layout=1P_3D")
    assert sc == Scenario(qps=2.0, layout="1P_3D")
    assert sc.qps == 2.0 and isinstance(sc.qps, float)
    assert parse("https://example.org:8501/?layout=2P_2D&policy=pd&slo_tpot_ms=30,10") == \
        Scenario(layout="2P_2D", policy="pd", slo_tpot_ms=(10.0, 30.0))
    assert parse("/explore?turns=3") == Scenario(turns=3)
    assert parse(["http://host/explore?qps=2&layout=1P_3D"]) == sc


def test_parse_details():
    assert parse("qps=1&qps=3").qps == 3.0                       # the last repeated key wins
    assert parse("policy=PD&gpu=h100-sxm") == Scenario(policy="pd", gpu="H100-SXM")
    assert parse("slo_ttft_ms=500,100").slo_ttft_ms == (100.0, 500.0)
    assert parse("layout=2pD_2P").layout == "2P_2pD"             # canonical role order
    assert parse("conversations=10.0").conversations == 10


@pytest.mark.parametrize("query,key", [
    ("layout=9X", "layout"), ("qps=-1", "qps"), ("qps=nan", "qps"), ("bandwidth_gbps=1e400", "bandwidth_gbps"),
    ("turns=100000", "turns"), ("model=unknown", "model"), ("foo=1", "foo"), ("conversations=2.5", "conversations"),
    ("layout=2D", "layout"), ("slo_ttft_ms=", "slo_ttft_ms"), ("tp=3", "tp"), ("qps=0", "qps"),
])
def test_strict_parse_names_the_bad_key(query, key):
    with pytest.raises(ScenarioError) as ei:
        parse(query)
    assert ei.value.key == key
    msg = str(ei.value)
    assert msg.startswith(f"{key}: ") and "\n" not in msg


# ---- caps ----------------------------------------------------------------------------------------------------
def test_request_cap_refused_with_the_cap():
    with pytest.raises(ScenarioError) as ei:
        parse("conversations=20000&turns=64")
    assert ei.value.key == "turns" and str(MAX_REQUESTS) in str(ei.value)
    with pytest.raises(ScenarioError) as ei:
        Scenario(conversations=MAX_CONVERSATIONS, workload="large_tiny", turns=11)
    assert str(MAX_REQUESTS) in str(ei.value)
    Scenario(conversations=MAX_CONVERSATIONS, workload="large_tiny", turns=10)   # exactly at the cap is fine


def test_arrival_span_cap_refused_with_the_cap():
    with pytest.raises(ScenarioError) as ei:
        Scenario(conversations=20_000, qps=0.1)
    assert ei.value.key == "qps" and f"{MAX_ARRIVAL_SPAN_S:.0f}" in str(ei.value)
    with pytest.raises(ScenarioError) as ei:
        parse("qps=1000&arrival_window_s=3600")
    assert ei.value.key == "qps" and str(MAX_CONVERSATIONS) in str(ei.value)
    with pytest.raises(ScenarioError) as ei:
        parse("seed=1&x=" + "y" * MAX_QUERY_CHARS)
    assert str(MAX_QUERY_CHARS) in str(ei.value)


# ---- lenient parsing -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key,raw,expected", [
    ("qps", "5000", 1000.0), ("conversations", "0", 1), ("conversations", "99999", 20000), ("turns", "100", 64),
    ("turns", "-3", 0), ("bandwidth_gbps", "20000", 10000.0), ("gpu_mem_util", "0.01", 0.05),
    ("gpu_mem_util", "2", 1.0), ("rehash_frac", "1.5", 1.0), ("max_batched_tokens", "1", 64), ("seed", "-1", 0),
    ("think_time_s", "-5", 0.0), ("link_latency_us", "-1", 0.0), ("w_ttft", "1e9", 100.0),
    ("client_concurrency", "-2", 0), ("arrival_window_s", "7200", 3600.0),
])
def test_lenient_clamps_to_nearest_allowed(key, raw, expected):
    sc, problems = parse_lenient({key: raw})
    got = getattr(sc, key)
    assert got == expected and type(got) is type(SPEC[key].default)
    assert len(problems) == 1
    p = problems[0]
    assert p.key == key and str(p).startswith(f"{key}: ")
    assert render_value(expected) in str(p)
    # the same through a query string and a URL
    assert parse_lenient(f"http://h/?{key}={raw}")[0] == sc


def test_lenient_open_lower_bound_clamps_just_inside():
    sc, problems = parse_lenient("timeout_s=-5")
    assert 0 < sc.timeout_s <= 1e-3
    assert [p.key for p in problems] == ["timeout_s"]


def test_lenient_bad_values_fall_back_to_defaults_and_keep_good_keys():
    sc, problems = parse_lenient("layout=9X&qps=nan&model=unknown&foo=1&policy=pd&turns=abc&seed=7")
    assert sc == Scenario(policy="pd", seed=7)
    assert sorted(p.key for p in problems) == ["foo", "layout", "model", "qps", "turns"]
    for p in problems:
        assert str(p).startswith(f"{p.key}: ") and "\n" not in str(p)


def test_lenient_cross_field_cap_resets_size_keys():
    sc, problems = parse_lenient("conversations=20000&turns=64&layout=4R")
    assert sc.layout == "4R" and sc.conversations == SPEC["conversations"].default and sc.turns == 0
    assert any(str(MAX_REQUESTS) in str(p) for p in problems)
    sc, problems = parse_lenient("qps=-1")          # clamps to a tiny rate, which then breaks the span cap
    assert sc == Scenario() and problems and all(p.key == "qps" for p in problems)


NASTY = ["", "?", "&&&", "=", "==", "qps", "qps=", "http://[::1", "http://", "://", "?qps=1e999", "layout=%00",
         "a=b=c", "qps=1&qps=x", "\n\t", "x" * (MAX_QUERY_CHARS + 1), "turns=" + "9" * 5000, "conversations=-0",
         "slo_ttft_ms=1,2,3,4,5,6,7,8,9", "slo_ttft_ms=,", "tp=1.0", "policy=", "layout=0P_1D"]


@pytest.mark.parametrize("raw", NASTY)
def test_lenient_never_raises_on_nasty_strings(raw):
    sc, problems = parse_lenient(raw)
    assert isinstance(sc, Scenario)
    assert all(isinstance(p, ScenarioError) for p in problems)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.text(max_size=200),
    st.dictionaries(st.sampled_from(list(SPEC) + ["bogus"]),
                    st.one_of(st.text(max_size=30), st.integers(), st.floats(allow_nan=True), st.booleans(),
                              st.none(), st.lists(st.floats(), max_size=10)), max_size=8),
    st.lists(st.text(max_size=40), max_size=6),
))
def test_lenient_never_raises(source):
    sc, problems = parse_lenient(source)
    assert isinstance(sc, Scenario)
    assert parse(sc.to_query()) == sc
    for p in problems:
        assert isinstance(p, ScenarioError) and "\n" not in str(p)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_random_valid_scenarios_round_trip(data):
    values = {}
    for spec in FIELDS:
        if not data.draw(st.booleans()):
            continue
        if spec.kind == "choice":
            v = data.draw(st.sampled_from(spec.choice_list()))
        elif spec.kind == "layout":
            v = data.draw(st.sampled_from(["4R", "2P_2D", "1R_1P_1D_1pD", "4P_12pD", "3P_1pD", "1P_1D"]))
        elif spec.kind == "floats":
            v = tuple(data.draw(st.lists(st.floats(min_value=0.001, max_value=1e7), min_size=1, max_size=8)))
        elif spec.kind == "int":
            v = data.draw(st.integers(min_value=int(spec.lo), max_value=int(spec.hi)))
        else:
            v = data.draw(st.floats(min_value=spec.lo, max_value=spec.hi, exclude_min=spec.lo_open))
        values[spec.key] = v
    try:
        sc = Scenario(**values)
    except ScenarioError as exc:
        assert exc.key in ("qps", "turns", "conversations", "gpus_per_server")   # only cross-field checks refuse
        return
    assert parse(sc.to_query()) == sc
    assert parse(sc.to_dict()) == sc
    for k, v in sc.to_params().items():
        assert v != render_value(SPEC[k].default)
    assert all(math.isfinite(x) for x in sc.slo_ttft_ms + sc.slo_tpot_ms)
