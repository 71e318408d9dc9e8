"""A classroom on one server (issue #30 item 3): the server-wide queue in front of the simulations and the
single-flight map that computes identical scenarios once.

``Flights`` (single flight): a map from a scenario's cache key (the ``Scenario`` itself, hashed by value, and
``record_spans``) to the one ``Future`` of its computation. The first session to ask computes (through the
st.cache_data function, so a cached scenario is a cache read); sessions asking for the same key meanwhile wait
on that future and share its result. A user-facing exception reaches every waiter of that key (each gets its
own copy, a pickle round trip) and nobody else; a script-control exception of the computing session (it was
stopped or rerun) is never passed on: its waiters compute in their turn. The map holds a key only while it is
in flight, so it is bounded by the sessions waiting. st.cache_data alone also serialises identical misses, but
per call and without telling anyone; this map is what the counters below count.

``Admission`` (queue): a FIFO of the sessions' requests for new simulations, at most ``slots`` of them running
(the page's simulations and the drawing of its numbers) at once. A waiting session is told its place
(``waiting(ahead, running)``, called about twice a second: the page shows "Queued: N ahead of you"); a session
that reruns while it waits (a second slider move) takes its own place back instead of queueing again.
Requests whose scenarios are all cached or already in flight do not queue.

Both live in one ``Traffic`` per server (``st.cache_resource``, ``traffic()``): no module-level mutable state.
Its counters (``stats()``) are written, when ``PPD_FLIGHT_STATS`` names a file, as JSON after every change (for
``tests/test_classroom.py`` and ``scripts/bench_classroom.py``). When the queue drains the server runs one full
garbage collection (instead of Streamlit's after every script run, ``runner.postScriptGC``, switched off in
``.streamlit/config.toml``: it was half the server's CPU with 40 sessions).
"""
from __future__ import annotations

import contextlib
import gc
import json
import os
import pickle
import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterator

import streamlit as st

STATS_ENV = "PPD_FLIGHT_STATS"
POLL_S = 0.5                # how often a waiting session hears its place (and can notice its own rerun)


class _Retry:
    """The computing session stopped (rerun, closed) before its result: a waiter computes in its turn."""


RETRY = _Retry()


def _copy(exc: BaseException) -> BaseException:
    """A waiter's own copy of the computing session's exception (exceptions here are picklable)."""
    try:
        return pickle.loads(pickle.dumps(exc))
    except (pickle.PicklingError, TypeError, AttributeError):
        return RuntimeError(f"{type(exc).__name__}: {exc}")


@dataclass
class _Ticket:
    session: str
    vacant: bool = False        # its session's run stopped while waiting: the session's next request takes it


@dataclass
class Traffic:
    """The server's queue and single-flight map (see the module docstring)."""
    slots: int
    stats_path: str | None = None
    _lock: threading.Condition = field(default_factory=threading.Condition)
    _flights: dict = field(default_factory=dict)      # key -> Future, while in flight
    _done: OrderedDict = field(default_factory=OrderedDict)   # keys computed lately (as many as the cache holds)
    done_max: int = 256
    _waiting: list = field(default_factory=list)      # _Ticket, FIFO
    _running: int = 0
    _counts: dict = field(default_factory=lambda: dict.fromkeys(
        ("computed", "joined", "failed", "admitted", "queued", "replaced", "max_waiting", "collections"), 0))

    # ---- counters ------------------------------------------------------------------------------------------
    def _count(self, name: str, n: int = 1) -> None:
        """Caller holds the lock."""
        self._counts[name] += n
        if self.stats_path:
            tmp = f"{self.stats_path}.{threading.get_ident()}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(self._counts, f)
            os.replace(tmp, self.stats_path)

    def stats(self) -> dict:
        with self._lock:
            return {**self._counts, "in_flight": len(self._flights), "waiting": len(self._waiting),
                    "running": self._running}

    def computed(self) -> None:
        """A simulation ran (called on a cache miss)."""
        with self._lock:
            self._count("computed")

    # ---- single flight -------------------------------------------------------------------------------------
    def in_flight(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._flights

    def run(self, key: Hashable, fn: Callable[[], Any]) -> Any:
        """``fn()`` once for all the sessions that ask for ``key`` while it runs."""
        while True:
            with self._lock:
                fut = self._flights.get(key)
                lead = fut is None
                if lead:
                    fut = self._flights[key] = Future()
                else:
                    self._count("joined")
            if not lead:
                try:
                    out = fut.result()
                except Exception as exc:            # the computing session's error: this waiter's copy
                    raise _copy(exc) from None
                if out is RETRY:
                    continue
                return out
            try:
                out = fn()
            except Exception as exc:                # a user-facing error: every waiter of this key gets it
                with self._lock:
                    self._flights.pop(key, None)
                    self._count("failed")
                fut.set_exception(exc)
                raise
            except BaseException:                   # this session was stopped or rerun: not the waiters' fault
                with self._lock:
                    self._flights.pop(key, None)
                fut.set_result(RETRY)
                raise
            with self._lock:
                self._flights.pop(key, None)
                self._done[key] = True
                self._done.move_to_end(key)
                while len(self._done) > self.done_max:
                    self._done.popitem(last=False)
            fut.set_result(out)
            return out

    # ---- admission -----------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def turn(self, session: str, waiting: Callable[[int, int], None] | None = None) -> Iterator[None]:
        """Wait for a slot, FIFO, telling ``waiting(ahead, running)`` the place while waiting; hold it for the
        block. An exception while waiting (the session's run stopped or rerun) leaves its place to its next
        request; one in the block frees the slot."""
        with self._lock:
            mine = next((t for t in self._waiting if t.session == session and t.vacant), None)
            if mine is not None:
                mine.vacant = False
                self._count("replaced")
            else:
                mine = _Ticket(session)
                self._waiting.append(mine)
            queued = False
            while True:
                while self._waiting and self._waiting[0].vacant:
                    self._waiting.pop(0)            # a session that left (or will ask again): no one waits for it
                if self._waiting[0] is mine and self._running < self.slots:
                    self._waiting.pop(0)
                    self._running += 1
                    self._count("admitted")
                    break
                if not queued:
                    queued = True
                    self._count("queued")
                    self._counts["max_waiting"] = max(self._counts["max_waiting"], len(self._waiting))
                ahead = sum(1 for t in self._waiting[:self._waiting.index(mine)] if not t.vacant)
                running = self._running
                try:
                    if waiting is not None:
                        self._lock.release()
                        try:
                            waiting(ahead, running)
                        finally:
                            self._lock.acquire()
                    self._lock.wait(POLL_S)
                except BaseException:
                    mine.vacant = True
                    self._lock.notify_all()
                    raise
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
                idle = self._running == 0 and not any(not t.vacant for t in self._waiting)
                self._lock.notify_all()
                if idle:
                    self._count("collections")
            if idle:
                gc.collect()                        # once per burst, not after every script run

    def needs_turn(self, keys) -> bool:
        """True unless every key was computed lately (a cache read) or is in flight (the request joins it).
        A key the cache has evicted since is computed without queueing: rare, and only a little unfair."""
        with self._lock:
            return any(k not in self._done and k not in self._flights for k in keys)


@st.cache_resource(show_spinner=False)
def traffic(slots: int, done_max: int) -> Traffic:
    """The server's one ``Traffic`` (per slot count: the worker count decides it; ``done_max``: the size of
    the simulation cache)."""
    return Traffic(slots=max(1, slots), stats_path=os.environ.get(STATS_ENV) or None, done_max=done_max)
