"""The step law as pure functions (seconds): one engine iteration of prefill chunks + decodes on one GPU group.

    step = t_iter + sqrt(mem^2 + comp^2) + S t_seq + attention_prefill + decode_attention
           + [a prefill chunk of > 1 token beside decodes] t_mix + [tp > 1] TP all-reduce

* ``mem`` = weight bytes read / (HBM eta_weights) (MoE: shared + experts touched, ``moe.py``), ``comp`` =
  (T linear FLOPs + S lm_head FLOPs) / (FLOP/s eta_compute) on active parameters; MoE adds
  ``layers x t_moe_layer_us``.
* ``attention_prefill`` = sum_j new_j (cached_j + (new_j + 1)/2) x 4 L H d / (FLOP/s eta_attn).
* ``decode_attention`` (the interference law, ``interference.py``): every decode's own KV read, plus the
  shared-prefix read that depends on whether vLLM's cascade attention is used.

No gate on cached == 0, no cap on prefill tokens: the law is smooth in prefill tokens, cached context,
number of prefills and batch size. ``PerfModel`` (``dense.py``) is the same law with the constants folded
in for speed; ``tests/test_physics.py`` checks they agree.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..config.catalog import GPU, Model
from .checks import chunk_list, num
from .interference import decode_attention_s
from .moe import weight_bytes_read
from .params import PerfParams
from .tp import tp_allreduce_s


def linear_s(gpu: GPU, model: Model, p: PerfParams, tokens, seqs, tp=1) -> float:
    """Transformer GEMMs + lm_head as the roofline 2-norm sqrt(mem^2 + comp^2); FLOPs from active params."""
    t = num("tokens", tokens)
    s = num("seqs", seqs)
    n = num("tp", tp, positive=True, integer=True)
    mem = weight_bytes_read(model, t, n) / (gpu.hbm_bps * p.eta_weights)
    comp = (t * model.linear_gflop_per_token + s * model.lm_head_gflop) * 1e9 / (gpu.flops * n * p.eta_compute)
    moe = model.layers * p.t_moe_layer_us * 1e-6 if model.is_moe and t > 0 else 0.0
    return math.sqrt(mem * mem + comp * comp) + moe


def prefill_attention_s(gpu: GPU, model: Model, p: PerfParams, chunks, tp=1) -> float:
    """Causal prefill attention of chunks (new, cached): 4 L H d FLOPs per (query, key) pair."""
    n = num("tp", tp, positive=True, integer=True)
    pairs = sum(a * (c + 0.5 * (a + 1)) for a, c in chunk_list(chunks))
    return pairs * model.attn_flop_per_pair / (gpu.flops * n * p.eta_attn)


def allreduce_s(gpu: GPU, model: Model, p: PerfParams, tokens, tp) -> float:
    """The step's TP all-reduce with the GPU's catalog busbw x eta_allreduce and alpha (0 at tp = 1)."""
    if num("tp", tp, positive=True, integer=True) == 1:
        return 0.0
    return tp_allreduce_s(tokens, model.hidden, model.layers, tp, gpu.allreduce_busbw_gbps * p.eta_allreduce,
                          gpu.allreduce_alpha_us)


def step_s(gpu: GPU, model: Model, p: PerfParams, chunks: Sequence = (), batch=0, ctx_sum=0, shared_prefix=0,
           foreign_running=False, tp=1) -> float:
    """Time of one engine iteration: prefill ``chunks`` (new tokens, cached tokens) + ``batch`` decodes with
    contexts summing to ``ctx_sum``. ``shared_prefix``/``foreign_running``: see ``decode_attention_s``."""
    ch = chunk_list(chunks)
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
    if B and any(a > 1 for a, _ in ch):     # mixed: a real prefill chunk beside decodes
        t += p.t_mix_ms * 1e-3
    return t + allreduce_s(gpu, model, p, tokens, n)


def interference_s(gpu: GPU, model: Model, p: PerfParams, chunks: Sequence, batch, ctx_sum, shared_prefix=0,
                   foreign_running=False, tp=1) -> float:
    """Extra time a mixed iteration costs the co-batched decodes: step(mixed) - step(the same decodes alone)
    - the prefill chunks' own roofline work (their FLOPs at eta_compute, their attention, their t_seq)
    = the shared-prefix read lost (only if the decodes share a prefix and a foreign request runs) + t_mix +
    the 2-norm coupling (<= 0: the weights are read once for both). Clipped at 0."""
    ch = chunk_list(chunks)
    n = num("tp", tp, positive=True, integer=True)
    mixed = step_s(gpu, model, p, ch, batch, ctx_sum, shared_prefix, foreign_running, n)
    dec = step_s(gpu, model, p, (), batch, ctx_sum, shared_prefix, False, n)
    new = sum(a for a, _ in ch)
    work = ((new * model.linear_gflop_per_token + len(ch) * model.lm_head_gflop) * 1e9
            / (gpu.flops * n * p.eta_compute) + prefill_attention_s(gpu, model, p, ch, n)
            + len(ch) * p.t_seq_us * 1e-6)
    return max(0.0, mixed - dec - work)
