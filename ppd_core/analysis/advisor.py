"""Layout advisor: which layout and Turn 2+ policy to run on N GPUs for a workload, a QPS range and SLOs.

    python -m ppd_core advise --gpus 4 --qps 1,2,4,8 --slo-ttft-ms 200 --slo-tpot-ms 30 workload=sharegpt

Candidates
    Every layout of ``n_gpus / tp`` nodes that ``parse_layout`` accepts: counts of R, P, D, pD summing to
    the node count (4 nodes: the paper's 17 layouts). Above ``HYBRID_MAX_NODES`` (8) nodes the hybrids that
    mix R with P/D/pD are skipped (their number grows cubically), which the notes say. Each layout with D
    nodes is tried with policy ``pd`` (x=0), ``ppd`` (x=1) and ``dynamic`` with w_ttft=1 and w_tpot in
    ``DYNAMIC_W_TPOT`` (0.5, 1, 2, 4); the policy only acts on D nodes, so layouts without D (replicas,
    P + pD) run once (as ``dynamic``; labelled "n/a (no D)"). ``dynamic-table`` is not tried.

Runs
    Every candidate at every QPS of the range, through the sweep engine (cache, local cores or Dask). The
    scenario is the user's base scenario (gpu, model, tp, workload, conversations, ...) with the candidate's
    layout/policy/weights, the QPS, and the SLO thresholds set to the single given TTFT and TPOT threshold.

Score (higher is better, in [0, 1])
    For each QPS q: ``A_ttft(q)`` = share of successful Turn 2+ requests with TTFT <= ``slo_ttft_ms``,
    ``A_tpot(q)`` likewise for TPOT (the summary's ``slo_attainment``), combined as
    ``(weight_ttft * A_ttft + weight_tpot * A_tpot) / (weight_ttft + weight_tpot)``; the score is the mean
    over the QPS range. A candidate whose success rate is below ``MIN_SUCCESS`` (95 %) at any QPS is not
    eligible and ranks after every eligible one. Order: eligible first, then score (desc), then mean
    throughput in tokens/s (desc), then mean Turn 2+ TTFT (asc), then the label (so the order is total).

Rank by (``rank_by``)
    ``attainment`` (the score above), ``goodput_per_gpu`` or ``goodput_per_usd``: the grid goodput (the
    highest QPS of the range up to which every QPS has at least ``attain`` of Turn 2+ requests within both
    SLOs, ``grid_goodput``) per GPU, or per GPU-dollar-hour (``Scenario.price_usd_h``: ``gpu_price_usd_h`` or
    the catalog's public price). Ties: the score, then as above. ``gpu_types`` runs every candidate on each
    listed GPU type (same GPU count), so the ranking compares GPU types too.

Pareto front
    Per candidate, x = mean over the QPS range of the Turn 2+ mean TTFT and y = the same for TPOT (both
    lower is better). A candidate is on the front when no other has x' <= x and y' <= y with one strictly
    smaller. Only eligible candidates compete (all of them if none is eligible).

Every row carries ``explore``: ``/?`` + the scenario's query at the highest QPS of the range (where the
candidates differ most), the Explore view of that run. A trace workload's link cannot carry the trace.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..config.errors import ScenarioError
from ..config.layout import MAX_NODES, Layout, parse_layout
from ..config.scenario import SPEC, Scenario, _coerce, parse, render_value
from ..metrics.report import MIN_SAMPLE, slo_label
from .grid import check_grid_size
from .progress import Progress
from .sweep import run_grid

HYBRID_MAX_NODES = 8
MAX_ADVISE_NODES = 32
MAX_QPS_POINTS = 12
DYNAMIC_W_TPOT = (0.5, 1.0, 2.0, 4.0)
MIN_SUCCESS = 0.95
DEFAULT_QPS = (1.0, 2.0, 4.0, 8.0)
# keys the advisor sets itself (the rest of the base scenario is the user's)
ADVISOR_KEYS = ("layout", "policy", "qps", "w_ttft", "w_tpot", "slo_ttft_ms", "slo_tpot_ms")
RANK_BY = ("attainment", "goodput_per_gpu", "goodput_per_usd")
RANKED_COLUMNS = ("rank", "layout", "gpu", "category", "policy", "w_ttft", "w_tpot", "label", "eligible", "score",
                  "slo_ttft", "slo_tpot", "goodput_qps", "goodput_per_gpu", "goodput_per_usd_h", "ttft_ms",
                  "tpot_ms", "throughput_tok_s", "min_success_rate", "pareto", "explore")


@dataclass(frozen=True)
class Candidate:
    layout: str
    policy: str
    w_ttft: float = 1.0
    w_tpot: float = 1.0
    gpu: str = ""            # "" = the base scenario's GPU

    @property
    def has_d(self) -> bool:
        return parse_layout(self.layout).n_D > 0

    @property
    def label(self) -> str:
        if not self.has_d:
            return "n/a (no D)"
        if self.policy == "dynamic":
            return f"dynamic w_tpot={render_value(self.w_tpot)}"
        return self.policy


@dataclass(frozen=True)
class AdviseRequest:
    """What to advise on. ``base`` holds every other scenario key (gpu, model, tp, workload, sizes)."""
    n_gpus: int = 4
    base: Scenario = field(default_factory=Scenario)
    qps: tuple = DEFAULT_QPS
    slo_ttft_ms: float = 200.0
    slo_tpot_ms: float = 30.0
    weight_ttft: float = 1.0
    weight_tpot: float = 1.0
    rank_by: str = "attainment"     # or goodput_per_gpu / goodput_per_usd (ties: the attainment score)
    attain: float = 0.9             # goodput's share of Turn 2+ requests within both SLOs
    gpu_types: tuple = ()           # GPU types to compare (catalog names); () = the base scenario's GPU

    def __post_init__(self) -> None:
        n = self.n_gpus
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_NODES * 8:
            raise ScenarioError("n_gpus", f"{n!r} is not allowed; must be an integer in [1, {MAX_NODES * 8}]")
        if not isinstance(self.base, Scenario):
            raise ScenarioError("base", "must be a Scenario")
        tp = self.base.tp_degree
        if n % tp:
            raise ScenarioError("n_gpus", f"{n} GPUs do not split into nodes of tp={tp} GPUs; use a multiple of {tp}")
        if not 1 <= n // tp <= MAX_ADVISE_NODES:
            raise ScenarioError("n_gpus", f"{n} GPUs at tp={tp} make {n // tp} nodes; the advisor handles 1 to "
                                          f"{MAX_ADVISE_NODES} nodes")
        raw = self.qps.split(",") if isinstance(self.qps, str) else self.qps
        if isinstance(raw, (int, float)):
            raw = [raw]
        qps = tuple(sorted(dict.fromkeys(_coerce(SPEC["qps"], q) for q in raw)))
        if not 1 <= len(qps) <= MAX_QPS_POINTS:
            raise ScenarioError("qps", f"give 1 to {MAX_QPS_POINTS} QPS values, got {len(qps)}")
        object.__setattr__(self, "qps", qps)
        for key in ("slo_ttft_ms", "slo_tpot_ms"):
            v = _coerce(SPEC[key], [getattr(self, key)])
            object.__setattr__(self, key, v[0])
        for key in ("weight_ttft", "weight_tpot"):
            object.__setattr__(self, key, _coerce(SPEC["w_ttft"], getattr(self, key)))
        if self.weight_ttft + self.weight_tpot <= 0:
            raise ScenarioError("weight_tpot", "the TTFT and TPOT weights cannot both be 0")
        if self.rank_by not in RANK_BY:
            raise ScenarioError("rank_by", f"{str(self.rank_by)[:40]!r} is not allowed; must be one of {', '.join(RANK_BY)}")
        a = self.attain
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not math.isfinite(a) or not 0 < a <= 1:
            raise ScenarioError("attain", f"{a!r} is not allowed; must be a number in (0, 1]")
        raw = self.gpu_types.split(",") if isinstance(self.gpu_types, str) else self.gpu_types
        gpus = tuple(dict.fromkeys(_coerce(SPEC["gpu"], g.strip() if isinstance(g, str) else g) for g in raw if g != ""))
        object.__setattr__(self, "gpu_types", gpus)

    @property
    def nodes(self) -> int:
        return self.n_gpus // self.base.tp_degree


# ---- candidates ----------------------------------------------------------------------------------------

def candidate_layouts(nodes: int, hybrid_max: int = HYBRID_MAX_NODES) -> tuple[list[str], list[str]]:
    """Every valid layout of ``nodes`` nodes (R, P, D, pD counts), replicas first; and notes."""
    out, skipped = [], 0
    for r in range(nodes, -1, -1):
        for p in range(0, nodes - r + 1):
            for d in range(nodes - r - p, -1, -1):
                pd_ = nodes - r - p - d
                lay = Layout(r, p, d, pd_)
                if not lay.nodes:
                    continue
                try:
                    parse_layout(lay.text)
                except ScenarioError:
                    continue
                if r and (p or d or pd_) and nodes > hybrid_max:
                    skipped += 1
                    continue
                out.append(lay.text)
    notes = []
    if skipped:
        notes.append(f"{skipped} hybrid layouts mixing R with P/D/pD skipped above {hybrid_max} nodes")
    return out, notes


def candidates(req: AdviseRequest) -> tuple[list[Candidate], list[str]]:
    layouts, notes = candidate_layouts(req.nodes)
    out = []
    for gpu in req.gpu_types or ("",):
        for text in layouts:
            if parse_layout(text).n_D:
                out += [Candidate(text, "pd", gpu=gpu), Candidate(text, "ppd", gpu=gpu)]
                out += [Candidate(text, "dynamic", 1.0, w, gpu) for w in DYNAMIC_W_TPOT]
            else:
                out.append(Candidate(text, "dynamic", gpu=gpu))
    if req.gpu_types:
        notes.append(f"GPU types compared: {', '.join(req.gpu_types)} (each candidate on each)")
    notes.insert(0, f"{req.n_gpus} GPUs at tp={req.base.tp} = {req.nodes} nodes: {len(layouts)} layouts, "
                    f"{len(out)} candidates (layouts with D nodes x pd, ppd, dynamic w_tpot in "
                    f"{{{', '.join(render_value(w) for w in DYNAMIC_W_TPOT)}}}), x {len(req.qps)} QPS "
                    f"= {len(out) * len(req.qps):,} runs")
    return out, notes


def scenario_for(req: AdviseRequest, cand: Candidate, qps: float) -> Scenario:
    return req.base.with_(layout=cand.layout, policy=cand.policy, w_ttft=cand.w_ttft, w_tpot=cand.w_tpot,
                          qps=qps, slo_ttft_ms=(req.slo_ttft_ms,), slo_tpot_ms=(req.slo_tpot_ms,),
                          gpu=cand.gpu or req.base.gpu)


def plan(req: AdviseRequest) -> tuple[list[Candidate], list[Scenario], list[str]]:
    """Candidates, the scenarios to run (candidate-major, QPS ascending) and notes."""
    cands, notes = candidates(req)
    check_grid_size(len(cands) * len(req.qps))
    scenarios = [scenario_for(req, c, q) for c in cands for q in req.qps]
    return cands, scenarios, notes


# ---- ranking -------------------------------------------------------------------------------------------

def pareto_mask(xs: Sequence[float], ys: Sequence[float], allowed: Sequence[bool] | None = None) -> list[bool]:
    """Non-dominated points (both lower is better); NaN points and points not ``allowed`` are never on it."""
    n = len(xs)
    allowed = list(allowed) if allowed is not None else [True] * n
    ok = [allowed[i] and not (math.isnan(xs[i]) or math.isnan(ys[i])) for i in range(n)]
    mask = []
    for i in range(n):
        if not ok[i]:
            mask.append(False)
            continue
        dominated = any(ok[j] and xs[j] <= xs[i] and ys[j] <= ys[i] and (xs[j] < xs[i] or ys[j] < ys[i])
                        for j in range(n) if j != i)
        mask.append(not dominated)
    return mask


def rank(req: AdviseRequest, cands: Sequence[Candidate], runs) -> Any:
    """One row per candidate (see the module docstring for the score), best first."""
    import pandas as pd
    ttft_col = f"slo_attainment.ttft_{slo_label(req.slo_ttft_ms)}ms"
    tpot_col = f"slo_attainment.tpot_{slo_label(req.slo_tpot_ms)}ms"
    wt, wp = req.weight_ttft, req.weight_tpot
    nq = len(req.qps)
    rows = []
    for i, c in enumerate(cands):
        part = runs.iloc[i * nq:(i + 1) * nq]
        a_ttft = part[ttft_col].astype(float)
        a_tpot = part[tpot_col].astype(float)
        score = float(((wt * a_ttft + wp * a_tpot) / (wt + wp)).mean())
        min_ok = float(part["success_rate"].min())
        top = part.iloc[-1]
        good = grid_goodput(req.qps, part["slo_joint.attainment"].astype(float).tolist(), req.attain)
        sc = scenario_for(req, c, req.qps[0])
        price = sc.price_usd_h
        rows.append({
            "layout": c.layout, "gpu": sc.gpu, "category": layout_kind(c.layout), "policy": c.policy,
            "goodput_qps": good, "goodput_per_gpu": good / sc.gpu_count,
            "goodput_per_usd_h": good / (sc.gpu_count * price) if price > 0 else 0.0,
            "w_ttft": c.w_ttft, "w_tpot": c.w_tpot, "label": c.label,
            "eligible": min_ok >= MIN_SUCCESS, "score": round(score, 6),
            "slo_ttft": float(a_ttft.mean()), "slo_tpot": float(a_tpot.mean()),
            "ttft_ms": _mean(part["turn2plus.ttft_ms.mean"]), "tpot_ms": _mean(part["turn2plus.tpot_ms.mean"]),
            "throughput_tok_s": _mean(part["throughput.tokens_per_s"]), "min_success_rate": min_ok,
            "explore": "/?" + top["query"],
        })
    df = pd.DataFrame(rows)
    elig = df["eligible"].tolist()
    df["pareto"] = pareto_mask(df["ttft_ms"].tolist(), df["tpot_ms"].tolist(), elig if any(elig) else None)

    def key(r) -> tuple:
        ttft = r["ttft_ms"] if not math.isnan(r["ttft_ms"]) else math.inf
        tput = r["throughput_tok_s"] if not math.isnan(r["throughput_tok_s"]) else -math.inf
        first = {"attainment": 0.0, "goodput_per_gpu": -r["goodput_per_gpu"],
                 "goodput_per_usd": -r["goodput_per_usd_h"]}[req.rank_by]
        return (not r["eligible"], first, -r["score"], -tput, ttft, r["layout"], r["gpu"], r["label"])

    order = sorted(range(len(df)), key=lambda i: key(df.iloc[i]))
    df = df.iloc[order].reset_index(drop=True)
    df.insert(0, "rank", range(1, len(df) + 1))
    return df[list(RANKED_COLUMNS)]


def grid_goodput(qps: Sequence[float], attainment: Sequence[float], attain: float) -> float:
    """Goodput on the advisor's QPS grid: the highest rate up to which every rate of the range has at least
    ``attain`` of Turn 2+ requests within both SLOs (``slo_joint``); 0 if the lowest one misses. The
    ``goodput`` command searches the rate itself (``analysis.goodput``); this reuses the advisor's runs."""
    best = 0.0
    for q, a in zip(qps, attainment):
        if not a >= attain:
            break
        best = q
    return float(best)


def layout_kind(text: str) -> str:
    """Replica, P+D (PD; x set by the policy), P+pD (x=1), P+D+pD (partial), or Hybrid (R with P/D/pD)."""
    lay = parse_layout(text)
    if not (lay.n_P or lay.n_D or lay.n_pD):
        return "Replica"
    if lay.n_R:
        return "Hybrid"
    return "P+" + "+".join(r for r, n in (("D", lay.n_D), ("pD", lay.n_pD)) if n)


def _mean(s) -> float:
    v = s.astype(float)
    return float(v.mean()) if v.notna().any() else math.nan


# ---- running -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Advice:
    request: AdviseRequest
    ranked: Any            # pandas.DataFrame, RANKED_COLUMNS, best first
    runs: Any              # pandas.DataFrame, the sweep rows (candidate-major, QPS ascending) + candidate label
    notes: tuple[str, ...]

    @property
    def pareto(self):
        return self.ranked[self.ranked["pareto"]].sort_values("ttft_ms").reset_index(drop=True)


def advise(req: AdviseRequest, *, trace=None, executor: str = "local", scheduler: str | None = None,
           workers: int | None = None, cache_dir=None, cache: bool = True,
           progress: Progress | None = None, check=None, pool=None) -> Advice:
    """Run every candidate over the QPS range and rank them. ``trace``: conversations for workload=trace.
    ``pool``: a long-lived ``WorkerPool`` for the runs (``run_grid``)."""
    if trace is not None and req.base.workload != "trace":
        req = AdviseRequest(req.n_gpus, req.base.with_(workload="trace"), req.qps, req.slo_ttft_ms,
                            req.slo_tpot_ms, req.weight_ttft, req.weight_tpot, req.rank_by, req.attain,
                            req.gpu_types)
    cands, scenarios, notes = plan(req)
    runs = run_grid(scenarios, executor=executor, scheduler=scheduler, workers=workers,
                          cache_dir=cache_dir, cache=cache, progress=progress, trace=trace, check=check, pool=pool)
    runs.insert(0, "candidate", [c.label + (f" on {c.gpu}" if c.gpu else "") for c in cands for _ in req.qps])
    if req.base.workload == "trace":
        notes.append("workload=trace: the Explore links cannot carry the trace (open them from the CLI with "
                     "--trace FILE)")
    counts = runs["turn2plus.count"].dropna() if "turn2plus.count" in runs else ()
    if len(counts) and counts.min() < MIN_SAMPLE:
        notes.append(f"warning: the ranking rests on as few as {int(counts.min())} Turn 2+ requests in a run "
                     f"(fewer than {MIN_SAMPLE}); treat it as noisy")
    a = runs.attrs
    notes.append(f"{len(runs):,} runs: {a['simulated']:,} simulated, {a['cache_hits']:,} from the cache")
    return Advice(req, rank(req, cands, runs), runs, tuple(notes))


def base_from_pairs(pairs: Sequence[str]) -> Scenario:
    for item in pairs:
        key = item.split("=", 1)[0].strip() if "=" in item else ""
        if key in ADVISOR_KEYS:
            raise ScenarioError(key, "is chosen by the advisor; use --qps, --slo-ttft-ms, --slo-tpot-ms")
    return parse(pairs)
