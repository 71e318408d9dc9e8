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

    @property
    def weight_bytes(self) -> float:
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
                        str(e.get("price_source", "")), str(e.get("price_date", "")))
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
        out[name] = Model(name=name, params_b=_positive(e, "params_b", where),
                          active_params_b=_positive(e, "active_params_b", where),
                          linear_gflop_per_token=_positive(e, "linear_gflop_per_token", where),
                          lm_head_gflop=_positive(e, "lm_head_gflop", where),
                          source=str(e.get("source", "")), **ints)
    return MappingProxyType(out)
