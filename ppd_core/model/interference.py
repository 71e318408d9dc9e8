"""The paper's interference micro-benchmark (Fig.2) priced with a latency model."""
from __future__ import annotations

from .base import for_scenario
from .params import PerfParams


def interference_tpot_ms(sc, batch: int, kind: str = "none", n_prefills: int = 1, prefill_tokens: int = 1024,
                         cached_tokens: int = 2048, decode_ctx: int = 2048, output_tokens: int = 64,
                         params: PerfParams | None = None) -> float:
    """Mean iteration time (ms) of a decode batch of ``batch`` requests - each starting at ``decode_ctx``
    tokens of context, growing one token per step - with ``n_prefills`` prefills of ``prefill_tokens`` new
    tokens inserted at the start: full (no cache) or append (over ``cached_tokens``), as in the paper's
    interference micro-benchmark (Fig.2); ``kind="none"`` inserts none. The prefills are chunked into the
    token budget left by the decodes (``max_batched_tokens - batch``); once prefilled they do not join the
    decode batch. The mean is over ``output_tokens - 1`` iterations, or more while prefill chunks remain
    (capped at ``output_tokens + n_prefills + 64``)."""
    pm = for_scenario(sc, params)
    budget = sc.max_batched_tokens
    pending = [prefill_tokens] * (n_prefills if kind != "none" else 0)
    done = [0] * len(pending)
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
        t += pm.iteration(chunks, b, ctx)
        steps += 1
        ctx += b
        if steps >= output_tokens + len(pending) + 64:
            break
    return 1e3 * t / max(steps, 1)
