"""The command line as a user runs it: ``python -m ppd_core run ...`` in a subprocess from the repo root."""
from __future__ import annotations

import pytest

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

import ppd_core
from ppd_core import Scenario

from helpers import check_invariants, strip_wall

ROOT = Path(__file__).resolve().parents[1]

STATS = {"mean", "p10", "p50", "p90", "p99"}
GROUP = {"count", "ttft_ms", "tpot_ms", "e2e_ms", "client_wait_ms"}


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ppd_core", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def cli_many(arglists: list[list[str]]) -> list[tuple[int, str, str]]:
    """Run several invocations concurrently (each one mostly waits on imports)."""
    procs = [subprocess.Popen([sys.executable, "-m", "ppd_core", *a], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for a in arglists]
    out = []
    for p in procs:
        so, se = p.communicate(timeout=120)
        out.append((p.returncode, so, se))
    return out


def run_json(*args: str) -> dict:
    r = cli("run", *args, "--json")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    return json.loads(r.stdout)


def test_run_json_prints_exactly_the_documented_keys():
    s = run_json("conversations=20", "layout=1P_2D_1pD")
    assert set(s) == {"scenario", "groups", "warnings", "slo_attainment", "success_rate", "throughput", "kv", "local_share",
                      "slo_joint", "saturation", "preemptions", "sim", "extrapolated", "expected_error"}
    assert set(s["expected_error"]) == {"class", "label", "errors_pct", "reasons", "source"}
    assert s["expected_error"]["class"] == "unseen_layout"      # 1P_2D_1pD: a mixed layout the fit never read
    assert set(s["saturation"]) == {"saturated", "offered_qps", "served_qps", "resource", "busy", "evidence"}
    assert isinstance(s["preemptions"], int) and s["preemptions"] >= 0
    assert s["extrapolated"] == []          # H100-SXM + Llama-3.1-8B at tp 1: the measured pair
    assert s["scenario"] == Scenario(conversations=20, layout="1P_2D_1pD").to_dict()
    assert set(s["groups"]) == {"turn1", "turn2plus", "all"}
    for g in s["groups"].values():
        assert set(g) == GROUP
        assert isinstance(g["count"], int) and g["count"] > 0
        for m in ("ttft_ms", "tpot_ms", "e2e_ms"):
            assert set(g[m]) == STATS
            assert all(isinstance(v, float) for v in g[m].values())
    assert set(s["slo_attainment"]) == {"ttft_100ms", "ttft_200ms", "ttft_500ms", "tpot_15ms", "tpot_30ms"}
    assert set(s["throughput"]) == {"requests_per_s", "tokens_per_s"}
    assert set(s["kv"]) == {"bytes", "transfers", "link_utilization"}
    assert set(s["sim"]) == {"events", "simulated_s", "wall_s"}
    assert isinstance(s["success_rate"], float) and isinstance(s["local_share"], float)
    # the CLI prints what the library computes
    lib = ppd_core.run(Scenario(conversations=20, layout="1P_2D_1pD"))
    check_invariants(lib)
    assert strip_wall(s) == strip_wall(lib.summary)


BAD = [
    (["layout=9X"], "layout", None),
    (["qps=-1"], "qps", None),
    (["qps=nan"], "qps", None),
    (["bandwidth_gbps=1e400"], "bandwidth_gbps", None),
    (["turns=100000"], "turns", None),
    (["model=unknown"], "model", None),
    (["foo=1"], "foo", None),
    (["conversations=20000", "turns=64"], "turns", "200000"),
    (["conversations=20000", "qps=0.1"], "qps", "86400"),
]


def test_bad_input_exits_2_with_one_line_naming_the_key():
    results = cli_many([["run", *args, "--json"] for args, _, _ in BAD])
    for (args, key, cap), (rc, out, err) in zip(BAD, results):
        assert rc == 2, (args, rc, err)
        assert "Traceback" not in err and "Traceback" not in out, args
        lines = err.splitlines()
        assert len(lines) == 1 and err.endswith("\n"), (args, err)
        assert lines[0].startswith(f"error: {key}: "), (args, lines[0])
        if cap:
            assert cap in lines[0], (args, lines[0])
        assert out == "", (args, out)


def test_shared_url_argument_equals_key_value_pairs(tmp_path):
    csv = tmp_path / "records.csv"
    url = "http://host:8501/explore?layout=1P_3D&qps=2&conversations=25&policy=ppd"
    a = cli("run", url, "--json", "--records", str(csv))
    assert a.returncode == 0, a.stderr
    b = run_json("layout=1P_3D", "qps=2", "conversations=25", "policy=ppd")
    assert strip_wall(json.loads(a.stdout)) == strip_wall(b)
    assert b["scenario"]["layout"] == "1P_3D" and b["local_share"] == 1.0
    res = ppd_core.run(Scenario(layout="1P_3D", qps=2, conversations=25, policy="ppd"))
    lib = check_invariants(res)
    assert csv.read_text() == lib.to_csv(index=False)
    assert len(pd.read_csv(csv)) == len(lib) == b["groups"]["all"]["count"]


def test_done_when_2p_2pd_beats_2p_2d_on_turn2_ttft_at_equal_tpot():
    """At the default workload (ShareGPT, 500 conversations, QPS 4): 2P_2pD's Turn 2+ mean TTFT is at least
    50 % below classic PD's on 2P_2D, with Turn 2+ mean TPOT within +-15 %."""
    (rc1, out1, err1), (rc2, out2, err2) = cli_many([["run", "layout=2P_2D", "policy=pd", "--json"],
                                                     ["run", "layout=2P_2pD", "--json"]])
    assert rc1 == 0 and rc2 == 0, (err1, err2)
    pd_, ppd = json.loads(out1), json.loads(out2)
    assert pd_["scenario"]["conversations"] == ppd["scenario"]["conversations"] == 500
    assert pd_["scenario"]["workload"] == "sharegpt"
    a, b = pd_["groups"]["turn2plus"], ppd["groups"]["turn2plus"]
    assert a["count"] > 1000 and b["count"] == a["count"]
    assert b["ttft_ms"]["mean"] <= 0.5 * a["ttft_ms"]["mean"], (a["ttft_ms"], b["ttft_ms"])
    ratio = b["tpot_ms"]["mean"] / a["tpot_ms"]["mean"]
    assert 0.85 <= ratio <= 1.15, (a["tpot_ms"], b["tpot_ms"])
    assert pd_["local_share"] == 0 and ppd["local_share"] == 1
    assert pd_["success_rate"] == ppd["success_rate"] == 1.0


def test_human_output_and_no_command():
    r = cli("run", "conversations=10")
    assert r.returncode == 0 and r.stderr == ""
    assert "turn2plus" in r.stdout and "success rate" in r.stdout
    r = cli()
    assert r.returncode == 2


def test_goodput_json_prints_exactly_the_documented_keys():
    r = cli("goodput", "layout=1P_1pD", "conversations=30", "--attain", "0.5", "--rel-tol", "0.3", "--no-cache",
            "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert set(d) == {"scenario", "attain", "systems"} and d["attain"] == 0.5
    assert set(d["systems"]) == {"PPD", "PD", "Replica"}
    for v in d["systems"].values():
        assert set(v) == {"goodput_qps", "goodput_qps_per_gpu", "goodput_qps_per_usd_hour", "limit", "runs"}
        assert v["limit"] in ("ttft", "tpot", "success") and v["runs"] >= 1
    bad = cli("goodput", "--attain", "1.5")
    assert bad.returncode == 2 and "attain" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("args, msg", [
    (["--errors-out", "e.json"], "--errors-out: only with --families"),
    (["--families", "--lolo"], "--families: not together with --lolo"),
    (["--families", "--family", "pD", "--errors-out", "e.json"], "--errors-out: needs every family"),
    (["--families", "--errors-out", "e.txt"], "must end in .json"),
])
def test_calibrate_families_refuses_contradictory_flags(args, msg, tmp_path):
    r = cli("calibrate", "--measured", str(tmp_path), *args)
    assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr
