"""Control specs: one dashboard control per URL key (scenario keys and page-only keys). Pure data, no
Streamlit calls: ``widgets`` draws them, ``urlstate`` validates the URL against them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ppd_core.config.layout import PAPER_LAYOUTS
from ppd_core.config.scenario import SPEC, render_value
from ppd_core.config.workload_catalog import WORKLOAD_NAMES

#: Workloads a dashboard user can pick ("trace" needs an imported trace file: CLI and Advisor upload).
DASHBOARD_WORKLOADS = tuple(w for w in WORKLOAD_NAMES if w != "trace")


def link_presets() -> tuple[tuple[str, float, float], ...]:
    """Bandwidth presets (label, GB/s, latency us), from data/links.json via the catalog."""
    from ppd_core.config import catalog
    labels = {"NVLink": "NVLink", "IB-NDR": "IB NDR", "IB-HDR": "IB HDR", "100GbE": "100GbE",
              "RoCE-400G": "RoCE", "PCIe-Gen5": "PCIe 5", "PCIe-Gen4": "PCIe 4"}
    return tuple((labels.get(name, name), float(link.bandwidth_gbps), float(link.latency_us))
                 for name, link in catalog.links().items())


@dataclass(frozen=True)
class Control:
    """A dashboard control for one URL key. ``lo``/``hi`` are the widget's range (the dashboard range);
    values the scenario allows but the widget cannot show are clamped into it with a warning."""
    key: str
    label: str
    kind: str                       # slider | number | select | radio | layout | floats | select_slider | multi
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
        return f"{base}  \nURL key: `{self.key}`."


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
        _c("w_ttft", "w_ttft: weight of TTFT gain", "slider", lo=0.0, hi=100.0, step=0.1, fmt="%.1f"),
        _c("w_tpot", "w_tpot: weight of TPOT loss", "slider", lo=0.0, hi=100.0, step=0.1, fmt="%.1f"),
        _c("qps", "Load: conversation arrival rate", "slider", lo=0.1, hi=50.0, step=0.1, fmt="%.1f"),
        _c("bandwidth_gbps", "KV-transfer bandwidth", "slider", lo=1.0, hi=400.0, step=0.5, fmt="%.1f"),
        _c("gpus_per_server", "Servers: GPUs each, 0 = one server", "number", lo=0,
           hi=int(SPEC["gpus_per_server"].hi), step=1),
        _c("cross_link", "Link between servers", "select", options=SPEC["cross_link"].choice_list()),
        _c("gpu", "GPU type", "select", options=SPEC["gpu"].choice_list()),
        _c("model", "Model", "select", options=SPEC["model"].choice_list()),
        _c("tp", "Tensor parallel (GPUs per node)", "select", options=SPEC["tp"].choice_list()),
        _c("gpu_p", "P nodes' GPU (empty = GPU type)", "select", options=SPEC["gpu_p"].choice_list()),
        _c("tp_p", "P nodes' TP (empty = TP)", "select", options=SPEC["tp_p"].choice_list()),
        _c("gpu_d", "D / pD nodes' GPU (empty = GPU type)", "select", options=SPEC["gpu_d"].choice_list()),
        _c("tp_d", "D / pD nodes' TP (empty = TP)", "select", options=SPEC["tp_d"].choice_list()),
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
        _c("slo_ttft_ms", "TTFT SLO thresholds (comma-separated)", "floats"),
        _c("slo_tpot_ms", "TPOT SLO thresholds (comma-separated)", "floats"),
        _c("max_batched_tokens", "Max batched tokens per iteration", "number", lo=64,
           hi=int(SPEC["max_batched_tokens"].hi), step=512),
        _c("gpu_mem_util", "GPU memory utilisation", "slider", lo=0.05, hi=1.0, step=0.01),
    )
    return {c.key: c for c in ctrls}


#: Sidebar groups: (title, keys); ``ADVANCED`` lives in an "Advanced" expander. TP sits next to Model: the
#: "weights do not fit" message names the smallest TP that fits.
GROUPS = (
    ("SLO weights (Eq.1)", ("w_ttft", "w_tpot")),
    ("Load", ("qps",)),
    ("KV transfer", ("bandwidth_gbps", "gpus_per_server", "cross_link")),
    ("Hardware and model", ("gpu", "model", "tp", "gpu_p", "tp_p", "gpu_d", "tp_d")),
    ("Cluster", ("layout", "policy")),
    ("Workload", ("workload", "turns", "seed")),
)
ADVANCED = ("conversations", "think_time_s", "client_concurrency", "arrival_window_s", "timeout_s",
            "rehash_frac", "link_latency_us", "link_sharing", "slo_ttft_ms", "slo_tpot_ms",
            "max_batched_tokens", "gpu_mem_util")

#: Scenario keys no sidebar element depends on (the "weights do not fit" note follows gpu, model, tp and
#: gpu_mem_util; the layout's paper category follows layout): on a page that names its results fragments
#: (``widgets.scenario_sidebar(rerun=...)``) a change of one reruns those fragments only.
RESULTS_ONLY = frozenset(set(SPEC) - {"gpu", "model", "tp", "gpu_mem_util", "layout", "gpu_p", "gpu_d", "tp_p", "tp_d"})


def groups_for(page: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The sidebar groups of ``page``: Learn shows its number of conversations in the Workload group."""
    if page != "learn":
        return GROUPS
    return tuple((t, keys + ("conversations",) if t == "Workload" else keys) for t, keys in GROUPS)


def advanced_for(page: str) -> tuple[str, ...]:
    shown = {k for _, keys in groups_for(page) for k in keys}
    return tuple(k for k in ADVANCED if k not in shown)


#: The Learn page shows a handful of conversations; it uses this range for ``conversations``.
LEARN_CONVERSATIONS = _c("conversations", "Conversations on the timeline", "slider", lo=1, hi=8, step=1,
                         default=3, help="How many conversations the teaching timeline shows (URL key "
                                         "`conversations`, the same scenario key as elsewhere).")

#: The scenario keys the Advisor takes from the shared scenario (the rest of its inputs are its own keys).
ADVISOR_SCENARIO_KEYS = ("gpu", "model", "tp", "workload")


def controls_for(page: str) -> dict[str, Control]:
    """The scenario controls a page draws (Advisor: the four it shares; Paper, Validation: none)."""
    ctrls = _scenario_controls()
    if page == "learn":
        ctrls["conversations"] = LEARN_CONVERSATIONS
    if page == "advise":
        return {k: ctrls[k] for k in ADVISOR_SCENARIO_KEYS}
    if page in ("paper", "validation", "compare"):
        return {}
    return ctrls


def local_keys(page: str) -> tuple[str, ...]:
    """Scenario keys whose control on ``page`` differs from the common one: they are not carried to or from
    the other pages by navigation (Learn's handful of conversations is not a run size)."""
    common = _scenario_controls()
    return tuple(k for k, c in controls_for(page).items() if common.get(k) != c)


def _preset_options() -> tuple[str, ...]:
    from .presets import PRESET_KEYS
    return ("",) + PRESET_KEYS


#: Explore's page-only keys: the preset a link came from (its note and claim check show while the controls
#: still equal it) and classroom mode (``present=1``: large fonts, fewer controls, one chart per screen).
PRESET = Control("preset", "Preset", "select", options=_preset_options(), default="",
                 help="The teaching preset this link opened (ui/presets.py).")
PRESENT = Control("present", "Classroom mode", "radio", options=("0", "1"), default="0",
                  help="present=1: large fonts, fewer controls, the verdict and one chart per screen.")


def step_control(n_events: int) -> Control:
    return Control("learn_step", "Step through events", "slider", lo=0, hi=max(n_events - 1, 0), step=1,
                   default=0,
                   help="Each step moves to the next moment something starts or ends on any node "
                        "(arrow keys step one event).")
