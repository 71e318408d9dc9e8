"""The Scenario: one frozen, hashable, validated description of a simulation run.

Every field has a short key (shared by the CLI, the dashboard URL and JSON output), a default, a unit,
an allowed range and a help text (``FIELDS``). A scenario parses from ``key=value`` pairs, a mapping, or a
whole URL / query string, and renders back to a query string that parses to the same scenario (defaults
are omitted so links stay short).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any, Iterable, Mapping
from urllib.parse import parse_qsl, quote, urlsplit

from . import catalog
from .errors import ScenarioError
from .layout import Layout, parse_layout

ROLE_KEYS = ("gpu_p", "gpu_d", "tp_p", "tp_d")   # per-role hardware; "" = the fleet's gpu / tp
#: Keys added after links, JSON and sweep columns had their shape (issue #29): each is written only when set
#: (its value differs from this unset value), so a run without them reads exactly as before.
OPTIONAL_KEYS: Mapping[str, Any] = {**{k: "" for k in ROLE_KEYS}, "r_as_p": 0, "r_as_d": 0,
                                   "gpus_per_server": 0, "cross_link": "IB-NDR"}
_UNSET = object()


def is_unset(key: str, value: Any) -> bool:
    """True for an optional key at its unset value (``OPTIONAL_KEYS``): left out of links, JSON and columns."""
    return OPTIONAL_KEYS.get(key, _UNSET) == value

from .fields import (CLIENTS, FIELDS, LINK_SHARING, MAX_ARRIVAL_SPAN_S, MAX_CONVERSATIONS, MAX_QUERY_CHARS,  # noqa: F401
                     MAX_REQUESTS, MAX_TURNS, P_ROUTERS, POLICIES, SPEC, FieldSpec, _brief, _fmt, _key_label)


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
    gpu_price_usd_h: float = 0.0
    model: str = "Llama-3.1-8B"
    tp: str = "1"
    gpu_p: str = ""
    gpu_d: str = ""
    tp_p: str = ""
    tp_d: str = ""
    bandwidth_gbps: float = 150.0
    link_latency_us: float = 5.0
    link_sharing: str = "fair"
    r_as_p: int = 0
    r_as_d: int = 0
    gpus_per_server: int = 0
    cross_link: str = "IB-NDR"
    qps: float = 4.0
    workload: str = "sharegpt"
    turns: int = 0
    conversations: int = 500
    arrival_window_s: float = 0.0
    think_time_s: float = 0.0
    client: str = "open"
    client_concurrency: int = 50
    w_ttft: float = 1.0
    w_tpot: float = 1.0
    slo_ttft_ms: tuple = (100.0, 200.0, 500.0)
    slo_tpot_ms: tuple = (15.0, 30.0)
    timeout_s: float = 180.0
    rehash_frac: float = 0.0
    max_batched_tokens: int = 8192
    max_num_seqs: int = 1024
    p_router: str = "affinity"
    shared_prefix_tokens: int = 0
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

    # ---- per-role hardware (issue #29): P nodes take gpu_p / tp_p, D and pD nodes gpu_d / tp_d, R nodes (and an
    # empty per-role key) the fleet's gpu / tp ---------------------------------------------------------------
    # R nodes built from a mixed fleet's P or D hardware (``r_as_p``, ``r_as_d``: the Replica baseline of a
    # heterogeneous scenario) are the hardware roles "R@P" and "R@D".
    def gpu_for(self, role: str) -> str:
        own = self.gpu_p if role in ("P", "R@P") else self.gpu_d if role in ("D", "pD", "R@D") else ""
        return own or self.gpu

    def tp_for(self, role: str) -> int:
        own = self.tp_p if role in ("P", "R@P") else self.tp_d if role in ("D", "pD", "R@D") else ""
        return int(own or self.tp)

    def node_roles(self) -> list[str]:
        """The hardware role of each node, in ``Layout.roles()`` order (the engine's node ids): the layout's
        role, except that the first ``r_as_p`` R nodes are "R@P" (on the P nodes' hardware) and the last
        ``r_as_d`` of the others "R@D" (on the D / pD nodes' hardware); counts past the layout's R nodes have
        no node to act on (a layout without R ignores both, so a Replica link's keys survive a layout change)."""
        roles = self.layout_obj.roles()
        n_r = roles.count("R")
        for i in range(n_r):
            if i < self.r_as_p:
                roles[i] = "R@P"
            elif i >= n_r - self.r_as_d:
                roles[i] = "R@D"
        return roles

    @property
    def heterogeneous(self) -> bool:
        """True when some node of the layout runs on other hardware than gpu x tp."""
        return any((self.gpu_for(r), self.tp_for(r)) != (self.gpu, self.tp_degree) for r in set(self.node_roles()))

    def servers(self) -> tuple[int, ...]:
        """The server index of each node (in ``Layout.roles()`` order, the engine's node ids): nodes fill
        servers of ``gpus_per_server`` GPUs in order, a node (its TP GPUs) never split; all 0 when
        ``gpus_per_server`` is 0 (one server)."""
        cap = self.gpus_per_server
        roles = self.node_roles()
        if cap == 0:
            return (0,) * len(roles)
        out, server, used = [], 0, 0
        for r in roles:
            tp = self.tp_for(r)
            if used + tp > cap:
                server, used = server + 1, 0
            out.append(server)
            used += tp
        return tuple(out)

    def role_hardware(self) -> dict[str, tuple[str, int]]:
        """{hardware role: (GPU, TP)} of every role present (``node_roles``), in node order."""
        return {r: (self.gpu_for(r), self.tp_for(r)) for r in dict.fromkeys(self.node_roles())}

    @property
    def gpu_count(self) -> int:
        """GPUs of the layout: the sum over nodes of each node's tensor-parallel degree."""
        return sum(self.tp_for(r) for r in self.node_roles())

    def price_for(self, gpu: str) -> float:
        """Hourly price of one GPU of type ``gpu``: ``gpu_price_usd_h`` for the fleet's own type when set, else
        the catalog's public price (data/gpus.json, sourced and dated in data/anchors/gpu_prices.csv)."""
        if gpu == self.gpu and self.gpu_price_usd_h:
            return self.gpu_price_usd_h
        return catalog.gpus()[gpu].price_usd_h

    @property
    def fleet_usd_h(self) -> float:
        """Hourly price of the whole fleet: each node's GPUs at its own type's price."""
        return sum(self.tp_for(r) * self.price_for(self.gpu_for(r)) for r in self.node_roles())

    @property
    def price_usd_h(self) -> float:
        """Hourly price of one GPU, averaged over the fleet (``fleet_usd_h / gpu_count``); for a homogeneous fleet
        ``gpu_price_usd_h``, or the catalog's public price when it is 0."""
        if not self.heterogeneous:
            return self.gpu_price_usd_h or catalog.gpus()[self.gpu].price_usd_h
        return self.fleet_usd_h / self.gpu_count

    def expected_requests(self) -> float:
        from .workload_catalog import mean_turns
        convs = self.qps * self.arrival_window_s if self.arrival_window_s > 0 else self.conversations
        turns = self.turns if self.turns else mean_turns(self.workload)
        return convs * turns

    def _check_caps(self) -> None:
        if self.gpus_per_server:
            widest = max(self.tp_for(r) for r in set(self.node_roles()))
            if widest > self.gpus_per_server:
                raise ScenarioError("gpus_per_server", f"{self.gpus_per_server} is smaller than a node's "
                                                       f"{widest} GPUs (tp); must be 0 or at least {widest}")
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
            if is_unset(f.name, v):
                continue        # per-role hardware / placement only when set: a run without them reads as before
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    def to_params(self, include_defaults: bool = False) -> dict[str, str]:
        """URL parameters as strings; defaults omitted unless asked."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if (not include_defaults and v == SPEC[f.name].default) or is_unset(f.name, v):
                continue        # an unset per-role key is never written: links and cache keys stay as before
            out[f.name] = render_value(v)
        return out

    def to_query(self, include_defaults: bool = False) -> str:
        return "&".join(f"{k}={quote(v, safe=',._-')}" for k, v in self.to_params(include_defaults).items())

    def with_(self, **changes: Any) -> "Scenario":
        """A copy with ``changes``, validated as the constructor would. Only the changed keys are parsed again
        (the others are already canonical), then the caps are checked: a grid of 3,060 scenarios is built in
        a quarter of the time ``dataclasses.replace`` takes. An unknown key goes to ``replace`` (TypeError)."""
        if any(k not in SPEC for k in changes):
            return replace(self, **changes)
        values = dict(self.__dict__)
        for k, v in changes.items():
            values[k] = _coerce(SPEC[k], v)
        new = object.__new__(type(self))
        new.__dict__.update(values)
        new._check_caps()
        return new


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
    size_keys = ("conversations", "turns", "qps", "arrival_window_s")
    for _ in range(len(values) + 1):
        try:
            return Scenario(**values), problems
        except ScenarioError as exc:
            reason = str(exc).split(": ", 1)[1]
            if exc.key in values and exc.key not in size_keys:    # e.g. gpus_per_server narrower than a node
                problems.append(ScenarioError(exc.key, f"{reason}; using default "
                                                       f"{render_value(SPEC[exc.key].default)}"))
                values.pop(exc.key)
                continue
            # a cross-field cap on the run's size: drop the size keys back to defaults
            problems.append(ScenarioError(exc.key, f"{reason}; using defaults for size keys"))
            for k in size_keys:
                values.pop(k, None)
    return Scenario(), problems


def baselines(sc: Scenario) -> dict[str, Scenario]:
    """The scenario itself ("PPD"), the same GPUs as classic PD (pD -> D, x=0) and as replicas (of a mixed
    fleet: every replica on the GPUs of the node it replaces, ``r_as_p`` / ``r_as_d``)."""
    from .layout import pd_layout, replica_layout
    lay = sc.layout_obj
    if sc.heterogeneous:    # replicas on the same mixed GPUs: each R node on the hardware of the node it replaces
        replica = sc.with_(layout=replica_layout(lay).text, r_as_p=sc.r_as_p + lay.n_P,
                           r_as_d=sc.r_as_d + lay.n_D + lay.n_pD)
    else:
        replica = sc.with_(layout=replica_layout(lay).text)
    return {"PPD": sc, "PD": sc.with_(layout=pd_layout(lay).text, policy="pd"), "Replica": replica}
