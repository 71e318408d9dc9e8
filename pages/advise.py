"""Advisor: rank layouts x policies for N GPUs over a QPS range and SLOs (ppd_core.analysis.advisor). Thin page:
widgets -> AdviseRequest -> cached ppd_core.analysis.advisor -> ranked table with Explore links + Pareto scatter."""
from __future__ import annotations

import streamlit as st

from ppd_core.analysis import advisor as adv
from ppd_core.config.errors import PPDError
from ppd_core.config.scenario import SPEC, Scenario, parse_lenient
from ppd_core.model import feasibility
from ppd_core.workloads.traces import describe_replay
from ppd_core.analysis.grid import PAPER_QPS
from ui import charts, runner, uploads, widgets
from ui.advisor_view import pareto_figure, run_advisor
from ui.controls import PRESENT, Control, controls_for

GPU_COUNTS = ("1", "2", "4", "8", "16")
#: The Advisor's own URL keys; gpu, model, tp and workload are the shared scenario keys.
N_GPUS = Control("adv_gpus", "GPUs", "select", options=GPU_COUNTS, default="4")
CONVS = Control("adv_convs", "Conversations per run", "number", lo=1, hi=2000, step=50, default=200,
                help="Fewer is faster; the ranking needs a few hundred.")
QPS = Control("adv_qps", "QPS range (conversations/s)", "multi", options=tuple(PAPER_QPS), default=(1, 2, 4, 8))
SLO_TTFT = Control("adv_slo_ttft", "TTFT SLO (ms)", "number", lo=1.0, hi=1e6, step=10.0, default=200.0)
SLO_TPOT = Control("adv_slo_tpot", "TPOT SLO (ms)", "number", lo=1.0, hi=1e6, step=1.0, default=30.0)
W_TTFT = Control("adv_w_ttft", "Weight of TTFT", "number", lo=0.0, hi=100.0, step=0.5, default=1.0)
W_TPOT = Control("adv_w_tpot", "Weight of TPOT", "number", lo=0.0, hi=100.0, step=0.5, default=1.0)
TIME_UNIT = Control("adv_time_unit", "Trace time unit", "select", options=uploads.TIME_UNIT_CHOICES,
                    default="auto", help="Unit of the trace's timestamps. auto: the format's documented unit "
                    "(Mooncake: integer ms, refused with a fraction; CSV: the arrival column in seconds, or the "
                    "unit its name gives). A Mooncake trace with fractional timestamps needs s, ms or us.")
RANK = Control("adv_rank", "Rank by", "select", options=adv.RANK_BY, default="attainment",
               help="attainment: the weighted Turn 2+ SLO attainment averaged over the QPS range; goodput_per_gpu / "
                    "goodput_per_usd: the highest QPS of the range up to which ≥ 90 % of Turn 2+ requests meet both "
                    "SLOs, per GPU or per GPU-dollar-hour (catalog prices, data/gpus.json). Ties: the attainment.")
GPU_TYPES = Control("adv_gpu_types", "Compare GPU types (empty: the GPU type above)", "multi",
                    options=SPEC["gpu"].choice_list(), default=(),
                    help="Every candidate runs on each listed GPU type (same GPU count), so the ranking compares "
                         "GPU types too; each type multiplies the runs.")
EXTRAS = (N_GPUS, CONVS, QPS, SLO_TTFT, SLO_TPOT, W_TTFT, W_TPOT, TIME_UNIT, RANK, GPU_TYPES, PRESENT)
RANK_TEXT = {"attainment": "SLO attainment score", "goodput_per_gpu": "goodput per GPU",
             "goodput_per_usd": "goodput per GPU-dollar-hour"}


st.title("Advisor")
st.caption("Which layout and Turn 2+ policy for your GPUs, workload and SLOs? Every layout of the GPU count "
           "(counts of R/P/D/pD nodes) × policy (pd, ppd, dynamic with w_tpot 0.5–4 where there are D nodes) "
           "runs at every QPS; the score is the weighted Turn 2+ SLO attainment averaged over the QPS range, "
           "and a candidate below 95 % success at any QPS ranks last.")

ctrls = controls_for("advise")
state = widgets.carry_scenario("advise", EXTRAS)
widgets.classroom()
widgets.show_warnings(state.warnings)
with st.form("advise_form"):
    c1, c2, c3, c4 = st.columns(4)
    n_gpus = int(widgets.render_extra(N_GPUS, c1))
    widgets.render_control(ctrls["tp"], c1, in_form=True)
    widgets.render_control(ctrls["gpu"], c2, in_form=True)
    widgets.render_control(ctrls["model"], c2, in_form=True)
    widgets.render_control(ctrls["workload"], c3, in_form=True)
    conversations = int(widgets.render_extra(CONVS, c3))
    qps = widgets.render_extra(QPS, c4)
    s1, s2, s3, s4 = st.columns(4)
    slo_ttft = float(widgets.render_extra(SLO_TTFT, s1))
    slo_tpot = float(widgets.render_extra(SLO_TPOT, s2))
    w_ttft = float(widgets.render_extra(W_TTFT, s3))
    w_tpot = float(widgets.render_extra(W_TPOT, s4))
    r1, r2 = st.columns([1, 3])
    rank_by = str(widgets.render_extra(RANK, r1))
    gpu_types = tuple(widgets.render_extra(GPU_TYPES, r2))
    t1, t2 = st.columns([3, 1])
    upload = t1.file_uploader("Your own trace (optional; replaces the workload): ShareGPT/WildChat JSON, Mooncake "
                              "JSONL or CSV (up to 50 MiB)", type=["json", "jsonl", "csv"], key="adv_trace")
    time_unit = str(widgets.render_extra(TIME_UNIT, t2))
    submitted = st.form_submit_button("Run advisor", type="primary", icon=":material/travel_explore:")

# the shared scenario keys as the form holds them; the address bar follows (the other keys are carried)
shared = state.scenario.with_(**{k: parse_lenient({k: st.session_state.get(k)})[0].to_dict()[k] for k in ctrls})
widgets.sync("advise", shared, EXTRAS)
infeasible = widgets.feasibility_note(shared, st)
if infeasible:
    st.session_state.pop("adv_inputs", None)
    st.stop()

def gpu_types_problem(sc: Scenario, types: tuple) -> str | None:
    """One line when a compared GPU type cannot hold the model at this TP."""
    for g in types:
        bad = feasibility.check(sc.with_(gpu=g))
        if bad is not None:
            return f"`adv_gpu_types`: {g} cannot be compared: {bad.message}"
    return None


if submitted:
    try:
        trace_bytes = upload.getvalue() if upload is not None else None
        trace_name = upload.name if upload is not None else "trace"
        if trace_bytes is not None:                          # a bad file: one line naming the line
            uploads.import_trace_upload(trace_bytes, trace_name, time_unit)
        base = Scenario(gpu=shared.gpu, model=shared.model, tp=shared.tp, conversations=conversations,
                        workload="trace" if trace_bytes is not None else shared.workload)
        problem = gpu_types_problem(base, gpu_types)
        if problem:
            st.session_state.pop("adv_inputs", None)
            st.error(problem)
            st.stop()
        req = adv.AdviseRequest(n_gpus, base, tuple(qps), slo_ttft, slo_tpot, w_ttft, w_tpot, rank_by=rank_by,
                                gpu_types=gpu_types)
        adv.plan(req)                                         # refuse oversized plans before running
    except PPDError as exc:
        st.session_state.pop("adv_inputs", None)
        st.error(str(exc))
        st.stop()
    st.session_state["adv_inputs"] = (req, trace_bytes, trace_name, time_unit)

inputs = st.session_state.get("adv_inputs")
if inputs is None:
    st.info("Pick the inputs and press **Run advisor**.")
    st.stop()

if inputs[1] is not None:
    convs, stats = uploads.import_trace_upload(*inputs[1:])
    rates = "\n".join(f"  qps={q:g}: {describe_replay(convs, q)}" for q in inputs[0].qps)
    st.code(stats.describe() + "\n" + rates, language=None)       # the rate each QPS of the range replays at
advice = runner.run_or_stop(lambda: run_advisor(*inputs), "Advisor")

ranked = advice.ranked
best = ranked.iloc[0]
by = advice.request.rank_by
top = best["goodput_qps"] >= max(advice.request.qps)      # the grid goodput cannot see past the range
lead = "" if by == "attainment" else (
    f"goodput {'≥ ' if top else ''}{best['goodput_qps']:g} conv/s = {best['goodput_per_gpu']:.3g} per GPU"
    + (f", {best['goodput_per_usd_h']:.3g} per GPU-$/h" if by == "goodput_per_usd" else "") + ", ")
st.success(f"Best by {RANK_TEXT[by]}: **{best['layout']}** on {best['gpu']} ({best['label']}) — {lead}"
           f"score {best['score']:.3f}, Turn 2+ TTFT "
           f"{best['ttft_ms']:.1f} ms, TPOT {best['tpot_ms']:.2f} ms, {best['throughput_tok_s']:,.0f} tok/s. "
           f"[Open in Explore]({best['explore']})")
if by != "attainment" and top:
    st.caption("The best goodput is the top of the QPS range: add higher rates to the range to tell the leaders "
               "apart (their order is then the attainment score's).")
for note in advice.notes:       # "warning: ..." = the ranking rests on few Turn 2+ requests (metrics MIN_SAMPLE)
    (st.warning if note.startswith("warning") else st.caption)(note)

st.subheader("Ranked candidates")
goodput_cols = ["goodput_qps", "goodput_per_gpu", "goodput_per_usd_h"]
other_cols = ["score", "slo_ttft", "slo_tpot", "ttft_ms", "tpot_ms", "throughput_tok_s", "min_success_rate"]
order = ["rank", "layout", "gpu", "label"] + (other_cols + goodput_cols if by == "attainment" else
                                              goodput_cols + other_cols) + ["eligible", "pareto", "explore"]
st.dataframe(
    ranked, hide_index=True, width="stretch", column_order=order,     # the CSV below has every column
    column_config={
        "explore": st.column_config.LinkColumn("Explore", display_text="open"),
        "score": st.column_config.NumberColumn(format="%.3f"),
        "slo_ttft": st.column_config.NumberColumn("TTFT SLO", format="percent"),
        "slo_tpot": st.column_config.NumberColumn("TPOT SLO", format="percent"),
        "min_success_rate": st.column_config.NumberColumn("min success", format="percent"),
        "ttft_ms": st.column_config.NumberColumn("T2+ TTFT ms", format="%.1f"),
        "tpot_ms": st.column_config.NumberColumn("T2+ TPOT ms", format="%.2f"),
        "throughput_tok_s": st.column_config.NumberColumn("tok/s", format="%.0f"),
        "goodput_qps": st.column_config.NumberColumn("goodput conv/s", format="%g"),
        "goodput_per_gpu": st.column_config.NumberColumn("goodput /GPU", format="%.3g"),
        "goodput_per_usd_h": st.column_config.NumberColumn("goodput /GPU-$/h", format="%.3g"),
    })
st.caption("Score = mean over the QPS range of (w_TTFT·A_TTFT + w_TPOT·A_TPOT)/(w_TTFT + w_TPOT), where A is the "
           "share of successful Turn 2+ requests within the SLO. TTFT/TPOT columns are Turn 2+ means averaged "
           "over the QPS range; each Explore link opens the candidate at the highest QPS. Goodput = the highest QPS "
           f"of the range up to which ≥ {100 * advice.request.attain:.0f} % of Turn 2+ requests meet both SLOs "
           f"(TTFT ≤ {advice.request.slo_ttft_ms:g} ms and TPOT ≤ {advice.request.slo_tpot_ms:g} ms; 0 when the "
           "lowest QPS misses); per GPU-$/h uses each GPU's catalog price. Ranked by "
           f"{RANK_TEXT[by]}, ties by the score.")
charts.chart(pareto_figure(ranked), "adv_pareto")
st.download_button("Ranked candidates (CSV)", data=ranked.to_csv(index=False).encode(), file_name="ppd_advice.csv",
                   mime="text/csv", on_click="ignore", icon=":material/download:")
