"""Mixture-of-experts weight reads: a step reads the shared weights plus only the experts its tokens touch.

    weights read per step = shared bytes + layers x expert bytes x E (1 - (1 - k/E)^T)      (T tokens)

E (1 - (1 - k/E)^T) is the expected number of distinct experts T tokens route to in one layer under uniform,
independent top-k routing (real routers are skewed and touch fewer). FLOPs use the active parameters
(``linear_gflop_per_token`` of the catalog). Catalog fields (experts, experts_per_token, moe_intermediate,
shared_params_b) come from the model's HF config.json, see ``data/models.json``.
"""
from __future__ import annotations

import math

from ..config.catalog import GPU, Model
from .checks import PhysicsInputError, num
from .dense import PerfModel
from .params import PerfParams


def expected_experts_touched(tokens, experts, experts_per_token) -> float:
    """E (1 - (1 - k/E)^T): expected distinct experts that T tokens route to in one MoE layer."""
    t = num("tokens", tokens)
    e = num("experts", experts, positive=True, integer=True)
    k = num("experts_per_token", experts_per_token, positive=True, integer=True, hi=e)
    if t == 0:
        return 0.0
    return e * (1.0 - (1.0 - k / e) ** t)


def weight_bytes_read(model: Model, tokens, tp=1) -> float:
    """Weight bytes one GPU reads in a step with ``tokens`` tokens (dense: all weights; MoE: shared + the
    experts touched, at least one token's worth), split over ``tp`` GPUs."""
    t = num("tokens", tokens)
    n = num("tp", tp, positive=True, integer=True)
    bpp = model.bytes_per_param
    if not model.is_moe:
        return model.params_b * 1e9 * bpp / n
    touched = expected_experts_touched(max(t, 1.0), model.experts, model.experts_per_token)
    return (model.shared_params_b * 1e9 + model.expert_params * model.layers * touched) * bpp / n


class MoEPerfModel(PerfModel):
    """The dense latency model with MoE weight reads (registered as ``"moe"``): the memory side of ``linear``
    reads shared + touched-expert bytes for the step's token count, FLOPs stay on active parameters, and
    each step pays ``layers x t_moe_layer_us`` of extra MoE kernels."""

    __slots__ = ("_shared_mem_s", "_expert_mem_s", "_moe_fixed_s", "_stay")

    def __init__(self, gpu: GPU, model: Model, tp: int, params: PerfParams, gpu_mem_util: float = 0.85,
                 shared_prefix: int = 0, natural_text: bool = False):
        if not model.is_moe:
            raise PhysicsInputError(f"model {model.name} has no experts: use the dense latency model")
        super().__init__(gpu, model, tp, params, gpu_mem_util, shared_prefix, natural_text)
        hbm = gpu.hbm_bps * self.tp * params.eta_weights
        self._shared_mem_s = model.shared_params_b * 1e9 * model.bytes_per_param / hbm
        self._expert_mem_s = model.expert_params * model.layers * model.bytes_per_param / hbm
        self._moe_fixed_s = model.layers * params.t_moe_layer_us * 1e-6
        self._stay = 1.0 - model.experts_per_token / model.experts

    def linear(self, tokens: int, seqs: int) -> float:
        touched = self.model.experts * (1.0 - self._stay ** max(tokens, 1))
        mem = self._shared_mem_s + self._expert_mem_s * touched
        comp = tokens * self._flop_s_per_token + seqs * self._lm_head_s
        return math.sqrt(mem * mem + comp * comp) + (self._moe_fixed_s if tokens > 0 else 0.0)
