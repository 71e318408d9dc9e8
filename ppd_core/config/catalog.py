"""Read-only catalogs (GPUs, KV links, models) loaded from the JSON files in ``data/``.

Catalogs are plain data with a source for every entry; they are loaded once per process through
``functools.cache`` (immutable results, so no mutable module state leaks between runs).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Mapping

from .paths import DATA_DIR


@dataclass(frozen=True)
class GPU:
    name: str
    bf16_tflops: float   # dense BF16 tensor FLOP/s, in 1e12
    hbm_tbps: float      # HBM bandwidth, in 1e12 B/s
    memory_gb: float     # HBM capacity, in 1e9 B
    source: str
    price_usd_h: float = 0.0   # public hourly price of one GPU (USD); 0 = unknown
    price_source: str = ""     # who charges it, where it was read (data/anchors/gpu_prices.csv)
    price_date: str = ""       # when it was read
    num_sms: int = 132               # SMs / CUs (vLLM's cascade-attention heuristic)
    allreduce_busbw_gbps: float = 0.0  # NCCL all-reduce bus bandwidth within a node, GB/s (TP term)
    allreduce_alpha_us: float = 0.0    # latency of one all-reduce, us
    interconnect_source: str = ""

    @property
    def flops(self) -> float:
        return self.bf16_tflops * 1e12

    @property
    def hbm_bps(self) -> float:
        return self.hbm_tbps * 1e12


@dataclass(frozen=True)
class Link:
    name: str
    bandwidth_gbps: float  # effective GB/s per direction (1 GB = 1e9 B)
    latency_us: float
    source: str


@dataclass(frozen=True)
class Model:
    name: str
    params_b: float
    active_params_b: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    linear_gflop_per_token: float
    lm_head_gflop: float
    source: str
    bytes_per_param: int = 2   # BF16 weights
    kv_bytes_per_elem: int = 2  # BF16 KV cache
    # MoE (experts == 0: dense)
    experts: int = 0
    experts_per_token: int = 0
    moe_intermediate: int = 0
    shared_params_b: float = 0.0   # params read every step whatever the routing (attention, router, norms, lm_head)
    moe_source: str = ""

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def expert_params(self) -> float:
        """Parameters of one routed expert in one layer (gate, up, down projections)."""
        return 3.0 * self.hidden * self.moe_intermediate

    @property
    def weight_bytes(self) -> float:
        """All weights (what must fit in memory; MoE: every expert)."""
        return self.params_b * 1e9 * self.bytes_per_param

    @property
    def kv_bytes_per_token(self) -> int:
        """2 (K and V) x layers x KV heads x head_dim x bytes per element."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.kv_bytes_per_elem

    @property
    def attn_flop_per_pair(self) -> float:
        """FLOPs per (query token, attended key) pair: QK^T and AV, 2 FLOPs per MAC, all layers."""
        return 4.0 * self.layers * self.heads * self.head_dim


def _load(name: str) -> dict:
    with open(DATA_DIR / name, encoding="utf-8") as fh:
        raw = json.load(fh)
    return {k: v for k, v in raw.items() if not k.startswith("_")}


def _nonneg_int(entry: dict, key: str, where: str) -> int:
    value = entry.get(key, 0)
    if (not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0
            or value != int(value)):
        raise ValueError(f"{where}: field {key!r} must be a non-negative integer, got {value!r}")
    return int(value)


def _positive(entry: dict, key: str, where: str) -> float:
    value = entry.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{where}: field {key!r} must be a positive finite number, got {value!r}")
    return float(value)


@cache
def gpus() -> Mapping[str, GPU]:
    out = {}
    for name, e in _load("gpus.json").items():
        where = f"data/gpus.json[{name}]"
        price = _positive(e, "price_usd_h", where) if "price_usd_h" in e else 0.0
        out[name] = GPU(name, _positive(e, "bf16_tflops", where), _positive(e, "hbm_tbps", where),
                        _positive(e, "memory_gb", where), str(e.get("source", "")), price,
                        str(e.get("price_source", "")), str(e.get("price_date", "")),
                        num_sms=int(_positive(e, "num_sms", where)),
                        allreduce_busbw_gbps=_positive(e, "allreduce_busbw_gbps", where),
                        allreduce_alpha_us=_positive(e, "allreduce_alpha_us", where),
                        interconnect_source=str(e.get("interconnect_source", "")))
    return MappingProxyType(out)


@cache
def links() -> Mapping[str, Link]:
    out = {}
    for name, e in _load("links.json").items():
        where = f"data/links.json[{name}]"
        out[name] = Link(name, _positive(e, "bandwidth_gbps", where), float(e.get("latency_us", 0.0)),
                         str(e.get("source", "")))
    return MappingProxyType(out)


@cache
def models() -> Mapping[str, Model]:
    out = {}
    for name, e in _load("models.json").items():
        where = f"data/models.json[{name}]"
        ints = {k: int(_positive(e, k, where)) for k in ("layers", "hidden", "heads", "kv_heads", "head_dim")}
        moe = {k: _nonneg_int(e, k, where) for k in ("experts", "experts_per_token", "moe_intermediate")}
        if moe["experts"]:
            if not 0 < moe["experts_per_token"] <= moe["experts"] or moe["moe_intermediate"] <= 0:
                raise ValueError(f"{where}: a MoE entry needs 1 <= experts_per_token <= experts and "
                                 "moe_intermediate > 0")
            moe["shared_params_b"] = _positive(e, "shared_params_b", where)
        out[name] = Model(name=name, params_b=_positive(e, "params_b", where),
                          active_params_b=_positive(e, "active_params_b", where),
                          linear_gflop_per_token=_positive(e, "linear_gflop_per_token", where),
                          lm_head_gflop=_positive(e, "lm_head_gflop", where),
                          source=str(e.get("source", "")), moe_source=str(e.get("moe_source", "")),
                          **ints, **moe)
    return MappingProxyType(out)
