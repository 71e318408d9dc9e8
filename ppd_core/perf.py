"""Performance model: the time of one engine iteration on one node, plus the fixed per-request costs.

An iteration runs a mixed batch (vLLM V1 continuous batching with chunked prefill): prefill chunks, each
with ``new`` tokens attending over ``cached`` earlier tokens, plus ``B`` decode tokens whose contexts sum to
``C``. Its time is

    t_iter + linear(T) + seqs * t_seq + attention_prefill + kv_read(C) + interference

* ``linear(T)``: the transformer GEMMs for ``T`` = prefill tokens + decode tokens. Weight reads and FLOPs
  are combined as a 2-norm, sqrt(mem^2 + comp^2): the roofline max() with a smooth ridge, which matches
  Vidur's H100 per-token-count profile within ~20 % from 1 to 4k tokens (perf-model.md 4.7).
* ``attention_prefill``: 4 * layers * heads * head_dim FLOPs per (query, key) pair, causal within the chunk.
* ``kv_read(C)``: decode attention reads every context token's KV once per step.
* ``t_seq``: per-sequence CPU work in every iteration (sampling, detokenising, streaming through the proxy).
* ``interference``: the *measured* extra slowdown a prefill inflicts on co-batched decodes that FLOPs alone
  do not explain (PPD paper Fig.2: +~48 % TPOT for one 1,024-token full prefill at decode batch 200, +~2 % for
  an append-prefill). Charged per decode request in the iteration: ``kappa_full`` for a full prefill
  (no cached context; saturating at 1,024 tokens per iteration) and ``kappa_append`` per 1,024 appended tokens.

Per-request costs outside the GPU (calibrated on the measured H100 data, see README "Fidelity"):
``api_ms`` + ``api_us_per_token`` x prompt per HTTP hop (proxy, API server, tokenising the whole prompt),
``pd_handoff_ms`` + ``pd_us_per_token`` x prompt on the PD path (P's 1-token completion, the second hop,
the KV connector's per-layer receive), and ``p_send_ms`` of P engine time per PD request (P's step waits
until the request's KV has been handed to the connector).
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from functools import cache
from pathlib import Path

from .catalog import GPU, Model, gpus, models

PARAMS_FILE = Path(__file__).resolve().parent.parent / "data" / "perf_params.json"
TP_ALLREDUCE_US_PER_LAYER = 16.0   # two all-reduces per layer at ~8 us NCCL latency each (perf-model.md 2)


@dataclass(frozen=True)
class PerfParams:
    """Physically meaningful knobs of the performance model. Defaults come from the literature
    (perf-model.md 4.7, 5); ``data/perf_params.json`` (written by ``calibrate``) overrides them."""
    eta_weights: float = 0.80     # HBM efficiency of weight reads (decode MBU)
    eta_compute: float = 0.70     # GEMM efficiency at large token counts (MFU)
    eta_attn: float = 0.45        # prefill attention kernel efficiency
    eta_kv: float = 0.70          # HBM efficiency of decode KV reads
    t_iter_ms: float = 1.8        # per-iteration fixed cost: scheduling, sampling, kernel launches
    t_seq_us: float = 60.0        # per sequence per iteration: sampling, detokenising, streaming the token
    api_ms: float = 20.0          # per HTTP hop: proxy + API server + first streamed chunk
    api_us_per_token: float = 7.0  # per prompt token per hop: tokenising and hashing the whole prompt
    api_us_per_seq: float = 0.0   # per hop, per sequence already running on the target node: its API
                                  # server's event loop is busy streaming their tokens
    pd_handoff_ms: float = 55.0   # PD path extra: P's 1-token completion returns, second hop to D
    pd_us_per_token: float = 3.5  # PD path extra per prompt token: KV connector per-layer receive on D
    p_send_ms: float = 10.0       # P's engine blocked per PD request after its prefill (wait_for_save of the KV send)
    retok_hit: float = 1.0        # share of the previous answer still hitting the prefix cache next turn: the
                                  # history is sent as text and re-tokenised, so the cached answer's tokens
                                  # match only up to the first tokenisation difference (natural-language chat)
    retok_hit_synthetic: float = 1.0  # the same for the synthetic benchmark's prompts (random letter strings
                                      # mixed into the text re-tokenise differently far more often)
    kappa_full_ms: float = 4.0    # interference per decode request of a full prefill in the iteration
    kappa_append_ms: float = 0.05  # interference per decode request per 1,024 appended tokens
    kv_recv_blocks_decode: float = 1.0  # 1: D's batch pauses while KV flows into it (P2pNccl); 0: overlapped
    activation_gb: float = 2.0    # per-GPU memory kept free of KV for activations and CUDA graphs

    @staticmethod
    def field_names() -> tuple[str, ...]:
        return tuple(f.name for f in fields(PerfParams))


@cache
def default_params() -> PerfParams:
    """Calibrated parameters if ``data/perf_params.json`` exists, else the literature defaults."""
    if not PARAMS_FILE.exists():
        return PerfParams()
    with open(PARAMS_FILE, encoding="utf-8") as fh:
        raw = json.load(fh)
    values = raw.get("params", raw)
    known = {k: float(v) for k, v in values.items() if k in PerfParams.field_names()}
    return PerfParams(**known)


class PerfModel:
    """Iteration-time model for one (gpu, model, tp). Immutable after construction; cheap to call."""

    __slots__ = ("gpu", "model", "tp", "p", "kv_bytes_per_token", "_mem_s", "_flop_s_per_token",
                 "_attn_s_per_pair", "_kv_s_per_token", "_t0", "_lm_head_s", "kv_capacity_tokens", "_seq_s",
                 "p_send_s", "_decode_memo")

    def __init__(self, gpu: GPU, model: Model, tp: int, params: PerfParams, gpu_mem_util: float = 0.85):
        self.gpu, self.model, self.tp, self.p = gpu, model, tp, params
        flops = gpu.flops * tp
        hbm = gpu.hbm_bps * tp
        self.kv_bytes_per_token = model.kv_bytes_per_token
        self._mem_s = model.weight_bytes / (hbm * params.eta_weights)
        self._flop_s_per_token = model.linear_gflop_per_token * 1e9 / (flops * params.eta_compute)
        self._lm_head_s = model.lm_head_gflop * 1e9 / (flops * params.eta_compute)
        self._attn_s_per_pair = model.attn_flop_per_pair / (flops * params.eta_attn)
        self._kv_s_per_token = model.kv_bytes_per_token / (hbm * params.eta_kv)
        allreduce = TP_ALLREDUCE_US_PER_LAYER * 1e-6 * model.layers if tp > 1 else 0.0
        self._t0 = params.t_iter_ms * 1e-3 + allreduce
        self._seq_s = params.t_seq_us * 1e-6
        self.p_send_s = params.p_send_ms * 1e-3
        self._decode_memo: dict[int, float] = {}   # batch size -> decode step intercept (per model instance)
        free = (gpu.memory_gb * 1e9 * gpu_mem_util - params.activation_gb * 1e9) * tp - model.weight_bytes
        self.kv_capacity_tokens = int(free // model.kv_bytes_per_token) if free > 0 else 0

    # ---- building blocks (seconds) -------------------------------------------------------------------
    def linear(self, tokens: int, seqs: int) -> float:
        comp = tokens * self._flop_s_per_token + seqs * self._lm_head_s
        return math.sqrt(self._mem_s * self._mem_s + comp * comp)

    def decode_coeffs(self, batch: int) -> tuple[float, float]:
        """(a, b) with decode-only step time = a + b * (sum of the batch's context lengths)."""
        a = self._decode_memo.get(batch)
        if a is None:
            a = self._decode_memo[batch] = self._t0 + self.linear(batch, batch) + batch * self._seq_s
        return a, self._kv_s_per_token

    def iteration(self, chunks: list[tuple[int, int, bool]], batch: int, ctx_sum: int) -> float:
        """Time of one mixed iteration. ``chunks``: (new tokens, cached tokens, is_full_prefill) per prefill
        chunk; ``batch`` decode requests whose contexts sum to ``ctx_sum``."""
        new_total = 0
        pairs = 0.0
        full_tokens = 0
        append_tokens = 0
        for new, cached, full in chunks:
            new_total += new
            pairs += new * (cached + 0.5 * (new + 1))
            if full:
                full_tokens += new
            else:
                append_tokens += new
        seqs = batch + len(chunks)
        t = self._t0 + self.linear(new_total + batch, seqs) + seqs * self._seq_s
        t += pairs * self._attn_s_per_pair + ctx_sum * self._kv_s_per_token
        if batch and (full_tokens or append_tokens):
            t += batch * self.interference_per_request(full_tokens, append_tokens)
        return t

    def interference_per_request(self, full_tokens: int, append_tokens: int) -> float:
        p = self.p
        return 1e-3 * (p.kappa_full_ms * min(full_tokens, 1024) / 1024.0
                       + p.kappa_append_ms * append_tokens / 1024.0)

    def prefill_time(self, new: int, cached: int) -> float:
        """An isolated prefill of ``new`` tokens over ``cached`` ones (no decodes), chunked at 8192."""
        return self.iteration([(new, cached, cached == 0)], 0, 0)

    # ---- per-request overheads (seconds) -------------------------------------------------------------
    def retok(self, workload: str) -> float:
        """Share of the previous answer that hits the prefix cache on the next turn for this workload."""
        from .workload import SYNTHETIC
        return self.p.retok_hit_synthetic if workload in SYNTHETIC else self.p.retok_hit

    def hop(self, prompt_tokens: int, active_seqs: int = 0) -> float:
        """One HTTP hop to a node running ``active_seqs`` sequences: proxy, API server, tokenising."""
        return 1e-3 * self.p.api_ms + 1e-6 * (self.p.api_us_per_token * prompt_tokens
                                              + self.p.api_us_per_seq * active_seqs)

    def pd_handoff(self, prompt_tokens: int, active_seqs: int = 0) -> float:
        """After P's prefill: P's response returns, the proxy re-sends to D, D's API tokenises, the
        connector receives per layer."""
        return (1e-3 * self.p.pd_handoff_ms + self.hop(prompt_tokens, active_seqs)
                + 1e-6 * self.p.pd_us_per_token * prompt_tokens)


def build(gpu: str, model: str, tp: int, gpu_mem_util: float, params: PerfParams | None = None) -> PerfModel:
    return PerfModel(gpus()[gpu], models()[model], tp, params or default_params(), gpu_mem_util)


def for_scenario(sc, params: PerfParams | None = None) -> PerfModel:
    return build(sc.gpu, sc.model, sc.tp_degree, sc.gpu_mem_util, params)


def interference_tpot_ms(sc, batch: int, kind: str = "none", n_prefills: int = 1, prefill_tokens: int = 1024,
                         cached_tokens: int = 2048, decode_ctx: int = 2048, output_tokens: int = 64,
                         params: PerfParams | None = None) -> float:
    """Decode TPOT of ``batch`` requests (context ``decode_ctx``, ``output_tokens`` each) that start together
    with ``n_prefills`` inserted prefills of ``prefill_tokens`` new tokens - full (no cache) or append (over
    ``cached_tokens``) - as in the paper's interference micro-benchmark (Fig.2). Chunked prefill shares the
    first iterations' token budget; the prefills then decode alongside."""
    pm = for_scenario(sc, params)
    budget = sc.max_batched_tokens
    pending = [prefill_tokens] * (n_prefills if kind != "none" else 0)
    done = [0] * len(pending)
    t = 0.0
    steps = 0
    ctx = batch * decode_ctx
    b = batch
    while steps < output_tokens - 1 or any(p > 0 for p in pending):
        room = budget - b
        chunks = []
        for i, p in enumerate(pending):
            if p > 0 and room > 0:
                n = min(p, room)
                cached = done[i] + (cached_tokens if kind == "append" else 0)
                chunks.append((n, cached, kind == "full"))
                pending[i] -= n
                done[i] += n
                room -= n
        t += pm.iteration(chunks, b, ctx)
        steps += 1
        ctx += b
        if steps >= output_tokens + len(pending) + 64:
            break
    return 1e3 * t / max(steps, 1)


def params_dict(p: PerfParams) -> dict[str, float]:
    return asdict(p)
