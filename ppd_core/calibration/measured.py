"""Reading measured PPD results (CSV files with the schemas of ../shared/data/ppd-measured) and turning
each measured point into the scenario that reproduces how it was measured.

Benchmark artefacts modelled (see docs/fidelity.md):
* comprehensive sweep: Poisson conversation arrivals inside a 10 s window (``arrival_window_s=10``), Turn 2
  sent as soon as Turn 1 ends, the benchmark client with 50 connections (``client=benchmark``,
  ``client_concurrency=50``) whose queue the benchmark counted inside Turn-1 TTFT (validate compares on that clock:
  ``report.client_clock``), a 120 s client timeout, and the proxy's routing-key quirk that sends ~2/9 of Turn-2
  requests down P->D as "new conversations" (``rehash_frac=2/9``).
* ShareGPT/WildChat runs: 500 conversations, 50-connection client, 180 s timeout; ``ppd_dynamic`` runs on
  layouts whose start scripts never passed the PPD flag (1P_2D_1pD, 1P_1D_2pD, 1R_1P_1D_1pD) are baseline runs.
  The others (1P_3D, 2P_2D at weights (1,1), (1,2), (2,1)) are simulated with ``policy=dynamic`` at the run's
  ``w_ttft``/``w_tpot`` (the online Eq.1); validate reports their error as its own rows ("dynamic").
* turn/model scaling: conversations strictly one at a time (a 1-slot client, arrivals far apart).
Deliberately left out: the md5/hash pinning of P to D (we pick P by least load), the back-to-back QPS
points of the ShareGPT runs sharing warm prefix caches, infrastructure failures (backend crashes,
the wedged 3P_1D server): points with those failure classes are listed but not simulated.
"""
from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from types import MappingProxyType
from pathlib import Path

from ..config import catalog
from ..config.errors import PPDError, ScenarioError
from ..config.scenario import Scenario

VALID_FAILURE = frozenset({"ok", "sporadic_disconnect", ""})
PPD_FLAG_LAYOUTS = frozenset({"1P_3D", "2P_2D", "3P_1D", "1R_1P_2D", "1R_2P_1D", "2R_1P_1D"})
HASH_QUIRK_FRAC = 2.0 / 9.0
COMPREHENSIVE_METRICS = ("avg_ttft_ms", "p50_ttft_ms", "p99_ttft_ms", "avg_tpot_ms", "p50_tpot_ms",
                         "p99_tpot_ms", "avg_e2e_ms", "p50_e2e_ms", "p99_e2e_ms")
TRACE_METRICS = COMPREHENSIVE_METRICS + ("p90_ttft_ms", "p90_tpot_ms", "p90_e2e_ms")
SCALING_METRICS = ("avg_ttft_ms", "p50_ttft_ms", "p99_ttft_ms", "avg_tpot_ms", "p50_tpot_ms", "p99_tpot_ms",
                   "avg_e2e_ms")


@dataclass(frozen=True)
class Row:
    """One measured CSV row: a (config, workload, qps, turn) with its metrics."""
    file: str
    line: int
    kind: str              # comprehensive | trace | scaling
    config: str
    workload: str
    qps: float
    turn: str              # as the CSV names it: turn1, turn2, average, turn2plus, all_turns, turn<k>, ...
    group: str             # simulator group: turn1 | turn2plus | all | turn:<k>
    metrics: dict          # metric name -> measured float
    success: float         # percent
    usable: bool
    reason: str            # why not simulated ('' if usable)
    scenario: Scenario | None
    pair_key: tuple = ()   # (workload, qps) for PD-vs-PPD pairing


def _f(x: str | None) -> float | None:
    if x is None or x == "":
        return None
    try:
        v = float(x)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


# gpu_mem_util of the scaling runs (measured README: 8B 0.90, Qwen2.5-14B 0.92), used when a row has none
SCALING_MEM_UTIL = MappingProxyType({"Llama-3.1-8B": 0.90, "Qwen2.5-14B": 0.92})


def _model_name(raw: str | None) -> str:
    """Catalog name of a model as a measured file spells it: 'meta-llama/Llama-3.1-8B', 'qwen2.5-14b',
    '14B' ... (exact name, then the catalog name inside it, then the parameter-count tag)."""
    if not raw or not raw.strip():
        return "Llama-3.1-8B"
    tail = raw.strip().split("/")[-1].lower()
    names = list(catalog.models())
    for name in names:
        if name.lower() == tail or name.lower() in tail:
            return name
    words = set(re.split(r"[-._ ]", tail))
    for name in names:   # e.g. "14B" or "qwen-14b-instruct": the size tag names one catalog model
        if {t for t in re.split(r"[-.]", name.lower()) if re.fullmatch(r"\d+b", t)} & words:
            return name
    raise ScenarioError("model", f"{raw!r} is not in the model catalog ({', '.join(names)})")


def _schema(header: list[str]) -> str | None:
    cols = set(header)
    if {"config", "context_class", "t2_type", "turn"} <= cols:
        return "comprehensive"
    if {"config", "turn_group", "qps"} <= cols:
        return "trace"
    if {"config", "scope", "turn"} <= cols:   # turn scaling, model scaling (num_turns optional: 2)
        return "scaling"
    return None


def read_dir(path: str | Path) -> tuple[list[Row], list[str]]:
    """All rows of every CSV in ``path`` whose schema we simulate, and notes on the files skipped."""
    root = Path(path)
    if not root.is_dir():
        raise PPDError(f"--measured: {path} is not a directory")
    rows: list[Row] = []
    notes: list[str] = []
    for f in sorted(root.glob("*.csv")):
        with open(f, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            kind = _schema(reader.fieldnames or [])
            if kind is None:
                notes.append(f"{f.name}: schema not simulated by validate (skipped)")
                continue
            for i, r in enumerate(reader, start=2):
                rows.extend(_rows(kind, f.name, i, r))
    return rows, notes


def _scenario(reason: list[str], **kw) -> Scenario | None:
    try:
        return Scenario(**kw)
    except ScenarioError as exc:
        reason.append(str(exc))
        return None


def _rows(kind: str, fname: str, line: int, r: dict) -> list[Row]:
    config = r.get("config", "")
    reason: list[str] = []
    try:
        model = _model_name(r.get("model") or r.get("model_name"))
    except ScenarioError as exc:
        model, reason = "Llama-3.1-8B", [str(exc)]
    mem = _f(r.get("gpu_mem_util")) or (SCALING_MEM_UTIL.get(model, 0.90) if kind == "scaling" else 0.85)
    if kind == "comprehensive":
        workload = r.get("workload") or f"{r.get('context_class')}_{r.get('t2_type')}"
        qps = _f(r.get("qps")) or 0.0
        success = _f(r.get("success_rate")) or 0.0
        fc = r.get("failure_class", "")
        if fc not in VALID_FAILURE:
            reason.append(f"failure_class={fc} (infrastructure failure, not a load effect)")
        turn = r.get("turn", "")
        group = {"turn1": "turn1", "turn2": "turn2plus", "average": "all"}.get(turn, "")
        sc = None if reason else _scenario(reason, layout=config, policy="pd", model=model, gpu_mem_util=mem,
                                           workload=workload, qps=qps, arrival_window_s=10.0,
                                           client="benchmark", client_concurrency=50, timeout_s=120.0, rehash_frac=HASH_QUIRK_FRAC)
        names = COMPREHENSIVE_METRICS
        pair = (workload, qps)
    elif kind == "trace":
        workload = (r.get("dataset") or "sharegpt").lower()
        qps = _f(r.get("qps")) or 0.0
        success = _f(r.get("success_rate_turns")) or 0.0
        mode = r.get("mode", "baseline")
        dynamic = mode == "ppd_dynamic" and config in PPD_FLAG_LAYOUTS
        policy = "dynamic" if dynamic else "pd"   # the proxy's decision engine: Eq.1 online at its weights
        weights = {"w_ttft": _f(r.get("w_ttft")) or 1.0, "w_tpot": _f(r.get("w_tpot")) or 1.0} if dynamic else {}
        turn = r.get("turn_group", "")
        group = {"turn1": "turn1", "turn2plus": "turn2plus", "all_turns": "all"}.get(turn, "")
        if success < 95.0:
            reason.append(f"success_rate_turns={success:g} < 95 (the KV-transfer path wedged; not a load effect)")
        convs = int(_f(r.get("num_conversations")) or 500)
        sc = None if reason else _scenario(reason, layout=config, policy=policy, model=model, gpu_mem_util=mem,
                                           workload=workload, qps=qps, conversations=convs,
                                           client="benchmark", client_concurrency=50, timeout_s=180.0, **weights)
        names = TRACE_METRICS
        pair = (workload, qps, r.get("weights", ""))
    else:  # scaling: sequential conversations of 128 -> 128 turns
        workload = r.get("workload") or "small_mid_bal"
        qps = _f(r.get("qps_nominal")) or 4.0
        success = _f(r.get("success_rate")) or 0.0
        scope = r.get("scope", "")
        if scope == "per_turn":
            turn = f"turn{r.get('turn')}"
            group = f"turn:{r.get('turn')}"
        else:
            turn = scope.replace("_agg", "")
            group = {"turn1_agg": "turn1", "turn2plus_agg": "turn2plus", "all_agg": "all"}.get(scope, "")
        n_turns = int(_f(r.get("num_turns")) or 2)
        convs = max(int(_f(r.get("total_conversations")) or 10), 1)
        sc = None if reason else _scenario(reason, layout=config, policy="pd", model=model, gpu_mem_util=mem,
                                           workload=workload, turns=n_turns, conversations=convs, qps=0.01,
                                           client="benchmark", client_concurrency=1, timeout_s=180.0)
        names = SCALING_METRICS
        pair = (workload, n_turns)
    if not group:
        reason.append(f"unknown turn selector {turn!r}")
    metrics = {m: v for m in names if (v := _f(r.get(m))) is not None and v > 0}
    if not metrics and not reason:
        reason.append("no measured metric (count 0)")
    return [Row(fname, line, kind, config, workload, qps, turn, group, metrics, success, not reason,
                "; ".join(reason), sc if not reason else None, pair)]
