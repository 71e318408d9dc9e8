"""The latency-model axis: what the simulator asks of a model, and the registry of implementations.

A latency model prices one engine iteration of a node and the fixed per-request costs outside the GPU. Today
there is one implementation, the dense roofline ``PerfModel`` (``"dense"``); a MoE model would register
beside it and be picked by ``build(..., kind=...)``.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Callable, Mapping, Protocol

from ..config.catalog import GPU, Model, gpus, models
from .dense import PerfModel
from .params import PerfParams, default_params


class LatencyModel(Protocol):
    """Iteration and overhead times (seconds) of one (gpu, model, tp) node; immutable after construction."""

    gpu: GPU
    model: Model
    tp: int
    p: PerfParams                 # the parameters it was built with
    kv_bytes_per_token: int
    kv_capacity_tokens: int       # KV tokens that fit next to the weights (<= 0: the model does not fit)
    p_send_s: float               # P engine time per PD request after its prefill

    def decode_coeffs(self, batch: int) -> tuple[float, float]: ...
    def iteration(self, chunks: list[tuple[int, int, bool]], batch: int, ctx_sum: int) -> float: ...
    def prefill_time(self, new: int, cached: int) -> float: ...
    def hop(self, prompt_tokens: int, active_seqs: int = 0) -> float: ...
    def pd_handoff(self, prompt_tokens: int, active_seqs: int = 0) -> float: ...
    def retok(self, workload: str) -> float: ...


LatencyModelFactory = Callable[[GPU, Model, int, PerfParams, float], LatencyModel]

LATENCY_MODELS: Mapping[str, LatencyModelFactory] = MappingProxyType({"dense": PerfModel})


def build(gpu: str, model: str, tp: int, gpu_mem_util: float, params: PerfParams | None = None,
          kind: str = "dense") -> LatencyModel:
    return LATENCY_MODELS[kind](gpus()[gpu], models()[model], tp, params or default_params(), gpu_mem_util)


def for_scenario(sc, params: PerfParams | None = None) -> LatencyModel:
    return build(sc.gpu, sc.model, sc.tp_degree, sc.gpu_mem_util, params)
