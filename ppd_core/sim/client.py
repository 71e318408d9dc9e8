"""The client: conversations arrive, each sends its turns one after another (the next turn when the
previous one finished, after ``think_time_s``), and every request carries its timeout. ``client=open``: a
conversation's first turn is sent the moment it arrives (production traffic never waits for the server).
``client=benchmark``: the measured closed-loop client, at most ``client_concurrency`` conversations hold a
connection and new ones wait in the client (``Request.created`` -> ``Request.sent``: ``client_wait_ms``). A mixin of ``engine.Simulator``: it works on the simulator's state (the
request list, connection slots, conversation states) and hands each request to the proxy (``_send``).
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Final

from ..workloads.conversation import Conversation
from .events import EventKind, Host
from .request import OK, Request

if TYPE_CHECKING:
    from .node import Node

SEND: Final = EventKind.SEND


class ConvState:
    __slots__ = ("conv", "next_turn", "node", "done")

    def __init__(self, conv: Conversation):
        self.conv = conv
        self.next_turn = 0
        self.node: Node | None = None
        self.done = False


class Client(Host):
    """Client-side methods of the simulator (see the module docstring)."""

    # the simulator's state these methods use (declared for mypyc; engine.Simulator sets it)
    sc: Any
    requests: list[Request]
    arrived: int
    cap: int
    active: int
    queue: deque[Request]
    by_id: dict[int, ConvState]
    open_convs: int

    def push(self, t: float, kind: EventKind, a: Any, b: Any = None) -> None:
        raise NotImplementedError

    def push_timeout(self, t: float, req: Request) -> None:
        raise NotImplementedError

    def _send(self, req: Request, t: float) -> None:
        raise NotImplementedError

    def _new_request(self, cs: ConvState, sent: float) -> Request:
        k = cs.next_turn
        turn = cs.conv.turns[k]
        req = Request(len(self.requests), cs.conv.cid, k + 1, sent, turn.new_input, turn.output,
                      cs.conv.prompt_len(k))
        self.requests.append(req)
        self.push_timeout(sent + self.sc.timeout_s, req)
        return req

    def _arrival(self, cs: ConvState, t: float) -> None:
        self.arrived += 1
        req = self._new_request(cs, t)
        cap = self.cap
        if cap and self.active >= cap:
            self.queue.append(req)       # waits for a client connection (client_wait_ms, outside TTFT)
        else:
            self.active += 1
            self._send(req, t)

    def _release_slot(self, t: float) -> None:
        self.active -= 1
        while self.queue:
            req = self.queue.popleft()
            if not req.aborted:
                self.active += 1
                self._send(req, t)
                break

    def _end_conversation(self, conv: int, t: float, holds_slot: bool = True) -> None:
        cs = self.by_id[conv]
        if not cs.done:
            cs.done = True
            self.open_convs -= 1
            if holds_slot:
                self._release_slot(t)

    # ---- request outcomes --------------------------------------------------------------------------------
    def first_token(self, req: Request, t: float) -> None:
        req.first_token = t

    def finished(self, req: Request, t: float) -> None:
        req.finish = t
        req.status = OK
        cs = self.by_id[req.conv]
        cs.next_turn += 1
        if cs.next_turn < len(cs.conv.turns):
            nxt = self._new_request(cs, t + self.sc.think_time_s)
            self.push(nxt.sent, SEND, nxt)
        else:
            self._end_conversation(req.conv, t)
