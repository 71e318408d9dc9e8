"""One import for the step-law functions (``scripts/fit_physics.py``, ``tests/test_physics.py``, notebooks):
catalog lookups with one-line errors, the pure laws, the micro-benchmark driver, the PD path and the
extrapolation labels. See ``docs/physics.md``."""
from __future__ import annotations

from ..config.catalog import GPU, Model, gpus, models
from .cascade import BLOCK_TOKENS, cascade_used
from .checks import PhysicsInputError, num
from .dense import PerfModel
from .extrapolation import (HELD_OUT_MODELS, MEASURED_GPU, MEASURED_MODEL, extrapolation_notes,
                            is_extrapolated)
from .interference import decode_attention_s
from .microbench import MeasParams, default_meas, microbench_tpot_ms
from .moe import expected_experts_touched, weight_bytes_read
from .params import HARDWARE_SCALED, HOST_SOFTWARE, PerfParams, default_params
from .pdpath import REF_KV_BYTES_PER_TOKEN, REF_LAYERS, kv_transfer_s, pd_path_costs
from .step import interference_s, linear_s, prefill_attention_s, step_s
from .tp import tp_allreduce_s

PhysParams = PerfParams   # one parameter set for the engine and the laws

__all__ = ["BLOCK_TOKENS", "GPU", "HARDWARE_SCALED", "HELD_OUT_MODELS", "HOST_SOFTWARE", "MEASURED_GPU",
           "MEASURED_MODEL", "MeasParams", "Model", "PerfParams", "PhysParams", "PhysicsInputError",
           "PhysicsStepModel", "REF_KV_BYTES_PER_TOKEN", "REF_LAYERS", "cascade_used", "decode_attention_s",
           "default_meas", "default_params", "expected_experts_touched", "extrapolation_notes", "gpu_spec",
           "interference_s", "is_extrapolated", "kv_transfer_s", "linear_s", "microbench_tpot_ms",
           "model_spec", "num", "pd_path_costs", "prefill_attention_s", "step_s", "tp_allreduce_s",
           "weight_bytes_read"]


def gpu_spec(name: str) -> GPU:
    if name not in gpus():
        raise PhysicsInputError(f"unknown GPU {name!r}; known: {', '.join(sorted(gpus()))}")
    return gpus()[name]


def model_spec(name: str) -> Model:
    if name not in models():
        raise PhysicsInputError(f"unknown model {name!r}; known: {', '.join(sorted(models()))}")
    return models()[name]


class PhysicsStepModel:
    """The pure law with the engine's latency-model call shape, for one (gpu, model, tp, params,
    shared_prefix); the reference ``PerfModel`` is checked against. ``is_full`` in chunks is ignored."""

    def __init__(self, gpu: str | GPU, model: str | Model, tp=1, params: PerfParams | None = None,
                 shared_prefix=0):
        self.gpu = gpu_spec(gpu) if isinstance(gpu, str) else gpu
        self.model = model_spec(model) if isinstance(model, str) else model
        self.tp = num("tp", tp, positive=True, integer=True)
        self.p = params or default_params()
        self.shared_prefix = num("shared_prefix", shared_prefix, integer=True) // BLOCK_TOKENS * BLOCK_TOKENS
        self.kv_bytes_per_token = self.model.kv_bytes_per_token

    def iteration(self, chunks, batch, ctx_sum, foreign_running=False) -> float:
        ch = [(c[0], c[1]) for c in chunks]
        P = self.shared_prefix if batch and ctx_sum >= self.shared_prefix * batch else 0
        return step_s(self.gpu, self.model, self.p, ch, batch, ctx_sum, P, foreign_running, self.tp)

    def decode_coeffs(self, batch, foreign_running=False) -> tuple[float, float]:
        """(a, b) with decode-only step time = a + b x (sum of contexts), affine in ctx_sum."""
        B = num("batch", batch, positive=True, integer=True)
        b = self.kv_bytes_per_token / self.tp / (self.gpu.hbm_bps * self.p.eta_kv)
        ref = B * (self.shared_prefix + 1)
        return self.iteration((), B, ref, foreign_running) - b * ref, b

    def prefill_time(self, new, cached) -> float:
        return step_s(self.gpu, self.model, self.p, [(new, cached)], 0, 0, 0, False, self.tp)
