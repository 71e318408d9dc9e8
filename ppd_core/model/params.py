"""The latency model's parameters: physically meaningful knobs with literature defaults, overridden by the
interference-law fit ``data/physics_params.json`` (``scripts/fit_physics.py``) and then by the calibrated
``data/perf_params.json`` (``python -m ppd_core calibrate``), which wins where both name a parameter.

``default_params()`` reads those files on every call (they are small) and parses each distinct content once:
the only cache is keyed by the files' bytes, so an edited or re-calibrated file takes effect at once.

Parameters split into *hardware-scaled* ones (efficiencies: ratios applied to each GPU's datasheet FLOP/s,
HBM and link bandwidth) and *host/software* ones (fixed times, carried over unchanged to other GPUs and
models: a result that relies on them outside H100-SXM + Llama-3.1-8B is "extrapolated")."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path

from ..config.paths import DATA_DIR, PARAMS_FILE
from .checks import num

PHYSICS_FILE = DATA_DIR / "physics_params.json"   # the interference-law fit (scripts/fit_physics.py)


@dataclass(frozen=True)
class PerfParams:
    """Physically meaningful knobs of the performance model. Defaults come from the literature
    (perf-model.md 4.7, 5); ``data/perf_params.json`` (written by ``calibrate``) overrides them."""
    eta_weights: float = 0.80     # HBM efficiency of weight reads (decode MBU)
    eta_compute: float = 0.70     # GEMM efficiency at large token counts (MFU)
    eta_attn: float = 0.45        # prefill attention kernel efficiency
    eta_kv: float = 0.70          # HBM efficiency of decode KV reads
    t_iter_ms: float = 1.8        # per-iteration fixed cost: scheduling, sampling, kernel launches
    t_seq_us: float = 60.0        # per sequence per iteration: sampling, detokenising, streaming the token
    api_ms: float = 20.0          # per HTTP hop: proxy + API server + first streamed chunk
    api_us_per_token: float = 7.0  # per prompt token per hop: tokenising and hashing the whole prompt (the
                                   # synthetic benchmarks' prompts: random letter strings mixed into the words)
    api_us_per_token_natural: float = 7.0  # the same for natural chat text (ShareGPT, WildChat, imported traces):
                                   # its words are in the BPE vocabulary, so a prompt token costs a lookup, not
                                   # a merge loop, and a nominal token is one real token (model/tokenize.py)
    api_us_per_seq: float = 0.0   # per hop, per sequence already running on the target node: its API
                                  # server's event loop is busy streaming their tokens
    pd_handoff_ms: float = 55.0   # PD path extra: P's 1-token completion returns, second hop to D
    pd_us_per_token: float = 3.5  # PD path extra per prompt token: KV connector per-layer receive on D
    p_send_ms: float = 10.0       # P's engine blocked per PD request after its prefill (wait_for_save of the KV send)
    retok_hit: float = 1.0        # share of the previous answer still hitting the prefix cache next turn: the
                                  # history is sent as text and re-tokenised, so the cached answer's tokens
                                  # match only up to the first tokenisation difference (natural-language chat)
    retok_hit_synthetic: float = 1.0  # the same for the synthetic benchmark's prompts (random letter strings
                                      # mixed into the text re-tokenise differently far more often)
    eta_share: float = 0.4        # HBM efficiency of re-reading physically shared prefix blocks per request
                                  # (cascade attention off in a batch whose decodes share a prefix)
    t_mix_ms: float = 2.32        # extra fixed cost of an iteration that holds a prefill chunk (piecewise CUDA
                                  # graph instead of the full decode graph, prefill metadata). Identified by no
                                  # data here (calibration.stages.NOT_FITTED says why and why this value)
    t_moe_layer_us: float = 20.0  # extra kernels per MoE layer (router GEMM, top-k, align, 2 grouped GEMMs, act,
                                  # sum): ~6 kernels x ~3 us under CUDA graphs - an assumption, not measured
    eta_allreduce: float = 1.0    # multiplies the catalog all-reduce busbw (already an achieved nccl-tests figure)
    kv_recv_blocks_decode: float = 1.0  # 1: D's batch pauses while KV flows into it (P2pNccl); 0: overlapped
    activation_gb: float = 2.0    # per-GPU memory kept free of KV for activations and CUDA graphs

    def __post_init__(self) -> None:
        for f in fields(self):
            eta = f.name.startswith("eta_")
            num(f"PerfParams.{f.name}", getattr(self, f.name), positive=eta, hi=1.0 if eta else None)

    @staticmethod
    def field_names() -> tuple[str, ...]:
        return tuple(f.name for f in fields(PerfParams))


HARDWARE_SCALED = ("eta_weights", "eta_compute", "eta_attn", "eta_kv", "eta_share", "eta_allreduce")
HOST_SOFTWARE = ("t_iter_ms", "t_seq_us", "t_mix_ms", "t_moe_layer_us", "api_ms", "api_us_per_token",
                 "api_us_per_token_natural",
                 "api_us_per_seq", "pd_handoff_ms", "pd_us_per_token", "p_send_ms", "retok_hit",
                 "retok_hit_synthetic", "activation_gb", "kv_recv_blocks_decode")


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def default_params(path: Path | None = None, physics: Path | None = None) -> PerfParams:
    """Literature defaults < ``data/physics_params.json`` (or ``physics``) < ``data/perf_params.json`` (or
    ``path``); a missing file is skipped."""
    return _parse_params(_read(PARAMS_FILE if path is None else Path(path)),
                         _read(PHYSICS_FILE if physics is None else Path(physics)))


def physics_values(physics: Path | None = None) -> dict[str, float]:
    """The parameters ``data/physics_params.json`` (or ``physics``) sets; {} when the file is missing."""
    return _values(_read(PHYSICS_FILE if physics is None else Path(physics)))


def _values(raw: bytes) -> dict[str, float]:
    if not raw:
        return {}
    doc = json.loads(raw.decode("utf-8"))
    values = doc.get("params", doc)
    return {k: float(v) for k, v in values.items() if k in PerfParams.field_names()}


@lru_cache(maxsize=8)
def _parse_params(raw: bytes, raw_physics: bytes = b"") -> PerfParams:
    """Parameters from the files' bytes (an immutable result per distinct content)."""
    return PerfParams(**{**_values(raw_physics), **_values(raw)})


def params_dict(p: PerfParams) -> dict[str, float]:
    return asdict(p)
