"""Can the scenario's hardware hold the model at all? Said before running (issue #8: 70B on one H100).

The arithmetic is the performance model's own (``model.PerfModel.kv_capacity_tokens``: GPU memory x
gpu_mem_util minus activations, times TP, minus the weights, must leave room for KV), so the check and the
run can never disagree: ``ppd_core.run`` raises ``ScenarioError("model", ...)`` exactly when this returns
a message. No Streamlit here; the dashboard shows the message next to its Model/TP controls.
"""
from __future__ import annotations

from dataclasses import dataclass

from .base import build, for_scenario
from .params import PerfParams

TP_CHOICES = (1, 2, 4, 8)


@dataclass(frozen=True)
class Infeasible:
    """Why the hardware cannot serve the model, and the smallest TP that would (None: none up to 8)."""
    model: str
    gpu: str
    tp: int
    weights_gb: float
    memory_gb: float
    gpu_mem_util: float
    fitting_tp: int | None
    role: str = ""          # a heterogeneous fleet: the role whose own GPU x TP is too small

    @property
    def message(self) -> str:
        where = f" on the {self.role} nodes" if self.role else ""
        head = (f"{self.model} weights ({self.weights_gb:.0f} GB) do not fit{where} in tp={self.tp} x {self.gpu} "
                f"({self.memory_gb:g} GB at gpu_mem_util={self.gpu_mem_util:g})")
        if self.fitting_tp is not None:
            return f"{head}; the smallest TP that fits is tp={self.fitting_tp}."
        return f"{head} even at tp={TP_CHOICES[-1]}; pick a GPU with more memory or a smaller model."


def _fits(sc, tp: int, params: PerfParams | None) -> bool:
    return build(sc.gpu, sc.model, tp, sc.gpu_mem_util, params).kv_capacity_tokens > 0


def check(sc, params: PerfParams | None = None) -> Infeasible | None:
    """None when ``sc``'s model fits its GPU x TP (with KV room left); else what does not and the fix. A
    heterogeneous fleet (``gpu_p`` / ``gpu_d`` / ``tp_p`` / ``tp_d``) is checked role by role."""
    if sc.heterogeneous:
        for role, (gpu, tp) in sc.role_hardware().items():
            if build(gpu, sc.model, tp, sc.gpu_mem_util, params).kv_capacity_tokens <= 0:
                pm = build(gpu, sc.model, tp, sc.gpu_mem_util, params)
                fitting = next((t for t in TP_CHOICES if t > tp and build(gpu, sc.model, t, sc.gpu_mem_util, params)
                                .kv_capacity_tokens > 0), None)
                return Infeasible(sc.model, gpu, tp, pm.model.weight_bytes / 1e9, pm.gpu.memory_gb,
                                  sc.gpu_mem_util, fitting, role)
        return None
    if _fits(sc, sc.tp_degree, params):
        return None
    pm = for_scenario(sc, params)
    fitting = next((tp for tp in TP_CHOICES if tp > sc.tp_degree and _fits(sc, tp, params)), None)
    return Infeasible(sc.model, sc.gpu, sc.tp_degree, pm.model.weight_bytes / 1e9, pm.gpu.memory_gb,
                      sc.gpu_mem_util, fitting)
