"""The dense roofline latency model (registered as ``"dense"``): the time of one engine iteration on one node,
plus the fixed per-request costs.

An iteration runs a mixed batch (vLLM V1 continuous batching with chunked prefill): prefill chunks, each
with ``new`` tokens attending over ``cached`` earlier tokens, plus ``B`` decode tokens whose contexts sum to
``C``. Its time is the step law of ``step.py`` with the constants folded in:

    t_iter + linear(T) + seqs * t_seq + attention_prefill + decode_attention(C) + [mixed] t_mix + TP all-reduce

* ``linear(T)``: the transformer GEMMs for ``T`` = prefill tokens + decode tokens. Weight reads and FLOPs
  are combined as a 2-norm, sqrt(mem^2 + comp^2): the roofline max() with a smooth ridge, which matches
  Vidur's H100 per-token-count profile within ~20 % from 1 to 4k tokens (perf-model.md 4.7).
* ``attention_prefill``: 4 * layers * heads * head_dim FLOPs per (query, key) pair, causal within the chunk.
* ``decode_attention(C)``: every context token's KV read once per step; with a declared shared prefix
  (``shared_prefix_tokens``) the interference law of ``interference.py`` (cascade on: read once; off because
  a full prefill of another prompt runs: every decode reads its copy at ``eta_share``).
* ``t_seq``: per-sequence CPU work in every iteration (sampling, detokenising, streaming through the proxy).
* ``t_mix``: fixed extra of a *mixed* iteration (a prefill chunk of more than one token beside decodes:
  piecewise CUDA graph instead of the full decode graph). A prefill-only iteration does not pay it (t_iter
  was fitted on those), nor a 1-token chunk (D's first step of a request whose KV arrived from P: a
  uniform-decode step in vLLM V1). No per-decode interference constant, no
  gate on cached == 0, no cap at 1,024 tokens (issue 10).
* TP all-reduce: per layer 2 x (alpha + 2 (n-1)/n x T x hidden x 2 B / busbw) (``tp.py``).

Per-request costs outside the GPU (calibrated on the measured H100 data, see docs/fidelity.md):
``api_ms`` + ``api_us_per_token`` x prompt per HTTP hop (proxy, API server, tokenising the whole prompt;
``api_us_per_token_natural`` for natural chat text, ``natural_text``: see ``tokenize.py``),
``pd_handoff_ms`` + ``pd_us_per_token`` x prompt x (KV bytes/token ratio to Llama-3.1-8B) on the PD path, and
``p_send_ms`` x (layers ratio) of P engine time per PD request (``pdpath.py``).
"""
from __future__ import annotations

import math

from ..config.catalog import GPU, Model
from .cascade import BLOCK_TOKENS, cascade_used
from .checks import num
from .params import PerfParams
from .pdpath import kv_ratio, layer_ratio
from .tokenize import is_natural_text


class PerfModel:
    """Iteration-time model for one (gpu, model, tp). Immutable after construction; cheap to call."""

    __slots__ = ("gpu", "model", "tp", "p", "kv_bytes_per_token", "_mem_s", "_flop_s_per_token",
                 "_attn_s_per_pair", "_kv_s_per_token", "_share_s_per_token", "_t0", "_lm_head_s",
                 "kv_capacity_tokens", "_seq_s", "p_send_s", "_decode_memo", "_ar0", "_ar_per_token",
                 "_mix_s", "shared_prefix", "_pd_us_per_token", "_api_s", "_api_tok", "_api_seq", "_handoff_s")

    def __init__(self, gpu: GPU, model: Model, tp: int, params: PerfParams, gpu_mem_util: float = 0.85,
                 shared_prefix: int = 0, natural_text: bool = False):
        tp = int(num("tp", tp, positive=True, integer=True))
        num("gpu_mem_util", gpu_mem_util, positive=True, hi=1.0)
        self.gpu, self.model, self.tp, self.p = gpu, model, tp, params
        flops = gpu.flops * tp
        hbm = gpu.hbm_bps * tp
        self.kv_bytes_per_token = model.kv_bytes_per_token
        self._mem_s = model.weight_bytes / (hbm * params.eta_weights)
        self._flop_s_per_token = model.linear_gflop_per_token * 1e9 / (flops * params.eta_compute)
        self._lm_head_s = model.lm_head_gflop * 1e9 / (flops * params.eta_compute)
        self._attn_s_per_pair = model.attn_flop_per_pair / (flops * params.eta_attn)
        self._kv_s_per_token = model.kv_bytes_per_token / (hbm * params.eta_kv)
        self._share_s_per_token = model.kv_bytes_per_token / (hbm * params.eta_share)
        if tp > 1:   # ring all-reduce, 2 per layer: latency + bytes (tp.py)
            self._ar0 = model.layers * 2 * gpu.allreduce_alpha_us * 1e-6
            self._ar_per_token = (model.layers * 2 * 2.0 * (tp - 1) / tp * model.hidden * 2
                                  / (gpu.allreduce_busbw_gbps * params.eta_allreduce * 1e9))
        else:
            self._ar0 = self._ar_per_token = 0.0
        self._t0 = params.t_iter_ms * 1e-3 + self._ar0
        self._seq_s = params.t_seq_us * 1e-6
        self._mix_s = params.t_mix_ms * 1e-3
        # vLLM's common prefix is counted in whole KV blocks
        self.shared_prefix = int(num("shared_prefix", shared_prefix, integer=True)) // BLOCK_TOKENS * BLOCK_TOKENS
        self.p_send_s = params.p_send_ms * 1e-3 * layer_ratio(model)
        self._pd_us_per_token = params.pd_us_per_token * kv_ratio(model)
        self._decode_memo: dict[int, float] = {}   # batch size -> decode step intercept (per model instance)
        # hop() / pd_handoff()'s constants, read once (the same products as computed per call before)
        api_tok = params.api_us_per_token_natural if natural_text else params.api_us_per_token
        self._api_s, self._api_tok, self._api_seq = 1e-3 * params.api_ms, api_tok, \
            params.api_us_per_seq
        self._handoff_s = 1e-3 * params.pd_handoff_ms
        free = (gpu.memory_gb * 1e9 * gpu_mem_util - params.activation_gb * 1e9) * tp - model.weight_bytes
        self.kv_capacity_tokens = int(free // model.kv_bytes_per_token) if free > 0 else 0

    # ---- building blocks (seconds) -------------------------------------------------------------------
    def linear(self, tokens: int, seqs: int) -> float:
        comp = tokens * self._flop_s_per_token + seqs * self._lm_head_s
        return math.sqrt(self._mem_s * self._mem_s + comp * comp)

    def _cascade(self, common: int, reqs: int, all_decode: bool) -> bool:
        m = self.model
        return cascade_used(common, reqs, all_decode, m.heads, m.kv_heads, self.gpu.num_sms)

    def _shared_extra(self, batch: int, common: int, reqs: int, all_decode: bool) -> float:
        """Decode attention minus the plain per-decode read ``C x kv``, for ``batch`` decodes sharing
        ``self.shared_prefix`` tokens: read once under cascade, else each copy at eta_share."""
        P = self.shared_prefix
        if self._cascade(common, reqs, all_decode):
            return -(batch - 1) * P * self._kv_s_per_token
        return batch * P * (self._share_s_per_token - self._kv_s_per_token)

    def decode_coeffs(self, batch: int) -> tuple[float, float]:
        """(a, b) with decode-only step time = a + b * (sum of the batch's context lengths): affine in the
        context sum, so the engine advances decode analytically (the shared-prefix term is part of a)."""
        a = self._decode_memo.get(batch)
        if a is None:
            a = self._t0 + self.linear(batch, batch) + batch * (self._seq_s + self._ar_per_token)
            if self.shared_prefix and batch:
                a += self._shared_extra(batch, self.shared_prefix, batch, True)
            self._decode_memo[batch] = a
        return a, self._kv_s_per_token

    def iteration(self, chunks: list[tuple[int, int, bool]], batch: int, ctx_sum: int,
                  foreign: bool | None = None) -> float:
        """Time of one mixed iteration. ``chunks``: (new tokens, cached tokens, is_full_prefill) per prefill
        chunk; ``batch`` decode requests whose contexts sum to ``ctx_sum``. ``foreign``: a running request does
        not carry the shared prefix (default: a full prefill is in the iteration); it matters only with
        ``shared_prefix_tokens`` > 0."""
        new_total = 0
        pairs = 0.0
        full = False
        multi = False      # a chunk of more than one token: not a uniform-decode step (no full CUDA graph)
        for new, cached, is_full in chunks:
            new_total += new
            pairs += new * (cached + 0.5 * (new + 1))
            full = full or is_full
            multi = multi or new > 1
        seqs = batch + len(chunks)
        tokens = new_total + batch
        t = (self._t0 + self.linear(tokens, seqs) + seqs * self._seq_s + tokens * self._ar_per_token
             + pairs * self._attn_s_per_pair + ctx_sum * self._kv_s_per_token)
        if multi and batch:
            t += self._mix_s
        P = self.shared_prefix
        if P and batch and ctx_sum >= P * batch:
            common = 0 if (full if foreign is None else foreign) else P
            t += self._shared_extra(batch, common, seqs, not chunks)
        return t

    def prefill_time(self, new: int, cached: int) -> float:
        """An isolated prefill of ``new`` tokens over ``cached`` ones as one iteration with no decodes. It is
        not chunked: the whole prompt is priced as a single iteration whatever ``max_batched_tokens`` is."""
        return self.iteration([(new, cached, cached == 0)], 0, 0)

    # ---- per-request overheads (seconds) -------------------------------------------------------------
    def retok(self, workload: str) -> float:
        """Share of the previous answer that hits the prefix cache on the next turn for this workload."""
        return self.p.retok_hit if is_natural_text(workload) else self.p.retok_hit_synthetic

    def hop(self, prompt_tokens: int, active_seqs: int = 0) -> float:
        """One HTTP hop to a node running ``active_seqs`` sequences: proxy, API server, tokenising."""
        return self._api_s + 1e-6 * (self._api_tok * prompt_tokens + self._api_seq * active_seqs)

    def pd_handoff(self, prompt_tokens: int, active_seqs: int = 0) -> float:
        """After P's prefill: P's response returns, the proxy re-sends to D, D's API tokenises, the
        connector receives per layer (scaled by the model's KV bytes/token)."""
        return (self._handoff_s + self.hop(prompt_tokens, active_seqs)
                + 1e-6 * self._pd_us_per_token * prompt_tokens)
