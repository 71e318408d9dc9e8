"""Which calibrated constants a result carries over outside the measured pair (H100-SXM + Llama-3.1-8B).

A non-empty list means the result is "extrapolated"; ``metrics.report.summary`` puts it in
``summary["extrapolated"]`` and the dashboard shows it.
"""
from __future__ import annotations

from ..config.catalog import gpus, models
from .checks import PhysicsInputError
from .params import HARDWARE_SCALED, HOST_SOFTWARE
from .pdpath import kv_ratio, layer_ratio

MEASURED_GPU = "H100-SXM"
MEASURED_MODEL = "Llama-3.1-8B"
HELD_OUT_MODELS = ("Qwen2.5-14B",)   # measured, but only in the held-out set (model_scaling.csv)


def extrapolation_notes(gpu: str, model: str, tp: int = 1) -> list[str]:
    """One line per group of constants carried over for this (gpu, model, tp); [] for the measured pair."""
    if not isinstance(gpu, str) or not isinstance(model, str) or not gpu or not model:
        raise PhysicsInputError(f"gpu and model must be non-empty names, got {gpu!r}, {model!r}")
    if gpu not in gpus():
        raise PhysicsInputError(f"unknown GPU {gpu!r}; known: {', '.join(sorted(gpus()))}")
    if model not in models():
        raise PhysicsInputError(f"unknown model {model!r}; known: {', '.join(sorted(models()))}")
    g, m = gpus()[gpu], models()[model]
    host = ", ".join(k for k in HOST_SOFTWARE if k not in ("retok_hit", "retok_hit_synthetic", "activation_gb",
                                                           "t_moe_layer_us", "kv_recv_blocks_decode"))
    notes: list[str] = []
    if g.name != MEASURED_GPU:
        effs = "/".join(k for k in HARDWARE_SCALED if k != "eta_allreduce")
        notes.append(f"GPU {g.name} is not measured: efficiencies {effs} fitted on {MEASURED_GPU} are applied to "
                     f"its datasheet FLOP/s and bandwidth.")
        notes.append(f"host/software constants carried over unchanged from {MEASURED_GPU}: {host} (a different "
                     f"host CPU/driver/NCCL would change them).")
    if tp > 1:
        notes.append(f"TP {tp} all-reduce uses an assumed busbw {g.allreduce_busbw_gbps:g} GB/s and alpha "
                     f"{g.allreduce_alpha_us:g} us for {g.name} (not measured on this stack).")
    if m.name != MEASURED_MODEL:
        held = " (Qwen2.5-14B has held-out measurements: compare, do not fit)" if m.name in HELD_OUT_MODELS else ""
        notes.append(f"model {m.name} is not in the calibration set{held}: t_iter_ms and t_seq_us fitted on "
                     f"{MEASURED_MODEL} are carried over; PD-path costs are rescaled by KV bytes/token "
                     f"({kv_ratio(m):.2f}x) and layers ({layer_ratio(m):.2f}x) from {MEASURED_MODEL}'s fit.")
        if m.is_moe:
            notes.append(f"MoE {m.name}: expert reads assume uniform independent routing (E(1-(1-k/E)^T)) and "
                         f"t_moe_layer_us is an assumption, not a measurement.")
    return notes


def is_extrapolated(gpu: str, model: str, tp: int = 1) -> bool:
    return bool(extrapolation_notes(gpu, model, tp))
