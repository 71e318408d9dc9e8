"""The calling process as one more worker: chunks of a sweep run in this process *and* in a ``WorkerPool``,
both taking from one queue, so a sweep on N cores needs N - 1 worker processes and this process starts
simulating at once instead of waiting for them to start (forkserver + ``import ppd_core``: 0.4-1 s on the
2-core machine, most of a small sweep or of one goodput step).

A feeder thread first warms the pool up with an empty job (so no chunk waits inside a pool that is still
starting), then keeps at most ``IN_FLIGHT`` chunks per worker submitted; this thread runs chunks from the
same queue until it is empty and then collects what the pool returned. Every result is handed to
``collect`` from this thread only (progress callbacks stay on the caller's thread). Results do not depend on
which process ran a chunk: every run is a pure function of its scenario.

Not for a server's long-lived pool (the dashboard): there the calling thread is the server's and must not
simulate, so ``executors.run_grid`` sends everything to the pool.
"""
from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Callable, Sequence

from ..config.errors import PPDError
from .pool import WorkerPool

IN_FLIGHT = 2          # chunks submitted ahead per worker process (one running, one queued)
FEED_POLL_S = 0.05     # how often the feeder looks again while the pool is full


def _noop() -> None:
    return None


def run_with_parent(pool: WorkerPool, chunks: Sequence[list], job: Callable, collect: Callable) -> None:
    """Run ``job(chunk)`` for every chunk, here and in ``pool``; ``collect(job(chunk)[1])`` for each, on this
    thread. Chunks come largest first (``executors._chunks``); both sides take them in that order. If the pool
    cannot start, this thread runs every chunk; a worker that dies on a chunk raises ``WorkerCrashed``."""
    queue = deque(chunks)
    lock = threading.Lock()          # guards queue and futures: a chunk is taken and submitted in one step
    futures: list[Future] = []
    stop = threading.Event()

    def feed() -> None:
        try:
            pool.result(pool.submit(_noop))            # start the worker processes before giving them work
        except (PPDError, OSError, RuntimeError):        # the pool cannot start: this thread runs everything
            return
        while not stop.is_set():
            with lock:
                live = sum(not f.done() for f in futures)
                if live < IN_FLIGHT * pool.workers:
                    if not queue:
                        return
                    chunk = queue.popleft()
                    try:
                        futures.append(pool.submit(job, chunk))
                    except (PPDError, OSError, RuntimeError):   # broken pool: the chunk goes back
                        queue.appendleft(chunk)
                        return
                    continue
                pending = [f for f in futures if not f.done()]
            wait(pending, timeout=FEED_POLL_S, return_when=FIRST_COMPLETED)

    feeder = threading.Thread(target=feed, name="ppd-feeder", daemon=True)
    feeder.start()
    collected: set[int] = set()

    def drain(block: bool) -> None:
        with lock:
            mine = [f for f in futures if id(f) not in collected]
        if block:
            wait(mine)
        for f in mine:
            if f.done():
                collected.add(id(f))
                collect(pool.result(f)[1])

    try:
        while True:
            with lock:
                chunk = queue.popleft() if queue else None
            if chunk is None:
                break
            collect(job(chunk)[1])
            drain(block=False)
        stop.set()         # the queue is empty: whatever the feeder submitted is in ``futures`` now
        drain(block=True)
    finally:
        stop.set()
        with lock:
            for f in futures:
                f.cancel()
