"""The scenario's keys: one ``FieldSpec`` per key (type, default, unit, allowed range, help), the choice
lists and the size caps. ``config/scenario.py`` builds the frozen ``Scenario`` on them; the CLI's ``--help``,
the docs' scenario-key reference (scripts/docs_reference.py) and the dashboard's controls all read ``FIELDS`` / ``SPEC``.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from . import catalog

POLICIES = ("pd", "ppd", "dynamic", "dynamic-table")
LINK_SHARING = ("fair", "independent")
CLIENTS = ("open", "benchmark")
P_ROUTERS = ("least_loaded", "affinity")

# Size caps: no input may make a run unbounded.
MAX_CONVERSATIONS = 20_000
MAX_TURNS = 64
MAX_REQUESTS = 200_000          # conversations x turns (expected) must stay under this
MAX_ARRIVAL_SPAN_S = 86_400.0   # conversations / qps (or the arrival window) must stay under one simulated day
MAX_QUERY_CHARS = 8_192         # longer query strings are refused before parsing


def _workload_names() -> tuple[str, ...]:
    from .workload_catalog import WORKLOAD_NAMES
    return WORKLOAD_NAMES


@dataclass(frozen=True)
class FieldSpec:
    key: str
    kind: str                 # "float" | "int" | "choice" | "layout" | "floats"
    default: Any
    unit: str
    help: str
    lo: float | None = None   # inclusive unless lo_open
    hi: float | None = None
    lo_open: bool = False
    choices: Any = None       # tuple, or a callable returning a tuple (catalog-backed)

    def allowed(self) -> str:
        if self.kind == "choice":
            choices = self.choice_list()
            if "" in choices:
                return "empty (the fleet's value) or one of " + ", ".join(c for c in choices if c)
            return "one of " + ", ".join(choices)
        if self.kind == "layout":
            return "a layout such as 2P_2pD, 4R or 1R_1P_1D_1pD (counts of R, P, D, pD joined by '_')"
        lo = "(" if self.lo_open else "["
        rng = f"{lo}{_fmt(self.lo)}, {_fmt(self.hi)}]"
        if self.kind == "int":
            return f"an integer in {rng}"
        if self.kind == "floats":
            return f"1 to 8 comma-separated numbers in {rng}"
        return f"a number in {rng}"

    def choice_list(self) -> tuple[str, ...]:
        c = self.choices
        return tuple(c()) if callable(c) else tuple(c)


def _fmt(x: Any) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x) if isinstance(x, float) else str(x)


def _brief(raw: Any, n: int = 40) -> str:
    """At most ``n`` characters of ``str(raw)`` for a message; never raises (``str()`` of an int of more than
    4,300 digits does)."""
    try:
        return str(raw)[:n]
    except ValueError:
        return f"<{type(raw).__name__} too long to show>"


def _key_label(raw: Any) -> str:
    """An unknown key as shown in an error: printable and non-empty, so the message stays one line."""
    text = _brief(raw)
    return text if text and text.isprintable() else repr(text)


def _gpu_names() -> tuple[str, ...]:
    return tuple(catalog.gpus())


def _link_names() -> tuple[str, ...]:
    return tuple(catalog.links())


def _role_gpu_names() -> tuple[str, ...]:
    return ("",) + tuple(catalog.gpus())


def _model_names() -> tuple[str, ...]:
    return tuple(catalog.models())


FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec("layout", "layout", "2P_2pD", "", "Cluster layout: counts of R (replica), P (prefill), D (decode), "
              "pD (prefill-capable decode) nodes, e.g. 2P_2pD."),
    FieldSpec("policy", "choice", "dynamic", "", "Turn 2+ routing on D nodes: pd (x=0, always via P), ppd (x=1, "
              "always local append-prefill), dynamic (Eq.1 per request from live state), dynamic-table (the "
              "paper's offline lookup table). pD nodes always serve Turn 2+ locally.", choices=POLICIES),
    FieldSpec("gpu", "choice", "H100-SXM", "", "GPU type of every node (data/gpus.json).", choices=_gpu_names),
    FieldSpec("gpu_price_usd_h", "float", 0.0, "USD/GPU-h", "Hourly price of one GPU for the per-dollar goodput; "
              "0 = the catalog's public price (data/gpus.json, sourced and dated).", lo=0.0, hi=1_000.0),
    FieldSpec("model", "choice", "Llama-3.1-8B", "", "Served model (data/models.json).", choices=_model_names),
    FieldSpec("tp", "choice", "1", "GPUs/node", "Tensor-parallel degree: GPUs per node.", choices=("1", "2", "4", "8")),
    FieldSpec("gpu_p", "choice", "", "", "GPU type of the P (prefill) nodes; empty = gpu. With gpu_d, a "
              "heterogeneous fleet: each node's latency, KV memory and weights fit come from its own GPU x TP.",
              choices=_role_gpu_names),
    FieldSpec("gpu_d", "choice", "", "", "GPU type of the D and pD (decode) nodes; empty = gpu. R nodes use gpu "
              "(see r_as_p / r_as_d).", choices=_role_gpu_names),
    FieldSpec("tp_p", "choice", "", "GPUs/node", "Tensor-parallel degree of the P nodes; empty = tp.",
              choices=("", "1", "2", "4", "8")),
    FieldSpec("tp_d", "choice", "", "GPUs/node", "Tensor-parallel degree of the D and pD nodes; empty = tp.",
              choices=("", "1", "2", "4", "8")),
    FieldSpec("bandwidth_gbps", "float", 150.0, "GB/s", "Effective KV-transfer bandwidth per link direction "
              "(NVLink ~150, IB NDR 50, IB HDR 25, 100GbE 10).", lo=0.0, hi=10_000.0, lo_open=True),
    FieldSpec("link_latency_us", "float", 5.0, "us", "Fixed latency per KV transfer.", lo=0.0, hi=1_000_000.0),
    FieldSpec("link_sharing", "choice", "fair", "", "fair: concurrent transfers share each node's link "
              "(max-min fair); independent: every transfer gets the full bandwidth (the paper's Eq.2).",
              choices=LINK_SHARING),
    FieldSpec("r_as_p", "int", 0, "nodes", "R nodes (the first ones) on the P nodes' hardware (gpu_p x tp_p) "
              "instead of gpu x tp: the Replica baseline of a mixed fleet sets it. Capped by the layout's R nodes.",
              lo=0, hi=256),
    FieldSpec("r_as_d", "int", 0, "nodes", "R nodes (the last ones) on the D / pD nodes' hardware (gpu_d x tp_d) "
              "instead of gpu x tp, after the r_as_p ones: the Replica baseline of a mixed fleet sets it. Capped by "
              "the layout's R nodes.", lo=0, hi=256),
    FieldSpec("gpus_per_server", "int", 0, "GPUs", "GPUs per server: nodes fill servers in layout order (R, P, "
              "D, pD), a node never split; a KV transfer from a P to a D in another server goes over cross_link. "
              "0 = every node in one server (one NVLink domain, the paper's 4xH100 testbed).", lo=0, hi=4_096),
    FieldSpec("cross_link", "choice", "IB-NDR", "", "Link class between servers (data/links.json, sourced): its "
              "effective bandwidth per GPU and direction and its latency replace bandwidth_gbps and "
              "link_latency_us for a transfer that crosses servers. Only with gpus_per_server > 0.",
              choices=_link_names),
    FieldSpec("qps", "float", 4.0, "conv/s", "Conversation arrival rate (Poisson), as in the paper's benchmarks.",
              lo=0.0, hi=1_000.0, lo_open=True),
    FieldSpec("workload", "choice", "sharegpt", "", "Workload: the 18 synthetic cells (small_tiny ... "
              "large_huge_paste), sharegpt or wildchat.", choices=_workload_names),
    FieldSpec("turns", "int", 0, "turns", "Turns per conversation; 0 keeps the workload's own turn counts.",
              lo=0, hi=MAX_TURNS),
    FieldSpec("conversations", "int", 500, "conv", "Number of conversations (ignored when arrival_window_s > 0).",
              lo=1, hi=MAX_CONVERSATIONS),
    FieldSpec("arrival_window_s", "float", 0.0, "s", "0: all conversations arrive. >0: the synthetic benchmark's "
              "window: int(qps x window) Poisson draws, those before the window end are kept.", lo=0.0, hi=3_600.0),
    FieldSpec("think_time_s", "float", 0.0, "s", "Pause between a turn's last token and the next turn's request.",
              lo=0.0, hi=3_600.0),
    FieldSpec("client", "choice", "open", "", "Traffic model: open (Poisson conversations that never wait for "
              "the server: production-like) or benchmark (the measured closed-loop client: at most "
              "client_concurrency conversations in flight, new ones wait in the client, reported as "
              "client_wait_ms).", choices=CLIENTS),
    FieldSpec("client_concurrency", "int", 50, "conv", "Benchmark client only (client=benchmark): at most this "
              "many conversations in flight, new ones wait in the client (client_wait_ms, not in TTFT). The "
              "measured benchmarks used 50; 0 = no cap.", lo=0, hi=100_000),
    FieldSpec("w_ttft", "float", 1.0, "", "Weight of the relative TTFT gain in Eq.1 (S = w_ttft*dTTFT - "
              "w_tpot*dTPOT; S > 0 serves Turn 2+ locally).", lo=0.0, hi=100.0),
    FieldSpec("w_tpot", "float", 1.0, "", "Weight of the relative TPOT loss in Eq.1.", lo=0.0, hi=100.0),
    FieldSpec("slo_ttft_ms", "floats", (100.0, 200.0, 500.0), "ms", "TTFT SLO thresholds for attainment.",
              lo=0.0, hi=1e7, lo_open=True),
    FieldSpec("slo_tpot_ms", "floats", (15.0, 30.0), "ms", "TPOT SLO thresholds for attainment.",
              lo=0.0, hi=1e7, lo_open=True),
    FieldSpec("timeout_s", "float", 180.0, "s", "A request not finished this long after it was sent counts as "
              "failed (and ends its conversation).", lo=0.0, hi=86_400.0, lo_open=True),
    FieldSpec("rehash_frac", "float", 0.0, "", "Share of Turn 2+ requests the proxy mistakes for new "
              "conversations (sent P->D to a freshly hashed node): the comprehensive benchmark's routing quirk "
              "(~0.2 there, 0 in real traces).", lo=0.0, hi=1.0),
    FieldSpec("max_batched_tokens", "int", 8192, "tokens", "Per-iteration token budget (chunked prefill).",
              lo=64, hi=1_048_576),
    FieldSpec("max_num_seqs", "int", 1024, "seqs", "vLLM max_num_seqs: running sequences per node (decoding or "
              "admitted for prefill); more wait in the node's queue.", lo=1, hi=65_536),
    FieldSpec("p_router", "choice", "affinity", "", "Which P prefills a PD-path request: least_loaded (fewest "
              "tokens waiting) or affinity (the measured proxy: P = hash % n_P, one P per conversation key).",
              choices=P_ROUTERS),
    FieldSpec("shared_prefix_tokens", "int", 0, "tokens", "Tokens at the start of every request's context "
              "whose KV blocks are physically shared (one cached system prompt / document). With it, cascade "
              "attention reads them once; a full prefill of another prompt turns that off and every decode "
              "reads its copy (the paper's Fig.2 interference). 0 for ordinary chat traffic.",
              lo=0, hi=1_048_576),
    FieldSpec("gpu_mem_util", "float", 0.85, "", "Share of GPU memory vLLM may use (weights + KV cache).",
              lo=0.05, hi=1.0),
    FieldSpec("seed", "int", 42, "", "Random seed: same scenario and seed give byte-identical results.",
              lo=0, hi=2**31 - 1),
)
SPEC: Mapping[str, FieldSpec] = MappingProxyType({f.key: f for f in FIELDS})
