"""The paper's interference micro-benchmark (Fig.2 / Fig.7) priced by the step law.

Two drivers:

* ``microbench_tpot_ms``: the measured benchmark as the client saw it (fit target of ``scripts/fit_physics.py``
  on every ``interference_core*.csv`` / ``interference_sensitivity*.csv`` row), with the measurement-side
  constants ``MeasParams`` (client-visible streaming cost), which are not engine physics.
* ``interference_tpot_ms``: the engine's latency model (``for_scenario``) over the same shape, used by the
  Paper page's Fig.2 reproduction (``reproduce/interference.py``) with ``shared_prefix_tokens`` set.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, fields

from ..config.catalog import GPU, Model
from .base import for_scenario
from .checks import PhysicsInputError, num
from .interference import decode_attention_s
from .params import PHYSICS_FILE, PerfParams
from .step import step_s


@dataclass(frozen=True)
class MeasParams:
    """Measurement-side constants of the interference micro-benchmark (client-measured TPOT through one
    API server). Not engine physics: they exist only so the driver reproduces what the client saw."""
    client_ms: float = 0.0       # fixed client-visible extra per decode step (streaming chunk, event loop)
    stream_us: float = 0.0       # per running stream per step: API-server detokenise/stream cost that the
                                 # engine-side t_seq (fitted on <= 50 streams) does not carry at 100-250 streams

    def __post_init__(self) -> None:
        for f in fields(self):
            num(f"MeasParams.{f.name}", getattr(self, f.name))


def _physics_doc() -> dict:
    """``data/physics_params.json`` as written by scripts/fit_physics.py; {} if the file is missing."""
    try:
        return json.loads(PHYSICS_FILE.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def fit_mape() -> float | None:
    """The interference-law fit's MAPE over every micro-benchmark row (%), from ``data/physics_params.json``;
    None if the file or the figure is missing."""
    mape = _physics_doc().get("fit", {}).get("all", {}).get("mape")
    return float(mape) if isinstance(mape, (int, float)) else None


def default_meas() -> MeasParams:
    """The fitted ``measurement`` block of ``data/physics_params.json`` (zeros if the file is missing)."""
    names = {f.name for f in fields(MeasParams)}
    return MeasParams(**{k: float(v) for k, v in _physics_doc().get("measurement", {}).items() if k in names})


def microbench_tpot_ms(gpu: GPU, model: Model, p: PerfParams, m: MeasParams, batch, kind="none",
                       n_prefills=1, prefill_tokens=1024, shared_ctx=2048, decode_new=32, append_new=None,
                       output_tokens=64, budget=8192) -> float:
    """Mean decode TPOT (ms) of the interference micro-benchmark: ``batch`` decodes share one cached
    ``shared_ctx``-token prefix (+ ``decode_new`` own tokens) and produce ``output_tokens``; ``n_prefills``
    inserted requests are ``full`` (``prefill_tokens`` uncached, a different prompt) or ``append`` (the
    shared prefix + ``append_new`` new tokens, default ``prefill_tokens``); each also produces
    ``output_tokens``. TPOT = (E2E - TTFT)/(output - 1) over the decode window: output-1 decode steps, in
    which each inserted prefill lands as one mixed iteration (requests reach the engine spread out), and
    the inserted requests then decode alongside. A full prefill's request runs for the whole window, so
    the batch has no common prefix (cascade off) throughout."""
    B = num("batch", batch, positive=True, integer=True)
    if kind not in ("none", "full", "append"):
        raise PhysicsInputError(f"kind must be none|full|append, got {kind!r}")
    n = num("n_prefills", n_prefills, integer=True) if kind != "none" else 0
    L = num("prefill_tokens", prefill_tokens, positive=True, integer=True)
    S = num("shared_ctx", shared_ctx, integer=True)
    dn = num("decode_new", decode_new, integer=True)
    an = L if append_new is None else num("append_new", append_new, positive=True, integer=True)
    out = num("output_tokens", output_tokens, positive=True, integer=True, lo=2)
    bud = num("budget", budget, positive=True, integer=True)
    steps = out - 1
    foreign = kind == "full" and n > 0
    total = 0.0
    # inserted requests' own decode contexts (after their prefill)
    ins_ctx = (L if kind == "full" else S + an) if n else 0
    for k in range(steps):
        ctx_dec = B * (S + dn + 1 + k)
        # the inserted requests decode alongside from the first step; append ones carry the shared prefix
        b_all, ctx_all = B + n, ctx_dec + n * (ins_ctx + k)
        b_sharing = b_all if kind == "append" else B
        total += _mb_step(gpu, model, p, (), b_all, ctx_all, S, b_sharing, foreign)
    # the prefills' own iterations, one per inserted request
    for _ in range(n):
        cached = S if kind == "append" else 0
        new = an if kind == "append" else L
        pending = new
        done = 0
        while pending > 0:
            c = min(pending, max(bud - B, 1))
            # the chunk rides on one of the decode steps (it replaces a decode-only step of the window)
            mid_ctx = B * (S + dn + 32) + n * (ins_ctx + 32)
            b_sh = B + n if kind == "append" else B
            total += (_mb_step(gpu, model, p, [(c, cached + done)], B + n, mid_ctx, S, b_sh, foreign)
                      - _mb_step(gpu, model, p, (), B + n, mid_ctx, S, b_sh, foreign))
            pending -= c
            done += c
    ms = 1e3 * total / steps
    return ms + m.client_ms + m.stream_us * 1e-3 * (B + n)


def _mb_step(gpu, model, p, chunks, b_all, ctx_all, shared, b_sharing, foreign) -> float:
    """step_s where only ``b_sharing`` of the ``b_all`` decodes carry the shared prefix."""
    if b_all == b_sharing or not shared:
        return step_s(gpu, model, p, chunks, b_all, ctx_all, shared, foreign)
    # split: decodes carrying the prefix get the shared-prefix law; the rest is a plain KV read
    t = step_s(gpu, model, p, chunks, b_all, ctx_all, 0, False)
    kv = model.kv_bytes_per_token
    plain_shared = b_sharing * shared * kv / (gpu.hbm_bps * p.eta_kv)
    law = decode_attention_s(gpu, model, p, b_sharing, b_sharing * shared, shared, foreign, bool(chunks),
                             b_all - b_sharing + len(chunks))
    return t - plain_shared + law


def interference_tpot_ms(sc, batch: int, kind: str = "none", n_prefills: int = 1, prefill_tokens: int = 1024,
                         cached_tokens: int = 2048, decode_ctx: int = 2048, output_tokens: int = 64,
                         params: PerfParams | None = None) -> float:
    """Mean iteration time (ms) of a decode batch of ``batch`` requests - each starting at ``decode_ctx``
    tokens of context, growing one token per step - with ``n_prefills`` prefills of ``prefill_tokens`` new
    tokens inserted at the start: full (a different prompt, no cache) or append (over ``cached_tokens``), as in
    the paper's interference micro-benchmark (Fig.2); ``kind="none"`` inserts none. The decodes share
    ``sc.shared_prefix_tokens`` of their context; a full prefill's request does not carry it and stays running
    for the whole window (its decode follows its prefill), so cascade attention is off throughout
    (``foreign``). The prefills are chunked into the token budget left by the decodes (``max_batched_tokens -
    batch``). The mean is over ``output_tokens - 1`` iterations, or more while prefill chunks remain (capped at
    ``output_tokens + n_prefills + 64``)."""
    pm = for_scenario(sc, params)
    budget = sc.max_batched_tokens
    pending = [prefill_tokens] * (n_prefills if kind != "none" else 0)
    done = [0] * len(pending)
    foreign = kind == "full" and bool(pending)
    t = 0.0
    steps = 0
    ctx = batch * decode_ctx
    b = batch
    while steps < output_tokens - 1 or any(p > 0 for p in pending):
        room = budget - b
        chunks = []
        for i, p in enumerate(pending):
            if p > 0 and room > 0:
                n = min(p, room)
                cached = done[i] + (cached_tokens if kind == "append" else 0)
                chunks.append((n, cached, kind == "full"))
                pending[i] -= n
                done[i] += n
                room -= n
        t += pm.iteration(chunks, b, ctx, foreign)
        steps += 1
        ctx += b
        if steps >= output_tokens + len(pending) + 64:
            break
    return 1e3 * t / max(steps, 1)
