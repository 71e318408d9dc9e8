"""Step-latency physics as pure functions (no engine state): interference, MoE, TP, PD path, extrapolation.

Phase 1 of issue 10: these laws are tested here but NOT yet wired into the engine. Everything takes plain
numbers (or the small frozen specs below) and returns seconds; every numeric input is validated and a bad one
raises ``PhysicsInputError`` (a ``ValueError``) with a one-line message. See ``docs/physics.md``.

The module reads only JSON files in ``data/`` (``gpus.json``, ``models.json``, ``models_moe.json``,
``perf_params.json``, ``physics_params.json``) and imports nothing else from ``ppd_core``, so it survives the
package being split into subpackages.

Laws (seconds; ``kv`` = KV bytes per token, all layers; ``BW`` = HBM bytes/s; ``F`` = dense BF16 FLOP/s):

* step(T tokens, S sequences) = t_iter + sqrt(W_read/(BW eta_w))^2 + (FLOP/(F eta_c))^2) + S t_seq
                                + attention_prefill + decode_attention + [mixed] t_mix + TP all-reduce
* decode_attention: unique KV bytes / (BW eta_kv) + the *shared-prefix* term:
     cascade on : kv * P / (BW eta_kv)          (the common prefix P is read once for the whole batch)
     cascade off: kv * sum_i P_i / (BW eta_share)  (every request reads its own copy of the shared blocks)
  For an ordinary batch P_i = 0, so decode attention is the plain roofline and a prefill in the batch costs
  only its own roofline work plus ``t_mix``. Interference is therefore *not* a per-request constant: it is the
  cascade read the batch loses when a request that does not carry the common prefix is running.
* MoE weights read per step = shared bytes + expert bytes x layers x E (1 - (1 - k/E)^T); FLOPs use active params.
* TP all-reduce per layer: 2 x (alpha + 2 (n-1)/n x T x hidden x 2 B / busbw).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path
from typing import Sequence

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
MEASURED_GPU = "H100-SXM"
MEASURED_MODEL = "Llama-3.1-8B"
HELD_OUT_MODELS = ("Qwen2.5-14B",)   # measured, but only in the held-out set (model_scaling.csv)
REF_KV_BYTES_PER_TOKEN = 131072      # Llama-3.1-8B: the PD-path constants were fitted on this model
REF_LAYERS = 32
BLOCK_TOKENS = 16                    # vLLM V1 KV block size


class PhysicsInputError(ValueError):
    """A numeric input to a physics function is missing, non-finite, negative or out of range."""


# ---- validation ----------------------------------------------------------------------------------------
def num(name: str, value, *, positive: bool = False, integer: bool = False, lo: float | None = None,
        hi: float | None = None) -> float:
    """Validate one numeric input: a real, finite number (no bool), >= 0 (> 0 if ``positive``), optionally an
    integer and within [lo, hi]. Returns it as float (int if ``integer``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            import numpy as _np  # numpy scalars are fine
            if isinstance(value, _np.generic) and not isinstance(value, _np.bool_):
                value = value.item()
            else:
                raise TypeError
        except (ImportError, TypeError):
            raise PhysicsInputError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(value):
        raise PhysicsInputError(f"{name} must be finite, got {value!r}")
    if positive and value <= 0:
        raise PhysicsInputError(f"{name} must be > 0, got {value!r}")
    if value < 0:
        raise PhysicsInputError(f"{name} must be >= 0, got {value!r}")
    if integer and value != int(value):
        raise PhysicsInputError(f"{name} must be an integer, got {value!r}")
    if lo is not None and value < lo:
        raise PhysicsInputError(f"{name} must be >= {lo}, got {value!r}")
    if hi is not None and value > hi:
        raise PhysicsInputError(f"{name} must be <= {hi}, got {value!r}")
    return int(value) if integer else float(value)


def _seq(name: str, values) -> list[int]:
    if values is None or isinstance(values, (str, bytes)):
        raise PhysicsInputError(f"{name} must be a sequence of numbers, got {values!r}")
    return [num(f"{name}[{i}]", v, integer=True) for i, v in enumerate(values)]


# ---- catalog specs (read straight from data/*.json) -------------------------------------------------------
@dataclass(frozen=True)
class GpuSpec:
    name: str
    flops: float          # dense BF16 FLOP/s
    hbm_bps: float        # HBM bytes/s
    memory_gb: float
    num_sms: int = 132    # streaming multiprocessors (vLLM's cascade heuristic); H100 SXM = 132
    allreduce_busbw_gbps: float = 0.0   # NCCL all-reduce bus bandwidth within a node, GB/s (0: unknown)
    allreduce_alpha_us: float = 0.0     # per-all-reduce latency, us
    source: str = ""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    params_b: float
    active_params_b: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    linear_gflop_per_token: float   # 2 x active linear params (transformer blocks), lm_head excluded
    lm_head_gflop: float
    # MoE (experts == 0: dense)
    experts: int = 0
    experts_per_token: int = 0
    moe_intermediate: int = 0
    shared_params_b: float = 0.0    # params read every step whatever the routing (attention, router, norms,
                                    # embeddings row lookup negligible, lm_head, shared experts)
    source: str = ""
    bytes_per_param: int = 2
    kv_bytes_per_elem: int = 2

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * self.kv_bytes_per_elem

    @property
    def expert_params(self) -> float:
        """Parameters of one routed expert in one layer (gate, up, down projections)."""
        return 3.0 * self.hidden * self.moe_intermediate

    @property
    def attn_flop_per_pair(self) -> float:
        return 4.0 * self.layers * self.heads * self.head_dim


# Per-GPU defaults that the JSON catalog does not carry (SM count for the cascade heuristic, NVLink busbw).
_GPU_EXTRA = {
    "H100-SXM": dict(num_sms=132, allreduce_busbw_gbps=380.0, allreduce_alpha_us=8.0,
                     source="SMs: H100 SXM5 = 132 (NVIDIA Hopper whitepaper); all-reduce busbw ~360-450 GB/s on "
                            "8x H100 NVLink4 (nccl-tests all_reduce_perf, large messages); alpha ~8 us (perf-model.md 2)"),
    "H200": dict(num_sms=132, allreduce_busbw_gbps=380.0, allreduce_alpha_us=8.0, source="as H100 SXM (same NVLink4)"),
    "H100-PCIe": dict(num_sms=114, allreduce_busbw_gbps=40.0, allreduce_alpha_us=15.0,
                      source="114 SMs; no NVLink assumed: PCIe Gen5 ~50 GB/s usable (perf-model.md 2), busbw ~40"),
    "A100-80GB": dict(num_sms=108, allreduce_busbw_gbps=230.0, allreduce_alpha_us=8.0,
                      source="108 SMs; NVLink3 send/recv 220-265 GB/s (perf-model.md 2)"),
    "A100-40GB": dict(num_sms=108, allreduce_busbw_gbps=230.0, allreduce_alpha_us=8.0, source="as A100-80GB"),
    "B200": dict(num_sms=148, allreduce_busbw_gbps=700.0, allreduce_alpha_us=6.0,
                 source="148 SMs; NVLink5 900 GB/s/dir x ~0.75 (perf-model.md 2: scale NVLink4 efficiency)"),
    "L40S": dict(num_sms=142, allreduce_busbw_gbps=20.0, allreduce_alpha_us=20.0, source="PCIe Gen4 only"),
    "L4": dict(num_sms=58, allreduce_busbw_gbps=20.0, allreduce_alpha_us=20.0, source="PCIe Gen4 only"),
    "MI300X": dict(num_sms=304, allreduce_busbw_gbps=300.0, allreduce_alpha_us=10.0,
                   source="304 CUs; Infinity Fabric 896 GB/s aggregate (perf-model.md 1), busbw assumed ~300"),
}


def _load(name: str) -> dict:
    path = DATA_DIR / name
    if not path.exists():
        return {}
    with open(path, encoding="utf-8") as fh:
        raw = json.load(fh)
    return {k: v for k, v in raw.items() if not k.startswith("_")}


@cache
def gpu_spec(name: str) -> GpuSpec:
    cat = _load("gpus.json")
    if name not in cat:
        raise PhysicsInputError(f"unknown GPU {name!r}; known: {', '.join(sorted(cat))}")
    e = cat[name]
    extra = _GPU_EXTRA.get(name, {})
    return GpuSpec(name=name, flops=num(f"{name}.bf16_tflops", e["bf16_tflops"], positive=True) * 1e12,
                   hbm_bps=num(f"{name}.hbm_tbps", e["hbm_tbps"], positive=True) * 1e12,
                   memory_gb=num(f"{name}.memory_gb", e["memory_gb"], positive=True),
                   num_sms=int(extra.get("num_sms", 132)),
                   allreduce_busbw_gbps=float(extra.get("allreduce_busbw_gbps", 0.0)),
                   allreduce_alpha_us=float(extra.get("allreduce_alpha_us", 0.0)),
                   source=str(e.get("source", "")) + ("; " + extra["source"] if "source" in extra else ""))


@cache
def model_spec(name: str) -> ModelSpec:
    """Dense fields from ``data/models.json``, MoE fields merged from ``data/models_moe.json``."""
    cat, moe = _load("models.json"), _load("models_moe.json")
    if name not in cat and name not in moe:
        raise PhysicsInputError(f"unknown model {name!r}; known: {', '.join(sorted(set(cat) | set(moe)))}")
    e = dict(cat.get(name, {}))
    e.update(moe.get(name, {}))
    kw = {}
    for f in fields(ModelSpec):
        if f.name in e and f.name != "name":
            kw[f.name] = e[f.name]
    for k in ("layers", "hidden", "heads", "kv_heads", "head_dim"):
        kw[k] = num(f"{name}.{k}", kw.get(k), positive=True, integer=True)
    for k in ("params_b", "active_params_b", "linear_gflop_per_token", "lm_head_gflop"):
        kw[k] = num(f"{name}.{k}", kw.get(k), positive=True)
    for k in ("experts", "experts_per_token", "moe_intermediate"):
        kw[k] = num(f"{name}.{k}", kw.get(k, 0), integer=True)
    kw["shared_params_b"] = num(f"{name}.shared_params_b", kw.get("shared_params_b", 0.0))
    kw["source"] = str(e.get("source", "")) + ("; " + str(e["moe_source"]) if "moe_source" in e else "")
    spec = ModelSpec(name=name, **kw)
    if spec.is_moe:
        if not 0 < spec.experts_per_token <= spec.experts:
            raise PhysicsInputError(f"{name}: experts_per_token must be in 1..experts")
        if spec.moe_intermediate <= 0 or spec.shared_params_b <= 0:
            raise PhysicsInputError(f"{name}: a MoE model needs moe_intermediate and shared_params_b > 0")
    return spec


# ---- parameters -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PhysParams:
    """Knobs of the step model. The first block is copied from ``data/perf_params.json`` (the engine's
    calibration, not refitted here); the second is fitted on the interference micro-benchmark by
    ``scripts/fit_physics.py`` (``data/physics_params.json``); the third are literature assumptions."""
    # hardware-scaled efficiencies (multiply datasheet FLOP/s and bytes/s; carried to other GPUs as ratios)
    eta_weights: float = 0.80
    eta_compute: float = 0.57337
    eta_attn: float = 0.45
    eta_kv: float = 0.949936
    # host / software constants (carried over unchanged to other GPUs => "extrapolated")
    t_iter_ms: float = 1.830701
    t_seq_us: float = 75.042681
    # fitted on the interference micro-benchmark
    eta_share: float = 0.4     # HBM efficiency of re-reading physically shared prefix blocks per request
                               # (cascade attention off in a batch whose decodes share a prefix)
    t_mix_ms: float = 0.0      # extra fixed cost of an iteration that holds a prefill chunk (piecewise CUDA
                               # graph instead of the full decode graph, prefill metadata)
    # assumptions (not measured on this stack)
    t_moe_layer_us: float = 20.0   # extra kernels per MoE layer (router GEMM, top-k, align, 2 grouped GEMMs,
                                   # act, sum): ~6 kernels x ~3 us minimum duration under CUDA graphs
    eta_allreduce: float = 1.0     # multiplies the catalog busbw (already an achieved nccl-tests figure)

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            num(f"PhysParams.{f.name}", v, positive=f.name.startswith("eta_"),
                hi=1.0 if f.name.startswith("eta_") else None)


@dataclass(frozen=True)
class MeasParams:
    """Measurement-side constants of the interference micro-benchmark (client-measured TPOT through one
    API server). Not engine physics: they exist only so the driver reproduces what the client saw."""
    client_ms: float = 0.0       # fixed client-visible extra per decode step (streaming chunk, event loop)
    stream_us: float = 0.0       # per running stream per step: API-server detokenise/stream cost that the
                                 # engine-side t_seq (fitted on <= 50 streams) does not carry at 100-250 streams


HARDWARE_SCALED = ("eta_weights", "eta_compute", "eta_attn", "eta_kv", "eta_share", "eta_allreduce")
HOST_SOFTWARE = ("t_iter_ms", "t_seq_us", "t_mix_ms", "t_moe_layer_us", "api_ms", "api_us_per_token",
                 "api_us_per_seq", "pd_handoff_ms", "pd_us_per_token", "p_send_ms", "retok_hit",
                 "retok_hit_synthetic", "activation_gb")


@cache
def default_params() -> PhysParams:
    """Engine calibration from ``data/perf_params.json`` + fitted ``data/physics_params.json``."""
    p = PhysParams()
    base = _load("perf_params.json").get("params", {})
    phys = _load("physics_params.json").get("params", {})
    names = {f.name for f in fields(PhysParams)}
    upd = {k: float(v) for k, v in base.items() if k in names}
    upd.update({k: float(v) for k, v in phys.items() if k in names})
    return replace(p, **upd)


@cache
def default_meas() -> MeasParams:
    phys = _load("physics_params.json").get("measurement", {})
    names = {f.name for f in fields(MeasParams)}
    return MeasParams(**{k: float(v) for k, v in phys.items() if k in names})


# ---- building blocks (seconds) ------------------------------------------------------------------------
def expected_experts_touched(tokens, experts, experts_per_token) -> float:
    """E (1 - (1 - k/E)^T): expected distinct experts that T tokens route to in one MoE layer (uniform,
    independent routing; real routers are skewed, which touches fewer)."""
    t = num("tokens", tokens)
    e = num("experts", experts, positive=True, integer=True)
    k = num("experts_per_token", experts_per_token, positive=True, integer=True, hi=e)
    if t == 0:
        return 0.0
    return e * (1.0 - (1.0 - k / e) ** t)


def weight_bytes_read(model: ModelSpec, tokens, tp=1) -> float:
    """Weight bytes one GPU reads in a step with ``tokens`` tokens (dense: all weights; MoE: shared + the
    experts touched), split over ``tp`` GPUs."""
    t = num("tokens", tokens)
    n = num("tp", tp, positive=True, integer=True)
    bpp = model.bytes_per_param
    if not model.is_moe:
        return model.params_b * 1e9 * bpp / n
    touched = expected_experts_touched(max(t, 1.0), model.experts, model.experts_per_token)
    expert = model.expert_params * model.layers * touched
    return (model.shared_params_b * 1e9 + expert) * bpp / n


def linear_s(gpu: GpuSpec, model: ModelSpec, p: PhysParams, tokens, seqs, tp=1) -> float:
    """Transformer GEMMs + lm_head as the roofline 2-norm sqrt(mem^2 + comp^2); FLOPs from active params."""
    t = num("tokens", tokens)
    s = num("seqs", seqs)
    n = num("tp", tp, positive=True, integer=True)
    mem = weight_bytes_read(model, t, n) / (gpu.hbm_bps * p.eta_weights)
    comp = (t * model.linear_gflop_per_token + s * model.lm_head_gflop) * 1e9 / (gpu.flops * n * p.eta_compute)
    moe = model.layers * p.t_moe_layer_us * 1e-6 if model.is_moe and t > 0 else 0.0
    return math.sqrt(mem * mem + comp * comp) + moe


def tp_allreduce_s(tokens, hidden, layers, tp, busbw_gbps, alpha_us, bytes_per_elem=2,
                   allreduces_per_layer=2) -> float:
    """Ring all-reduce time of one step: per layer ``allreduces_per_layer`` x (alpha + 2 (n-1)/n x bytes /
    busbw) with bytes = tokens x hidden x ``bytes_per_elem`` (nccl-tests' busbw convention). 0 at tp = 1."""
    t = num("tokens", tokens)
    h = num("hidden", hidden, positive=True, integer=True)
    L = num("layers", layers, positive=True, integer=True)
    n = num("tp", tp, positive=True, integer=True)
    bw = num("busbw_gbps", busbw_gbps, positive=True)
    a = num("alpha_us", alpha_us)
    b = num("bytes_per_elem", bytes_per_elem, positive=True)
    k = num("allreduces_per_layer", allreduces_per_layer, integer=True)
    if n == 1:
        return 0.0
    msg = t * h * b
    return L * k * (a * 1e-6 + 2.0 * (n - 1) / n * msg / (bw * 1e9))


def cascade_used(common_prefix, num_reqs, all_decode: bool, heads, kv_heads, num_sms=132) -> bool:
    """vLLM V1 FlashAttention backend's ``use_cascade_attention`` heuristic (vllm/v1/attention/backends/
    flash_attn.py): cascade needs a common prefix of >= 256 tokens over all running requests and >= 8
    requests; for a pure-decode step with GQA (FlashDecoding available) it is used only if its estimated
    waves beat FlashDecoding's."""
    P = num("common_prefix", common_prefix)
    R = num("num_reqs", num_reqs, integer=True)
    H = num("heads", heads, positive=True, integer=True)
    K = num("kv_heads", kv_heads, positive=True, integer=True)
    S = num("num_sms", num_sms, positive=True, integer=True)
    if P < 256 or R < 8:
        return False
    qpk = H // K
    if not (qpk > 1 and all_decode):
        return True
    tiles = math.ceil(P / 128)
    cascade_time = math.ceil(H * math.ceil(R / 128) / S) * tiles
    fd_time = math.ceil(R * K * math.ceil(qpk / 128) * tiles / S)
    return cascade_time < fd_time


def decode_attention_s(gpu: GpuSpec, model: ModelSpec, p: PhysParams, batch, ctx_sum, shared_prefix=0,
                       foreign_running=False, mixed=False, other_reqs=0, tp=1) -> float:
    """Decode-attention KV read of ``batch`` decodes whose contexts sum to ``ctx_sum``.

    ``shared_prefix``: tokens at the start of every decode's context whose KV blocks are physically shared
    (one cached system prompt / document). 0 for ordinary batches (the law is then the plain roofline).
    ``foreign_running``: some running request (a prefill of another prompt, or its decode) does *not* carry
    that prefix, so vLLM's common prefix over all running requests is 0 and cascade attention is off.
    ``other_reqs``: running non-decode requests (prefills) counted by the heuristic."""
    B = num("batch", batch, integer=True)
    C = num("ctx_sum", ctx_sum)
    P = num("shared_prefix", shared_prefix)
    R = num("other_reqs", other_reqs, integer=True)
    n = num("tp", tp, positive=True, integer=True)
    if B == 0:
        return 0.0
    if P * B > C + 1e-9:
        raise PhysicsInputError(f"shared_prefix x batch ({P * B:.0f}) exceeds ctx_sum ({C:.0f})")
    kv = model.kv_bytes_per_token / n
    unique = (C - P * B) * kv / (gpu.hbm_bps * p.eta_kv)
    if P == 0:
        return unique
    common = 0 if foreign_running else P
    if cascade_used(common, B + R, not mixed, model.heads, model.kv_heads, gpu.num_sms):
        return unique + P * kv / (gpu.hbm_bps * p.eta_kv)
    return unique + B * P * kv / (gpu.hbm_bps * p.eta_share)


def prefill_attention_s(gpu: GpuSpec, model: ModelSpec, p: PhysParams, chunks, tp=1) -> float:
    """Causal prefill attention of chunks (new, cached): 4 L H d FLOPs per (query, key) pair."""
    n = num("tp", tp, positive=True, integer=True)
    pairs = 0.0
    for i, (new, cached) in enumerate(chunks):
        a = num(f"chunks[{i}].new", new, integer=True)
        c = num(f"chunks[{i}].cached", cached, integer=True)
        pairs += a * (c + 0.5 * (a + 1))
    return pairs * model.attn_flop_per_pair / (gpu.flops * n * p.eta_attn)


def step_s(gpu: GpuSpec, model: ModelSpec, p: PhysParams, chunks: Sequence[tuple[int, int]] = (),
           batch=0, ctx_sum=0, shared_prefix=0, foreign_running=False, tp=1) -> float:
    """Time of one engine iteration: prefill ``chunks`` (new tokens, cached tokens) + ``batch`` decodes with
    contexts summing to ``ctx_sum``. ``shared_prefix``/``foreign_running``: see ``decode_attention_s``."""
    ch = [(num(f"chunks[{i}].new", a, integer=True), num(f"chunks[{i}].cached", c, integer=True))
          for i, (a, c) in enumerate(chunks)]
    B = num("batch", batch, integer=True)
    n = num("tp", tp, positive=True, integer=True)
    new = sum(a for a, _ in ch)
    seqs = B + len(ch)
    tokens = new + B
    if tokens == 0:
        return 0.0
    t = p.t_iter_ms * 1e-3 + linear_s(gpu, model, p, tokens, seqs, n) + seqs * p.t_seq_us * 1e-6
    t += prefill_attention_s(gpu, model, p, ch, n)
    t += decode_attention_s(gpu, model, p, B, ctx_sum, shared_prefix, foreign_running, mixed=bool(ch),
                            other_reqs=len(ch), tp=n)
    if ch:
        t += p.t_mix_ms * 1e-3
    if n > 1:
        t += tp_allreduce_s(tokens, model.hidden, model.layers, n, gpu.allreduce_busbw_gbps * p.eta_allreduce,
                            gpu.allreduce_alpha_us)
    return t


def interference_s(gpu: GpuSpec, model: ModelSpec, p: PhysParams, chunks: Sequence[tuple[int, int]], batch,
                   ctx_sum, shared_prefix=0, foreign_running=False, tp=1) -> float:
    """Extra time a mixed iteration costs the co-batched decodes: step(mixed) - step(the same decodes alone)
    - the prefill chunks' own roofline work (their FLOPs at eta_compute, their attention, their t_seq).
    = the shared-prefix read lost (only if the decodes share a prefix and a foreign request runs) + t_mix +
    the 2-norm coupling (<= 0: the weights are read once for both). Clipped at 0; bounded above by
    batch x shared_prefix x kv / (BW eta_share) + t_mix."""
    ch = [(num(f"chunks[{i}].new", a, integer=True), num(f"chunks[{i}].cached", c, integer=True))
          for i, (a, c) in enumerate(chunks)]
    n = num("tp", tp, positive=True, integer=True)
    mixed = step_s(gpu, model, p, ch, batch, ctx_sum, shared_prefix, foreign_running, n)
    dec = step_s(gpu, model, p, (), batch, ctx_sum, shared_prefix, False, n)
    new = sum(a for a, _ in ch)
    work = ((new * model.linear_gflop_per_token + len(ch) * model.lm_head_gflop) * 1e9
            / (gpu.flops * n * p.eta_compute) + prefill_attention_s(gpu, model, p, ch, n)
            + len(ch) * p.t_seq_us * 1e-6)
    return max(0.0, mixed - dec - work)


class PhysicsStepModel:
    """Adapter with the engine's current latency-model call shape (``PerfModel.iteration`` /
    ``decode_coeffs`` / ``prefill_time``) so the lead can try the laws behind the new Protocol. One
    (gpu, model, tp, params, shared_prefix) per instance; ``is_full`` in chunks is accepted and ignored
    (no cached==0 gate)."""

    def __init__(self, gpu: str | GpuSpec, model: str | ModelSpec, tp=1, params: PhysParams | None = None,
                 shared_prefix=0):
        self.gpu = gpu_spec(gpu) if isinstance(gpu, str) else gpu
        self.model = model_spec(model) if isinstance(model, str) else model
        self.tp = num("tp", tp, positive=True, integer=True)
        self.p = params or default_params()
        # vLLM's common prefix is counted in whole KV blocks
        self.shared_prefix = num("shared_prefix", shared_prefix, integer=True) // BLOCK_TOKENS * BLOCK_TOKENS
        self.kv_bytes_per_token = self.model.kv_bytes_per_token

    def iteration(self, chunks, batch, ctx_sum, foreign_running=False) -> float:
        ch = [(c[0], c[1]) for c in chunks]
        P = self.shared_prefix if batch and ctx_sum >= self.shared_prefix * batch else 0
        return step_s(self.gpu, self.model, self.p, ch, batch, ctx_sum, P, foreign_running, self.tp)

    def decode_coeffs(self, batch, foreign_running=False) -> tuple[float, float]:
        """(a, b) with decode-only step time = a + b x (sum of contexts): affine in ctx_sum, so the engine
        can keep advancing decode analytically (the shared-prefix term is part of a)."""
        B = num("batch", batch, positive=True, integer=True)
        b = self.kv_bytes_per_token / self.tp / (self.gpu.hbm_bps * self.p.eta_kv)
        P = self.shared_prefix
        ref = B * (P + 1)
        return self.iteration((), B, ref, foreign_running) - b * ref, b

    def prefill_time(self, new, cached) -> float:
        return step_s(self.gpu, self.model, self.p, [(new, cached)], 0, 0, 0, False, self.tp)


# ---- the interference micro-benchmark driver ----------------------------------------------------------
def microbench_tpot_ms(gpu: GpuSpec, model: ModelSpec, p: PhysParams, m: MeasParams, batch, kind="none",
                       n_prefills=1, prefill_tokens=1024, shared_ctx=2048, decode_new=32, append_new=None,
                       output_tokens=64, budget=8192) -> float:
    """Mean decode TPOT (ms) of the interference micro-benchmark: ``batch`` decodes share one cached
    ``shared_ctx``-token prefix (+ ``decode_new`` own tokens) and produce ``output_tokens``; ``n_prefills``
    inserted requests are ``full`` (``prefill_tokens`` uncached, a different prompt) or ``append`` (the
    shared prefix + ``append_new`` new tokens, default ``prefill_tokens``); each also produces
    ``output_tokens``. TPOT = (E2E - TTFT)/(output - 1) over the decode window: output-1 decode steps, in
    which each inserted prefill lands as one mixed iteration (requests reach the engine spread out), and
    the inserted requests then decode alongside. A full prefill's request runs for the whole window, so
    the batch has no common prefix (cascade off) throughout."""
    B = num("batch", batch, positive=True, integer=True)
    if kind not in ("none", "full", "append"):
        raise PhysicsInputError(f"kind must be none|full|append, got {kind!r}")
    n = num("n_prefills", n_prefills, integer=True) if kind != "none" else 0
    L = num("prefill_tokens", prefill_tokens, positive=True, integer=True)
    S = num("shared_ctx", shared_ctx, integer=True)
    dn = num("decode_new", decode_new, integer=True)
    an = L if append_new is None else num("append_new", append_new, positive=True, integer=True)
    out = num("output_tokens", output_tokens, positive=True, integer=True, lo=2)
    bud = num("budget", budget, positive=True, integer=True)
    steps = out - 1
    foreign = kind == "full" and n > 0
    total = 0.0
    # inserted requests' own decode contexts (after their prefill)
    ins_ctx = (L if kind == "full" else S + an) if n else 0
    for k in range(steps):
        ctx_dec = B * (S + dn + 1 + k)
        # the inserted requests decode alongside from the first step; append ones carry the shared prefix
        b_all, ctx_all = B + n, ctx_dec + n * (ins_ctx + k)
        b_sharing = b_all if kind == "append" else B
        total += _mb_step(gpu, model, p, (), b_all, ctx_all, S, b_sharing, foreign)
    # the prefills' own iterations, one per inserted request
    for _ in range(n):
        cached = S if kind == "append" else 0
        new = an if kind == "append" else L
        pending = new
        done = 0
        while pending > 0:
            c = min(pending, max(bud - B, 1))
            # the chunk rides on one of the decode steps (it replaces a decode-only step of the window)
            mid_ctx = B * (S + dn + 32) + n * (ins_ctx + 32)
            b_sh = B + n if kind == "append" else B
            total += (_mb_step(gpu, model, p, [(c, cached + done)], B + n, mid_ctx, S, b_sh, foreign)
                      - _mb_step(gpu, model, p, (), B + n, mid_ctx, S, b_sh, foreign))
            pending -= c
            done += c
    ms = 1e3 * total / steps
    return ms + m.client_ms + m.stream_us * 1e-3 * (B + n)


def _mb_step(gpu, model, p, chunks, b_all, ctx_all, shared, b_sharing, foreign) -> float:
    """step_s where only ``b_sharing`` of the ``b_all`` decodes carry the shared prefix."""
    if b_all == b_sharing or not shared:
        return step_s(gpu, model, p, chunks, b_all, ctx_all, shared, foreign)
    # split: decodes carrying the prefix get the shared-prefix law; the rest is a plain KV read
    t = step_s(gpu, model, p, chunks, b_all, ctx_all, 0, False)
    kv = model.kv_bytes_per_token
    plain_shared = b_sharing * shared * kv / (gpu.hbm_bps * p.eta_kv)
    law = decode_attention_s(gpu, model, p, b_sharing, b_sharing * shared, shared, foreign, bool(chunks),
                             b_all - b_sharing + len(chunks))
    return t - plain_shared + law


# ---- PD path ------------------------------------------------------------------------------------------
def kv_transfer_s(model: ModelSpec, tokens, link_gbps, latency_us, tp=1, efficiency=1.0) -> float:
    """KV hand-off of ``tokens`` tokens over a link: latency + tokens x KV bytes/token (all layers) / (tp x
    eta x link bandwidth); each of ``tp`` GPU pairs moves 1/tp of the KV in parallel."""
    t = num("tokens", tokens)
    bw = num("link_gbps", link_gbps, positive=True)
    lat = num("latency_us", latency_us)
    n = num("tp", tp, positive=True, integer=True)
    eff = num("efficiency", efficiency, positive=True, hi=1.0)
    return lat * 1e-6 + t * model.kv_bytes_per_token / n / (bw * 1e9 * eff)


def pd_path_costs(model: ModelSpec, prompt_tokens, pd_handoff_ms, pd_us_per_token, p_send_ms) -> dict:
    """The engine's three fitted PD-path constants, rescaled from the model they were fitted on
    (Llama-3.1-8B: 32 layers, 131,072 KV B/token) to ``model`` by what each moves:

    * ``pd_handoff_ms`` (P's 1-token response, the second HTTP hop): host work, unchanged;
    * ``pd_us_per_token`` (the connector's per-layer receive of each prompt token's KV on D): x KV bytes per
      token ratio (layers x kv_heads x head_dim);
    * ``p_send_ms`` (P's step blocked in wait_for_save until every layer's KV is handed to the connector):
      x layers ratio (one save per layer).
    Returns seconds: ``handoff``, ``per_request_receive`` (= per token x prompt), ``p_send``."""
    t = num("prompt_tokens", prompt_tokens)
    h = num("pd_handoff_ms", pd_handoff_ms)
    u = num("pd_us_per_token", pd_us_per_token)
    s = num("p_send_ms", p_send_ms)
    kv_ratio = model.kv_bytes_per_token / REF_KV_BYTES_PER_TOKEN
    layer_ratio = model.layers / REF_LAYERS
    return {"handoff": h * 1e-3, "per_request_receive": u * 1e-6 * kv_ratio * t,
            "p_send": s * 1e-3 * layer_ratio}


# ---- extrapolation labelling ----------------------------------------------------------------------------
def extrapolation_notes(gpu: str, model: str) -> list[str]:
    """Which calibrated constants are carried over unchanged for this (gpu, model). Empty list: the
    measured pair (H100-SXM + Llama-3.1-8B). Any entry means the result must be labelled "extrapolated"."""
    if not isinstance(gpu, str) or not isinstance(model, str) or not gpu or not model:
        raise PhysicsInputError(f"gpu and model must be non-empty names, got {gpu!r}, {model!r}")
    g, mspec = gpu_spec(gpu), model_spec(model)
    notes: list[str] = []
    if g.name != MEASURED_GPU:
        notes.append(f"GPU {g.name} is not measured: efficiencies eta_weights/eta_compute/eta_attn/eta_kv/"
                     f"eta_share fitted on {MEASURED_GPU} are applied to its datasheet FLOP/s and bandwidth.")
        notes.append(f"host/software constants carried over unchanged from {MEASURED_GPU}: t_iter_ms, t_seq_us, "
                     f"t_mix_ms, api_ms, api_us_per_token, api_us_per_seq, pd_handoff_ms, pd_us_per_token, "
                     f"p_send_ms (a different host CPU/driver/NCCL would change them).")
        if g.allreduce_busbw_gbps:
            notes.append(f"TP all-reduce uses an assumed busbw {g.allreduce_busbw_gbps:g} GB/s and alpha "
                         f"{g.allreduce_alpha_us:g} us for {g.name} (not measured on this stack).")
    if mspec.name != MEASURED_MODEL:
        held = " (Qwen2.5-14B has held-out measurements: compare, do not fit)" if mspec.name in HELD_OUT_MODELS \
            else ""
        notes.append(f"model {mspec.name} is not in the calibration set{held}: t_iter_ms and t_seq_us fitted on "
                     f"{MEASURED_MODEL} are carried over; PD-path costs are rescaled by KV bytes/token "
                     f"({mspec.kv_bytes_per_token / REF_KV_BYTES_PER_TOKEN:.2f}x) and layers "
                     f"({mspec.layers / REF_LAYERS:.2f}x) from {MEASURED_MODEL}'s fit.")
        if mspec.is_moe:
            notes.append(f"MoE {mspec.name}: expert reads assume uniform independent routing "
                         f"(E(1-(1-k/E)^T)) and t_moe_layer_us is an assumption, not a measurement.")
    return notes


def is_extrapolated(gpu: str, model: str) -> bool:
    return bool(extrapolation_notes(gpu, model))
