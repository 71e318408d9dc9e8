"""The latency-model axis: what the simulator asks of a model, and the registry of implementations.

A latency model prices one engine iteration of a node and the fixed per-request costs outside the GPU.
Implementations: the dense roofline ``PerfModel`` (``"dense"``) and ``MoEPerfModel`` (``"moe"``: weights read
per step = shared + experts touched); ``build`` picks ``"moe"`` for a catalog model with experts unless told.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Callable, Mapping, Protocol

from ..config.catalog import GPU, Model, gpus, models
from .checks import PhysicsInputError
from .dense import PerfModel
from .moe import MoEPerfModel
from .params import PerfParams, default_params
from .tokenize import is_natural_text


class LatencyModel(Protocol):
    """Iteration and overhead times (seconds) of one (gpu, model, tp) node; immutable after construction."""

    gpu: GPU
    model: Model
    tp: int
    p: PerfParams                 # the parameters it was built with
    kv_bytes_per_token: int
    kv_capacity_tokens: int       # KV tokens that fit next to the weights (<= 0: the model does not fit)
    p_send_s: float               # P engine time per PD request after its prefill
    shared_prefix: int            # tokens every decode's context shares (whole KV blocks; 0: none)

    def decode_coeffs(self, batch: int) -> tuple[float, float]: ...
    def iteration(self, chunks: list[tuple[int, int, bool]], batch: int, ctx_sum: int,
                  foreign: bool | None = None) -> float: ...
    def prefill_time(self, new: int, cached: int) -> float: ...
    def hop(self, prompt_tokens: int, active_seqs: int = 0) -> float: ...
    def pd_handoff(self, prompt_tokens: int, active_seqs: int = 0) -> float: ...
    def retok(self, workload: str) -> float: ...


LatencyModelFactory = Callable[..., LatencyModel]   # (gpu, model, tp, params, gpu_mem_util, shared_prefix,
                                                    #  natural_text)

LATENCY_MODELS: Mapping[str, LatencyModelFactory] = MappingProxyType({"dense": PerfModel, "moe": MoEPerfModel})


def kind_for(model: Model) -> str:
    """The latency model a catalog model uses by default."""
    return "moe" if model.is_moe else "dense"


def build(gpu: str, model: str, tp: int, gpu_mem_util: float, params: PerfParams | None = None,
          kind: str | None = None, shared_prefix: int = 0, natural_text: bool = False) -> LatencyModel:
    m = models()[model]
    kind = kind_for(m) if kind is None else kind
    if kind not in LATENCY_MODELS:
        raise PhysicsInputError(f"latency model must be one of {', '.join(LATENCY_MODELS)}, got {kind!r}")
    return LATENCY_MODELS[kind](gpus()[gpu], m, tp, params or default_params(), gpu_mem_util, shared_prefix,
                                natural_text)


def for_scenario(sc, params: PerfParams | None = None) -> LatencyModel:
    return build(sc.gpu, sc.model, sc.tp_degree, sc.gpu_mem_util, params,
                 shared_prefix=sc.shared_prefix_tokens, natural_text=is_natural_text(sc.workload))


def for_role(sc, role: str, params: PerfParams | None = None) -> LatencyModel:
    """The latency model of a node of ``role`` in ``sc``: its own GPU x TP (``Scenario.gpu_for`` / ``tp_for``)."""
    return build(sc.gpu_for(role), sc.model, sc.tp_for(role), sc.gpu_mem_util, params,
                 shared_prefix=sc.shared_prefix_tokens, natural_text=is_natural_text(sc.workload))


def role_models(sc, params: PerfParams | None = None, base: LatencyModel | None = None) -> dict[str, LatencyModel]:
    """{role: latency model} for every role of the layout; roles on the same GPU x TP share one model (and
    the fleet's own hardware shares ``base`` when given)."""
    out: dict[str, LatencyModel] = {}
    by_hw: dict[tuple[str, int], LatencyModel] = {}
    if base is not None:
        by_hw[(sc.gpu, sc.tp_degree)] = base
    for role, hw in sc.role_hardware().items():
        if hw not in by_hw:
            by_hw[hw] = for_role(sc, role, params)
        out[role] = by_hw[hw]
    return out
