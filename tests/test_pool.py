"""The one worker pool (ppd_core.analysis.pool): ordered map with progress, pids, the start-method rule, and
healing after a worker dies."""
from __future__ import annotations

import os

import pytest

from ppd_core.analysis.pool import WorkerCrashed, WorkerPool, mp_context
from ppd_core.config.errors import PPDError


def test_start_method_is_never_fork():
    assert mp_context().get_start_method() in ("forkserver", "spawn")


def test_map_keeps_order_reports_progress_and_heals_after_a_crash():
    seen = []
    with WorkerPool(2) as pool:
        assert pool.pids() == ()
        assert pool.map(abs, range(-7, 0), progress=lambda d, t: seen.append((d, t)), chunksize=2) == \
            [7, 6, 5, 4, 3, 2, 1]
        assert seen[-1] == (7, 7) and [d for d, _ in seen] == sorted(d for d, _ in seen)
        first = pool.pids()
        assert first and os.getpid() not in first
        with pytest.raises(WorkerCrashed) as err:          # the worker process dies mid-job
            pool.map(os._exit, [3])
        assert isinstance(err.value, PPDError) and "\n" not in str(err.value)
        assert pool.map(abs, [-2]) == [2]                   # the next call runs on fresh processes
        assert set(pool.pids()).isdisjoint(first)
        assert pool.result(pool.submit(divmod, 7, 2)) == (3, 1)
    assert pool.pids() == ()


def _worker_state() -> tuple[int, bool]:
    import gc
    import sys
    return gc.get_freeze_count(), "ppd_core.sim.engine" in sys.modules


def test_workers_start_with_the_job_modules_loaded_and_frozen_out_of_the_collector():
    """init_worker: the sweep job's modules are there before the first job, and their objects sit in the
    collector's permanent generation (so a stream of short runs does not walk them)."""
    with WorkerPool(1) as pool:
        frozen, loaded = pool.result(pool.submit(_worker_state))
    assert loaded and frozen > 10_000


def test_workers_are_validated():
    for bad in (0, 257, True, 1.5):
        with pytest.raises(PPDError):
            WorkerPool(bad)


def test_a_late_report_of_an_old_crash_keeps_the_fresh_processes():
    """A server shares one pool between sessions: two callers see the same crash; the first heals the pool
    and runs again; the second's late report must not shut down the fresh processes under the first."""
    import time
    with WorkerPool(1) as pool:
        a, b = pool.submit(os._exit, 3), pool.submit(os._exit, 3)
        with pytest.raises(WorkerCrashed):
            pool.result(a)
        fresh = [pool.submit(time.sleep, 0.2) for _ in range(4)]    # session 1 retries on fresh processes
        live = pool.pids()
        with pytest.raises(WorkerCrashed):
            pool.result(b)                                  # session 2 learns of the old crash only now
        assert pool.pids() == live and live                 # the fresh processes were kept
        assert [pool.result(f, timeout=60) for f in fresh] == [None] * 4     # none cancelled, none crashed
