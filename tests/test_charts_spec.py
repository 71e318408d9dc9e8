"""Explore's figures are built as plain dict specs (``ui.specs``) and shown without Plotly's validation
(``specs.spec_figure``): here Plotly validates every spec, and the dict-level styling (``readable_spec``)
must give exactly what Plotly's own ``update_*`` calls give (``readable``)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import pytest

import ppd_core
from ppd_core.config.scenario import Scenario
from ui import charts, specs

SCENARIOS = {
    "default": Scenario(conversations=120),
    "1P_3D slow link, two SLOs": Scenario(layout="1P_3D", qps=6.5, bandwidth_gbps=25, slo_ttft_ms=(150, 300),
                                          conversations=80),
    "few turns": Scenario(workload="small_mid_bal", turns=3, conversations=40, seed=7),
    "overload, pd": Scenario(layout="2P_2D", policy="pd", qps=12, slo_tpot_ms=(5, 10, 100), conversations=80),
    "tiny": Scenario(conversations=3, qps=1),
}


def _json(fig: go.Figure) -> dict:
    return json.loads(pio.to_json(fig.to_dict(), validate=False))


@pytest.fixture(scope="module", params=sorted(SCENARIOS))
def runs(request):
    sc = SCENARIOS[request.param]
    scs = dict(ppd_core.baselines(sc))
    results = {}
    for name, s in scs.items():
        r = ppd_core.run(s)
        results[name] = {"summary": r.summary, "records": r.records}
    return sc, scs, results


def _specs(sc, scs, results) -> dict[str, dict]:
    summaries = {n: r["summary"] for n, r in results.items()}
    layouts = {n: s.layout for n, s in scs.items()}
    return {
        "systems": specs.systems_spec(summaries, layouts, sc.slo_ttft_ms, sc.slo_tpot_ms),
        "cdf_ttft": specs.cdf_spec(results, scs, "ttft_ms", "TTFT", turn1=False),
        "cdf_ttft_turn1": specs.cdf_spec(results, scs, "ttft_ms", "TTFT"),
        "cdf_tpot": specs.cdf_spec(results, scs, "tpot_ms", "TPOT", log_x=False),
        "by_turn": specs.by_turn_spec(results, scs, "ttft_ms", "TTFT"),
    }


@pytest.mark.parametrize("present", [False, True])
def test_specs_are_valid_plotly_and_styled_as_plotly_would(runs, present):
    for name, spec in _specs(*runs).items():
        shown = specs.spec_figure(specs.readable_spec(spec, present))
        validated = go.Figure(spec)                 # raises on any property Plotly does not know
        charts.readable(validated, present)
        assert _json(shown) == _json(validated), name


def test_readable_spec_leaves_the_cached_spec_alone(runs):
    spec = _specs(*runs)["systems"]
    before = json.dumps(_json(specs.spec_figure(spec)))
    specs.readable_spec(spec, present=True)
    assert json.dumps(_json(specs.spec_figure(spec))) == before


def test_cdf_traces_carry_a_few_hundred_points_with_the_extremes(runs):
    sc, scs, results = runs
    spec = specs.cdf_spec(results, scs, "ttft_ms", "TTFT")
    for trace in spec["data"]:
        assert len(trace["x"]) <= specs.CDF_POINTS + specs.CDF_TAIL_POINTS, trace["name"]
    ppd = results["PPD"]["records"]
    t2 = ppd.loc[(ppd["status"] == "ok") & (ppd["turn"] >= 2), "ttft_ms"]
    x = spec["data"][0]["x"]
    if len(t2):
        assert x[0] == t2.min() and x[-1] == t2.max()
        assert spec["data"][0]["y"][-1] == 1.0


def test_ecdf_keeps_the_tail_exact_and_stays_small():
    values = np.random.default_rng(1).lognormal(3, 1, 2_000)
    x, y = specs._ecdf(values)
    exact = np.sort(values)
    top = exact[-int(np.ceil(specs.CDF_TAIL * exact.size)):]      # the top 1 %: every point drawn
    assert set(top) <= set(x)
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(y) > 0) and y[-1] == 1.0
    for q in (0.5, 0.9, 0.99):          # each drawn step is the exact ECDF there
        k = np.searchsorted(x, np.quantile(exact, q), side="right") - 1
        assert y[k] == np.searchsorted(exact, x[k], side="right") / exact.size
    x, y = specs._ecdf(np.random.default_rng(2).exponential(1, 200_000))
    assert len(x) <= specs.CDF_POINTS + specs.CDF_TAIL_POINTS and x.size == y.size
    x, y = specs._ecdf(np.array([3.0, np.nan, 1.0]))
    assert x.tolist() == [1.0, 3.0] and y.tolist() == [0.5, 1.0]


@pytest.mark.parametrize("width_s", [0.02, 0.2, None])
def test_gantt_spec_is_valid_plotly_at_every_kind_of_step(width_s):
    from ui import timeline
    sc = Scenario(conversations=3)
    scs = dict(ppd_core.baselines(sc))
    spans = {"PD": ppd_core.run(scs["PD"], record_spans=True).spans, "PPD": ppd_core.run(sc, record_spans=True).spans}
    phased = {name: timeline.phases(sp) for name, sp in spans.items()}
    assert all(timeline.phases(sp) is sp for sp in phased.values())      # computed once per run
    events = timeline.timeline_events(spans)
    for k in (0, len(events) // 2, len(events) - 1):          # no bar yet, mid-run, the end
        spec = timeline.gantt_spec(phased, float(events[k]), float(events[-1]), width_s)
        for present in (False, True):
            validated = go.Figure(spec)
            charts.readable(validated, present)
            assert _json(specs.spec_figure(specs.readable_spec(spec, present))) == _json(validated)


def _per_turn_by_pandas(rec, metric: str):
    ok = rec[rec["status"] == "ok"]
    g = ok.groupby("turn")[metric]
    stats = pd.DataFrame({"mean": g.mean(), "p90": g.quantile(0.9), "n": g.size()})
    return stats[stats["n"] >= 3]


def test_per_turn_statistics_are_pandas_groupby(runs):
    """The by-turn chart's numbers (numpy, on the slider path) are what pandas' groupby gives."""
    _, _, results = runs
    for name, r in results.items():
        for metric in ("ttft_ms", "tpot_ms"):
            rec = r["records"].copy()
            if metric == "tpot_ms":                 # NaN among served requests: left out of mean/p90, counted in n
                rec.loc[rec.index[::7], metric] = np.nan
            want = _per_turn_by_pandas(rec, metric)
            got = specs._per_turn(rec, metric)
            if want.empty and not (rec["status"] == "ok").any():
                assert got is None
                continue
            turns, mean, p90, n = got
            assert turns.tolist() == want.index.tolist(), name
            assert n.tolist() == want["n"].tolist(), name
            np.testing.assert_allclose(mean, want["mean"].to_numpy(), rtol=1e-12, err_msg=name)
            np.testing.assert_allclose(p90, want["p90"].to_numpy(), rtol=1e-12, err_msg=name)


def test_per_turn_of_nothing_served_is_none():
    rec = pd.DataFrame({"status": ["failed"] * 4, "turn": [1, 1, 2, 2], "ttft_ms": [1.0, 2.0, 3.0, 4.0]})
    assert specs._per_turn(rec, "ttft_ms") is None
    rec["status"] = "ok"
    turns, mean, p90, n = specs._per_turn(rec, "ttft_ms")
    assert turns.size == 0 and mean.size == 0       # two requests a turn: below the three a point needs


@pytest.mark.parametrize("present", [False, True])
def test_shown_figure_is_the_styled_spec_as_lists_without_a_template(runs, present):
    """What the browser gets: the same numbers and style as ``readable_spec``, arrays as lists, a fixed data
    revision and no template (``specs.shown_figure`` says why)."""
    for name, spec in _specs(*runs).items():
        shown = _json(specs.shown_figure(spec, present))
        styled = _json(specs.spec_figure(specs.readable_spec(spec, present)))
        assert shown["layout"].pop("template", None) is None and shown["layout"].pop("datarevision") == 1, name
        assert tuple(shown["layout"].pop("colorway")) == tuple(pio.templates["plotly"].layout.colorway), name
        styled["layout"].pop("template", None)
        for t in shown["data"]:
            assert not any(isinstance(v, dict) and "bdata" in v for v in t.values()), name
        assert shown["data"] == _plain(styled["data"]), name
        assert shown["layout"] == styled["layout"], name


def _plain(obj):
    """Base64 typed arrays of a Plotly JSON (``{"dtype", "bdata"}``) as lists of numbers."""
    import base64
    if isinstance(obj, dict):
        if set(obj) >= {"dtype", "bdata"}:
            arr = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=np.dtype(obj["dtype"]))
            if obj.get("shape"):
                arr = arr.reshape([int(n) for n in obj["shape"].split(",")])
            return arr.tolist()
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def test_a_graph_objects_figure_in_browser_form_keeps_its_numbers_and_look():
    """``specs.browser_form`` of a validated figure (the pages' ``go.Figure`` charts): the same traces and
    layout, 2-D custom data included, with the template's colours kept as ``colorway``."""
    fig = go.Figure(go.Scatter(x=np.array([1.5, 2.5, 4.0]), y=np.array([3, 1, 2]), mode="markers",
                               customdata=np.stack([np.arange(3), np.arange(3) * 10], axis=-1)))
    fig.add_trace(go.Bar(x=["a", "b"], y=np.array([0.25, 0.5])))
    charts.readable(fig)
    want = _plain(_json(fig))
    shown = _json(specs.browser_form(fig.to_dict()))
    assert shown["data"] == want["data"]
    assert shown["data"][0]["customdata"] == [[0, 0], [1, 10], [2, 20]]
    assert shown["layout"].pop("template", None) is None and shown["layout"].pop("datarevision") == 1
    assert tuple(shown["layout"].pop("colorway")) == specs.COLORWAY
    want["layout"].pop("template")
    assert shown["layout"] == want["layout"]


@pytest.mark.parametrize("present", [False, True])
def test_the_sent_figure_is_the_shown_figure_byte_for_byte(runs, present):
    """``charts.chart`` hands Streamlit ``specs.sent_figure`` (the dict, without building a Figure): the JSON
    Streamlit sends has exactly the content of ``shown_figure``'s ``to_dict()`` (every key and value; only the
    order of a trace's keys differs, which Plotly.js does not read)."""
    sc, scs, results = runs
    figs = specs.explore_specs(sc, present, results, scs)
    for name, spec in figs.items():
        if not spec:
            continue
        sent = json.loads(pio.to_json(specs.sent_figure(spec, present).to_dict(), validate=False))
        assert sent == _json(specs.shown_figure(spec, present)), name
        assert sent["layout"]["template"] is None and sent["layout"]["datarevision"] == 1
