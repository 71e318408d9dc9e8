"""Shared page helpers for the PPD Explorer dashboard.

Pages stay thin: they call ``scenario_sidebar`` (URL validation + widgets -> a ``Scenario``), the cached
runners (``simulate``, ``point_stats``, ``interference_curve``) and the chart builders here. There is no
simulation logic in this module: every number comes from ``ppd_core``; this file only turns widgets into a
Scenario and results into tables and Plotly figures.

URL sharing: every control is a widget bound to the URL with ``bind="query-params"`` and the key of the
matching ppd_core scenario field, so the address bar is a scenario (``python -m ppd_core run '<url>'``).
The native binding silently drops values it cannot parse, so before any widget renders we read the raw
query string ourselves, validate it with ``parse_lenient`` (plus the dashboard's own widget ranges), warn
about every rejected parameter and seed ``st.session_state`` with the nearest allowed value or the default.
"""
from __future__ import annotations

import json
import math
import multiprocessing
import os
import re
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import quote

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

import ppd_core
from ppd_core.config.errors import PPDError
from ppd_core.config.layout import LAYOUT_CATEGORY, PAPER_LAYOUTS
from ppd_core.config.scenario import SPEC, Scenario, parse_lenient, render_value
from ppd_core.config.workload_catalog import WORKLOAD_NAMES

# --------------------------------------------------------------------------------------------------------
# Constants (immutable)
# --------------------------------------------------------------------------------------------------------

#: Workloads a dashboard user can pick ("trace" needs an imported trace file: CLI only).
DASHBOARD_WORKLOADS = tuple(w for w in WORKLOAD_NAMES if w != "trace")

#: Bandwidth presets (label, GB/s, latency us), from data/links.json via the catalog.
def _link_presets() -> tuple[tuple[str, float, float], ...]:
    from ppd_core.config import catalog
    labels = {"NVLink": "NVLink", "IB-NDR": "IB NDR", "IB-HDR": "IB HDR", "100GbE": "100GbE"}
    return tuple((labels.get(name, name), float(link.bandwidth_gbps), float(link.latency_us))
                 for name, link in catalog.links().items())


SYSTEM_COLORS = MappingProxyType({"PPD": "#1f77b4", "PD": "#ff7f0e", "Replica": "#2ca02c"})
SYSTEMS = ("PPD", "PD", "Replica")
KIND_COLORS = MappingProxyType({"prefill": "#d62728", "transfer": "#9467bd", "decode": "#1f77b4",
                                "mixed": "#ff7f0e"})
EMBED_KEYS = ("embed", "embed_options")
MAX_WARNINGS = 12

#: Metric definitions (the paper's / benchmark's), shown next to every chart.
DEFS = MappingProxyType({
    "ttft": "**TTFT** = first token time − request send time (Turn 1 includes waiting for a client "
            "connection slot).",
    "tpot": "**TPOT** = (E2E − TTFT) / (output tokens − 1).",
    "e2e": "**E2E** = last token time − send time.",
    "turn2": "**Turn 2+** = every turn with index ≥ 2.",
    "local": "**Local share** = share of Turn 2+ requests served without P (append-prefill on the decode "
             "node, or a replica).",
    "slo": "**SLO attainment** = share of successful Turn 2+ requests at or under the threshold.",
    "x": "**x** = fraction of Turn 2+ appends done on the decode node.",
    "s": "**S** = w_ttft·ΔTTFT − w_tpot·ΔTPOT (Eq.1; S > 0 → serve locally).",
    "kv": "**KV bytes moved** = bytes of KV cache sent P → D over the link (all turns).",
})


def defs(*names: str) -> str:
    """Definitions text for a chart caption."""
    return "  \n".join(DEFS[n] for n in names)


# --------------------------------------------------------------------------------------------------------
# Controls: one widget per scenario key, bound to the URL
# --------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Control:
    """A dashboard control for one URL key. ``lo``/``hi`` are the widget's range (the dashboard range);
    values the scenario allows but the widget cannot show are clamped into it with a warning."""
    key: str
    label: str
    kind: str                       # slider | number | select | radio | layout | floats | select_slider
    lo: float | None = None
    hi: float | None = None
    step: float | None = None
    options: tuple = ()
    default: Any = None             # None: the scenario default (SPEC); set for non-scenario (page) keys
    fmt: str | None = None
    help: str | None = None

    @property
    def is_scenario_key(self) -> bool:
        return self.key in SPEC

    @property
    def default_value(self) -> Any:
        """The widget's default in widget terms (what the URL omits)."""
        if self.default is not None:
            return self.default
        return to_widget(self, SPEC[self.key].default)

    @property
    def integer(self) -> bool:
        if self.key in SPEC:
            return SPEC[self.key].kind == "int"
        return isinstance(self.lo, int) and isinstance(self.step, int)

    def choices(self) -> tuple:
        return tuple(self.options)

    def full_label(self) -> str:
        unit = SPEC[self.key].unit if self.key in SPEC else ""
        return f"{self.label} ({unit})" if unit else self.label

    def help_text(self) -> str:
        base = self.help or (SPEC[self.key].help if self.key in SPEC else "")
        if self.key in SPEC:
            return f"{base}  \nURL key: `{self.key}`."
        return base


def to_widget(ctrl: Control, value: Any) -> Any:
    """A scenario value -> the widget's value."""
    if ctrl.kind == "floats":
        return render_value(tuple(value))
    if ctrl.kind in ("select", "radio", "layout", "select_slider"):
        return str(value)
    if ctrl.integer:
        return int(value)
    return float(value)


def clamp_to_widget(ctrl: Control, value: Any) -> Any:
    """Nearest value the widget can show (identity when it already can); None when there is none."""
    if ctrl.kind in ("select", "radio", "select_slider"):
        return value if str(value) in ctrl.choices() else None
    if ctrl.kind in ("slider", "number"):
        v = float(value)
        if ctrl.lo is not None and v < ctrl.lo:
            v = ctrl.lo
        if ctrl.hi is not None and v > ctrl.hi:
            v = ctrl.hi
        return int(round(v)) if ctrl.integer else float(v)
    return value


def _c(key: str, label: str, kind: str, **kw: Any) -> Control:
    return Control(key, label, kind, **kw)


def _scenario_controls() -> dict[str, Control]:
    """Every scenario key's control on the Explore and Sweep pages (Learn overrides ``conversations``)."""
    ctrls = (
        _c("w_ttft", "w_ttft: weight of TTFT gain", "slider", lo=0.0, hi=10.0, step=0.1, fmt="%.1f"),
        _c("w_tpot", "w_tpot: weight of TPOT loss", "slider", lo=0.0, hi=10.0, step=0.1, fmt="%.1f"),
        _c("qps", "Load: conversation arrival rate", "slider", lo=0.1, hi=50.0, step=0.1, fmt="%.1f"),
        _c("bandwidth_gbps", "KV-transfer bandwidth", "slider", lo=1.0, hi=400.0, step=0.5, fmt="%.1f"),
        _c("gpu", "GPU type", "select", options=SPEC["gpu"].choice_list()),
        _c("model", "Model", "select", options=SPEC["model"].choice_list()),
        _c("layout", "Layout (preset or type your own, e.g. 4P_4pD)", "layout", options=PAPER_LAYOUTS),
        _c("policy", "Turn 2+ policy", "radio", options=SPEC["policy"].choice_list()),
        _c("workload", "Workload", "select", options=DASHBOARD_WORKLOADS),
        _c("turns", "Turns per conversation (0 = workload's own)", "slider", lo=0, hi=int(SPEC["turns"].hi), step=1),
        _c("seed", "Seed", "number", lo=0, hi=int(SPEC["seed"].hi), step=1),
        # advanced
        _c("conversations", "Conversations", "number", lo=1, hi=int(SPEC["conversations"].hi), step=50),
        _c("think_time_s", "Think time", "number", lo=0.0, hi=float(SPEC["think_time_s"].hi), step=0.5,
           fmt="%.2f"),
        _c("client_concurrency", "Client concurrency (0 = open loop)", "number", lo=0,
           hi=int(SPEC["client_concurrency"].hi), step=10),
        _c("arrival_window_s", "Arrival window (0 = off)", "number", lo=0.0,
           hi=float(SPEC["arrival_window_s"].hi), step=10.0, fmt="%.1f"),
        _c("timeout_s", "Request timeout", "number", lo=0.1, hi=float(SPEC["timeout_s"].hi), step=10.0,
           fmt="%.1f"),
        _c("rehash_frac", "Re-hash fraction (proxy quirk)", "slider", lo=0.0, hi=1.0, step=0.01),
        _c("link_latency_us", "Link latency per transfer", "number", lo=0.0,
           hi=float(SPEC["link_latency_us"].hi), step=1.0, fmt="%.1f"),
        _c("link_sharing", "Link sharing", "radio", options=SPEC["link_sharing"].choice_list()),
        _c("tp", "Tensor parallel (GPUs per node)", "select", options=SPEC["tp"].choice_list()),
        _c("slo_ttft_ms", "TTFT SLO thresholds (comma-separated)", "floats"),
        _c("slo_tpot_ms", "TPOT SLO thresholds (comma-separated)", "floats"),
        _c("max_batched_tokens", "Max batched tokens per iteration", "number", lo=64,
           hi=int(SPEC["max_batched_tokens"].hi), step=512),
        _c("gpu_mem_util", "GPU memory utilisation", "slider", lo=0.05, hi=1.0, step=0.01),
    )
    return {c.key: c for c in ctrls}


#: Sidebar groups: (title, keys); the last group lives in an "Advanced" expander.
GROUPS = (
    ("SLO weights (Eq.1)", ("w_ttft", "w_tpot")),
    ("Load", ("qps",)),
    ("KV transfer", ("bandwidth_gbps",)),
    ("Hardware and model", ("gpu", "model")),
    ("Cluster", ("layout", "policy")),
    ("Workload", ("workload", "turns", "seed")),
)
ADVANCED = ("conversations", "think_time_s", "client_concurrency", "arrival_window_s", "timeout_s",
            "rehash_frac", "link_latency_us", "link_sharing", "tp", "slo_ttft_ms", "slo_tpot_ms",
            "max_batched_tokens", "gpu_mem_util")

#: The Learn page shows a handful of conversations; it uses this range for ``conversations``.
LEARN_CONVERSATIONS = _c("conversations", "Conversations on the timeline", "slider", lo=1, hi=8, step=1,
                         default=3, help="How many conversations the teaching timeline shows (URL key "
                                         "`conversations`, the same scenario key as elsewhere).")


def controls_for(page: str) -> dict[str, Control]:
    ctrls = _scenario_controls()
    if page == "learn":
        ctrls["conversations"] = LEARN_CONVERSATIONS
    return ctrls


# --------------------------------------------------------------------------------------------------------
# URL validation (before any widget renders)
# --------------------------------------------------------------------------------------------------------

def _short(v: Any, n: int = 40) -> str:
    s = str(v)
    return s if len(s) <= n else s[:n] + "…"


def _raw_params() -> tuple[dict[str, str], list[str]]:
    """The raw query string as {key: last value} plus the keys that were repeated."""
    raw: dict[str, str] = {}
    repeated: list[str] = []
    for k in list(st.query_params.keys()):
        vals = st.query_params.get_all(k)
        raw[k] = vals[-1] if vals else ""
        if len(vals) > 1:
            repeated.append(k)
    return raw, repeated


def _page_scenario_defaults(ctrls: Mapping[str, Control]) -> dict[str, Any]:
    """Scenario values for keys whose page widget default differs from the scenario default."""
    return {k: c.default for k, c in ctrls.items() if c.is_scenario_key and c.default is not None}


def validate_url(ctrls: Mapping[str, Control], extra_keys: Sequence[str] = (),
                 seed_all: bool = False) -> tuple[Scenario, list[str]]:
    """Validate the raw URL against the scenario spec and the page's widget ranges.

    Returns the scenario the URL asks for (after fixing bad values) and one warning line per rejected
    parameter. Must run before the widgets. The URL is authoritative only for a widget that has no state
    yet in this session (a freshly opened link) or when ``seed_all`` (arrival from another page, where the
    shared widgets still hold their old values); later the widgets are, and the URL merely follows them.
    For those fresh keys it seeds ``st.session_state`` whenever the widget would not show the fixed value
    (invalid, clamped, canonicalised or repeated), so the widgets render the nearest allowed value or the
    default. ``extra_keys``: the page's own (non-scenario) keys; ``render_extra`` validates those.
    """
    raw, repeated = _raw_params()
    warnings: list[str] = []
    fresh = {k for k in raw if seed_all or k not in st.session_state}
    known = {k: v for k, v in raw.items() if k in SPEC}
    unknown = [k for k in raw if k not in SPEC and k not in extra_keys and k.lower() not in EMBED_KEYS]
    for k in unknown[:MAX_WARNINGS]:
        warnings.append(f"`{_short(k)}`: unknown parameter, ignored.")
    if len(unknown) > MAX_WARNINGS:
        warnings.append(f"… and {len(unknown) - MAX_WARNINGS} more unknown parameters, ignored.")
    for k in unknown:
        del st.query_params[k]          # unbound, so it may be removed: keeps the address bar clean
    for k in repeated:
        if k in SPEC and k in fresh:
            warnings.append(f"`{k}`: given {len(st.query_params.get_all(k))} times; using the last value "
                            f"{_short(raw[k])!r}.")

    base = _page_scenario_defaults(ctrls)
    sc, problems = parse_lenient({**base, **known})
    messages: dict[str, str] = {}
    for p in problems:
        messages.setdefault(p.key, _short(str(p).split(": ", 1)[-1], 300))

    # The dashboard's own limits: widget ranges and choices narrower than the scenario's.
    fixes: dict[str, Any] = {}
    for k, ctrl in ctrls.items():
        if k not in known:
            continue
        value = getattr(sc, k)
        near = clamp_to_widget(ctrl, to_widget(ctrl, value))
        if near is None:
            fixes[k] = SPEC[k].default if ctrl.default is None else ctrl.default
            messages[k] = (f"{_short(known[k])!r} is not available in the dashboard; using default "
                           f"{render_value(fixes[k])}")
        elif near != to_widget(ctrl, value):
            fixes[k] = near
            messages[k] = (f"{_short(known[k])!r} is outside the dashboard range [{render_value(ctrl.lo)}, "
                           f"{render_value(ctrl.hi)}]; using the nearest allowed {render_value(near)}")
    if fixes:
        sc, more = parse_lenient({**sc.to_dict(), **fixes})
        for p in more:
            messages.setdefault(p.key, _short(str(p).split(": ", 1)[-1], 300))
    warnings.extend(f"`{k}`: {m}" + ("" if m.endswith(".") else ".")
                    for k, m in messages.items() if k in fresh or k not in raw)

    # Seed every fresh widget whose URL text would not show the fixed value. Widgets that would reject the
    # raw value then use the seed; those that would accept it anyway (free text) are corrected by one rerun
    # (``finish_url_sync``).
    seeded = {}
    for k, ctrl in ctrls.items():
        if k not in raw or k not in fresh:
            continue
        want = to_widget(ctrl, getattr(sc, k))
        if seed_all or raw[k] != render_value(want) or k in repeated:
            st.session_state[k] = want
            seeded[k] = want
    st.session_state["_seeded"] = seeded
    return sc, warnings


def _validate_extra(c: Control, raw: str) -> tuple[Any, str | None]:
    """A page-only key (not a scenario key): its value, or the default and a warning line."""
    if c.kind in ("select", "radio", "select_slider"):
        if raw in c.choices():
            return raw, None
        return c.default, (f"`{c.key}`: {_short(raw)!r} is not allowed; must be one of "
                           f"{', '.join(c.choices())}; using default {c.default}.")
    try:
        v = float(raw)
    except ValueError:
        return c.default, f"`{c.key}`: {_short(raw)!r} is not a number; using default {c.default}."
    if not math.isfinite(v):
        return c.default, f"`{c.key}`: {_short(raw)!r} is not finite; using default {c.default}."
    near = clamp_to_widget(c, v)
    if near != v or (c.integer and not float(v).is_integer()):
        near = int(round(near)) if c.integer else near
        return near, (f"`{c.key}`: {_short(raw)!r} is outside [{render_value(c.lo)}, {render_value(c.hi)}]; "
                      f"using {near}.")
    return (int(v) if c.integer else v), None


def finish_url_sync() -> None:
    """After the widgets rendered: if a seeded widget still shows something else (a free-text widget took
    the raw URL value on first load), rerun once with the seeds re-applied, so they win and the binding
    rewrites the URL. The warnings of this run are carried over to the rerun."""
    seeded = st.session_state.get("_seeded") or {}
    off = {k: v for k, v in seeded.items() if st.session_state.get(k) != v}
    if not off or st.session_state.get("_url_reruns", 0) >= 2:
        st.session_state["_url_reruns"] = 0
        return
    st.session_state["_url_reruns"] = st.session_state.get("_url_reruns", 0) + 1
    st.session_state["_reseed"] = seeded
    st.session_state["_flash"] = list(st.session_state.get("_flash") or []) + list(
        st.session_state.get("_pending_warnings") or [])
    st.rerun()


# --------------------------------------------------------------------------------------------------------
# Widgets -> Scenario
# --------------------------------------------------------------------------------------------------------

def _on_change(key: str) -> None:
    """Widget callback: refuse a value that makes the scenario invalid (free text, size caps) and keep the
    last good one, with a one-line warning shown on the next run; canonicalise accepted free text."""
    good: dict = st.session_state.get("_good") or {}
    if key not in good:
        return
    values = dict(good)
    values[key] = st.session_state.get(key)
    sc, problems = parse_lenient({k: v for k, v in values.items() if k in SPEC})
    bad = [p for p in problems if p.key == key or key in ("conversations", "turns", "qps", "arrival_window_s")]
    if bad:
        shown = _short(st.session_state.get(key))
        st.session_state[key] = good[key]
        st.session_state["_flash"] = list(st.session_state.get("_flash") or []) + [
            f"`{key}`: {shown!r} refused ({_short(str(bad[0]).split(': ', 1)[-1], 200)}); kept "
            f"{render_value(good[key])}."]
    elif key in SPEC and isinstance(values[key], str):
        canonical = render_value(getattr(sc, key))
        if canonical != values[key]:
            st.session_state[key] = canonical       # e.g. layout 3P_1pD_2R -> 2R_3P_1pD, slo "200, 100" -> 100,200


def _preset(bw: float, lat: float) -> None:
    st.session_state["bandwidth_gbps"] = bw
    st.session_state["link_latency_us"] = lat


def render_control(ctrl: Control, where: Any, url_value: Any = None) -> Any:
    """Draw one bound widget; its key is the URL key. ``url_value``: the validated URL value (a custom layout
    from a link must be among the options before the binding seeds it)."""
    common = dict(key=ctrl.key, help=ctrl.help_text(), bind="query-params",
                  on_change=_on_change, args=(ctrl.key,))
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
        extra = [v for v in (st.session_state.get(ctrl.key), url_value) if v and v not in ctrl.options]
        opts = tuple(ctrl.options) + tuple(dict.fromkeys(extra))
        return where.selectbox(label, opts, index=opts.index(default), accept_new_options=True, **common)
    if ctrl.kind == "floats":
        return where.text_input(label, value=default, **common)
    raise ValueError(f"unknown control kind {ctrl.kind!r}")


@dataclass(frozen=True)
class PageState:
    scenario: Scenario
    warnings: tuple[str, ...]


def scenario_sidebar(page: str, extra_keys: Sequence[str] = (), show_presets: bool = True) -> PageState:
    """Validate the URL, draw every scenario control in the sidebar, and return the Scenario."""
    ctrls = controls_for(page)
    prev = st.session_state.get("_page")
    arrived = prev != page
    st.session_state["_page"] = page
    for k, v in (st.session_state.pop("_reseed", None) or {}).items():
        st.session_state[k] = v
    if arrived and prev is not None:
        # a key whose control differs between the pages (Learn's handful of conversations) restarts from
        # this page's default unless the URL names it
        for k, c in ctrls.items():
            if k not in st.query_params and controls_for(prev).get(k) != c:
                st.session_state[k] = c.default_value
    flash = list(st.session_state.pop("_flash", None) or [])
    url_sc, warnings = validate_url(ctrls, extra_keys, seed_all=arrived)
    st.session_state["_pending_warnings"] = warnings
    sb = st.sidebar
    for title, keys in GROUPS:
        sb.markdown(f"**{title}**")
        for k in keys:
            render_control(ctrls[k], sb, getattr(url_sc, k))
            if k == "bandwidth_gbps" and show_presets:
                presets = _link_presets()
                cols = sb.columns(2)
                for i, (name, bw, lat) in enumerate(presets):
                    cols[i % 2].button(f"{name} {render_value(bw)}", key=f"_preset_{name}", on_click=_preset,
                                       args=(bw, lat), width="stretch",
                                       help=f"Preset {name}: sets {render_value(bw)} GB/s and "
                                            f"{render_value(lat)} us link latency (data/links.json).")
            if k == "layout":
                cat = LAYOUT_CATEGORY.get(str(st.session_state.get("layout")), "")
                if cat:
                    sb.caption(f"Paper category: {cat}")
    with sb.expander("Advanced", expanded=False):
        for k in ADVANCED:
            render_control(ctrls[k], st)
    finish_url_sync()
    values = {k: st.session_state.get(k) for k in ctrls}     # the SLO lists are text; the Scenario parses them
    sc, problems = parse_lenient(values)
    st.session_state["_good"] = {k: to_widget(c, getattr(sc, k)) for k, c in ctrls.items()}
    all_warn = _dedupe(flash + warnings + [f"`{p.key}`: {_short(str(p).split(': ', 1)[-1], 300)}"
                                           for p in problems])
    return PageState(sc, tuple(all_warn))


def _dedupe(items: list[str]) -> list[str]:
    seen, out = set(), []
    for i in items:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


def show_warnings(ws: Sequence[str]) -> None:
    for w in ws[:MAX_WARNINGS + 1]:
        st.warning(f"Parameter {w}", icon="⚠️")
    if len(ws) > MAX_WARNINGS + 1:
        st.warning(f"… and {len(ws) - MAX_WARNINGS - 1} more rejected parameters.", icon="⚠️")


def share_box(sc: Scenario, page_path: str = "", extra: Mapping[str, Any] | None = None) -> str:
    """Visible 'share this view' link built from ``Scenario.to_query()`` (+ page-only keys)."""
    base = st.context.url or "http://localhost:8501"
    base = base.rstrip("/")
    for p in ("/sweep", "/learn", "/explore"):
        if base.endswith(p):
            base = base[: -len(p)]
    query = sc.to_query()
    extras = "&".join(f"{k}={quote(str(v), safe=',._-')}" for k, v in (extra or {}).items())
    q = "&".join(x for x in (query, extras) if x)
    url = f"{base}/{page_path}" + (f"?{q}" if q else "")
    with st.container(border=True):
        st.markdown("**Share this view** — opening the link restores these controls and numbers "
                    "(the URL keys are the `ppd_core` scenario keys).")
        st.code(url, language=None, wrap_lines=True)
        st.caption("Same numbers on the command line:")
        st.code(cli_command(sc), language="bash", wrap_lines=True)
    return url


def cli_command(sc: Scenario) -> str:
    """``python -m ppd_core run key=value ...`` for the scenario (defaults omitted)."""
    pairs = " ".join(f"{k}={v}" for k, v in sc.to_params().items())
    return f"python -m ppd_core run {pairs}".rstrip()


# --------------------------------------------------------------------------------------------------------
# Cached runs (st.cache_data keyed by the frozen Scenario: dataclasses hash by value)
# --------------------------------------------------------------------------------------------------------

def _worker_count() -> int:
    """Simulation worker processes: ``PPD_DASHBOARD_WORKERS`` (0 = run in the server process), default: one
    per core up to 3 (the scenario and its two baselines run side by side)."""
    if multiprocessing.parent_process() is not None:
        return 0                    # inside a worker: never start a nested pool
    raw = os.environ.get("PPD_DASHBOARD_WORKERS", "")
    if raw.strip().isdigit():
        return min(int(raw), 8)
    return min(3, os.cpu_count() or 1) if (os.cpu_count() or 1) > 1 else 0


@dataclass(frozen=True)
class Workers:
    """The simulation process pool and the futures of its warm-up runs (one per worker)."""
    pool: ProcessPoolExecutor
    warmup: tuple

    @property
    def ready(self) -> bool:
        return all(f.done() for f in self.warmup)


def _release_workers(w: "Workers | None") -> None:
    if w is not None:
        w.pool.shutdown(wait=False, cancel_futures=True)


@st.cache_resource(show_spinner=False, on_release=_release_workers)
def worker_pool(n: int) -> Workers | None:
    """A process pool for ppd_core runs (spawned, so no fork of the threaded server). Every worker imports
    ppd_core and runs a tiny scenario at once, so the first slider move does not wait for that."""
    if n <= 0:
        return None
    pool = ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn"))
    warm = tuple(pool.submit(ppd_core.run, Scenario(conversations=2, workload="small_tiny")) for _ in range(n))
    return Workers(pool, warm)


def start_workers() -> None:
    """Start (once per server) and warm the worker pool, and let this session use it. Pages call this after
    their results are on screen, so spawning the workers never delays a first page load."""
    worker_pool(_worker_count())
    st.session_state["_workers"] = True


def _ready_workers() -> Workers | None:
    if not st.session_state.get("_workers"):
        return None
    workers = worker_pool(_worker_count())
    return workers if workers is not None and workers.ready else None


@st.cache_data(max_entries=256, show_spinner=False)
def simulate(sc: Scenario, record_spans: bool = False) -> dict:
    """One ppd_core run, reduced to picklable parts (summary dict, records/nodes/spans DataFrames). Runs in
    the worker pool once it is warm, so several scenarios can run at once (see ``parallel_map``); until then
    (a session's first page load) in this process. Either way the result is the same pure function of ``sc``."""
    workers = _ready_workers()
    if workers is None:
        res = ppd_core.run(sc, record_spans=record_spans)
    else:
        res = workers.pool.submit(ppd_core.run, sc, record_spans=record_spans).result()
    return {"summary": res.summary, "records": res.records, "nodes": res.nodes,
            "spans": res.spans if record_spans else None}


def parallel_map(fn: Callable[[Any], Any], items: Sequence[Any],
                 on_done: Callable[[int], None] | None = None) -> list:
    """``[fn(x) for x in items]`` with up to (workers + 1) calls in flight. The calls are cached functions
    whose misses run in the process pool, so threads only wait; each thread gets this run's script context
    (st.cache_data needs it). ``on_done(k)`` is called in this thread after k results are in."""
    n = _worker_count()
    if n <= 0 or len(items) <= 1:
        out = []
        for i, x in enumerate(items, start=1):
            out.append(fn(x))
            if on_done:
                on_done(i)
        return out
    ctx = get_script_run_ctx()

    def call(x: Any) -> Any:
        add_script_run_ctx(threading.current_thread(), ctx)
        return fn(x)

    with ThreadPoolExecutor(max_workers=n + 1, thread_name_prefix="ppd-sim") as ex:
        futures = [ex.submit(call, x) for x in items]
        if on_done:
            for k, _ in enumerate(as_completed(futures), start=1):
                on_done(k)
        return [f.result() for f in futures]


def baseline_scenarios(sc: Scenario) -> dict[str, Scenario]:
    """{"PPD": sc, "PD": x=0 on the same GPUs, "Replica": same GPU count} from the core."""
    return dict(ppd_core.baselines(sc))


def simulate_systems(sc: Scenario) -> dict[str, dict]:
    """The scenario and its baselines, each cached separately, run side by side."""
    scs = baseline_scenarios(sc)
    return dict(zip(scs, parallel_map(simulate, list(scs.values()))))


def _turn2_ok(records: pd.DataFrame) -> pd.DataFrame:
    return records[(records["turn"] >= 2) & (records["status"] == "ok")]


@st.cache_data(max_entries=4096, show_spinner=False)
def point_stats(sc: Scenario) -> dict:
    """Sweep point: Turn 2+ TTFT/TPOT p10/p50/p90 (from the records), means, local share, SLO, success."""
    r = simulate(sc)
    t2 = _turn2_ok(r["records"])
    s = r["summary"]
    out = {"local_share": s["local_share"], "success_rate": s["success_rate"],
           "ttft_mean": s["groups"]["turn2plus"]["ttft_ms"]["mean"],
           "tpot_mean": s["groups"]["turn2plus"]["tpot_ms"]["mean"], "n": int(len(t2))}
    for m in ("ttft_ms", "tpot_ms"):
        q = t2[m].quantile([0.1, 0.5, 0.9]) if len(t2) else pd.Series([np.nan] * 3, index=[0.1, 0.5, 0.9])
        out[f"{m}_p10"], out[f"{m}_p50"], out[f"{m}_p90"] = (float(q[0.1]), float(q[0.5]), float(q[0.9]))
    return out


@st.cache_data(max_entries=64, show_spinner=False)
def interference_curve(sc: Scenario, batches: tuple[int, ...], n_prefills: int, prefill_tokens: int,
                       cached_tokens: int) -> pd.DataFrame:
    """Decode TPOT vs batch with no / a full / an append prefill in the batch (ppd_core.perf)."""
    rows = []
    for b in batches:
        for kind in ("none", "full", "append"):
            rows.append({"batch": b, "kind": kind, "tpot_ms": ppd_core.model.interference_tpot_ms(
                sc, batch=b, kind=kind, n_prefills=n_prefills, prefill_tokens=prefill_tokens,
                cached_tokens=cached_tokens)})
    return pd.DataFrame(rows)


def run_or_stop(fn: Callable[[], Any]) -> Any:
    """Call ``fn``; a user-facing ppd_core error becomes one st.error line and stops the page."""
    try:
        return fn()
    except PPDError as exc:
        st.error(f"Simulation refused this scenario: {exc}")
        st.stop()


# --------------------------------------------------------------------------------------------------------
# Formatting and cards
# --------------------------------------------------------------------------------------------------------

def fmt_ms(v: float) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:,.1f} ms"


def fmt_pct(v: float) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{100 * v:.1f} %"


def fmt_bytes(v: float) -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:,.2f} {unit}"
    return f"{v:,.0f} B"


def _get(summary: dict, path: str) -> float:
    cur: Any = summary
    for p in path.split("."):
        cur = cur[p]
    return float(cur) if cur is not None else float("nan")


#: Headline cards: (label, summary path, formatter, lower is better, definition key)
CARDS = (
    ("Turn 2+ TTFT mean", "groups.turn2plus.ttft_ms.mean", "ms", True, "ttft"),
    ("Turn 2+ TTFT p90", "groups.turn2plus.ttft_ms.p90", "ms", True, "ttft"),
    ("Turn 2+ TPOT mean", "groups.turn2plus.tpot_ms.mean", "ms", True, "tpot"),
    ("Turn 2+ E2E mean", "groups.turn2plus.e2e_ms.mean", "ms", True, "e2e"),
    ("Local share", "local_share", "pct", False, "local"),
    ("KV bytes moved", "kv.bytes", "bytes", True, "kv"),
    ("Success rate", "success_rate", "pct", False, "slo"),
)
_FMT = {"ms": fmt_ms, "pct": fmt_pct, "bytes": fmt_bytes}


def _delta(kind: str, d: float) -> str | None:
    if not math.isfinite(d):
        return None
    if kind == "ms":
        return f"{d:+,.1f} ms vs PD"
    if kind == "pct":
        return f"{100 * d:+.1f} pp vs PD"
    return ("+" if d >= 0 else "-") + fmt_bytes(abs(d)) + " vs PD"


def slo_label(key: str) -> str:
    """'ttft_100ms' -> 'TTFT ≤ 100 ms'."""
    metric, _, thr = key.partition("_")
    return f"{metric.upper()} ≤ {thr.removesuffix('ms')} ms"


def headline_cards(summaries: Mapping[str, dict], per_row: int = 4) -> None:
    """st.metric cards for the scenario with deltas against the PD baseline."""
    me, pd_ = summaries["PPD"], summaries.get("PD")
    cards = []
    for label, path, kind, lower_better, dkey in CARDS:
        v = _get(me, path)
        d = v - _get(pd_, path) if pd_ is not None else float("nan")
        cards.append((label, _FMT[kind](v), _delta(kind, d), "inverse" if lower_better else "normal", DEFS[dkey]))
    for k, v in me.get("slo_attainment", {}).items():
        d = float(v) - float(pd_["slo_attainment"].get(k, float("nan"))) if pd_ is not None else float("nan")
        cards.append((f"SLO {slo_label(k)}", fmt_pct(float(v)), _delta("pct", d), "normal", DEFS["slo"]))
    for i in range(0, len(cards), per_row):
        cols = st.columns(per_row)
        for col, (label, value, delta, color, help_) in zip(cols, cards[i:i + per_row]):
            flat = delta is not None and re.match(r"^[+-]0(\.0+)? ", delta) is not None
            col.metric(label, value, delta=delta, delta_color="off" if flat else color,
                       delta_arrow="off" if flat else "auto", help=help_.replace("**", ""), border=True)


def summary_table(summaries: Mapping[str, dict], scenarios: Mapping[str, Scenario]) -> pd.DataFrame:
    rows = []
    for name, s in summaries.items():
        g = s["groups"]
        rows.append({
            "system": name, "layout": scenarios[name].layout, "policy": scenarios[name].policy,
            "T1 TTFT mean (ms)": g["turn1"]["ttft_ms"]["mean"],
            "T2+ TTFT mean (ms)": g["turn2plus"]["ttft_ms"]["mean"],
            "T2+ TTFT p90 (ms)": g["turn2plus"]["ttft_ms"]["p90"],
            "T2+ TPOT mean (ms)": g["turn2plus"]["tpot_ms"]["mean"],
            "T2+ E2E mean (ms)": g["turn2plus"]["e2e_ms"]["mean"],
            "local share": s["local_share"], "success": s["success_rate"],
            "tokens/s": s["throughput"]["tokens_per_s"], "KV GB": s["kv"]["bytes"] / 1e9,
        })
    return pd.DataFrame(rows)


def summary_table_text(summaries: Mapping[str, dict], scenarios: Mapping[str, Scenario]) -> pd.DataFrame:
    """``summary_table`` formatted for reading: one column per system, one row per figure."""
    df = summary_table(summaries, scenarios).set_index("system")
    fmt = {"local share": fmt_pct, "success": fmt_pct, "KV GB": lambda v: f"{v:,.2f}",
           "tokens/s": lambda v: f"{v:,.0f}"}
    out = pd.DataFrame({col: [fmt.get(col, (lambda v: f"{v:,.1f}" if isinstance(v, float) else str(v)))(v)
                              for v in df[col]] for col in df.columns}, index=df.index)
    return out.T


# --------------------------------------------------------------------------------------------------------
# Charts (Plotly graph_objects; results -> figures only)
# --------------------------------------------------------------------------------------------------------

def _ecdf(values: pd.Series, max_points: int = 300) -> tuple[np.ndarray, np.ndarray]:
    v = np.sort(values.dropna().to_numpy(dtype=float))
    if v.size == 0:
        return v, v
    y = np.arange(1, v.size + 1) / v.size
    if v.size > max_points:
        idx = np.unique(np.linspace(0, v.size - 1, max_points).astype(int))
        v, y = v[idx], y[idx]
    return v, y


def _system_name(name: str, scenarios: Mapping[str, Scenario]) -> str:
    return f"{name} ({scenarios[name].layout})"


def cdf_figure(results: Mapping[str, dict], scenarios: Mapping[str, Scenario], metric: str,
               title: str, log_x: bool = True) -> go.Figure:
    """CDF of ``metric``: Turn 2+ solid, Turn 1 dotted, one colour per system, on one axis (every extra
    subplot costs the browser a noticeable redraw on each slider move)."""
    fig = go.Figure()
    for name, r in results.items():
        rec = r["records"]
        ok = rec[rec["status"] == "ok"]
        for turn, mask, dash in (("Turn 2+", ok["turn"] >= 2, None), ("Turn 1", ok["turn"] == 1, "dot")):
            x, y = _ecdf(ok.loc[mask, metric], max_points=200)
            fig.add_trace(go.Scatter(
                x=x, y=y, mode="lines", name=f"{_system_name(name, scenarios)} · {turn}", legendgroup=name,
                line=dict(color=SYSTEM_COLORS.get(name), shape="hv", dash=dash, width=2 if dash is None else 1.5),
                hovertemplate="%{x:.1f} ms: %{y:.0%}<extra>" + f"{name} {turn}" + "</extra>"))
    if log_x:
        vals = pd.concat([r["records"][metric] for r in results.values()]).dropna()
        vals = vals[vals > 0]
        ticks = _log_ticks(float(vals.min()), float(vals.max())) if len(vals) else []
        fig.update_xaxes(title_text=f"{title} (ms, log scale)", type="log", tickvals=ticks,
                         ticktext=[f"{t:,g}" for t in ticks])
    else:
        fig.update_xaxes(title_text=f"{title} (ms)")
    fig.update_yaxes(title_text="share of requests ≤ x", tickformat=".0%")
    fig.update_layout(title=f"{title} distribution (CDF): Turn 2+ solid, Turn 1 dotted", height=380,
                      margin=dict(t=60, b=40, l=50, r=10), legend=dict(orientation="h", y=-0.22))
    return fig


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Readable log-axis ticks: 1-2-5 steps over at most two decades, else one tick per decade."""
    lo_e, hi_e = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = (1, 2, 5) if hi_e - lo_e <= 2 else (1,)
    ticks = [m * 10.0 ** e for e in range(lo_e, hi_e + 1) for m in steps]
    return [t for t in ticks if lo / 1.5 <= t <= hi * 1.5]


def by_turn_figure(results: Mapping[str, dict], scenarios: Mapping[str, Scenario], metric: str = "ttft_ms",
                   title: str = "TTFT") -> go.Figure:
    """Mean (solid) and p90 (dotted) of ``metric`` per turn index, one colour per system."""
    fig = go.Figure()
    for name, r in results.items():
        rec = r["records"]
        ok = rec[rec["status"] == "ok"]
        if ok.empty:
            continue
        g = ok.groupby("turn")[metric]
        stats = pd.DataFrame({"mean": g.mean(), "p90": g.quantile(0.9), "n": g.size()})
        stats = stats[stats["n"] >= 3]
        color = SYSTEM_COLORS.get(name)
        fig.add_trace(go.Scatter(x=stats.index, y=stats["mean"], mode="lines+markers",
                                 name=f"{_system_name(name, scenarios)} mean", line=dict(color=color),
                                 customdata=stats["n"], legendgroup=name,
                                 hovertemplate="turn %{x}: %{y:.1f} ms (n=%{customdata})<extra>" + name + "</extra>"))
        fig.add_trace(go.Scatter(x=stats.index, y=stats["p90"], mode="lines", name=f"{name} p90",
                                 line=dict(color=color, dash="dot"), legendgroup=name,
                                 hovertemplate="turn %{x}: p90 %{y:.1f} ms<extra>" + name + "</extra>"))
    fig.update_layout(title=f"{title} by turn index (mean solid, p90 dotted)", height=380,
                      margin=dict(t=60, b=40, l=50, r=10), xaxis_title="turn index (turns with ≥ 3 requests)",
                      yaxis_title=f"{title} (ms, log scale)", yaxis_type="log", yaxis_dtick=1,
                      legend=dict(orientation="h", y=-0.25))
    fig.update_xaxes(dtick=1)
    return fig


def band_figure(df: pd.DataFrame, x: str, metric: str, title: str, x_title: str, log_x: bool = False) -> go.Figure:
    """p50 line with a p10-p90 band (go.Scatter fill="tonexty") per system. ``df`` has columns
    system, ``x``, ``{metric}_p10/_p50/_p90``."""
    fig = go.Figure()
    for name in [s for s in SYSTEMS if s in set(df["system"])]:
        d = df[df["system"] == name].sort_values(x)
        color = SYSTEM_COLORS.get(name, "#444")
        rgba = _rgba(color, 0.18)
        fig.add_trace(go.Scatter(x=d[x], y=d[f"{metric}_p90"], mode="lines", line=dict(width=0),
                                 showlegend=False, legendgroup=name, hoverinfo="skip", name=f"{name} p90"))
        fig.add_trace(go.Scatter(x=d[x], y=d[f"{metric}_p10"], mode="lines", line=dict(width=0), fill="tonexty",
                                 fillcolor=rgba, showlegend=False, legendgroup=name, hoverinfo="skip",
                                 name=f"{name} p10–p90"))
        fig.add_trace(go.Scatter(x=d[x], y=d[f"{metric}_p50"], mode="lines+markers", name=f"{name} p50",
                                 line=dict(color=color), legendgroup=name,
                                 customdata=np.stack([d[f"{metric}_p10"], d[f"{metric}_p90"]], axis=-1),
                                 hovertemplate=f"{x_title} %{{x}}: p50 %{{y:.1f}} ms "
                                               "(p10 %{customdata[0]:.1f}, p90 %{customdata[1]:.1f})<extra>"
                                               + name + "</extra>"))
    fig.update_layout(title=title, height=360, margin=dict(t=60, b=40, l=50, r=10), xaxis_title=x_title,
                      yaxis_title=f"Turn 2+ {metric.split('_')[0].upper()} (ms)",
                      legend=dict(orientation="h", y=-0.25))
    if log_x:
        ticks = sorted(set(df[x]))
        fig.update_xaxes(type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    return fig


def frontier_figure(df: pd.DataFrame, refs: pd.DataFrame | None = None) -> go.Figure:
    """Turn 2+ TTFT vs TPOT (mean, and p50 dotted) as w_tpot goes 0 -> 6, each point labelled with its local
    share; ``refs`` (column ``label``) adds the x=0 and x=1 extremes as reference markers."""
    d = df.sort_values("w_tpot").reset_index(drop=True)
    # one label per distinct operating point (several weights often give the same decisions)
    key = d[["tpot_mean", "ttft_mean"]].round(6).apply(tuple, axis=1)
    labels = []
    for i, k in enumerate(key):
        same = d.loc[key == k, "w_tpot"]
        first = same.index[0] == i
        span = f"{same.min():g}" if len(same) == 1 else f"{same.min():g}–{same.max():g}"
        labels.append(f"w_tpot {span}: local {100 * d.loc[i, 'local_share']:.0f}%" if first else "")
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=d["tpot_mean"], y=d["ttft_mean"], mode="lines+markers+text", text=labels,
                             textposition="top center", textfont=dict(size=11), name="PPD mean (w_tpot 0 → 6)",
                             line=dict(color=SYSTEM_COLORS["PPD"]), customdata=np.stack(
                                 [d["w_tpot"], 100 * d["local_share"]], axis=-1),
                             hovertemplate="w_tpot %{customdata[0]:g}: TPOT %{x:.2f} ms, TTFT %{y:.1f} ms, "
                                           "local %{customdata[1]:.0f}%<extra>mean</extra>"))
    fig.add_trace(go.Scatter(x=d["tpot_ms_p50"], y=d["ttft_ms_p50"], mode="lines+markers", name="PPD p50",
                             line=dict(color=SYSTEM_COLORS["PPD"], dash="dot"), customdata=d["w_tpot"],
                             hovertemplate="w_tpot %{customdata:g}: TPOT %{x:.2f} ms, TTFT %{y:.1f} ms"
                                           "<extra>p50</extra>"))
    if refs is not None and len(refs):
        fig.add_trace(go.Scatter(x=refs["tpot_mean"], y=refs["ttft_mean"], mode="markers+text",
                                 text=refs["label"], textposition="bottom center", name="extremes (mean)",
                                 marker=dict(symbol="x", size=11, color="#555"),
                                 hovertemplate="%{text}: TPOT %{x:.2f} ms, TTFT %{y:.1f} ms<extra></extra>"))
    fig.update_layout(title="Weights frontier: Turn 2+ TTFT vs TPOT as w_tpot goes 0 → 6", height=440,
                      margin=dict(t=60, b=40, l=50, r=10), xaxis_title="Turn 2+ TPOT (ms)",
                      yaxis_title="Turn 2+ TTFT (ms)", legend=dict(orientation="h", y=-0.2))
    return fig


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def timeline_events(spans_by_system: Mapping[str, pd.DataFrame]) -> np.ndarray:
    """Sorted distinct span boundaries (s) over all systems: the stops of the teaching slider."""
    times = [np.concatenate([s["start_s"].to_numpy(float), s["end_s"].to_numpy(float)])
             for s in spans_by_system.values() if s is not None and len(s)]
    if not times:
        return np.array([0.0])
    return np.unique(np.round(np.concatenate(times), 6))


def gantt_figure(spans_by_system: Mapping[str, pd.DataFrame], t_now: float, t_end: float) -> go.Figure:
    """Per-node Gantt (one row of subplots per system) of the spans started by ``t_now``, cut at ``t_now``."""
    names = list(spans_by_system)
    fig = make_subplots(rows=len(names), cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=names)
    shown_kinds: set[str] = set()
    for i, name in enumerate(names, start=1):
        sp = spans_by_system[name]
        if sp is None or sp.empty:
            continue
        nodes = sorted(sp["node"].astype(str).unique(), key=_node_order)
        vis = sp[sp["start_s"] <= t_now + 1e-9]
        min_w = max(t_end, 1e-6) * 0.004          # keep microsecond transfers visible at any zoom
        for kind, d in vis.groupby("kind", sort=False):
            end = np.minimum(d["end_s"].to_numpy(float), t_now)
            start = d["start_s"].to_numpy(float)
            fig.add_trace(go.Bar(
                y=d["node"].astype(str), x=np.maximum(end - start, min_w) * 1e3, base=start * 1e3,
                orientation="h", name=kind, legendgroup=kind, showlegend=kind not in shown_kinds,
                marker=dict(color=KIND_COLORS.get(kind, "#7f7f7f"), line=dict(width=0.5, color="white")),
                customdata=np.stack([d["conversations"].astype(str), start * 1e3,
                                     d["end_s"].to_numpy(float) * 1e3], axis=-1),
                hovertemplate="%{y} " + kind + "<br>conv %{customdata[0]}<br>%{customdata[1]:.1f} → "
                              "%{customdata[2]:.1f} ms<extra>" + name + "</extra>"), row=i, col=1)
            shown_kinds.add(str(kind))
        fig.update_yaxes(categoryorder="array", categoryarray=nodes[::-1], row=i, col=1)
        fig.add_vline(x=t_now * 1e3, line=dict(color="black", dash="dash", width=1), row=i, col=1)
    fig.update_xaxes(range=[0, t_end * 1e3 * 1.02], title_text="simulated time (ms)", row=len(names), col=1)
    fig.update_layout(barmode="overlay", height=200 + 170 * len(names), margin=dict(t=50, b=40, l=60, r=10),
                      title=f"Request timeline at t = {t_now * 1e3:,.1f} ms",
                      legend=dict(orientation="h", y=-0.15))
    return fig


def _node_order(name: str) -> tuple:
    head = name.rstrip("0123456789")
    order = {"R": 0, "P": 1, "D": 2, "pD": 3}.get(head, 4)
    tail = name[len(head):]
    return (order, int(tail) if tail.isdigit() else 0, name)


def interference_figure(df: pd.DataFrame, n_prefills: int, prefill_tokens: int, cached_tokens: int) -> go.Figure:
    labels = {"none": "decode only", "full": f"+{n_prefills} full prefill ({prefill_tokens} tok, no cache)",
              "append": f"+{n_prefills} append-prefill ({prefill_tokens} tok on {cached_tokens} cached)"}
    colors = {"none": "#7f7f7f", "full": KIND_COLORS["prefill"], "append": KIND_COLORS["decode"]}
    fig = go.Figure()
    for kind in ("none", "full", "append"):
        d = df[df["kind"] == kind]
        fig.add_trace(go.Scatter(x=d["batch"], y=d["tpot_ms"], mode="lines+markers", name=labels[kind],
                                 line=dict(color=colors[kind], dash="dot" if kind == "none" else None),
                                 hovertemplate="batch %{x}: %{y:.2f} ms<extra>" + kind + "</extra>"))
    # annotate the slowdown at the largest batch
    last = df["batch"].max()
    base = df[(df["batch"] == last) & (df["kind"] == "none")]["tpot_ms"]
    for kind in ("full", "append"):
        v = df[(df["batch"] == last) & (df["kind"] == kind)]["tpot_ms"]
        if len(base) and len(v) and base.iloc[0] > 0:
            pct = 100 * (v.iloc[0] / base.iloc[0] - 1)
            fig.add_annotation(x=last, y=v.iloc[0], text=f"{pct:+.0f}%", showarrow=False, xanchor="left",
                               font=dict(color=colors[kind]))
    fig.update_layout(title="Interference: decode TPOT vs batch size with a prefill in the batch", height=400,
                      margin=dict(t=60, b=40, l=50, r=40), xaxis_title="decode batch size (requests)",
                      yaxis_title="decode TPOT (ms)", legend=dict(orientation="h", y=-0.2))
    return fig


# --------------------------------------------------------------------------------------------------------
# Exports
# --------------------------------------------------------------------------------------------------------

def records_csv(results: Mapping[str, dict]) -> bytes:
    frames = [r["records"].assign(system=name) for name, r in results.items()]
    df = pd.concat(frames, ignore_index=True)
    cols = ["system"] + [c for c in df.columns if c != "system"]
    return df[cols].to_csv(index=False).encode()


def summary_json(results: Mapping[str, dict], url: str) -> bytes:
    payload = {"share_url": url, "systems": {name: r["summary"] for name, r in results.items()}}
    return json.dumps(payload, indent=2, default=_json_default).encode()


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def png_bytes(fig: go.Figure) -> bytes:
    """Render with kaleido (drives Debian's /usr/bin/chromium); called only when a download is clicked."""
    return fig.to_image(format="png", width=1100, height=int(fig.layout.height or 450), scale=2)


def chart(fig: go.Figure, key: str, caption: str | None = None, filename: str | None = None) -> None:
    """A Plotly chart with its metric definitions and a PNG download (rendered on click)."""
    st.plotly_chart(fig, key=key, config={"displaylogo": False})
    if caption:
        st.caption(caption)
    st.download_button("PNG", data=lambda: png_bytes(fig), file_name=filename or f"{key}.png", mime="image/png",
                       key=f"png_{key}", on_click="ignore", icon=":material/download:")


def nav_links(sc: Scenario, here: str) -> None:
    """Sidebar links that carry this scenario to the other pages (navigation clears the URL)."""
    st.sidebar.markdown("**Open this scenario in**")
    params = sc.to_params()
    for path, label in (("pages/explore.py", "Explore"), ("pages/sweep.py", "Sweep"), ("pages/learn.py", "Learn")):
        if path.endswith(f"{here}.py"):
            continue
        p = dict(params)
        if here == "learn" or path.endswith("learn.py"):
            p.pop("conversations", None)     # the Learn page shows a handful of conversations, not a run size
        st.sidebar.page_link(path, label=label, query_params=p)


# --------------------------------------------------------------------------------------------------------
# Sweeps and the teaching timeline (loops over cached runs; no simulation logic)
# --------------------------------------------------------------------------------------------------------

def run_points(points: Sequence[tuple[dict, Scenario]], label: str) -> pd.DataFrame:
    """``point_stats`` for every (labels, scenario) with a progress bar; cached points are instant."""
    bar = st.progress(0.0, text=f"{label}: 0 / {len(points)}")

    def done(k: int) -> None:
        bar.progress(k / len(points), text=f"{label}: {k} / {len(points)} runs")

    stats = parallel_map(point_stats, [s for _, s in points], on_done=done)
    bar.empty()
    return pd.DataFrame([{**labels, **st_} for (labels, _), st_ in zip(points, stats)])


def has_d_nodes(sc: Scenario) -> bool:
    return sc.layout_obj.n_D > 0


def event_lines(spans_by_system: Mapping[str, pd.DataFrame], t: float, tol: float = 1e-6) -> list[str]:
    """What starts and ends at time ``t`` on each system (for the step-through text)."""
    lines = []
    for name, sp in spans_by_system.items():
        if sp is None or sp.empty:
            continue
        for _, r in sp[(sp["start_s"] - t).abs() <= tol].iterrows():
            lines.append(f"**{name}** · `{r['node']}` starts **{r['kind']}** (conversation {r['conversations']})")
        for _, r in sp[(sp["end_s"] - t).abs() <= tol].iterrows():
            lines.append(f"**{name}** · `{r['node']}` ends {r['kind']} (conversation {r['conversations']})")
    return lines


def step_control(n_events: int) -> Control:
    return Control("learn_step", "Step through events", "slider", lo=0, hi=max(n_events - 1, 0), step=1,
                   default=max(n_events - 1, 0),
                   help="Each step moves to the next moment something starts or ends on any node "
                        "(arrow keys step one event).")


def render_extra(ctrl: Control, where: Any = st) -> Any:
    """Draw a page-only bound control. A freshly opened link's raw value is validated first (warn + seed on
    bad input); later the widget's own state wins, clamped into the current range (e.g. fewer events)."""
    raw = st.query_params.get_all(ctrl.key)
    if raw and ctrl.key not in st.session_state:
        want, msg = _validate_extra(ctrl, raw[-1])
        if msg:
            where.warning(f"Parameter {msg}", icon="⚠️")
        if msg or len(raw) > 1:
            st.session_state[ctrl.key] = want
    elif ctrl.key in st.session_state and ctrl.kind == "slider":
        v = st.session_state[ctrl.key]
        if isinstance(v, (int, float)) and not (ctrl.lo <= v <= ctrl.hi):
            st.session_state[ctrl.key] = clamp_to_widget(ctrl, v)
    kw = dict(key=ctrl.key, help=ctrl.help_text(), bind="query-params")
    if ctrl.kind == "slider":
        return where.slider(ctrl.label, min_value=ctrl.lo, max_value=ctrl.hi, value=ctrl.default,
                            step=ctrl.step, **kw)
    if ctrl.kind == "select_slider":
        return where.select_slider(ctrl.label, options=ctrl.choices(), value=ctrl.default, **kw)
    if ctrl.kind == "radio":
        opts = ctrl.choices()
        return where.radio(ctrl.label, opts, index=opts.index(ctrl.default), horizontal=True, **kw)
    raise ValueError(f"unsupported page control kind {ctrl.kind!r}")


def move_step(delta: int, n_events: int) -> None:
    cur = int(st.session_state.get("learn_step", n_events - 1))
    st.session_state["learn_step"] = min(max(cur + delta, 0), max(n_events - 1, 0))


def extras_in_url(ctrls: Sequence[Control]) -> dict[str, Any]:
    """Page-only keys whose value differs from their default (for the share link)."""
    out = {}
    for c in ctrls:
        v = st.session_state.get(c.key, c.default)
        if v != c.default:
            out[c.key] = v
    return out


def kv_bytes_per_token(model: str) -> int:
    from ppd_core.config import catalog
    return int(catalog.models()[model].kv_bytes_per_token)
