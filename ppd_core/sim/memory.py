"""A node's KV memory, vLLM V1-like: blocks held by running requests, the decode batch's blocks in closed
form, and preemption by recompute when a step's blocks do not fit.

``DecodeBlocks``: decoder i joined the batch at step j_i with L_i context tokens in KV; to run step s it needs
slots for ``c_i + s`` tokens (``c_i = L_i + 1 - j_i``), i.e. ``ceil((c_i + s) / BLOCK)`` blocks: it crosses a
block boundary every ``BLOCK`` steps. With ``c_i = BLOCK*q_i + r_i`` the batch total is
``sum q_i + sum_r count[r] * ceil((r + s) / BLOCK)``: O(BLOCK) to evaluate whatever the batch size, and
``at(s + BLOCK) = at(s) + n``. So the first step at which the batch outgrows a given number of blocks is
computable, and a decode segment is cut there instead of stepping token by token.

``NodeMemory``: the memory half of ``node.Node`` (a mixin: Node owns the state). Blocks are conserved:
``free + used + cached == capacity``, where used = blocks of admitted requests not decoding (``alloc``) +
the decode batch's blocks for its next step, and every cached block is evictable.
"""
from __future__ import annotations

import heapq
from collections import deque

from .kvcache import BLOCK, BlockLRU, blocks_for
from .request import Request

class DecodeBlocks:
    """``at(s)`` is kept for one step counter ``s_c`` and moved incrementally: going from s to s + 1 adds
    the decoders whose ``c_i + s`` is a multiple of BLOCK (``count[-s mod BLOCK]``), so the usual query
    (the step just run, or the next one) costs O(1)."""

    __slots__ = ("count", "q", "n", "s_c", "v_c")

    def __init__(self) -> None:
        self.count = [0] * BLOCK   # decoders per residue r = c_i mod BLOCK
        self.q = 0                 # sum of c_i // BLOCK
        self.n = 0                 # decoders
        self.s_c = 0               # at(s_c) == v_c
        self.v_c = 0

    def add(self, c: int) -> None:
        q, r = divmod(c, BLOCK)
        self.count[r] += 1
        self.q += q
        self.n += 1
        self.v_c += -(-(c + self.s_c) // BLOCK)

    def remove(self, c: int) -> None:
        q, r = divmod(c, BLOCK)
        self.count[r] -= 1
        self.q -= q
        self.n -= 1
        self.v_c -= -(-(c + self.s_c) // BLOCK)

    def at(self, s: int) -> int:
        """Blocks the batch needs to run decode step ``s``: sum of ceil((c_i + s) / BLOCK)."""
        d = s - self.s_c
        if d == 0:
            return self.v_c
        v, cur, count = self.v_c, self.s_c, self.count
        m = (d + BLOCK // 2) // BLOCK      # whole periods to the nearest one: at most BLOCK / 2 steps to walk
        v += m * self.n                    # a whole period adds one block per decoder
        cur += m * BLOCK
        while cur < s:
            v += count[-cur % BLOCK]
            cur += 1
        while cur > s:
            cur -= 1
            v -= count[-cur % BLOCK]
        self.s_c, self.v_c = s, v
        return v

    def bound(self, s: int) -> int:
        """An upper bound of ``at(s)`` in O(1) that moves nothing: ``at`` never decreases with s and a decoder
        gains at most ceil(d / BLOCK) blocks in d steps; exact at s == s_c."""
        d = s - self.s_c
        return self.v_c if d <= 0 else self.v_c + self.n * -(-d // BLOCK)

    def at_direct(self, s: int) -> int:
        """``at(s)`` from the histogram (the closed form the incremental one is checked against)."""
        t = self.q
        for r, h in enumerate(self.count):
            if h:
                t += h * ((r + s + BLOCK - 1) // BLOCK)
        return t

    def steps_within(self, s0: int, room: int) -> int:
        """The most steps ``k`` from ``s0`` with ``at(s0 + k - 1) <= room`` (needs ``at(s0) <= room``)."""
        s = s0 + BLOCK * ((room - self.at(s0)) // self.n)   # whole periods: each adds n blocks
        while self.at(s + 1) <= room:                       # fewer than BLOCK steps left to check
            s += 1
        return s - s0 + 1


class NodeMemory:
    """Memory methods of ``Node`` (see the module docstring)."""

    # the state of Node that these methods use (declared here for mypyc)
    __slots__ = ("nid", "used", "cap_blocks", "steps", "preemptions", "alloc", "dec_blocks", "kv", "prefill_q",
                 "waiting", "dec_heap")
    nid: int
    used: int
    cap_blocks: int
    steps: int
    preemptions: int
    alloc: dict[int, int]
    dec_blocks: DecodeBlocks
    kv: BlockLRU        # the only KVCache there is: typed concretely so compiled calls are native
    prefill_q: deque[Request]
    waiting: deque[Request]
    dec_heap: list[tuple[int, int, Request]]

    def _leave_decode(self, req: Request) -> None:
        raise NotImplementedError

    def used_blocks(self, steps: int | None = None) -> int:
        """Blocks held by running requests (the decode batch's for step ``steps``, default: the next one)."""
        return self.used + self.dec_blocks.at(self.steps if steps is None else steps)

    def free_blocks(self) -> int:
        return self.cap_blocks - self.used_blocks() - self.kv.blocks

    def cache_put(self, conv: int, tokens: int) -> None:
        """Keep ``tokens`` (whole blocks) of ``conv``'s history cached: blocks of a request that just ended,
        freed by the caller (so nothing is evicted here: the next step's allocation evicts LRU first). ``put``
        replaces the conversation's entry (its old blocks leave the cache) and makes it the most recent."""
        self.kv.put(conv, tokens // BLOCK)

    def release(self, req: Request) -> None:
        """Free the blocks of an admitted request that is not in the decode batch."""
        if self.nid in req.reserved_on:
            req.reserved_on.remove(self.nid)
            self.used -= self.alloc.pop(req.rid, 0)

    def _ensure_blocks(self, steps: int) -> int:
        """Evict cached blocks until the running requests fit for decode step ``steps``; returns the blocks
        still missing (> 0: a request must be preempted; <= 0 otherwise, not always the exact slack)."""
        db = self.dec_blocks
        base = self.used + self.kv.blocks - self.cap_blocks
        over = base + db.bound(steps)
        if over <= 0:              # fits even at the bound: nothing to evict (the common case, O(1))
            return over
        if db.s_c != steps:
            over = base + db.at(steps)
        if over > 0:
            over -= self.kv.evict(over)
        return over

    def _fit_running(self, now: float) -> None:
        """vLLM V1's schedule(): the running requests get the blocks of this step first; preempt the most
        recently admitted one (recompute) while they do not fit."""
        if self.used + self.dec_blocks.bound(self.steps) + self.kv.blocks <= self.cap_blocks:
            return                 # fits at the bound of at(steps), so it fits
        while self._ensure_blocks(self.steps) > 0:
            victims = [r for r in self.prefill_q] + [e[2] for e in self.dec_heap]
            if not victims:
                break
            self._preempt(max(victims, key=lambda r: r.seq), now)

    def _preempt(self, req: Request, now: float) -> None:
        if req.where == "decode":
            self.dec_heap = [e for e in self.dec_heap if e[2] is not req]
            heapq.heapify(self.dec_heap)
            self._leave_decode(req)
            req.gen += self.steps - req.join_step     # tokens generated so far
            kv_tokens = req.prompt + req.gen - 1      # the last token's KV is not written yet
            held = blocks_for(req.base + self.steps)
        else:
            self.prefill_q.remove(req)
            held = self.alloc.pop(req.rid)
            self.used -= held
            kv_tokens = req.done_prefill
        req.reserved_on.remove(self.nid)
        self.kv.put(req.conv, min(kv_tokens // BLOCK, held))   # vLLM keeps freed full blocks cached
        req.recompute = True
        req.preemptions += 1
        req.where = "waiting"
        self.preemptions += 1
        self.waiting.appendleft(req)

