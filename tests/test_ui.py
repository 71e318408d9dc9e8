"""The dashboard's robustness contract (issue #8) without a browser: the address bar is the share link,
navigation keeps the scenario, infeasible hardware is said before running, and the worker pool heals."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from streamlit.testing.v1 import AppTest

import ppd_core
from ppd_core.config.scenario import Scenario

from conftest import APP, open_app

TIMEOUT = 180
PAGES = {"explore": None, "sweep": "pages/sweep.py", "learn": "pages/learn.py"}


pytestmark = pytest.mark.usefixtures("in_process_runs")


def _app(query: dict | None = None, page: str | None = None) -> AppTest:
    return open_app(query, page, TIMEOUT)


def _link(at: AppTest) -> str:
    links = [c.value for c in at.code if c.value.startswith("http")]
    assert links, "no share link"
    return links[0]


def _bar(at: AppTest) -> dict:
    return {k: (v if isinstance(v, str) else v[-1]) for k, v in at.query_params.items()}


def _assert_bar_is_link(at: AppTest) -> None:
    """The address bar (as the script left it) names exactly the share link's query."""
    from urllib.parse import parse_qsl, urlsplit
    assert _bar(at) == dict(parse_qsl(urlsplit(_link(at)).query)), (_bar(at), _link(at))


# ---------------------------------------------------------------------------------- the address bar

def test_canonical_link_replaces_what_was_typed():
    at = _app({"layout": "2P_2D", "policy": "PD"})
    assert _bar(at) == {"layout": "2P_2D", "policy": "pd"}
    _assert_bar_is_link(at)
    assert ppd_core.parse(_link(at)) == Scenario(layout="2P_2D", policy="pd")


def test_rejected_value_leaves_the_bar():
    at = _app({"layout": "99P", "unknown": "1", "learn_step": "3"})
    assert _bar(at) == {}
    ws = " ".join(w.value for w in at.warning)
    assert "`layout`" in ws and "`unknown`" in ws and "`learn_step`" in ws      # a Learn-only key on Explore
    _assert_bar_is_link(at)


def test_warning_names_the_value_really_used_and_the_link_shows_it():
    at = _app({"turns": "1000000"})
    ws = [w.value for w in at.warning if w.value.startswith("Parameter")]   # not the saturation notices
    assert len(ws) == 1 and "64" in ws[0]
    assert _bar(at) == {"turns": "64"} and ppd_core.parse(_link(at)).turns == 64


@pytest.mark.parametrize("page", list(PAGES))
def test_bar_follows_every_widget_change(page):
    at = _app({"conversations": "2" if page == "learn" else "40", "qps": "3"}, PAGES[page])
    _assert_bar_is_link(at)
    at.slider(key="qps").set_value(5.5).run()
    _assert_bar_is_link(at)
    assert _bar(at)["qps"] == "5.5"
    at.radio(key="policy").set_value("ppd").run()
    at.selectbox(key="layout").set_value("1P_2D_1pD").run()
    _assert_bar_is_link(at)
    assert ppd_core.parse(_link(at).split("&learn_")[0]).policy == "ppd"
    at.slider(key="qps").set_value(4.0).run()            # back to the default: the key leaves the bar
    assert "qps" not in _bar(at)
    _assert_bar_is_link(at)


def test_learn_page_keys_in_the_bar():
    at = _app({"conversations": "2", "learn_prefills": "4"}, "pages/learn.py")
    assert _bar(at)["learn_prefills"] == "4"
    at.slider(key="learn_step").set_value(1).run()      # 0 (event 1) is the default: left out of the bar
    assert _bar(at)["learn_step"] == "1"
    _assert_bar_is_link(at)


# ---------------------------------------------------------------------------------- navigation

def test_navigation_menu_keeps_the_scenario():
    """The sidebar navigation clears the query string; the next page starts from the scenario shown."""
    at = _app({"conversations": "30", "layout": "1P_3D"})
    at.slider(key="qps").set_value(6.0).run()
    want = Scenario(qps=6.0, conversations=30, layout="1P_3D")
    for page in ("pages/sweep.py", "pages/advise.py", "pages/paper.py", "pages/learn.py", "pages/explore.py"):
        for k in list(at.query_params.keys()):      # what st.navigation's menu does to the address bar
            del at.query_params[k]
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
        rejected = [w.value for w in at.warning if w.value.startswith("Parameter")]
        assert not rejected, (page, rejected)
        bar = ppd_core.parse({k: v for k, v in _bar(at).items() if not k.startswith(("adv_", "paper_"))})
        if page.endswith("learn.py"):
            assert bar == want.with_(conversations=3)           # Learn shows its own handful
        else:
            assert bar == want, (page, _bar(at))


def test_advisor_inputs_are_url_bound():
    at = _app({"adv_gpus": "2", "adv_qps": "1,4", "adv_slo_ttft": "300", "model": "Qwen2.5-14B", "qps": "7"},
              "pages/advise.py")
    assert not at.warning, [w.value for w in at.warning]
    assert at.selectbox(key="adv_gpus").value == "2"
    assert at.selectbox(key="model").value == "Qwen2.5-14B"
    assert list(at.multiselect(key="adv_qps").value) == [1, 4]
    assert at.number_input(key="adv_slo_ttft").value == 300.0
    assert _bar(at) == {"adv_gpus": "2", "adv_qps": "1,4", "adv_slo_ttft": "300", "model": "Qwen2.5-14B", "qps": "7"}
    bad = _app({"adv_gpus": "3", "adv_qps": "1,x", "adv_convs": "nan"}, "pages/advise.py")
    ws = " ".join(w.value for w in bad.warning)
    assert "`adv_gpus`" in ws and "`adv_qps`" in ws and "`adv_convs`" in ws
    assert _bar(bad) == {"adv_qps": "1"}


# ---------------------------------------------------------------------------------- infeasible hardware

@pytest.mark.parametrize("page", ["explore", "sweep", "learn", "advise"])
def test_infeasible_hardware_is_said_before_running(page):
    path = {"explore": None, "advise": "pages/advise.py"}.get(page, PAGES.get(page))
    at = _app({"model": "Llama-3.1-70B", "conversations": "2"}, path)
    errors = [e.value for e in at.error]
    assert errors and all("do not fit" in e and "smallest TP that fits is tp=4" in e for e in errors), errors
    assert all("\n" not in e for e in errors)
    assert not at.get("plotly_chart") and not at.metric
    if page != "advise":
        at.selectbox(key="tp").set_value("4").run()
        assert not at.error and at.get("plotly_chart")


# ---------------------------------------------------------------------------------- the pool heals

def _die():
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_that_dies_twice_is_one_line_and_the_pool_is_replaced(monkeypatch):
    monkeypatch.setenv("PPD_DASHBOARD_WORKERS", "1")
    from ui import runner
    first = runner.worker_pool(1)
    for f in first.warmup:
        f.result(timeout=120)

    # a script guarded like app.py: spawned workers import the main script as __mp_main__
    script = """
if __name__ == "__main__":
    import streamlit as st
    from test_ui import _die
    from ui import runner
    st.session_state["_workers"] = True
    runner.run_or_stop(lambda: runner.call(_die))
    st.write("not reached")
"""
    at = AppTest.from_string(script, default_timeout=TIMEOUT).run()
    assert not at.exception, [e.message for e in at.exception]
    assert len(at.error) == 1 and "worker" in at.error[0].value and "\n" not in at.error[0].value
    assert runner.worker_pool(1) is first                   # the same WorkerPool, healed: fresh processes
    assert first.pool.result(first.pool.submit(ppd_core.run, Scenario(conversations=2)), timeout=120).summary
    assert first.pids() and os.getpid() not in first.pids()


def test_killing_a_worker_during_a_run_spares_every_session(monkeypatch):
    """A worker killed by its PID while session A runs: A still shows its numbers (its runs are retried on
    the fresh pool) or one line, never a traceback; a session B started afterwards runs normally."""
    monkeypatch.setenv("PPD_DASHBOARD_WORKERS", "2")
    from ui import runner
    workers = runner.worker_pool(2)
    for f in workers.warmup:
        f.result(timeout=120)
    pids = workers.pids()
    assert len(pids) == 2
    query = {"conversations": "2500", "qps": "9"}           # long enough to be killed mid-run
    a = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    for k, v in query.items():
        a.query_params[k] = v
    a.session_state["_workers"] = True
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("at", a.run()))
    t.start()
    time.sleep(1.5)
    os.kill(pids[0], signal.SIGKILL)
    t.join(timeout=TIMEOUT)
    assert not a.exception, [e.message for e in a.exception]
    assert len(a.error) <= 1 and all("\n" not in e.value for e in a.error)
    if not a.error:
        want = ppd_core.run(ppd_core.parse(query)).summary["groups"]["turn2plus"]["ttft_ms"]["mean"]
        shown = [m.value for m in a.metric if m.label == "Turn 2+ TTFT mean"]
        assert shown and shown[0] == f"{want:,.1f} ms"       # the PPD card comes first (then PD, Replica)
    b = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    b.query_params["conversations"] = "60"
    b.query_params["seed"] = "11"
    b.session_state["_workers"] = True
    b.run()
    assert not b.exception and not b.error
    want = ppd_core.run(Scenario(conversations=60, seed=11)).summary["groups"]["turn2plus"]["ttft_ms"]["mean"]
    shown = [m.value for m in b.metric if m.label == "Turn 2+ TTFT mean"]
    assert shown and shown[0] == f"{want:,.1f} ms"           # PPD's card first, then PD and Replica
    assert runner.worker_pool(2) is workers and pids[0] not in workers.pids()     # healed in place


def test_sample_warnings_are_shown_per_system():
    """A run resting on few requests: its summary's warnings appear once per system, one line each; a large
    enough run shows none."""
    script = """
import streamlit as st
import ppd_core
from ppd_core.config.scenario import Scenario
from ui import widgets
small = ppd_core.run(Scenario(conversations=5)).summary
widgets.sample_warnings({"PPD": small, "PD": small | {"warnings": []}})
"""
    at = AppTest.from_string(script, default_timeout=TIMEOUT).run()
    assert not at.exception, [e.message for e in at.exception]
    assert len(at.warning) == 1 and at.warning[0].value.startswith("PPD: ") and "fewer than 100" in at.warning[0].value
