"""Drawing the controls: the scenario sidebar, page-only controls, warnings, the share box and the
"weights do not fit" note. URL handling is ``urlstate``'s; this module only turns widgets into a Scenario."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import streamlit as st

from streamlit import config as st_config
from streamlit.errors import StreamlitAPIException

from ppd_core.model import extrapolation_notes, feasibility
from ppd_core.config.layout import LAYOUT_CATEGORY
from ppd_core.config.scenario import SPEC, Scenario, parse_lenient, render_value

from . import exports, urlstate
from .controls import (RESULTS_ONLY, Control, advanced_for, groups_for, clamp_to_widget, controls_for, link_presets,
                       to_widget)

SIZE_KEYS = ("conversations", "turns", "qps", "arrival_window_s")
FAST = "_fast_rerun"        # session_state: the page whose results-only fragments this run reruns alone


def _on_change(key: str, rerun: tuple[str, ...] = ()) -> None:
    """Widget callback: refuse a value that makes the scenario invalid (free text, size caps) and keep the
    last good one, with a one-line warning shown on the next run; canonicalise accepted free text. An accepted
    value of a results-only control (``rerun``: the page's fragment keys) reruns only those fragments: the
    sidebar, the title and everything else the value cannot change are neither rerun nor sent again. Under
    AppTest (Streamlit's ``global.appTest``) the page reruns whole: AppTest starts every run with a fresh pages
    registry and element tree, so a fragment run alone there can neither resolve page links nor keep the rest of
    the page; the browser tests check the fragment path."""
    good: dict = st.session_state.get("_good") or {}
    if key not in good:
        return
    values = dict(good)
    values[key] = st.session_state.get(key)
    sc, problems = parse_lenient({k: v for k, v in values.items() if k in SPEC})
    bad = [p for p in problems if p.key == key or key in SIZE_KEYS]
    if bad:
        shown = urlstate.short(st.session_state.get(key))
        st.session_state[key] = good[key]
        st.session_state["_flash"] = list(st.session_state.get("_flash") or []) + [
            f"`{key}`: {shown!r} refused ({urlstate.problem_text(bad[0], 200)}); kept {render_value(good[key])}."]
        return                                      # a full rerun: the widget shows the value kept
    if key in SPEC and isinstance(values[key], str):
        canonical = render_value(getattr(sc, key))
        if canonical != values[key]:
            st.session_state[key] = canonical       # e.g. layout 3P_1pD_2R -> 2R_3P_1pD, slo "200, 100" -> 100,200
            return                                  # a full rerun: the widget shows the canonical text
    if rerun and not st_config.get_option("global.appTest"):    # (AppTest patches the module's function)
        st.session_state[FAST] = st.session_state.get(urlstate.PAGE)
        rerun_fragments(rerun)
        st.session_state.pop(FAST, None)            # still here: the page reruns whole


def rerun_fragments(keys: Sequence[str]) -> None:
    """From a widget callback: rerun the page's fragments ``keys`` alone instead of what the interaction would
    rerun (``st.rerun`` with fragment keys). Does nothing under AppTest (see ``_on_change``) or when one of
    them has not been drawn yet (the page stopped early): the interaction's own rerun follows."""
    if not keys or st_config.get_option("global.appTest"):
        return
    try:
        st.rerun(scope=list(keys))
    except StreamlitAPIException:
        pass


def _preset(bw: float, lat: float) -> None:
    st.session_state["bandwidth_gbps"] = bw
    st.session_state["link_latency_us"] = lat


def render_control(ctrl: Control, where: Any, in_form: bool = False, rerun: tuple[str, ...] = ()) -> Any:
    """Draw one control; its key is the URL key (its value is seeded by ``urlstate.begin``). ``rerun``: the
    fragments a change of a results-only control (``controls.RESULTS_ONLY``) reruns instead of the page."""
    common: dict = dict(key=ctrl.key, help=ctrl.help_text())
    if not in_form:                                 # a form allows no callbacks but its submit button's
        common.update(on_change=_on_change, args=(ctrl.key, tuple(rerun) if ctrl.key in RESULTS_ONLY else ()))
    label = ctrl.full_label()
    default = ctrl.default_value
    if ctrl.kind == "slider":
        return where.slider(label, min_value=ctrl.lo, max_value=ctrl.hi, value=default, step=ctrl.step,
                            format=ctrl.fmt, **common)
    if ctrl.kind == "number":
        return where.number_input(label, min_value=ctrl.lo, max_value=ctrl.hi, value=default, step=ctrl.step,
                                  format=ctrl.fmt, **common)
    if ctrl.kind == "select":
        opts = ctrl.choices()
        return where.selectbox(label, opts, index=opts.index(default), **common)
    if ctrl.kind == "radio":
        opts = ctrl.choices()
        return where.radio(label, opts, index=opts.index(default), horizontal=True, **common)
    if ctrl.kind == "select_slider":
        return where.select_slider(label, options=ctrl.choices(), value=default, **common)
    if ctrl.kind == "layout":
        cur = st.session_state.get(ctrl.key)
        opts = tuple(ctrl.options) + ((cur,) if cur and cur not in ctrl.options else ())
        return where.selectbox(label, opts, index=opts.index(default), accept_new_options=True, **common)
    if ctrl.kind == "floats":
        return where.text_input(label, value=default, **common)
    raise ValueError(f"unknown control kind {ctrl.kind!r}")


def feasibility_note(sc: Scenario, where: Any = None) -> str | None:
    """The "weights do not fit" message (with the smallest TP that fits) next to the Model/TP controls."""
    bad = feasibility.check(sc)
    if bad is None:
        hw = sc.role_hardware().values() if sc.heterogeneous else [(sc.gpu, sc.tp_degree)]
        notes = list(dict.fromkeys(n for g, t in hw for n in extrapolation_notes(g, sc.model, t)))
        if sc.heterogeneous:
            notes.insert(0, "a heterogeneous fleet (" + ", ".join(f"{r}: {g} x TP {t}" for r, (g, t) in
                                                                 sc.role_hardware().items()) + ") was never measured")
        if notes:
            (where or st.sidebar).caption("**Extrapolated:** " + "; ".join(notes))
        return None
    (where or st.sidebar).error(bad.message, icon=":material/memory:")
    return bad.message


@dataclass(frozen=True)
class PageState:
    scenario: Scenario
    warnings: tuple[str, ...]
    infeasible: str | None = None          # the hardware cannot hold the model: show this, not charts


def scenario_sidebar(page: str, extras: Sequence[Control] = (), show_presets: bool = True,
                     rerun: tuple[str, ...] = ()) -> PageState:
    """Validate the URL, draw every scenario control in the sidebar, write the canonical link to the address
    bar, and return the Scenario (with the warnings to show). ``rerun``: the page's fragments that redraw all a
    results-only control changes (``fast_state`` gives them the scenario when they rerun alone)."""
    st.session_state.pop(FAST, None)                # a full run
    ctrls = controls_for(page)
    arrival = urlstate.begin(page, ctrls, extras)
    flash = list(st.session_state.pop("_flash", None) or [])
    sb = st.sidebar
    infeasible_slot = None
    for title, keys in groups_for(page):
        sb.markdown(f"**{title}**")
        for k in keys:
            render_control(ctrls[k], sb, rerun=rerun)
            if k == "bandwidth_gbps" and show_presets:
                cols = sb.columns(2)
                for i, (name, bw, lat) in enumerate(link_presets()):
                    cols[i % 2].button(f"{name} {render_value(bw)}", key=f"_preset_{name}", on_click=_preset,
                                       args=(bw, lat), width="stretch",
                                       help=f"Preset {name}: sets {render_value(bw)} GB/s and "
                                            f"{render_value(lat)} us link latency (data/links.json).")
            if k == "tp":
                infeasible_slot = sb.empty()
            if k == "layout":
                cat = LAYOUT_CATEGORY.get(str(st.session_state.get("layout")), "")
                if cat:
                    sb.caption(f"Paper category: {cat}")
    with sb.expander("Advanced", expanded=False):
        for k in advanced_for(page):
            render_control(ctrls[k], st, rerun=rerun)
    values = {k: st.session_state.get(k) for k in ctrls}     # the SLO lists are text; the Scenario parses them
    sc, problems = parse_lenient(values)
    st.session_state["_good"] = {k: to_widget(c, getattr(sc, k)) for k, c in ctrls.items()}
    _remember_context(page, sc, urlstate.write(page, sc, extras))
    msg = feasibility_note(sc, infeasible_slot.container() if infeasible_slot is not None else None)
    warns = _dedupe(flash + list(arrival.warnings) + [f"`{p.key}`: {urlstate.problem_text(p)}" for p in problems])
    return PageState(sc, tuple(warns), msg)


def fast_scenario(page: str) -> Scenario | None:
    """In a rerun of the page's fragments alone (a results-only control moved; ``_on_change``): the scenario
    of the controls' current values; None in a full run (use what ``scenario_sidebar`` returned)."""
    if st.session_state.get(FAST) != page:
        return None
    return parse_lenient({k: st.session_state.get(k) for k in controls_for(page)})[0]


def fast_state(page: str, extras: Sequence[Control] = ()) -> PageState | None:
    """``fast_scenario`` with what ``scenario_sidebar`` does after drawing: remember the last good values,
    write the canonical link to the address bar and check that the model fits (the controls that can change
    that take the full rerun). None in a full run."""
    if st.session_state.get(FAST) != page:
        return None
    ctrls = controls_for(page)
    sc, problems = parse_lenient({k: st.session_state.get(k) for k in ctrls})
    st.session_state["_good"] = {k: to_widget(c, getattr(sc, k)) for k, c in ctrls.items()}
    _remember_context(page, sc, urlstate.write(page, sc, extras))
    bad = feasibility.check(sc)
    return PageState(sc, tuple(_dedupe([f"`{p.key}`: {urlstate.problem_text(p)}" for p in problems])),
                     bad.message if bad is not None else None)


def carry_scenario(page: str, extras: Sequence[Control] = ()) -> PageState:
    """For pages without the scenario sidebar (Paper, Validation): validate the URL, keep the scenario keys
    (canonical) so navigation brings them back, and write the address bar. Controls of ``extras`` are the
    page's own (drawn by the page with ``render_extra``; call ``sync`` after them)."""
    arrival = urlstate.begin(page, controls_for(page), extras)
    if arrival.external:
        st.session_state["_carried"] = arrival.scenario
    sc = st.session_state.get("_carried") or Scenario()
    _remember_context(page, sc, urlstate.write(page, sc, extras))
    return PageState(sc, arrival.warnings)


def _remember_context(page: str, sc: Scenario, query: dict) -> str:
    """The scenario's short description and share link, for the footers of exported charts."""
    url = urlstate.link("" if page == "explore" else page, query)
    st.session_state["_context"] = f"{exports.describe(sc)}\n{url}"
    return url


def sync(page: str, sc: Scenario, extras: Sequence[Control] = ()) -> str:
    """After the page-only controls rendered: the address bar follows them. Returns the share link."""
    return _remember_context(page, sc, urlstate.write(page, sc, extras))


def _dedupe(items: list[str]) -> list[str]:
    seen, out = set(), []
    for i in items:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


def show_warnings(ws: Sequence[str]) -> None:
    for w in ws[:urlstate.MAX_WARNINGS + 1]:
        st.warning(f"Parameter {w}", icon="⚠️")
    if len(ws) > urlstate.MAX_WARNINGS + 1:
        st.warning(f"… and {len(ws) - urlstate.MAX_WARNINGS - 1} more rejected parameters.", icon="⚠️")


def share_box(page: str, sc: Scenario, extras: Sequence[Control] = ()) -> str:
    """The visible 'share this view' link: exactly what ``urlstate.write`` put in the address bar."""
    url = sync(page, sc, extras)
    with st.container(border=True):
        st.markdown("**Share this view** — opening the link restores these controls and numbers "
                    "(the URL keys are the `ppd_core` scenario keys; the address bar shows the same link).")
        st.code(url, language=None, wrap_lines=True)
        st.caption("Same numbers on the command line:")
        st.code(urlstate.cli_command(sc), language="bash", wrap_lines=True)
    return url


def render_extra(ctrl: Control, where: Any = st, rerun: Sequence[str] = ()) -> Any:
    """Draw a page-only control (seeded by ``urlstate.begin``); a value out of the current range (e.g.
    fewer events after a scenario change) is clamped into it. ``rerun``: the page's fragments a change reruns
    (``rerun_fragments``) instead of the page."""
    if f"_set_{ctrl.key}" in st.session_state:                  # a value a callback chose (``move_step``)
        st.session_state[ctrl.key] = st.session_state.pop(f"_set_{ctrl.key}")
    if ctrl.key in st.session_state and ctrl.kind == "slider":
        v = st.session_state[ctrl.key]
        if isinstance(v, (int, float)) and not (ctrl.lo <= v <= ctrl.hi):
            st.session_state[ctrl.key] = clamp_to_widget(ctrl, v)
    kw: dict = dict(key=ctrl.key, help=ctrl.help_text())
    if rerun:
        kw.update(on_change=rerun_fragments, args=(tuple(rerun),))
    if ctrl.kind == "slider":
        return where.slider(ctrl.label, min_value=ctrl.lo, max_value=ctrl.hi, value=ctrl.default,
                            step=ctrl.step, **kw)
    if ctrl.kind == "select_slider":
        return where.select_slider(ctrl.label, options=ctrl.choices(), value=ctrl.default, **kw)
    if ctrl.kind == "radio":
        opts = ctrl.choices()
        return where.radio(ctrl.label, opts, index=opts.index(ctrl.default), horizontal=True, **kw)
    if ctrl.kind == "toggle":
        return where.toggle(ctrl.label, value=ctrl.default, **kw)
    if ctrl.kind == "text":
        return where.text_input(ctrl.label, value=ctrl.default, max_chars=int(ctrl.hi or 4000), **kw)
    if ctrl.kind == "number":
        return where.number_input(ctrl.label, min_value=ctrl.lo, max_value=ctrl.hi, value=ctrl.default,
                                  step=ctrl.step, **kw)
    if ctrl.kind == "select":
        opts = ctrl.choices()
        return where.selectbox(ctrl.label, opts, index=opts.index(ctrl.default), **kw)
    if ctrl.kind == "multi":
        return where.multiselect(ctrl.label, ctrl.choices(), default=list(ctrl.default), **kw)
    raise ValueError(f"unsupported page control kind {ctrl.kind!r}")


def move_step(delta: int, n_events: int, rerun: Sequence[str] = ()) -> None:
    """The Previous / Next buttons' callback: the step to show is handed to ``render_extra`` (a rerun of
    fragments alone does not redraw a widget whose value a callback set, so the value is set in the run)."""
    cur = int(st.session_state.get("learn_step", 0))
    st.session_state["_set_learn_step"] = min(max(cur + delta, 0), max(n_events - 1, 0))
    rerun_fragments(rerun)


def nav_links(sc: Scenario, here: str, where: Any = None) -> None:
    """Sidebar links that carry this scenario to the other pages (the sidebar navigation does too); ``where``:
    the sidebar (default) or, inside a fragment drawn in the sidebar, ``st``."""
    where = st.sidebar if where is None else where
    where.markdown("**Open this scenario in**")
    params = sc.to_params()
    for path, label in (("pages/explore.py", "Explore"), ("pages/sweep.py", "Sweep"), ("pages/learn.py", "Learn"),
                        ("pages/advise.py", "Advisor")):
        if path.endswith(f"{here}.py"):
            continue
        p = dict(params)
        if here == "learn" or path.endswith("learn.py"):
            p.pop("conversations", None)     # the Learn page shows a handful of conversations, not a run size
        where.page_link(path, label=label, query_params=p)


def classroom() -> bool:
    """Classroom mode (``present=1``, a page-only key every scenario page takes): remembered for this run so
    ``charts.chart`` draws large text; returns it."""
    from .controls import PRESENT
    present = st.session_state.get("present", PRESENT.default) == "1"
    st.session_state["_present"] = present
    return present


def sample_warnings(summaries: Mapping[str, dict]) -> None:
    """The runs' ``summary["warnings"]`` (figures resting on fewer than ``metrics.report.MIN_SAMPLE``
    requests), one st.warning per system that has any, shown where those numbers are shown."""
    for name, summary in summaries.items():
        ws = summary.get("warnings") or []
        if ws:
            st.warning(f"{name}: " + "; ".join(ws), icon="⚠️")


def verdict_box(summaries: dict, layouts: dict, present: bool = False, goodput: dict | None = None) -> str:
    """The verdict sentence (``ui.verdict``; ``goodput``: {system: conv/s} once known), large, in a bordered
    box; returns its text."""
    import html

    from .verdict import sentence
    text = sentence(summaries, layouts, goodput)
    size = "1.9rem" if present else "1.15rem"
    with st.container(border=True):
        st.markdown(f'<div id="ppd-verdict" style="font-size:{size};line-height:1.4">{html.escape(text)}</div>',
                    unsafe_allow_html=True)
    return text


def preset_links(active: Any = None) -> None:
    """One link per teaching preset (``ui.presets``): a click opens its scenario; the link is shareable."""
    from .presets import PRESETS
    st.markdown("**Presets that teach** — one click each; the address bar is then the preset's share link:")
    row = st.container(horizontal=True, wrap=True, gap="small")     # wraps at 1280 px instead of cutting titles
    for p in PRESETS:
        row.page_link("pages/explore.py", label=p.title, query_params=p.query(), help=p.look_at,
                      icon=":material/check_circle:" if active is p else ":material/school:")


def expected_error_text(summaries: Mapping[str, dict]) -> str | None:
    """One line: the worst validation class among the runs on screen, its expected errors and why."""
    from ppd_core.metrics.fidelity import CLASSES
    errs = [s["expected_error"] for s in summaries.values() if isinstance(s.get("expected_error"), Mapping)]
    if not errs:
        return None
    worst = max(errs, key=lambda e: (CLASSES.index(e["class"]) if e["class"] in CLASSES else 0,
                                     e["errors_pct"]["turn2_ttft_p50"]))
    pct = worst["errors_pct"]
    why = "; ".join(dict.fromkeys(r for e in errs for r in e.get("reasons", ())))
    return (f"**Expected simulator error** ({worst['label']}): Turn 2+ TTFT ±{pct['turn2_ttft_p50']:.0f} %, "
            f"TPOT ±{pct['turn2_tpot_mean']:.0f} %, a PPD/PD TTFT ratio ±{pct['effect_ttft']:.0f} % — the typical "
            f"miss against the measured system in this class (orange whiskers)" + (f". Why: {why}." if why else
                                                                                 ".") +
            " Classes and how they are measured: the Validation page.")


def expected_error_line(summaries: Mapping[str, dict]) -> None:
    text = expected_error_text(summaries)
    if text:
        st.caption(text)


def run_status(sc: Scenario, summaries: Mapping[str, dict]) -> None:
    """What the numbers on screen rest on: a saturated system (with the resource that saturated), weights
    that cannot act in this scenario, and figures resting on fewer than 100 requests."""
    from ppd_core.analysis.weights import policy_can_act
    saturated = {name: summary["saturation"] for name, summary in summaries.items()
                 if (summary.get("saturation") or {}).get("saturated")}
    if saturated:
        parts = [f"{name} ({sat.get('resource') or 'a resource'}: served {sat.get('served_qps', 0):.2f} of "
                 f"{sat.get('offered_qps', 0):.2f} conv/s)" for name, sat in saturated.items()]
        st.warning("**Saturated:** " + "; ".join(parts) + ". A run at overload never reaches a steady state: "
                   "its numbers grow with the run length.", icon=":material/speed:")
        with st.expander("Why each system counts as saturated"):
            for name, sat in saturated.items():
                st.markdown(f"**{name}**: {sat.get('evidence', '')}")
    expected_error_line(summaries)
    notes = next((s.get("extrapolated") for s in summaries.values() if s.get("extrapolated")), None)
    if notes:
        st.info("**Extrapolated** (outside the measured H100-SXM + Llama-3.1-8B setting): " + "; ".join(notes),
                icon=":material/science:")
    can, why = policy_can_act(sc)
    if not can:
        st.caption(f"The SLO weights do nothing here: {why}.")
    sample_warnings(summaries)
