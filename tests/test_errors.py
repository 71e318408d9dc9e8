"""Every user-facing error crosses a process boundary intact (issue #8: an unpicklable error raised in a
worker broke the dashboard's process pool for every session)."""
from __future__ import annotations

import importlib
import inspect
import multiprocessing
import pickle
import pkgutil
from concurrent.futures import ProcessPoolExecutor

import pytest

import ppd_core
from ppd_core.config.errors import PPDError, ScenarioError, TraceError


def _all_subclasses(cls: type) -> list[type]:
    for mod in pkgutil.walk_packages(ppd_core.__path__, "ppd_core."):   # every module: subclasses anywhere
        if mod.name.endswith("__main__"):
            continue
        importlib.import_module(mod.name)
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


def _sample(cls: type) -> PPDError:
    """An instance built from the constructor's own signature (every argument given a distinct value)."""
    args = []
    for name, p in list(inspect.signature(cls.__init__).parameters.items())[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        args.append(7 if name == "line" else f"{name} value")
    if not args:
        args = ["something went wrong"]
    return cls(*args)


def _same(a: BaseException, b: BaseException) -> bool:
    return type(a) is type(b) and str(a) == str(b) and a.args == b.args and vars(a) == vars(b)


@pytest.mark.parametrize("cls", _all_subclasses(PPDError), ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_error_round_trips_through_pickle(cls):
    err = _sample(cls)
    back = pickle.loads(pickle.dumps(err))
    assert _same(err, back), (vars(err), vars(back))


def test_fields_survive():
    e = pickle.loads(pickle.dumps(ScenarioError("model", "does not fit")))
    assert (e.key, str(e)) == ("model", "model: does not fit")
    t = pickle.loads(pickle.dumps(TraceError("bad row", line=12, source="up.csv")))
    assert (t.line, t.source, str(t)) == (12, "up.csv", "up.csv line 12: bad row")


def _raise_infeasible():
    # a real ppd_core error from a real run: 70B weights do not fit one H100
    return ppd_core.run(ppd_core.Scenario(model="Llama-3.1-70B", tp=1, conversations=2))


def _raise_trace_error():
    raise TraceError("malformed", line=3, source="x.csv")


def test_error_in_a_spawned_worker_comes_back_and_the_pool_lives():
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        with pytest.raises(ScenarioError) as exc:
            pool.submit(_raise_infeasible).result(timeout=120)
        assert exc.value.key == "model" and "do not fit" in str(exc.value)
        with pytest.raises(TraceError) as exc2:
            pool.submit(_raise_trace_error).result(timeout=60)
        assert (exc2.value.line, exc2.value.source) == (3, "x.csv")
        # not BrokenProcessPool: the same pool still runs scenarios
        assert pool.submit(ppd_core.run, ppd_core.Scenario(conversations=2)).result(timeout=120).summary
