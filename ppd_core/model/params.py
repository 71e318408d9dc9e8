"""The latency model's parameters: physically meaningful knobs with literature defaults, overridden by the
calibrated ``data/perf_params.json`` (written by ``python -m ppd_core calibrate``).

``default_params()`` reads that file on every call (it is small) and parses each distinct content once: the
only cache is keyed by the file's bytes, so an edited or re-calibrated file takes effect at once."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path

from ..config.paths import PARAMS_FILE


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
    api_us_per_token: float = 7.0  # per prompt token per hop: tokenising and hashing the whole prompt
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
    kappa_full_ms: float = 4.0    # interference per decode request of a full prefill in the iteration
    kappa_append_ms: float = 0.05  # interference per decode request per 1,024 appended tokens
    kv_recv_blocks_decode: float = 1.0  # 1: D's batch pauses while KV flows into it (P2pNccl); 0: overlapped
    activation_gb: float = 2.0    # per-GPU memory kept free of KV for activations and CUDA graphs

    @staticmethod
    def field_names() -> tuple[str, ...]:
        return tuple(f.name for f in fields(PerfParams))


def default_params(path: Path | None = None) -> PerfParams:
    """Calibrated parameters if ``data/perf_params.json`` (or ``path``) exists, else the literature defaults."""
    path = PARAMS_FILE if path is None else Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return PerfParams()
    return _parse_params(raw)


@lru_cache(maxsize=8)
def _parse_params(raw: bytes) -> PerfParams:
    """Parameters from the file's bytes (an immutable result per distinct content)."""
    doc = json.loads(raw.decode("utf-8"))
    values = doc.get("params", doc)
    known = {k: float(v) for k, v in values.items() if k in PerfParams.field_names()}
    return PerfParams(**known)


def params_dict(p: PerfParams) -> dict[str, float]:
    return asdict(p)
