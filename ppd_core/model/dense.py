"""The dense roofline latency model (registered as ``"dense"``): the time of one engine iteration on one node, plus the fixed per-request costs.

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

import math

from ..config.catalog import GPU, Model
from ..config.workload_catalog import SYNTHETIC
from .params import PerfParams

TP_ALLREDUCE_US_PER_LAYER = 16.0   # two all-reduces per layer at ~8 us NCCL latency each (perf-model.md 2)


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
        """An isolated prefill of ``new`` tokens over ``cached`` ones as one iteration with no decodes. It is
        not chunked: the whole prompt is priced as a single iteration whatever ``max_batched_tokens`` is."""
        return self.iteration([(new, cached, cached == 0)], 0, 0)

    # ---- per-request overheads (seconds) -------------------------------------------------------------
    def retok(self, workload: str) -> float:
        """Share of the previous answer that hits the prefix cache on the next turn for this workload."""
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
