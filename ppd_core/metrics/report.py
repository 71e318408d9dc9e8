"""Per-request records and the run summary.

Definitions (the PPD benchmark's, used everywhere in this project):
  TTFT  = first token time - request send time (Turn 1 includes waiting for a client connection slot)
  TPOT  = (E2E - TTFT) / (output tokens - 1)
  E2E   = last token time - request send time
  Turn 2+ = every turn with index >= 2
  SLO attainment = share of successful Turn 2+ requests at or under the threshold
  success rate = successful requests / attempted requests (turns after a failure are never sent)
  local share = share of Turn 2+ requests served without P (append-prefill on the decode node, or a replica)
  link utilization = bytes moved / (run duration x total egress bandwidth of the P nodes)
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..model.extrapolation import extrapolation_notes
from ..sim.request import OK, PD


RECORD_COLUMNS = ("conversation", "turn", "path", "prefill_node", "decode_node", "arrival_s", "first_token_s",
                  "finish_s", "new_input_tokens", "prompt_tokens", "cached_tokens", "prefill_tokens",
                  "output_tokens", "kv_bytes", "status", "ttft_ms", "tpot_ms", "e2e_ms")


def records(sim) -> pd.DataFrame:
    names = [n.name for n in sim.nodes]
    reqs = sorted(sim.requests, key=lambda r: (r.conv, r.turn))
    ok = np.array([r.status == OK for r in reqs], dtype=bool)
    sent = np.array([r.sent for r in reqs], dtype=float)
    first = np.array([r.first_token for r in reqs], dtype=float)
    fin = np.array([r.finish for r in reqs], dtype=float)
    out = np.array([r.output for r in reqs], dtype=np.int64)
    ttft = np.where(ok, (first - sent) * 1e3, np.nan)
    e2e = np.where(ok, (fin - sent) * 1e3, np.nan)
    tpot = np.where(ok & (out > 1), (e2e - ttft) / np.maximum(out - 1, 1), np.nan)
    return pd.DataFrame({
        "conversation": np.array([r.conv for r in reqs], dtype=np.int64),
        "turn": np.array([r.turn for r in reqs], dtype=np.int64),
        "path": [r.path or "none" for r in reqs],
        "prefill_node": [names[r.prefill_node] if r.prefill_node >= 0 else "" for r in reqs],
        "decode_node": [names[r.decode_node] if r.decode_node >= 0 else "" for r in reqs],
        "arrival_s": sent,
        "first_token_s": np.where(first >= 0, first, np.nan),
        "finish_s": np.where(fin >= 0, fin, np.nan),
        "new_input_tokens": np.array([r.new_input for r in reqs], dtype=np.int64),
        "prompt_tokens": np.array([r.prompt for r in reqs], dtype=np.int64),
        "cached_tokens": np.array([r.cached for r in reqs], dtype=np.int64),
        "prefill_tokens": np.array([r.prefill_tokens for r in reqs], dtype=np.int64),
        "output_tokens": out,
        "kv_bytes": np.array([r.kv_bytes for r in reqs], dtype=np.int64),
        "status": [r.status for r in reqs],
        "ttft_ms": ttft, "tpot_ms": tpot, "e2e_ms": e2e,
    }, columns=list(RECORD_COLUMNS))


def _stats(values: np.ndarray) -> dict[str, float | None]:
    v = values[~np.isnan(values)]
    if v.size == 0:
        return {"mean": None, "p50": None, "p90": None, "p99": None}
    p50, p90, p99 = np.percentile(v, [50, 90, 99])
    return {"mean": _r(v.mean()), "p50": _r(p50), "p90": _r(p90), "p99": _r(p99)}


def _r(x: float) -> float:
    """Round to 6 significant decimals so JSON is stable and readable."""
    return float(f"{float(x):.6g}")


def summary(sim, df: pd.DataFrame) -> dict:
    sc = sim.sc
    ok = df["status"].to_numpy() == OK
    turn = df["turn"].to_numpy()
    groups = {}
    for name, mask in (("turn1", turn == 1), ("turn2plus", turn >= 2), ("all", np.ones(len(df), bool))):
        m = mask & ok
        groups[name] = {"count": int(m.sum()),
                        "ttft_ms": _stats(df["ttft_ms"].to_numpy()[m]),
                        "tpot_ms": _stats(df["tpot_ms"].to_numpy()[m]),
                        "e2e_ms": _stats(df["e2e_ms"].to_numpy()[m])}
    t2 = (turn >= 2) & ok
    slo = {}
    for thr in sc.slo_ttft_ms:
        slo[f"ttft_{slo_label(thr)}ms"] = _share(df["ttft_ms"].to_numpy()[t2] <= thr)
    for thr in sc.slo_tpot_ms:
        tp = df["tpot_ms"].to_numpy()[t2]
        slo[f"tpot_{slo_label(thr)}ms"] = _share(tp[~np.isnan(tp)] <= thr)
    attempted = len(df)
    start = float(df["arrival_s"].min()) if attempted else 0.0
    end = float(np.nanmax(df["finish_s"].to_numpy())) if ok.any() else start
    duration = max(end - start, 1e-9)
    tokens = int(df["output_tokens"].to_numpy()[ok].sum())
    p_egress = max(len(sim.p_nodes), 1) * sim.fabric.bw
    moved = int(df["kv_bytes"].sum())
    t2_all = turn >= 2
    paths = df["path"].to_numpy()
    local = float(np.mean(paths[t2_all] != PD)) if t2_all.any() else 0.0
    return {
        "scenario": sc.to_dict(),
        "groups": groups,
        "slo_attainment": slo,
        "success_rate": _r(ok.mean()) if attempted else 0.0,
        "throughput": {"requests_per_s": _r(ok.sum() / duration), "tokens_per_s": _r(tokens / duration)},
        "kv": {"bytes": moved, "transfers": int((df["kv_bytes"].to_numpy() > 0).sum()),
               "link_utilization": _r(moved / (duration * p_egress)) if sim.p_nodes else 0.0},
        "local_share": _r(local),
        "sim": {"events": int(sim.events), "simulated_s": _r(sim.now), "wall_s": _r(sim.wall_s)},
        # constants carried over outside the measured pair (H100-SXM + Llama-3.1-8B, tp 1): [] when measured
        "extrapolated": extrapolation_notes(sc.gpu, sc.model, sc.tp_degree),
    }


def slo_label(x: float) -> str:
    """An SLO threshold as it appears in a summary key: 100 -> "100", 0.5 -> "0p5"."""
    return str(int(x)) if float(x).is_integer() else str(x).replace(".", "p")


def _share(mask: np.ndarray) -> float:
    return _r(mask.mean()) if mask.size else 0.0


def node_table(sim) -> pd.DataFrame:
    duration = max(sim.now, 1e-9)
    return pd.DataFrame({
        "node": [n.name for n in sim.nodes],
        "role": [n.role for n in sim.nodes],
        "utilization": [min(n.busy_time / duration, 1.0) for n in sim.nodes],
        "iterations": [n.iterations for n in sim.nodes],
        "kv_capacity_tokens": [n.capacity for n in sim.nodes],
    })


def spans(sim) -> pd.DataFrame | None:
    if sim.spans is None:
        return None
    return pd.DataFrame(sim.spans, columns=["node", "role", "start_s", "end_s", "kind", "conversations"])


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
