"""Eq.1's inputs for one Turn 2+ request on a D node, from the live cluster state (seconds).

Both paths are priced with every cost the engine charges on them:

* local (x=1): the hop to D (API server over D's running sequences), the rest of D's iteration in progress,
  D's queued prefill work drained FIFO in chunked iterations of ``max_batched_tokens`` next to D's decode
  batch, then the request's own append-prefill of what D's prefix cache does not hold.
* PD (x=0): the hop to the P the router picks (over P's running sequences), the rest of P's iteration, P's
  queue drained FIFO in chunked iterations with ``p_send`` for every request that finishes in one (P's step
  waits for the KV send), the request's own re-prefill and send, the hand-off to D, the KV transfer at the
  link share it would get now, then D's first-token iteration (after what is left of D's step in progress
  and of D's own queue by then).

dTTFT is the relative TTFT gain of local, (TTFT_pd - TTFT_local) / TTFT_pd. dTPOT is the relative TPOT
degradation the choice causes, summed over the co-batched decodes: each path adds some time to D's batch
(local: the append-prefill iteration over a decode step; PD: the first-token iteration and, with a blocking
KV receive, the transfer pause); request i's TPOT grows by that time over its output length, i.e. by
extra / (output_i * TPOT) relatively, and dTPOT is the sum of that over the batch, local minus PD. TPOT is
D's decode-only step times the node's step inflation (``NodeView.step_inflation``: how much longer its
iterations with decodes have run than decode-only steps of the same batches, for the prefill chunks beside
them); dividing by the bare decode-only step over-stated the effect on a node that serves appends. The sum
(not the mean) is what the paper's table measures: its dTPOT is the relative change of the class's mean
TPOT when the class is served locally, and by Little's law a request's decode overlaps on average the
stalls of as many local decisions as there are decodes in its batch, so the per-decision sum equals the
population's mean relative slowdown. With no decode batch dTPOT is 0: nobody's TPOT can suffer.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from ..model.dense import PerfModel
    from .request import Request
    from .view import ClusterView, NodeView

MAX_ELASTICITY: Final = 0.8     # batch_feedback: at most 5x amplification
EXACT_ITERATIONS: Final = 64   # queues longer than this many chunked iterations are extrapolated at the last rate


def prefill_room(budget: int, batch: int) -> int:
    """Prefill tokens one chunked iteration takes beside ``batch`` decodes (each decode uses one of
    ``budget``): at least one, so a prefill always progresses."""
    return max(budget - batch, 1)


def drain(pm: "PerfModel", queue: list[tuple[int, int, bool]], own: tuple[int, int, bool] | None, batch: int, ctx_sum: int, budget: int,
          send_s: float = 0.0) -> float:
    """Time until ``own`` (new, cached, full) finishes its prefill behind ``queue`` [(new, cached, full)]
    (FIFO chunked prefill, ``budget`` tokens per iteration shared with ``batch`` decodes whose contexts sum
    to ``ctx_sum``; ``send_s`` per request that finishes in an iteration). ``own=None``: until the queue
    is empty."""
    room = prefill_room(budget, batch)
    if not queue:
        if own is None:
            return 0.0
        if own[0] <= room:      # a lone request that fits one iteration: what the loop below computes
            return pm.iteration([own], batch, ctx_sum) + send_s
    items: list[list[Any]] = [list(q) for q in queue]   # [new, cached, full] (mutated below)
    if own is not None:
        items.append(list(own))
    t, i, iters, ctx, sends = 0.0, 0, 0, ctx_sum, 0
    while i < len(items):
        if iters >= EXACT_ITERATIONS:   # extrapolate the rest at the mean time per token so far
            left = sum(it[0] for it in items[i:])
            done = sum(q[0] for q in queue) + (own[0] if own else 0) - left
            t += (t - send_s * sends) / max(done, 1) * left + send_s * (len(items) - i)
            break
        spec, left, finished = [], room, 0
        j = i
        while j < len(items) and left > 0:
            new, cached, full = items[j]
            n = min(new, left)
            spec.append((n, cached, full))
            left -= n
            if n == new:
                finished += 1
            j += 1
        t += pm.iteration(spec, batch, ctx) + send_s * finished
        sends += finished
        ctx += batch
        iters += 1
        for k, (n, _, _) in enumerate(spec):
            it = items[i + k]
            it[0] -= n
            it[1] += n
            it[2] = False
        while i < len(items) and items[i][0] <= 0:
            i += 1
    return t


def batch_feedback(pm: "PerfModel", batch: int, ctx_sum: int, step: float, tpot: float) -> float:
    """How much D's batch amplifies a TPOT slowdown: slower decodes stay longer, so at the same arrival rate
    the batch grows (Little's law) and every step gets slower in turn. With e = batch * d(step)/d(batch) /
    tpot, the elasticity of D's mean iteration time ``tpot`` (the decode-only ``step`` times the step
    inflation) in the batch size (contexts growing with it; one more decode lengthens an iteration by the
    same time whether prefill chunks ride in it or not), a relative slowdown r becomes r / (1 - e). e is
    capped at MAX_ELASTICITY: near 1 the node is decode-bound and the steady state this argument assumes is
    gone (the saturation report says so)."""
    a1, b1 = pm.decode_coeffs(batch + 1)
    step1 = a1 + b1 * ctx_sum * (batch + 1) / batch
    e = min(max((step1 - step) / tpot * batch, 0.0), MAX_ELASTICITY)
    return 1.0 / (1.0 - e)


def estimate(view: "ClusterView", req: "Request", d: "NodeView") -> dict[str, float]:
    """Predicted TTFT of both paths, the extra time each adds to D's decode batch and Eq.1's relative terms
    (``d_ttft``, ``d_tpot``, ``score``) for ``req`` whose conversation lives on D (see the module docstring)."""
    pm = d.pm                # D's own latency model; P's below (a heterogeneous fleet's roles differ)
    prompt = req.prompt
    budget = view.max_batched_tokens
    batch, ctx_sum, active = d.decode_batch(), d.ctx_sum(), d.active_seqs()   # D's state, read once
    a, b = pm.decode_coeffs(max(batch, 1))
    step = a + b * ctx_sum if batch else 0.0
    d_busy = d.busy_left()
    d_queue = d.prefill_queue()
    # local: append-prefill of what D's prefix cache does not hold, behind D's queue
    cached_d = d.cached_for(req.conv, prompt)
    own_local = (prompt - cached_d, cached_d, cached_d == 0)
    hop_d = pm.hop(prompt, active)
    d_backlog = d_busy + drain(pm, d_queue, None, batch, ctx_sum, budget)   # D busy with work already there
    # the request reaches D after its hop: it waits for what is left of that work, or (D decoding) for the
    # decode step in progress, half a step on average
    wait_d = max(d_backlog - hop_d, 0.5 * step if batch else 0.0)
    it_local = pm.iteration([own_local], batch, ctx_sum)
    # its own prefill: one iteration when it fits (drain's value then is it_local; not priced twice)
    ttft_local = hop_d + wait_d + (it_local if own_local[0] <= prefill_room(budget, batch)
                                   else drain(pm, [], own_local, batch, ctx_sum, budget))
    # PD: re-prefill on the P the router picks, send, hand-off, transfer, one iteration on D
    p = view.pick_p()
    ppm = p.pm
    cached_p = p.cached_for(req.conv, prompt)
    own_p = (prompt - cached_p, cached_p, cached_p == 0)
    hop_p = ppm.hop(prompt, p.active_seqs())
    p_backlog = p.busy_left() + drain(ppm, p.prefill_queue(), None, 0, 0, budget, ppm.p_send_s)
    t_p = hop_p + max(p_backlog - hop_p, 0.0) + drain(ppm, [], own_p, 0, 0, budget, ppm.p_send_s)
    share = 1 + max(view.transfers_on(p.nid), view.transfers_on(d.nid))
    link_s, link_Bps = view.link(p.nid, d.nid)       # the pair's link: one server's, or across servers
    xfer = link_s + prompt * pm.kv_bytes_per_token * share / link_Bps
    handoff = pm.pd_handoff(prompt, active)
    blocks = pm.p.kv_recv_blocks_decode >= 0.5
    # D by the time the KV has arrived: what is left of its queue, else of the decode step in progress
    elapsed = t_p + handoff + xfer
    d_left = max(d_backlog - elapsed, 0.0)
    if d_left <= 0.0 and step > 0.0:
        d_left = (step - xfer) ** 2 / (2 * step) if blocks and xfer < step else (0.0 if blocks else 0.5 * step)
    it_one = pm.iteration([(1, prompt - 1, False)], batch, ctx_sum)
    ttft_pd = elapsed + d_left + it_one
    # what each path adds to the co-batched decodes (seconds per decode request)
    extra_local = max(it_local - step, 0.0)
    extra_pd = max(it_one - step, 0.0) + pm.p.kv_recv_blocks_decode * xfer
    d_ttft = (ttft_pd - ttft_local) / ttft_pd if ttft_pd > 0 else 0.0
    # sum over the batch of extra / (output_i * TPOT): each co-batched request's relative TPOT increase
    tpot = step * d.step_inflation()
    d_tpot = (extra_local - extra_pd) * d.inverse_output_sum() / tpot if batch and step > 0 else 0.0
    if d_tpot:
        d_tpot *= batch_feedback(pm, batch, ctx_sum, step, tpot)
    return {"ttft_local": ttft_local, "ttft_pd": ttft_pd, "extra_local": extra_local, "extra_pd": extra_pd,
            "d_ttft": d_ttft, "d_tpot": d_tpot, "score": view.w_ttft * d_ttft - view.w_tpot * d_tpot}
