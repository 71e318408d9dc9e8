"""A serving node (one vLLM V1 instance on ``tp`` GPUs): continuous batching with chunked prefill and
vLLM V1's KV memory: ``BLOCK``-token blocks shared by running requests and the prefix cache (``kvcache``).

Memory: a request gets its prompt's blocks at admission (first come first served, at most ``max_seqs``
running; cached head blocks of its conversation are reused) and a decode block each time its sequence
crosses a block boundary. When the blocks the batch needs for its next step exceed the free ones, cached
blocks are evicted (tail first, least recently used conversation first); when none are left the most
recently admitted running request is **preempted by recompute**: its blocks are freed (the full ones stay
cached, as vLLM V1 frees them), it goes back to the front of the waiting queue, and on re-admission it
prefills its prompt plus the tokens it had generated, then decodes the rest.

Decode is advanced analytically: between two events that change the batch, every decode step has the same
batch size B and the batch's total context grows by B per step, so step i takes ``a + b*i`` and k steps take
``k*a + b*k*(k-1)/2``. A node plans a *segment* of k steps up to the next request finishing or the step at
which the batch runs out of blocks (``memory.DecodeBlocks``); an external event (new work, an abort, an
inbound KV transfer) cuts the segment at the end of the step in progress. ``exact=True`` plans one step per
segment: the step-by-step oracle the tests compare against.
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from typing import TYPE_CHECKING

from .kvcache import BLOCK, BlockLRU, blocks_for
from .memory import DecodeBlocks, NodeMemory
from .request import PD, Request

if TYPE_CHECKING:
    from ..model.dense import PerfModel
    from .events import Host

__all__ = ["BLOCK", "Node", "Segment"]


class Segment:
    """A planned run of ``steps`` decode steps from ``start``; step i (0-based) takes ``a + b*i`` seconds.
    Each node owns one and rewrites it in place for every segment (no allocation on the hot path); the
    node's ``seg`` is that object while a segment is in progress, else None."""

    __slots__ = ("start", "steps", "a", "b")

    def __init__(self) -> None:
        self.start, self.steps, self.a, self.b = 0.0, 0, 0.0, 0.0


class Node(NodeMemory):
    __slots__ = ("role", "name", "sim", "pm", "capacity", "n_dec", "base_sum", "busy", "version", "seg",
                 "_segment", "iter", "blocked", "busy_time", "iterations", "mbt", "max_seqs", "exact",
                 "decode_capable", "dirty", "admitted", "dec_time", "dec_base")   # + NodeMemory's

    def __init__(self, nid: int, role: str, name: str, sim: "Host", pm: "PerfModel", max_batched_tokens: int,
                 max_seqs: int = 1024, exact: bool = False, kv: BlockLRU | None = None):
        self.nid, self.role, self.name, self.sim, self.pm = nid, role, name, sim, pm
        self.capacity = pm.kv_capacity_tokens
        self.cap_blocks = max(self.capacity, 0) // BLOCK
        self.used = 0                       # blocks held by admitted requests not decoding (sum of alloc)
        self.alloc: dict[int, int] = {}     # rid -> blocks, of admitted requests not in the decode batch
        self.dec_blocks = DecodeBlocks()    # blocks of the decode batch, a function of the step counter
        self.kv: BlockLRU = BlockLRU() if kv is None else kv   # the prefix cache
        self.waiting: deque[Request] = deque()    # waiting for KV blocks (FIFO; preempted ones in front)
        self.prefill_q: deque[Request] = deque()  # admitted, prefill work left
        self.dec_heap = []                  # (end_step, rid, request) of decoding requests
        self.n_dec = 0
        self.base_sum = 0                   # sum over decoders of (prompt + 1 - join step)
        self.steps = 0                      # decode steps executed so far (mixed iterations included)
        self.busy = False
        self.version = 0
        self.seg: Segment | None = None     # the decode segment in progress (self._segment) or None
        self._segment = Segment()
        self.iter: list[tuple[Request, int]] | None = None   # [(request, tokens)] of the mixed iteration in progress
        self.blocked = 0                    # inbound KV transfers in flight that pause this node's batch
        self.busy_time = 0.0
        self.iterations = 0
        self.dec_time = 0.0                 # time of iterations that carried decodes
        self.dec_base = 0.0                 # what those iterations would have taken as decode-only steps
        self.mbt = max_batched_tokens
        self.max_seqs = max_seqs
        self.exact = exact
        self.decode_capable = role != "P"
        self.dirty = False                  # an aborted request may sit in prefill_q or the decode batch
        self.admitted = 0                   # admissions so far: a request's admission order (preemption victim)
        self.preemptions = 0

    # ---- state queries (used by policies and metrics) ------------------------------------------------
    def ctx_sum(self) -> int:
        return self.base_sum + self.n_dec * self.steps

    def active_seqs(self) -> int:
        """Sequences the node's API server is serving: decoding or admitted for prefill."""
        return self.n_dec + len(self.prefill_q)

    def pending_prefill_tokens(self) -> int:
        return sum(r.remaining_prefill for r in self.prefill_q) + sum(r.prompt for r in self.waiting)

    def cached_for(self, conv: int, prompt: int) -> int:
        if self.seg is not None:   # the cache as the step running now left it (the batch grew into it)
            self._ensure_blocks(self.steps + self._step_at(self.sim.now))
        return self.kv.hit(conv, prompt)

    # ---- admission -------------------------------------------------------------------------------------
    def enqueue(self, req: Request, now: float) -> None:
        self.waiting.append(req)
        self.try_admit(now)

    def try_admit(self, now: float) -> None:
        if not self.waiting:
            return
        admitted = False
        # the decode step running now holds its blocks already (a segment in progress: its current step)
        steps = self.steps if self.seg is None else self.steps + self._step_at(now)
        self._ensure_blocks(steps)
        waiting, kv, cap, dec_blocks, prefill_q = self.waiting, self.kv, self.cap_blocks, self.dec_blocks, \
            self.prefill_q
        on_p = self.role == "P"
        while waiting:
            req = waiting[0]
            if req.aborted:
                waiting.popleft()
                continue
            if -(-(req.prompt if on_p else req.prompt + req.output) // BLOCK) > cap:
                waiting.popleft()   # can never fit, even alone (vLLM refuses it up front)
                self.sim.reject(req, now, self)
                continue
            if len(prefill_q) + self.n_dec >= self.max_seqs:
                break
            pd_on_decode = not on_p and req.path == PD and not req.recompute
            length = req.prompt + req.gen             # a preempted request recomputes what it had generated
            cached = 0 if pd_on_decode else kv.hit(req.conv, length)
            need = -(-length // BLOCK)
            held = self.used + (dec_blocks.v_c if dec_blocks.s_c == steps else dec_blocks.at(steps)) + need
            if held > cap:
                break                                 # even with every cached block evicted: wait
            # cached blocks of this conversation turn into the request's; PD on D: superseded by the transfer
            kv.take(req.conv)
            over = held + kv.blocks - cap
            if over > 0:
                kv.evict(over)
            waiting.popleft()
            self.used += need
            self.alloc[req.rid] = need
            self.admitted += 1
            req.seq = self.admitted
            req.reserved_on.append(self.nid)
            if pd_on_decode:
                self.sim.decode_reserved(req, now)
                continue
            req.done_prefill = cached
            req.remaining_prefill = length - cached
            req.full_prefill = cached == 0
            if req.recompute:
                req.prefill_tokens += req.remaining_prefill   # records: cached/prefilled of the first try
            else:
                req.cached = cached
                req.prefill_tokens = req.remaining_prefill
            req.where = "prefill"
            prefill_q.append(req)
            admitted = True
        if admitted:
            self.kick(now)

    def ready_after_transfer(self, req: Request, now: float) -> None:
        """PD path on D: KV arrived and the proxy's request is here; compute the last prompt token."""
        req.done_prefill = req.prompt - 1
        req.remaining_prefill = 1
        req.full_prefill = False
        req.where = "prefill"
        self.prefill_q.append(req)
        self.kick(now)

    # ---- inbound KV transfers and aborts (called by the engine) -----------------------------------------
    def block_for_transfer(self, now: float) -> None:
        """A blocking KV receive into this node starts: its batch pauses after the step in progress."""
        self.blocked += 1
        if self.busy and self.seg is not None:
            self.interrupt(now)

    def transfer_received(self) -> None:
        """A blocking KV receive into this node has ended."""
        self.blocked -= 1

    def request_aborted(self, now: float) -> None:
        """A request here timed out: drop it at the next iteration (cut a decode segment short for that)."""
        self.dirty = True
        if self.busy and self.seg is not None:
            self.interrupt(now)

    # ---- scheduling ------------------------------------------------------------------------------------
    def kick(self, now: float) -> None:
        if not self.busy:
            self.start_iteration(now)
        elif self.seg is not None:
            self.interrupt(now)

    def interrupt(self, now: float) -> None:
        """Cut the decode segment in progress at the end of the step running at ``now``."""
        seg: Segment = self.seg  # type: ignore[assignment]  # in progress
        new_k = self._step_at(now) + 1
        if new_k < seg.steps:
            start, a, b = seg.start, seg.a, seg.b
            seg.steps = new_k
            self.version += 1
            end = start + new_k * a + b * new_k * (new_k - 1) * 0.5
            self.sim.wake_node(end, self, self.version)

    def _step_at(self, now: float) -> int:
        """The 0-based step of the segment in progress running at ``now``."""
        seg: Segment = self.seg  # type: ignore[assignment]  # in progress
        start, k, a, b = seg.start, seg.steps, seg.a, seg.b
        dt = now - start
        if dt <= 0:
            j = 0
        elif b > 0:
            # largest j with j*a + b*j*(j-1)/2 <= dt
            h = a - 0.5 * b
            j = int((-h + math.sqrt(h * h + 2.0 * b * dt)) / b)
        else:
            j = int(dt / a)
        if j > k - 1:
            j = k - 1
        if j < 0:
            j = 0
        while j + 1 < k and (j + 1) * a + b * (j + 1) * j * 0.5 <= dt:
            j += 1
        while j > 0 and j * a + b * j * (j - 1) * 0.5 > dt:
            j -= 1
        return j

    def start_iteration(self, now: float) -> None:
        if self.dirty:
            self._drop_aborted(now)
        if self.blocked:
            # a blocking KV receive is in progress (P2pNccl loads KV inside the step): wait for it
            self.busy = False
            self.iter = self.seg = None
            return
        db = self.dec_blocks
        d = self.steps - db.s_c    # _fit_running's own first test (at(steps) <= its bound), inlined: it is hot
        if self.used + (db.v_c if d <= 0 else db.v_c + db.n * -(-d // BLOCK)) + self.kv.blocks > self.cap_blocks:
            self._fit_running(now)
        if self.prefill_q:
            budget = self.mbt - self.n_dec
            chunks: list[tuple[Request, int]] = []
            spec: list[tuple[int, int, bool]] = []
            sends = 0                  # chunks that finish their request's prefill
            for req in self.prefill_q:
                if budget <= 0:
                    break
                n = req.remaining_prefill
                if n > budget:
                    n = budget
                else:
                    sends += 1
                budget -= n
                chunks.append((req, n))
                spec.append((n, req.done_prefill, req.full_prefill))
            if chunks:
                ctx = self.base_sum + self.n_dec * self.steps
                t = self.pm.iteration(spec, self.n_dec, ctx)
                if self.role == "P":   # P's step waits for each finished request's KV send to be queued
                    t += self.pm.p_send_s * sends
                self.busy, self.iter, self.seg = True, chunks, None
                self.version += 1
                self.busy_time += t
                self.iterations += 1
                if self.n_dec:
                    a, b = self.pm.decode_coeffs(self.n_dec)
                    self.dec_time += t
                    self.dec_base += a + b * ctx
                self.sim.wake_node(now + t, self, self.version)
                if self.sim.spans is not None:
                    self.sim.span(self, now, now + t, "mixed" if self.n_dec else "prefill", chunks)
                return
        if self.n_dec:
            k = 1 if self.exact else self.dec_heap[0][0] - self.steps
            if k > 1:   # cut where the batch outgrows its blocks (cached ones are evictable)
                room = self.cap_blocks - self.used
                db = self.dec_blocks
                if db.bound(self.steps + k - 1) > room and db.at(self.steps + k - 1) > room:
                    k = db.steps_within(self.steps, room)
            n_dec = self.n_dec
            a, b = self.pm.decode_coeffs(n_dec)
            a = a + b * (self.base_sum + n_dec * self.steps)
            b = b * n_dec
            end = now + k * a + b * k * (k - 1) * 0.5
            seg = self._segment
            seg.start, seg.steps, seg.a, seg.b = now, k, a, b
            self.busy, self.iter, self.seg = True, None, seg
            self.version += 1
            self.sim.wake_node(end, self, self.version)
            return
        self.busy = False
        self.iter = self.seg = None

    def wake(self, now: float, version: int) -> None:
        if version != self.version or not self.busy:
            return
        if self.iter is not None:
            chunks = self.iter
            b_old = self.n_dec
            self.steps += 1 if b_old else 0
            for req, n in chunks:
                req.remaining_prefill -= n
                req.done_prefill += n
            for req, n in chunks:
                if req.remaining_prefill == 0:
                    self.prefill_q.remove(req)
                    if self.role == "P":
                        self.sim.prefill_done(req, now, self)
                    elif not req.aborted:
                        self._join_decode(req, now)
                    else:   # timed out during its last prefill chunk: free its KV like _drop_aborted does
                        self.release(req)
        else:
            seg: Segment = self.seg  # type: ignore[assignment]  # in progress
            start, k = seg.start, seg.steps
            dur = now - start
            self.busy_time += dur
            self.dec_time += dur
            self.dec_base += dur
            self.iterations += k
            self.steps += k
            self._ensure_blocks(self.steps - 1)   # the segment's last step grew into the cache, finishers too
            if self.sim.spans is not None:
                self.sim.span(self, start, now, "decode", None)
        if self.dec_heap and self.dec_heap[0][0] <= self.steps:
            self._finish_due(now)
        self.busy = False
        self.iter = self.seg = None
        if self.dirty:
            self._drop_aborted(now)
        db = self.dec_blocks        # running requests get this step's blocks before any admission
        d = self.steps - db.s_c
        if self.used + (db.v_c if d <= 0 else db.v_c + db.n * -(-d // BLOCK)) + self.kv.blocks > self.cap_blocks:
            self._fit_running(now)
        if self.waiting:
            self.try_admit(now)
        if not self.busy:
            self.start_iteration(now)

    def _join_decode(self, req: Request, now: float) -> None:
        if req.gen == 0:
            self.sim.first_token(req, now)
        req.gen += 1                               # the prefill's last step produced a token
        if req.gen >= req.output:
            held = self.alloc.get(req.rid, 0)
            self._complete(req, now, held)
            return
        self.used -= self.alloc.pop(req.rid)
        # join step s0 = self.steps: tokens generated = gen + steps - s0; finishes when steps = s0 + output - gen
        end_step = self.steps + req.output - req.gen
        req.join_step = self.steps
        req.base = req.prompt + req.gen - self.steps   # KV slots it needs to run step s: base + s
        req.where = "decode"
        heapq.heappush(self.dec_heap, (end_step, req.rid, req))
        self.n_dec += 1
        self.base_sum += req.base
        self.dec_blocks.add(req.base)

    def _leave_decode(self, req: Request) -> None:
        self.n_dec -= 1
        self.base_sum -= req.base
        self.dec_blocks.remove(req.base)

    def _finish_due(self, now: float) -> None:
        heap = self.dec_heap
        done = []
        while heap and heap[0][0] <= self.steps:
            req = heapq.heappop(heap)[2]
            self._leave_decode(req)
            done.append(req)
        # complete only after the batch reflects every finisher: completing one may send the client's next
        # request right away, and its hop must see this step's state, whatever order the finishers are in
        for req in done:
            self._complete(req, now, blocks_for(req.base + self.steps))

    def _complete(self, req: Request, now: float, held: int) -> None:
        """``req`` ended here holding ``held`` blocks: free them, keeping what its next turn can reuse."""
        self.release(req)
        if not req.aborted:
            # what the next turn's re-tokenised prompt will still match: the prompt and part of the answer
            hit = req.prompt + int(self.sim.retok * req.output)
            self.cache_put(req.conv, min(hit // BLOCK, held) * BLOCK)
            self.sim.finished(req, now)

    def _drop_aborted(self, now: float) -> None:
        self.dirty = False
        if any(r.aborted for r in self.prefill_q):
            for r in [r for r in self.prefill_q if r.aborted]:
                self.prefill_q.remove(r)
                self.release(r)
        if self.n_dec and any(e[2].aborted for e in self.dec_heap):
            keep = []
            for e in self.dec_heap:
                if e[2].aborted:
                    self._leave_decode(e[2])
                    self.release(e[2])
                else:
                    keep.append(e)
            heapq.heapify(keep)
            self.dec_heap = keep
            self.try_admit(now)
