"""A serving node (one vLLM instance on ``tp`` GPUs): continuous batching with chunked prefill, a KV
memory budget shared by reservations and the node's prefix cache (``kvcache``).

Decode is advanced analytically: between two events that change the batch, every decode step has the same
batch size B and the batch's total context grows by B per step, so step i takes ``a + b*i`` and k steps take
``k*a + b*k*(k-1)/2``. A node plans a *segment* of k steps up to the next request finishing; an external
event (new work, an abort, an inbound KV transfer) cuts the segment at the end of the step in progress.
``exact=True`` plans one step per segment: the step-by-step oracle the tests compare against.
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from typing import TYPE_CHECKING

from .kvcache import BLOCK, ConversationLRU, KVCache
from .request import PD, Request

if TYPE_CHECKING:
    from .events import NodeHost

__all__ = ["BLOCK", "Node", "Segment"]


class Segment:
    """A planned run of ``steps`` decode steps from ``start``; step i (0-based) takes ``a + b*i`` seconds.
    Each node owns one and rewrites it in place for every segment (no allocation on the hot path); the
    node's ``seg`` is that object while a segment is in progress, else None."""

    __slots__ = ("start", "steps", "a", "b")

    def __init__(self) -> None:
        self.start, self.steps, self.a, self.b = 0.0, 0, 0.0, 0.0


class Node:
    __slots__ = ("nid", "role", "name", "sim", "pm", "capacity", "used", "kv", "waiting",
                 "prefill_q", "dec_heap", "n_dec", "base_sum", "steps", "busy", "version", "seg", "_segment", "iter",
                 "blocked", "busy_time", "iterations", "mbt", "max_seqs", "exact", "decode_capable", "dirty")

    def __init__(self, nid: int, role: str, name: str, sim: "NodeHost", pm, max_batched_tokens: int,
                 max_seqs: int = 1024, exact: bool = False, kv: KVCache | None = None):
        self.nid, self.role, self.name, self.sim, self.pm = nid, role, name, sim, pm
        self.capacity = pm.kv_capacity_tokens
        self.used = 0                       # tokens reserved by admitted requests
        self.kv: KVCache = ConversationLRU(self.capacity) if kv is None else kv   # the prefix cache
        self.waiting: deque[Request] = deque()    # waiting for a KV reservation (FIFO)
        self.prefill_q: deque[Request] = deque()  # admitted, prefill work left
        self.dec_heap: list = []            # (end_step, rid, request) of decoding requests
        self.n_dec = 0
        self.base_sum = 0                   # sum over decoders of (prompt + 1 - join step)
        self.steps = 0                      # decode steps executed so far (mixed iterations included)
        self.busy = False
        self.version = 0
        self.seg: Segment | None = None     # the decode segment in progress (self._segment) or None
        self._segment = Segment()
        self.iter: list | None = None       # [(request, tokens)] of the mixed iteration in progress
        self.blocked = 0                    # inbound KV transfers in flight that pause this node's batch
        self.busy_time = 0.0
        self.iterations = 0
        self.mbt = max_batched_tokens
        self.max_seqs = max_seqs
        self.exact = exact
        self.decode_capable = role != "P"
        self.dirty = False                  # an aborted request may sit in prefill_q or the decode batch

    # ---- state queries (used by policies and metrics) ------------------------------------------------
    def ctx_sum(self) -> int:
        return self.base_sum + self.n_dec * self.steps

    def active_seqs(self) -> int:
        """Sequences the node's API server is serving: decoding or admitted for prefill."""
        return self.n_dec + len(self.prefill_q)

    def pending_prefill_tokens(self) -> int:
        return sum(r.remaining_prefill for r in self.prefill_q) + sum(r.prompt for r in self.waiting)

    def free_tokens(self) -> int:
        return self.capacity - self.used - self.kv.tokens

    def cached_for(self, conv: int, prompt: int) -> int:
        return self.kv.hit(conv, prompt)

    # ---- memory ----------------------------------------------------------------------------------------
    def cache_put(self, conv: int, tokens: int) -> None:
        self.kv.put(conv, tokens, self.capacity - self.used)

    def reservation(self, req: Request) -> int:
        return req.prompt if self.role == "P" else req.prompt + req.output

    def release(self, req: Request) -> None:
        if self.nid in req.reserved_on:
            req.reserved_on.remove(self.nid)
            self.used -= self.reservation(req)

    # ---- admission -------------------------------------------------------------------------------------
    def enqueue(self, req: Request, now: float) -> None:
        self.waiting.append(req)
        self.try_admit(now)

    def try_admit(self, now: float) -> None:
        admitted = False
        while self.waiting:
            req = self.waiting[0]
            if req.aborted:
                self.waiting.popleft()
                continue
            need = self.reservation(req)
            if need > self.capacity:
                self.waiting.popleft()
                self.sim.reject(req, now, self)
                continue
            if len(self.prefill_q) + self.n_dec >= self.max_seqs:
                break
            pd_on_decode = req.path == PD and self.role != "P"
            cached = 0 if pd_on_decode else self.kv.hit(req.conv, req.prompt)
            # cached tokens of this conversation turn into the reservation; PD on D: superseded by the transfer
            entry = self.kv.take(req.conv)
            if not self.kv.make_room(need, req.conv, self.capacity - self.used):
                self.kv.restore(req.conv, entry)      # put it back (most recent) and wait
                break
            self.waiting.popleft()
            self.used += need
            req.reserved_on.append(self.nid)
            if pd_on_decode:
                self.sim.decode_reserved(req, now)
                continue
            req.cached = cached
            req.done_prefill = cached
            req.remaining_prefill = req.prompt - cached
            req.full_prefill = cached == 0
            req.prefill_tokens = req.remaining_prefill
            req.where = "prefill"
            self.prefill_q.append(req)
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
        seg = self.seg
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
        j = max(0, min(j, k - 1))
        while j + 1 < k and (j + 1) * a + b * (j + 1) * j * 0.5 <= dt:
            j += 1
        while j > 0 and j * a + b * j * (j - 1) * 0.5 > dt:
            j -= 1
        new_k = j + 1
        if new_k < k:
            seg.steps = new_k
            self.version += 1
            end = start + new_k * a + b * new_k * (new_k - 1) * 0.5
            self.sim.wake_node(end, self, self.version)

    def start_iteration(self, now: float) -> None:
        if self.dirty:
            self._drop_aborted(now)
        if self.blocked:
            # a blocking KV receive is in progress (P2pNccl loads KV inside the step): wait for it
            self.busy = False
            self.iter = self.seg = None
            return
        if self.prefill_q:
            budget = self.mbt - self.n_dec
            chunks, spec = [], []
            for req in self.prefill_q:
                if budget <= 0:
                    break
                n = min(req.remaining_prefill, budget)
                budget -= n
                chunks.append((req, n))
                spec.append((n, req.done_prefill, req.full_prefill))
            if chunks:
                t = self.pm.iteration(spec, self.n_dec, self.base_sum + self.n_dec * self.steps)
                if self.role == "P":   # P's step waits for each finished request's KV send to be queued
                    t += self.pm.p_send_s * sum(1 for req, n in chunks if n == req.remaining_prefill)
                self.busy, self.iter, self.seg = True, chunks, None
                self.version += 1
                self.busy_time += t
                self.iterations += 1
                self.sim.wake_node(now + t, self, self.version)
                if self.sim.spans is not None:
                    self.sim.span(self, now, now + t, "mixed" if self.n_dec else "prefill", chunks)
                return
        if self.n_dec:
            k = 1 if self.exact else self.dec_heap[0][0] - self.steps
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
            seg = self.seg
            start, k = seg.start, seg.steps
            dur = now - start
            self.busy_time += dur
            self.iterations += k
            self.steps += k
            if self.sim.spans is not None:
                self.sim.span(self, start, now, "decode", None)
        if self.dec_heap and self.dec_heap[0][0] <= self.steps:
            self._finish_due(now)
        self.busy = False
        self.iter = self.seg = None
        if self.waiting:
            self.try_admit(now)
        if not self.busy:
            self.start_iteration(now)

    def _join_decode(self, req: Request, now: float) -> None:
        self.sim.first_token(req, now)
        if req.output <= 1:
            self._complete(req, now)
            return
        # join step s0 = self.steps: tokens generated = 1 + steps - s0; finishes when steps = s0 + output - 1
        end_step = self.steps + req.output - 1
        req.join_step = self.steps
        req.where = "decode"
        heapq.heappush(self.dec_heap, (end_step, req.rid, req))
        self.n_dec += 1
        self.base_sum += req.prompt + 1 - self.steps

    def _finish_due(self, now: float) -> None:
        heap = self.dec_heap
        done = []
        while heap and heap[0][0] <= self.steps:
            _, _, req = heapq.heappop(heap)
            self.n_dec -= 1
            self.base_sum -= req.prompt + 1 - req.join_step
            done.append(req)
        # complete only after the batch reflects every finisher: completing one may send the client's next
        # request right away, and its hop must see this step's state, whatever order the finishers are in
        for req in done:
            self._complete(req, now)

    def _complete(self, req: Request, now: float) -> None:
        self.release(req)
        if not req.aborted:
            # what the next turn's re-tokenised prompt will still match: the prompt and part of the answer
            hit = req.prompt + int(self.sim.retok * req.output)
            self.cache_put(req.conv, (hit // BLOCK) * BLOCK)
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
                    self.n_dec -= 1
                    self.base_sum -= e[2].prompt + 1 - e[2].join_step
                    self.release(e[2])
                else:
                    keep.append(e)
            heapq.heapify(keep)
            self.dec_heap = keep
            self.try_admit(now)
