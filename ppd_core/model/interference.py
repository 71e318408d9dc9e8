"""Interference as physics: the decode-attention read of a batch, and the shared-prefix read it loses.

    decode_attention = kv (C - B P) / (BW eta_kv)                  each decode's own blocks
                     + kv P / (BW eta_kv)         cascade used      the shared prefix, read once
                     + kv B P / (BW eta_share)    otherwise         every decode reads its own copy

``kv`` = KV bytes/token (all layers, / tp), ``P`` = tokens at the start of every decode's context whose KV
blocks are physically shared (one cached prefix; the Scenario key ``shared_prefix_tokens``), ``C`` = sum of
contexts, ``B`` = decodes. For an ordinary batch P = 0 and a prefill in the iteration costs only its own
roofline work plus ``t_mix``: no cliff at the first cached block, no cap on prefill tokens, no per-request
constant. With a shared prefix, a running request that does not carry it (a full prefill of another prompt)
makes vLLM's common prefix 0, cascade goes off, and the batch pays ``B P kv / (BW eta_share)``: the paper's
Fig.2 interference (fit: ``scripts/fit_physics.py``, ``data/interference_fit.md``, ``docs/physics.md``).
"""
from __future__ import annotations

from ..config.catalog import GPU, Model
from .cascade import cascade_used
from .checks import PhysicsInputError, num
from .params import PerfParams


def decode_attention_s(gpu: GPU, model: Model, p: PerfParams, batch, ctx_sum, shared_prefix=0,
                       foreign_running=False, mixed=False, other_reqs=0, tp=1) -> float:
    """Decode-attention KV read of ``batch`` decodes whose contexts sum to ``ctx_sum`` (seconds).

    ``shared_prefix``: tokens at the start of every decode's context whose KV blocks are physically shared.
    ``foreign_running``: some running request does *not* carry that prefix (cascade off).
    ``mixed``: a prefill chunk is in the iteration; ``other_reqs``: running non-decode requests (prefills)."""
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
