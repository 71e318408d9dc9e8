"""An independent SimPy model of replica-only serving (``1R``, ``2R``, ``4R``...): the test oracle for the
heap engine ("keep the SimPy model as the reference, the heapq engine as the fast path").

It is written from the documented semantics and shares only the building blocks with ``ppd_core``:
``perf`` (iteration, decode and hop times, KV capacity), ``workload`` (conversations, RNG streams) and the
``Scenario``. It never imports ``node``, ``engine`` or ``link``.

What it models
* Client. Conversation c arrives at ``c.arrival_s``. With ``client_concurrency`` > 0 at most that many
  conversations are in flight: later ones wait FIFO for a slot (a ``simpy.Resource``), held from the Turn-1
  send to the last token of the last turn; the wait counts in Turn-1 TTFT (Turn 1's ``sent`` is the arrival).
  Turn k+1 is sent ``think_time_s`` after turn k's last token.
* Router. At each Turn-1 send the conversation is hashed to node ``rngs["routing"].integers(n)``; later turns
  go to the same node. A request reaches its node ``pm.hop(prompt, active)`` after it is sent, ``active``
  being the sequences the node is decoding or has admitted for prefill at the send instant.
* Node. One SimPy process per node, asleep on a wake-up event while it has no work. vLLM-style continuous
  batching: an iteration runs every decoding sequence (one token each) plus prefill chunks taken FIFO from
  the admitted requests under a budget of ``max_batched_tokens`` - decodes. Its time is
  ``pm.iteration(chunks, B, C)`` if it has a chunk, else ``a + b*C`` with ``(a, b) = pm.decode_coeffs(B)``;
  ``C`` sums the decoders' contexts (prompt + tokens generated so far). Work arriving during an iteration
  waits for the next one; an idle node starts an iteration the instant work arrives. The iteration that
  computes a request's last prompt chunk emits its first token; then it decodes one token per iteration.
* Prefix cache. A finished turn leaves its prompt plus ``int(retok * output)`` answer tokens, retok =
  ``pm.retok(workload)`` (the next prompt is re-tokenised text, so only that share of the answer still
  matches; 1: the whole answer), rounded down to 16-token blocks, cached for its conversation; the next turn prefills only the
  prompt past the cached blocks (a "full" prefill when nothing is cached). A request reserves prompt + output
  tokens of KV while it runs. The model has no eviction and no admission queue: it asserts that the node
  never needs either (the scenario must fit). So it does not cover the engine's vLLM V1 block memory where
  it binds (tail eviction of cached blocks, preemption by recompute, waiting for blocks): its cases have
  memory to spare, so the engine never runs out of blocks there either, and those paths are checked by tests/test_kv_memory.py instead (block
  conservation, exact == analytic, an exact fit, one block short).
* One instant, several things: all the completions of an iteration take effect together at its end, so a
  request sent at that instant (next turn, or a conversation let out of the client queue) sees the node
  without any of them; they are handed back to their clients in request-creation order (FIFO), and requests
  reaching a node at the same instant join its prefill queue in the order they were sent.
"""
from __future__ import annotations

import math

import pandas as pd
import simpy
from simpy.events import PENDING, URGENT

from ppd_core import model as perf
from ppd_core import workloads as wl
from ppd_core.config.scenario import Scenario

BLOCK = 16          # KV block: prefix-cache hits are whole blocks
MAX_SEQS = 1024     # vLLM's max_num_seqs; the oracle asserts it is never reached


class WakeUp(simpy.Event):
    """A node's wake-up event. ``ring()`` is ``succeed()`` at SimPy's URGENT priority (the one ``Initialize``
    and ``Interrupt`` use): the sleeping node resumes ahead of the other events of the same instant, so it
    starts its iteration the moment the first request arrives, with the work that is there at that moment."""

    def ring(self) -> None:
        if self._value is PENDING:
            self._ok, self._value = True, None
            self.env.schedule(self, URGENT)


class Req:
    __slots__ = ("seq", "conv", "turn", "sent", "prompt", "output", "node", "cached", "done", "left", "full",
                 "generated", "ctx", "chunks", "granted", "first_token", "finish", "finished")

    def __init__(self, env, seq, conv, k, sent):
        self.seq, self.conv, self.turn, self.sent = seq, conv.cid, k + 1, sent
        self.prompt, self.output = conv.prompt_len(k), conv.turns[k].output
        self.node = -1
        self.cached = self.done = self.left = self.generated = self.ctx = self.chunks = 0
        self.granted = sent                 # when it left the client's queue (Turn 1 only)
        self.full = False
        self.first_token = self.finish = math.nan
        self.finished = env.event()     # succeeds at the last token


class ReplicaNode:
    def __init__(self, env, idx, pm, max_batched_tokens, retok):
        self.env, self.idx, self.pm, self.mbt = env, idx, pm, max_batched_tokens
        self.retok = retok              # share of an answer the next turn's re-tokenised prompt still matches
        self.capacity = pm.kv_capacity_tokens
        self.used = 0                   # KV tokens reserved by running requests
        self.cache: dict[int, int] = {}  # conversation -> cached tokens
        self.prefill: list[Req] = []    # admitted, prompt not finished (FIFO)
        self.decoding: list[Req] = []
        self.wakeup: WakeUp | None = None  # what the idle process sleeps on
        self.iterations = self.mixed = self.max_batch = 0   # statistics: what the run exercised
        env.process(self.serve())

    def active_seqs(self) -> int:
        return len(self.decoding) + len(self.prefill)

    def _fits(self, tokens: int, what: str) -> None:
        free = self.capacity - self.used - sum(self.cache.values())
        assert tokens <= free, f"R{self.idx} at t={self.env.now}: {what} needs {tokens} KV tokens, {free} free " \
                               "(the engine would evict or queue: the oracle does not model that)"

    def arrive(self, req: Req) -> None:
        """The request reaches the node: reserve its KV and queue its prompt for prefill."""
        assert self.active_seqs() < MAX_SEQS
        entry = self.cache.pop(req.conv, 0)   # the conversation's cached blocks now belong to the request
        need = req.prompt + req.output
        self._fits(need, f"admitting {req.conv}/{req.turn}")
        self.used += need
        req.node = self.idx
        req.cached = req.done = (min(entry, req.prompt) // BLOCK) * BLOCK
        req.left = req.prompt - req.cached
        req.full = req.cached == 0
        self.prefill.append(req)
        if self.wakeup is not None:
            self.wakeup.ring()

    def serve(self):
        env, pm = self.env, self.pm
        while True:
            if not self.prefill and not self.decoding:
                self.wakeup = WakeUp(env)
                yield self.wakeup
                self.wakeup = None
            stepping = list(self.decoding)
            batch, ctx = len(stepping), sum(r.ctx for r in stepping)
            budget = self.mbt - batch
            chunks = []
            for r in self.prefill:
                if budget <= 0:
                    break
                n = min(r.left, budget)
                budget -= n
                chunks.append((r, n))
            if chunks:
                dt = pm.iteration([(n, r.done, r.full) for r, n in chunks], batch, ctx)
            else:
                a, b = pm.decode_coeffs(batch)
                dt = a + b * ctx
            self.iterations += 1
            self.mixed += bool(chunks and batch)
            self.max_batch = max(self.max_batch, batch + len(chunks))
            yield env.timeout(dt)
            now = env.now
            done = []
            for r in stepping:          # every decoder produced one token
                r.generated += 1
                r.ctx += 1
                if r.generated >= r.output:
                    done.append(r)
            for r, n in chunks:
                r.chunks += 1
                r.done += n
                r.left -= n
                if r.left == 0:         # the last prompt chunk emits the first token
                    self.prefill.remove(r)
                    r.first_token = now
                    r.generated, r.ctx = 1, r.prompt + 1
                    if r.output <= 1:
                        done.append(r)
                    else:
                        self.decoding.append(r)
            done.sort(key=lambda r: r.seq)
            for r in done:              # the iteration's completions all take effect at its end...
                if r in self.decoding:
                    self.decoding.remove(r)
                r.finish = now
                self.used -= r.prompt + r.output
                hit = r.prompt + int(self.retok * r.output)   # re-tokenised history: part of the answer
                tokens = min((hit // BLOCK) * BLOCK, self.capacity)
                self._fits(tokens, f"caching {r.conv}/{r.turn}")
                self.cache[r.conv] = tokens
            for r in done:              # ...before their clients hear of them
                r.finished.succeed()


class Oracle:
    def __init__(self, sc: Scenario, params: perf.PerfParams | None = None):
        lay = sc.layout_obj
        assert lay.n_R and not (lay.n_P or lay.n_D or lay.n_pD), "the oracle models replica-only layouts"
        assert sc.rehash_frac == 0, "rehashing needs a PD path: not modelled"
        self.sc = sc
        self.pm = perf.for_scenario(sc, params)
        rngs = wl.streams(sc.seed)
        self.convs = wl.generate(sc, rngs["arrivals"], rngs["lengths"])
        self.rng_route = rngs["routing"]
        self.env = simpy.Environment()
        retok = self.pm.retok(sc.workload)
        self.nodes = [ReplicaNode(self.env, i, self.pm, sc.max_batched_tokens, retok) for i in range(lay.n_R)]
        cap = sc.client_concurrency
        self.slots = simpy.Resource(self.env, capacity=cap) if cap else None
        self.requests: list[Req] = []

    def _new(self, conv, k, sent) -> Req:
        req = Req(self.env, len(self.requests), conv, k, sent)
        self.requests.append(req)
        return req

    def conversation(self, conv):
        env, think = self.env, self.sc.think_time_s
        yield env.timeout(conv.arrival_s)
        req = self._new(conv, 0, env.now)
        slot = None
        if self.slots is not None:
            slot = self.slots.request()
            yield slot                   # FIFO wait for a client connection (inside Turn-1 TTFT)
            req.granted = env.now
        node = self.nodes[int(self.rng_route.integers(len(self.nodes)))]
        for k in range(len(conv.turns)):
            if k:
                req = self._new(conv, k, env.now + think)
                if think:
                    yield env.timeout(think)
            yield env.timeout(self.pm.hop(req.prompt, node.active_seqs()))
            node.arrive(req)
            yield req.finished
        if slot is not None:
            self.slots.release(slot)

    def run(self) -> pd.DataFrame:
        for conv in self.convs:
            self.env.process(self.conversation(conv))
        self.env.run()
        for n in self.nodes:
            assert not n.prefill and not n.decoding and n.used == 0
        rows = [(r.conv, r.turn, f"R{r.node}", r.sent, r.first_token, r.finish, r.cached, r.chunks, r.granted)
                for r in self.requests]
        df = pd.DataFrame(rows, columns=["conversation", "turn", "node", "sent", "first_token", "finish",
                                         "cached", "prefill_chunks", "granted"])
        return df.sort_values(["conversation", "turn"], ignore_index=True)


def run_oracle(sc: Scenario, params: perf.PerfParams | None = None) -> pd.DataFrame:
    """Per-request records of the SimPy model, sorted by (conversation, turn): conversation, turn, node
    ("R<i>"), sent, first_token, finish (seconds), cached (prefix-cache hit, tokens), prefill_chunks
    (iterations its prompt took) and granted (when Turn 1 got a client slot; = sent for later turns)."""
    return Oracle(sc, params).run()
