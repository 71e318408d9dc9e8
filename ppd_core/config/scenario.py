"""The Scenario: one frozen, hashable, validated description of a simulation run.

Every field has a short key (shared by the CLI, the dashboard URL and JSON output), a default, a unit,
an allowed range and a help text (``FIELDS``). A scenario parses from ``key=value`` pairs, a mapping, or a
whole URL / query string, and renders back to a query string that parses to the same scenario (defaults
are omitted so links stay short).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import Any, Iterable, Mapping
from urllib.parse import parse_qsl, quote, urlsplit

from . import catalog
from .errors import ScenarioError
from .layout import Layout, parse_layout

POLICIES = ("pd", "ppd", "dynamic", "dynamic-table")
LINK_SHARING = ("fair", "independent")

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
            return "one of " + ", ".join(self.choice_list())
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


def _model_names() -> tuple[str, ...]:
    return tuple(catalog.models())


FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec("layout", "layout", "2P_2pD", "", "Cluster layout: counts of R (replica), P (prefill), D (decode), "
              "pD (prefill-capable decode) nodes, e.g. 2P_2pD."),
    FieldSpec("policy", "choice", "dynamic", "", "Turn 2+ routing on D nodes: pd (x=0, always via P), ppd (x=1, "
              "always local append-prefill), dynamic (Eq.1 per request from live state), dynamic-table (the "
              "paper's offline lookup table). pD nodes always serve Turn 2+ locally.", choices=POLICIES),
    FieldSpec("gpu", "choice", "H100-SXM", "", "GPU type of every node (data/gpus.json).", choices=_gpu_names),
    FieldSpec("model", "choice", "Llama-3.1-8B", "", "Served model (data/models.json).", choices=_model_names),
    FieldSpec("tp", "choice", "1", "GPUs/node", "Tensor-parallel degree: GPUs per node.", choices=("1", "2", "4", "8")),
    FieldSpec("bandwidth_gbps", "float", 150.0, "GB/s", "Effective KV-transfer bandwidth per link direction "
              "(NVLink ~150, IB NDR 50, IB HDR 25, 100GbE 10).", lo=0.0, hi=10_000.0, lo_open=True),
    FieldSpec("link_latency_us", "float", 5.0, "us", "Fixed latency per KV transfer.", lo=0.0, hi=1_000_000.0),
    FieldSpec("link_sharing", "choice", "fair", "", "fair: concurrent transfers share each node's link "
              "(max-min fair); independent: every transfer gets the full bandwidth (the paper's Eq.2).",
              choices=LINK_SHARING),
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
    FieldSpec("client_concurrency", "int", 50, "conv", "Closed-loop client cap: at most this many conversations "
              "in flight, new ones wait (inside Turn-1 TTFT). The measured benchmarks used 50; 0 = open loop.",
              lo=0, hi=100_000),
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
    FieldSpec("gpu_mem_util", "float", 0.85, "", "Share of GPU memory vLLM may use (weights + KV cache).",
              lo=0.05, hi=1.0),
    FieldSpec("seed", "int", 42, "", "Random seed: same scenario and seed give byte-identical results.",
              lo=0, hi=2**31 - 1),
)
SPEC: Mapping[str, FieldSpec] = MappingProxyType({f.key: f for f in FIELDS})


def _coerce(spec: FieldSpec, raw: Any) -> Any:
    """Turn a raw value (str from a URL/CLI, or a Python value) into the field's canonical type, or raise."""
    key = spec.key
    if spec.kind == "layout":
        if not isinstance(raw, str):
            raise ScenarioError(key, f"must be {spec.allowed()}")
        return parse_layout(raw, key).text
    if spec.kind == "choice":
        text = (raw.strip() if isinstance(raw, str) else _brief(raw, 64)
                if isinstance(raw, int) and not isinstance(raw, bool) else None)
        choices = spec.choice_list()
        if text not in choices:
            # case-insensitive match is accepted and canonicalised
            low = {c.lower(): c for c in choices}
            if text is not None and text.lower() in low:
                return low[text.lower()]
            shown = repr(_brief(raw))
            raise ScenarioError(key, f"{shown} is not allowed; must be {spec.allowed()}")
        return text
    if spec.kind == "floats":
        parts = raw.split(",") if isinstance(raw, str) else list(raw) if isinstance(raw, (list, tuple)) else [raw]
        if not 1 <= len(parts) <= 8:
            raise ScenarioError(key, f"must be {spec.allowed()}")
        return tuple(sorted(_number(spec, p, float) for p in parts))
    return _number(spec, raw, int if spec.kind == "int" else float)


def _number(spec: FieldSpec, raw: Any, typ: type) -> Any:
    key = spec.key
    if isinstance(raw, bool):
        raise ScenarioError(key, f"must be {spec.allowed()}, got a boolean")
    try:
        value = float(raw.strip()) if isinstance(raw, str) else float(raw)
    except (TypeError, ValueError, OverflowError):
        raise ScenarioError(key, f"{_brief(raw)!r} is not a number; must be {spec.allowed()}") from None
    if not math.isfinite(value):
        raise ScenarioError(key, f"{_brief(raw)!r} is not finite; must be {spec.allowed()}")
    if typ is int:
        if not value.is_integer():
            raise ScenarioError(key, f"{_brief(raw)!r} is not an integer; must be {spec.allowed()}")
        value = int(value)
    _check_range(spec, value)
    return value


def _check_range(spec: FieldSpec, value: float) -> None:
    lo_bad = spec.lo is not None and (value <= spec.lo if spec.lo_open else value < spec.lo)
    hi_bad = spec.hi is not None and value > spec.hi
    if lo_bad or hi_bad:
        raise ScenarioError(spec.key, f"{_fmt(value)} is out of range; must be {spec.allowed()}")


def _clamp(spec: FieldSpec, raw: Any) -> Any | None:
    """Nearest allowed value for a finite number that is out of range (lenient parsing), else None."""
    if spec.kind not in ("int", "float"):
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError, OverflowError):
        return None
    if not math.isfinite(value):
        return None
    lo, hi = spec.lo, spec.hi
    if lo is not None and (value <= lo if spec.lo_open else value < lo):
        value = lo if not spec.lo_open else (lo + 1 if spec.kind == "int" else max(lo * 1.000001, 1e-3))
    if hi is not None and value > hi:
        value = hi
    if spec.kind == "int":
        value = int(round(value))
    return value


@dataclass(frozen=True)
class Scenario:
    """One run. Construct with keyword arguments (validated) or one of the ``parse*`` helpers."""
    layout: str = "2P_2pD"
    policy: str = "dynamic"
    gpu: str = "H100-SXM"
    model: str = "Llama-3.1-8B"
    tp: str = "1"
    bandwidth_gbps: float = 150.0
    link_latency_us: float = 5.0
    link_sharing: str = "fair"
    qps: float = 4.0
    workload: str = "sharegpt"
    turns: int = 0
    conversations: int = 500
    arrival_window_s: float = 0.0
    think_time_s: float = 0.0
    client_concurrency: int = 50
    w_ttft: float = 1.0
    w_tpot: float = 1.0
    slo_ttft_ms: tuple = (100.0, 200.0, 500.0)
    slo_tpot_ms: tuple = (15.0, 30.0)
    timeout_s: float = 180.0
    rehash_frac: float = 0.0
    max_batched_tokens: int = 8192
    gpu_mem_util: float = 0.85
    seed: int = 42

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, _coerce(SPEC[f.name], getattr(self, f.name)))
        self._check_caps()

    # ---- derived -------------------------------------------------------------------------------------
    @property
    def layout_obj(self) -> Layout:
        return parse_layout(self.layout)

    @property
    def tp_degree(self) -> int:
        return int(self.tp)

    def expected_requests(self) -> float:
        from .workload_catalog import mean_turns
        convs = self.qps * self.arrival_window_s if self.arrival_window_s > 0 else self.conversations
        turns = self.turns if self.turns else mean_turns(self.workload)
        return convs * turns

    def _check_caps(self) -> None:
        if self.arrival_window_s > 0:
            if self.qps * self.arrival_window_s > MAX_CONVERSATIONS:
                raise ScenarioError("qps", f"qps x arrival_window_s = {self.qps * self.arrival_window_s:.0f} "
                                           f"conversations exceeds the cap of {MAX_CONVERSATIONS}")
        elif self.conversations / self.qps > MAX_ARRIVAL_SPAN_S:
            raise ScenarioError("qps", f"conversations / qps = {self.conversations / self.qps:.0f} s of arrivals "
                                       f"exceeds the cap of {MAX_ARRIVAL_SPAN_S:.0f} simulated seconds")
        n = self.expected_requests()
        if n > MAX_REQUESTS:
            raise ScenarioError("turns" if self.turns else "conversations",
                                f"about {n:.0f} requests (conversations x turns) exceed the cap of {MAX_REQUESTS}")

    # ---- rendering -----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Every key with its value (lists for the SLO thresholds), as in ``run --json``."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    def to_params(self, include_defaults: bool = False) -> dict[str, str]:
        """URL parameters as strings; defaults omitted unless asked."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if not include_defaults and v == SPEC[f.name].default:
                continue
            out[f.name] = render_value(v)
        return out

    def to_query(self, include_defaults: bool = False) -> str:
        return "&".join(f"{k}={quote(v, safe=',._-')}" for k, v in self.to_params(include_defaults).items())

    def with_(self, **changes: Any) -> "Scenario":
        return replace(self, **changes)


def render_value(v: Any) -> str:
    if isinstance(v, tuple):
        return ",".join(render_value(x) for x in v)
    if isinstance(v, float):
        return _fmt(v)
    return str(v)


def _pairs_from(source: Any) -> list[tuple[str, Any]]:
    if isinstance(source, Mapping):
        return list(source.items())
    if isinstance(source, str):
        text = source.strip()
        if len(text) > MAX_QUERY_CHARS:
            raise ScenarioError("query", f"{len(text)} characters exceed the cap of {MAX_QUERY_CHARS}")
        if "://" in text or text.startswith("/") or "?" in text:
            try:
                text = urlsplit(text).query if "://" in text or text.startswith("/") else text.split("?", 1)[1]
            except ValueError as exc:   # e.g. "http://[::1" (unclosed IPv6 host)
                raise ScenarioError("query", f"not a valid URL ({_brief(exc, 60)!r})") from None
        return parse_qsl(text, keep_blank_values=True)
    pairs = []
    for item in source:
        item = str(item)
        if len(item) > MAX_QUERY_CHARS:
            raise ScenarioError("argument", f"{len(item)} characters exceed the cap of {MAX_QUERY_CHARS}")
        head = item.split("=", 1)[0]   # a shared URL: its query has '=' too, so look before the first one
        if "?" in head or "://" in head:
            pairs.extend(_pairs_from(item))
            continue
        if "=" not in item:
            raise ScenarioError(_key_label(item), "expected KEY=VALUE (or a whole shared URL)")
        k, v = item.split("=", 1)
        pairs.append((k.strip(), v))
    return pairs


query_pairs = _pairs_from     # public name: the (key, value) pairs of a link, an argument list or a mapping


def parse(source: str | Mapping[str, Any] | Iterable[str]) -> Scenario:
    """Strict parse: the first bad key raises ``ScenarioError``. Repeated keys: the last one wins."""
    values: dict[str, Any] = {}
    for k, v in _pairs_from(source):
        if k not in SPEC:
            raise ScenarioError(_key_label(k), f"unknown key; allowed keys: {', '.join(SPEC)}")
        values[k] = _coerce(SPEC[k], v)
    return Scenario(**values)


def parse_lenient(source: str | Mapping[str, Any] | Iterable[str]) -> tuple[Scenario, list[ScenarioError]]:
    """Dashboard parse: never raises. Bad values are reported and replaced by the nearest allowed value
    (for out-of-range numbers) or the default; unknown keys are reported and ignored."""
    problems: list[ScenarioError] = []
    try:
        pairs = _pairs_from(source)
    except ScenarioError as exc:
        return Scenario(), [exc]
    values: dict[str, Any] = {}
    for k, v in pairs:
        if k not in SPEC:
            problems.append(ScenarioError(_key_label(k), "unknown key, ignored"))
            continue
        spec = SPEC[k]
        try:
            values[k] = _coerce(spec, v)
        except ScenarioError as exc:
            near = _clamp(spec, v)
            if near is not None:
                values[k] = near
                problems.append(ScenarioError(k, f"{_brief(v)!r} out of range, using nearest allowed "
                                                 f"{render_value(near)} ({spec.allowed()})"))
            else:
                problems.append(ScenarioError(k, f"{str(exc).split(': ', 1)[1]}; using default "
                                                 f"{render_value(spec.default)}"))
    try:
        return Scenario(**values), problems
    except ScenarioError as exc:
        # a cross-field cap: drop the size keys back to defaults
        problems.append(ScenarioError(exc.key, f"{str(exc).split(': ', 1)[1]}; using defaults for size keys"))
        for k in ("conversations", "turns", "qps", "arrival_window_s"):
            values.pop(k, None)
        return Scenario(**values), problems


def baselines(sc: Scenario) -> dict[str, Scenario]:
    """The scenario itself ("PPD"), the same GPUs as classic PD (pD -> D, x=0) and as replicas."""
    from .layout import pd_layout, replica_layout
    lay = sc.layout_obj
    return {"PPD": sc,
            "PD": sc.with_(layout=pd_layout(lay).text, policy="pd"),
            "Replica": sc.with_(layout=replica_layout(lay).text)}
