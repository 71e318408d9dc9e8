"""The calibration's stages as data: which parameters each stage fits, within which bounds and why, on which
measured targets. Edit this table (not the fitting code) to add, drop or reorder a stage.

A target set is a named selector over (measured row, metric); ``TARGETS`` maps the names used below to them.
A stage whose ``targets`` is ``"paper_interference"`` fits the paper's Fig.2/Fig.7 slowdowns instead of
measured rows (``interference_stage.py``). The interference law's ``eta_share`` is fitted on every
micro-benchmark row by ``scripts/fit_physics.py`` (``data/physics_params.json``), not here; the mixed-iteration
overhead ``t_mix_ms`` is fitted nowhere (``T_MIX_NOT_FITTED`` says why).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable

from .measured import Row


@dataclass(frozen=True)
class FitParam:
    """One fitted parameter: its bounds and the physical reason for them (printed if the fit ends on one)."""
    name: str
    lo: float
    hi: float
    why: str


@dataclass(frozen=True)
class Stage:
    """One least-squares stage. ``layout_dependent``: its targets change when a layout is held out, so
    leave-one-layout-out refits it per fold. ``max_nfev``: least_squares' budget of trial steps (each
    Jacobian costs len(params) more evaluations of the stage's targets). ``scan``: sweep each parameter over
    a coarse grid first (``fit._scan``, 9 evaluations per parameter) so the local fit starts in the basin.
    ``refine``: the local fit is a compass search (``fit._refine``) instead of least_squares, for a stage
    whose cost is too bumpy for finite differences (``max_nfev`` then does not apply)."""
    name: str
    params: tuple[FitParam, ...]
    targets: str
    layout_dependent: bool = True
    max_nfev: int = 30
    scan: bool = False
    refine: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)


def _is_t2(r: Row) -> bool:
    return r.group == "turn2plus" or (r.group.startswith("turn:") and r.group != "turn:1")


TARGETS: MappingProxyType[str, Callable[[Row, str], bool]] = MappingProxyType({
    # decode step time vs batch and context
    "turn2_tpot": lambda r, m: m == "avg_tpot_ms" and _is_t2(r),
    # how fast P saturates, how busy nodes answer
    "loaded_ttft": lambda r, m: m == "p50_ttft_ms" and r.group == "turn2plus" and (
        (r.kind == "comprehensive" and r.qps >= 4 and r.metrics[m] < 3000) or r.kind == "trace"),
    # fixed and per-token costs of each hop at low load, growth with context (turn scaling)
    "low_load_ttft": lambda r, m: m == "p50_ttft_ms" and (
        (r.kind == "comprehensive" and r.qps <= 2 and r.group in ("turn1", "turn2plus"))
        or (r.kind == "scaling" and r.group.startswith("turn:"))),
    # natural chat text re-tokenises differently from the synthetic prompts
    "natural_ttft": lambda r, m: m == "p50_ttft_ms" and r.group == "turn2plus" and r.kind == "trace",
})
TARGETS = MappingProxyType({**TARGETS,
    # every p50 TTFT target at once (the joint stage)
    "all_ttft": lambda r, m: TARGETS["loaded_ttft"](r, m) or TARGETS["low_load_ttft"](r, m)})

_ETA = "an efficiency: above 0.2 (no H100 kernel of this kind is slower) and below 0.95 (HBM/SM peak)"
_SHARE = "a share of a cost or of cached tokens: in [0, 1] by definition"
_COST = "a non-negative host/software cost, capped far above any measured value"

T_MIX_NOT_FITTED = (
    "the fixed extra of an iteration that holds a prefill chunk; no data here identifies it, so it keeps a "
    "stated value (model/params.py). In the calibration set fits that differ only in it and eta_attn cost the "
    "same (t_mix 1.27 / 2.32 / 5.35 ms gave Turn-2 TPOT MAPE 3.7 / 3.9 / 3.6 %, p50 TTFT 10.2 / 10.3 / 10.3 %), "
    "so where a fit left it depended on its start. The micro-benchmark, which isolates mixed iterations, "
    "leaves it at 5.35 +- 5.9 ms (one mixed iteration per ~63 decode steps), and its estimate follows the "
    "engine parameters it is fitted with (5.08 ms after a refit of t_seq_us), so fitting it there would tie "
    "the two fits into a loop that did not close within 1 % in two rounds. The value, 2.32 ms, is the one the "
    "model has been checked with since the interference law landed (the previous shipped fit), inside that "
    "interval; the ends of the interval fail checks the calibration set does not see: 1.27 ms keeps 0.21 of "
    "2P_2D's ShareGPT Turn 2+ local at w_tpot 100 (#11 requires <= 0.1) and 5.35 ms makes Eq.1's dTPOT "
    "overstate the realised effect 1.39x at QPS 6 (tests/test_traffic.py allows 1.25x)")
DECODE = Stage("decode", (
    FitParam("t_iter_ms", 0.2, 6.0, _COST),
    FitParam("t_seq_us", 0.0, 400.0, _COST),
    FitParam("eta_kv", 0.2, 0.95, _ETA + "; decode KV reads of short contexts stream at close to peak"),
), "turn2_tpot", scan=True)
LOAD = Stage("load", (
    FitParam("eta_compute", 0.2, 0.9, _ETA),
    FitParam("p_send_share", 0.0, 1.0, _SHARE),
    FitParam("api_us_per_seq", 0.0, 2000.0, _COST),
), "loaded_ttft", scan=True)
OVERHEADS = Stage("overheads", (
    FitParam("api_ms", 0.0, 80.0, _COST),
    FitParam("api_us_per_token", 0.0, 40.0, _COST),
    FitParam("pd_fixed_ms", 0.0, 150.0, _COST),
    FitParam("pd_us_per_token", 0.0, 40.0, _COST),
    FitParam("retok_hit_synthetic", 0.0, 1.0, _SHARE),
    FitParam("eta_compute", 0.2, 0.9, _ETA),
), "low_load_ttft", max_nfev=40, scan=True)
NATURAL = Stage("natural_text", (
    FitParam("retok_hit", 0.0, 1.0, _SHARE + "; 1 means natural text re-tokenises exactly, so every cached "
                                    "answer token hits"),
    FitParam("api_us_per_token_natural", 0.0, 40.0, _COST + "; tokenising chat text (words in the BPE vocabulary, "
                                                    "one real token per nominal one: model/tokenize.py)"),
), "natural_ttft", max_nfev=15, scan=True)
# load and overheads share eta_compute and each moves the other's targets: after one pass of each (which
# puts every parameter near its basin), one joint stage fits all of them on both target sets. Fitting them
# alternately instead pulls eta_compute to and fro (load 0.42, overheads 0.55: prefill under load wants it
# slow, the low-load hops fast) and each pass undoes the other's compromise
# Its local fit stays least_squares. From the scan's point it moves no parameter by more than 2 % (its report
# says so), and the compass search (refine=True) fits the calibration set better: from defaults p50 TTFT
# 10.37 % against 10.4 %, ttft-stage MAPE 9.36 against 9.86 %. But it generalises worse: leave-one-layout-out
# p50 TTFT 12.7 % against 11.5 % (3P_1pD 21.9 against 15.2 %), over the 12 % target (2026-12-01)
TTFT = Stage("ttft", tuple({fp.name: fp for fp in LOAD.params + OVERHEADS.params}.values()), "all_ttft",
             max_nfev=40, scan=True)
STAGES: tuple[Stage, ...] = (DECODE, LOAD, OVERHEADS, TTFT, NATURAL)
# After the first pass over STAGES, the stages of REPEAT run again, in order, each from where the last one
# ended, until a whole pass moves none of their parameters by more than PASS_RTOL (relative to the value, or
# to a tenth of the bound interval for a smaller value: ``calibrate.pass_change``) or MAX_PASSES passes have
# run: a block-coordinate descent towards its fixed point, bounded in time. Why: natural_text moves retok_hit
# after the ttft stage has fitted with the value before it (the ShareGPT runs are among the ttft targets).
# The decode, load and overheads stages are not repeated: decode's targets (TPOT) barely depend on the later
# stages' parameters, and the joint ttft stage refits everything load and overheads fit
REPEAT: tuple[Stage, ...] = (TTFT, NATURAL)
MAX_PASSES = 2
PASS_RTOL = 0.01
# the stages leave-one-layout-out refits per fold, each once, warm-started from the full fit. With the
# coarse scan: without it the eight-parameter ttft stage's first trust-region steps were rejected in every
# fold and it stopped where it started, so its held-out TTFT error was that of parameters fitted on the
# held-out layout too
LOLO_STAGES: tuple[Stage, ...] = (DECODE, TTFT)

# parameters no stage fits, and why (printed in the report)
NOT_FITTED = MappingProxyType({
    "eta_weights": "literature value (perf-model.md 4.7); weight reads are measured by the decode-only step, "
                   "which t_iter_ms and eta_kv already absorb",
    "kv_recv_blocks_decode": "a mechanism switch (P2pNccl receives inside D's step), not a fitted number",
    "activation_gb": "vLLM's activation/CUDA-graph reserve, from the engine's memory profile",
    "t_mix_ms": T_MIX_NOT_FITTED,
    "eta_attn": "prefill attention efficiency, the literature value: the calibration set does not identify it. "
                "A stage that fitted it on Turn-2 TPOT and p50 TTFT together (1,210 targets, t_mix_ms held at "
                "5.35) found its best scan level (0.875, an efficiency no H100 attention kernel reaches on "
                "prefills of a few hundred tokens) only 0.09 pp of MAPE better than the literature 0.45 "
                "(7.71 against 7.80 %), within the simulator's seed-to-seed noise, and could not refine it",
    "eta_share": "the interference law's shared-prefix read efficiency: only the micro-benchmark (decodes over "
                 "one cached prefix) measures it; fitted there (scripts/fit_physics.py)",
    "t_moe_layer_us": "extra MoE kernels per layer: an assumption (docs/physics.md); the calibration model is dense",
    "eta_allreduce": "multiplies the catalog all-reduce busbw, already an achieved nccl-tests figure; the "
                     "calibration runs at TP 1, so no all-reduce",
})
