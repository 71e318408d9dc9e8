"""Per-request records and the run summary.

Definitions (the PPD benchmark's, used everywhere in this project):
  TTFT  = first token time - time the request left the client (the server's TTFT, every turn)
  TPOT  = (E2E - TTFT) / (output tokens - 1)
  E2E   = last token time - time the request left the client
  client_wait_ms = time the request waited inside the client for a connection slot before it was sent
          (only the benchmark client, client=benchmark, waits; Turn 1 only; 0 under client=open). The measured
          benchmark's own clock starts at the request's creation: its TTFT = TTFT + client_wait_ms
          (``client_clock``)
  Turn 2+ = every turn with index >= 2
  SLO attainment = share of successful Turn 2+ requests at or under the threshold
  joint SLO attainment (slo_joint, goodput's test) = share of attempted Turn 2+ requests that succeeded with
          TTFT <= the first slo_ttft_ms and TPOT <= the first slo_tpot_ms
  success rate = successful requests / attempted requests (turns after a failure are never sent)
  local share = share of Turn 2+ requests served without P (append-prefill on the decode node, or a replica)
  link utilization = bytes moved / (run duration x total egress bandwidth of the P nodes)
  preemptions = running requests preempted by recompute when a node ran out of KV blocks (vLLM V1)
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..model.extrapolation import extrapolation_notes
from .fidelity import for_scenario as expected_error_for
from ..sim.request import OK, PD
from ..sim.request import columns as request_columns
from .columns import Columns, as_columns, frame, mean, rows_frame, share
from .saturation import saturation

if TYPE_CHECKING:
    import pandas as pd

RECORD_COLUMNS = ("conversation", "turn", "path", "prefill_node", "decode_node", "arrival_s", "first_token_s",
                  "finish_s", "new_input_tokens", "prompt_tokens", "cached_tokens", "prefill_tokens",
                  "output_tokens", "kv_bytes", "preemptions", "status", "ttft_ms", "tpot_ms", "e2e_ms", "client_wait_ms",
                  "est_ttft_local_ms", "est_ttft_pd_ms", "est_dttft", "est_dtpot", "est_score")
# the Eq.1 inputs a Turn 2+ request on a D node was decided on (NaN elsewhere): estimated TTFT of each path,
# relative TTFT gain of local and relative TPOT loss of local (policies.estimate), and S = w_ttft*dTTFT - w_tpot*dTPOT
EST_COLUMNS = (("est_ttft_local_ms", "ttft_local", 1e3), ("est_ttft_pd_ms", "ttft_pd", 1e3),
               ("est_dttft", "d_ttft", 1.0), ("est_dtpot", "d_tpot", 1.0), ("est_score", "score", 1.0))


def records(sim) -> pd.DataFrame:
    """The per-request records as a DataFrame (imports pandas; ``record_columns`` does not)."""
    return frame(record_columns(sim), RECORD_COLUMNS)


def _ints(xs: list) -> np.ndarray:
    """An int64 array of a list of ints: ``np.fromiter`` skips the dtype and shape discovery ``np.array`` does
    (half the time on a run's few hundred records; the same array)."""
    return np.fromiter(xs, np.int64, len(xs))


def _floats(xs: list) -> np.ndarray:
    return np.fromiter(xs, np.float64, len(xs))


def record_columns(sim) -> Columns:
    """The per-request records as numpy columns (``RECORD_COLUMNS``), sorted by (conversation, turn)."""
    node_name = np.array([n.name for n in sim.nodes] + [""], dtype=object)   # index -1 (no node): ""
    c = request_columns(sim.requests)                  # one compiled pass over the requests, by field name
    status = c["status"]
    ok = np.array([s == OK for s in status], dtype=bool)
    sent = _floats(c["sent"])
    first = _floats(c["first_token"])
    fin = _floats(c["finish"])
    out = _ints(c["output"])
    ttft = np.where(ok, (first - sent) * 1e3, np.nan)
    e2e = np.where(ok, (fin - sent) * 1e3, np.nan)
    tpot = np.where(ok & (out > 1), (e2e - ttft) / np.maximum(out - 1, 1), np.nan)
    est = {col: _floats(c["est_" + key]) * f for col, key, f in EST_COLUMNS}
    return {
        "conversation": _ints(c["conv"]),
        "turn": _ints(c["turn"]),
        "path": np.array([p or "none" for p in c["path"]], dtype=object),
        "prefill_node": node_name[_ints(c["prefill_node"])],
        "decode_node": node_name[_ints(c["decode_node"])],
        "arrival_s": _floats(c["created"]),   # made by the client
        "first_token_s": np.where(first >= 0, first, np.nan),
        "finish_s": np.where(fin >= 0, fin, np.nan),
        "new_input_tokens": _ints(c["new_input"]),
        "prompt_tokens": _ints(c["prompt"]),
        "cached_tokens": _ints(c["cached"]),
        "prefill_tokens": _ints(c["prefill_tokens"]),
        "output_tokens": out,
        "kv_bytes": _ints(c["kv_bytes"]),
        "preemptions": _ints(c["preemptions"]),
        "status": np.array(status, dtype=object),
        "ttft_ms": ttft, "tpot_ms": tpot, "e2e_ms": e2e,
        "client_wait_ms": _floats(c["client_wait_ms"]), **est,
    }


def client_clock(df: pd.DataFrame) -> pd.DataFrame:
    """The records as the measured benchmark's clock saw them: TTFT and E2E from the request's creation in
    the client (``ttft_ms``/``e2e_ms`` + ``client_wait_ms``). Used to compare with measured runs."""
    out = df.copy()
    wait = np.nan_to_num(df["client_wait_ms"].to_numpy(), nan=0.0)
    out["ttft_ms"] = df["ttft_ms"].to_numpy() + wait
    out["e2e_ms"] = df["e2e_ms"].to_numpy() + wait
    return out


def percentiles(v: np.ndarray, qs=(10, 50, 90, 99)) -> list[float]:
    """``np.percentile(v, qs)`` (method "linear") with numpy's own arithmetic step by step, on a sorted copy:
    the same floats, without numpy's quantile machinery (which imports numpy.ma on every first call).
    ``v``: no NaN, at least one value."""
    s = np.sort(v)
    n = s.size
    out = []
    for q in qs:
        vi = (n - 1) * (q / 100)            # numpy: virtual index (n - 1) * q, q = q / 100
        if vi >= n - 1:
            out.append(float(s[-1]))
            continue
        lo = int(vi // 1)                   # floor (vi >= 0)
        gamma = vi - lo
        a, b = float(s[lo]), float(s[lo + 1])
        diff = b - a                        # numpy's _lerp: from the nearer end
        out.append(b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma)
    return out


def _stats(values: np.ndarray) -> dict[str, float | None]:
    v = values[~np.isnan(values)]
    if v.size == 0:
        return {"mean": None, "p10": None, "p50": None, "p90": None, "p99": None}
    p10, p50, p90, p99 = percentiles(v)
    return {"mean": _r(mean(v)), "p10": _r(p10), "p50": _r(p50), "p90": _r(p90), "p99": _r(p99)}


def _r(x: float) -> float:
    """Round to 6 significant decimals so JSON is stable and readable."""
    return float(f"{float(x):.6g}")


def groups(df: pd.DataFrame | Columns) -> dict:
    """TTFT / TPOT / E2E / client-wait statistics of the successful requests by turn group."""
    cols = as_columns(df)
    ok = cols["status"] == OK
    turn = cols["turn"]
    out = {}
    for name, mask in (("turn1", turn == 1), ("turn2plus", turn >= 2), ("all", np.ones(turn.size, bool))):
        m = mask & ok
        out[name] = {"count": int(m.sum()),
                     "ttft_ms": _stats(cols["ttft_ms"][m]),
                     "tpot_ms": _stats(cols["tpot_ms"][m]),
                     "e2e_ms": _stats(cols["e2e_ms"][m]),
                     "client_wait_ms": _stats(cols["client_wait_ms"][m])}
    return out


def summary(sim, df: pd.DataFrame | Columns) -> dict:
    sc = sim.sc
    cols = as_columns(df)
    ok = cols["status"] == OK
    turn = cols["turn"]
    groups_ = groups(cols)
    t2 = (turn >= 2) & ok
    slo = {}
    for thr in sc.slo_ttft_ms:
        slo[f"ttft_{slo_label(thr)}ms"] = _share(cols["ttft_ms"][t2] <= thr)
    for thr in sc.slo_tpot_ms:
        tp = cols["tpot_ms"][t2]
        slo[f"tpot_{slo_label(thr)}ms"] = _share(tp[~np.isnan(tp)] <= thr)
    attempted = turn.size
    start = float(cols["arrival_s"].min()) if attempted else 0.0
    end = float(np.nanmax(cols["finish_s"])) if ok.any() else start
    duration = max(end - start, 1e-9)
    tokens = int(cols["output_tokens"][ok].sum())
    p_egress = max(len(sim.p_nodes), 1) * sim.fabric.bw
    moved = int(cols["kv_bytes"].sum())
    t2_all = turn >= 2
    paths = cols["path"]
    local = share(paths[t2_all] != PD) if t2_all.any() else 0.0
    return {
        "scenario": sc.to_dict(),
        "groups": groups_,
        "warnings": sample_warnings(groups_),
        "slo_attainment": slo,
        "success_rate": _r(share(ok)) if attempted else 0.0,
        "throughput": {"requests_per_s": _r(ok.sum() / duration), "tokens_per_s": _r(tokens / duration)},
        "kv": {"bytes": moved, "transfers": int((cols["kv_bytes"] > 0).sum()),
               "link_utilization": _r(moved / (duration * p_egress)) if sim.p_nodes else 0.0},
        "local_share": _r(local),
        "slo_joint": slo_joint(cols, sc.slo_ttft_ms[0], sc.slo_tpot_ms[0]),
        "saturation": saturation(sim, cols),
        "preemptions": int(sum(n.preemptions for n in sim.nodes)),
        "sim": {"events": int(sim.events), "simulated_s": _r(sim.now), "wall_s": _r(sim.wall_s)},
        # constants carried over outside the measured pair (H100-SXM + Llama-3.1-8B, tp 1): [] when measured
        "extrapolated": list(dict.fromkeys(n for g, t in ({(sc.gpu, sc.tp_degree)} if not sc.heterogeneous else
                                                           sc.role_hardware().values())
                                           for n in extrapolation_notes(g, sc.model, t))),
        # the scenario's validation class and its expected error per metric (metrics/fidelity.py)
        "expected_error": expected_error_for(sc),
    }


MIN_SAMPLE = 100   # a group's figures resting on fewer successful requests than this carry a warning


def sample_warnings(groups: dict, min_n: int = MIN_SAMPLE) -> list[str]:
    """One warning per group of the summary with fewer than ``min_n`` successful requests (none: its
    figures are empty, and for Turn 2+ so is the SLO attainment, shown as 0)."""
    return [f"{name}: no successful requests; its figures are empty" if d["count"] == 0 else
            f"{name}: figures rest on {d['count']} requests (fewer than {min_n}); treat them as noisy"
            for name, d in groups.items() if d["count"] < min_n]


def slo_joint(df: pd.DataFrame | Columns, ttft_ms: float, tpot_ms: float) -> dict:
    """Goodput's test (DistServe): the share of *attempted* Turn 2+ requests that succeeded and met both the
    TTFT and the TPOT SLO (a failed request meets neither), with each condition's own share."""
    cols = as_columns(df)
    t2 = cols["turn"] >= 2
    ok = cols["status"][t2] == OK
    ttft = cols["ttft_ms"][t2]
    tpot = cols["tpot_ms"][t2]
    t_ok = ok & (ttft <= ttft_ms)
    p_ok = ok & (np.isnan(tpot) | (tpot <= tpot_ms))    # one-token answers have no TPOT: they meet it
    n = int(t2.sum())
    part = (lambda m: _r(share(m)) if n else 0.0)
    return {"slo_ttft_ms": ttft_ms, "slo_tpot_ms": tpot_ms, "requests": n, "attainment": part(t_ok & p_ok),
            "ttft": part(t_ok), "tpot": part(p_ok), "success": part(ok)}


def slo_label(x: float) -> str:
    """An SLO threshold as it appears in a summary key: 100 -> "100", 0.5 -> "0p5"."""
    return str(int(x)) if float(x).is_integer() else str(x).replace(".", "p")


def _share(mask: np.ndarray) -> float:
    return _r(share(mask)) if mask.size else 0.0


def node_table(sim) -> pd.DataFrame:
    return frame(node_columns(sim))


def node_columns(sim) -> dict[str, list]:
    """One entry per node: name, role, busy share of the run, iterations, KV capacity in tokens."""
    duration = max(sim.now, 1e-9)
    return {
        "node": [n.name for n in sim.nodes],
        "role": [n.role for n in sim.nodes],
        "utilization": [min(n.busy_time / duration, 1.0) for n in sim.nodes],
        "iterations": [n.iterations for n in sim.nodes],
        "kv_capacity_tokens": [n.capacity for n in sim.nodes],
        "preemptions": np.array([n.preemptions for n in sim.nodes], dtype=np.int64),
    }


SPAN_COLUMNS = ("node", "role", "start_s", "end_s", "kind", "conversations")


def spans(sim) -> pd.DataFrame | None:
    if sim.spans is None:
        return None
    return rows_frame(sim.spans, SPAN_COLUMNS)


def is_finite_summary(s: dict) -> bool:
    """Every number in the summary is finite (None marks an empty group)."""
    def walk(x):
        if isinstance(x, dict):
            return all(walk(v) for v in x.values())
        if isinstance(x, list):
            return all(walk(v) for v in x)
        if isinstance(x, float):
            return math.isfinite(x)
        return True
    return walk(s)
