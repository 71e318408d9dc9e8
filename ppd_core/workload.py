"""Multi-turn workloads: the paper's 18 synthetic cells and ShareGPT-/WildChat-like generators.

A workload is a tuple of ``Conversation``s, each with an arrival time and its turns. Turn k's prompt is
the whole history (every earlier input and output) plus the turn's new input, as in the benchmarks.
Generation is a pure function of (scenario, seed): numpy ``Generator`` streams spawned from one
``SeedSequence``, one stream per purpose, so changing one aspect never reshuffles another.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .scenario import Scenario

# Turn 1 (context class): new input -> output tokens.
CONTEXT_CLASSES = {"small": (128, 128), "large": (1024, 1024)}
# Turn 2 shapes (paper section 4.2 / measured README): new input -> output tokens.
T2_TYPES = {
    "tiny": (16, 32), "short_gen": (32, 256), "long_gen": (32, 512), "very_long_gen": (64, 1024),
    "small_bal": (64, 64), "mid_bal": (128, 128),
    "mid_paste": (256, 64), "big_paste": (512, 64), "huge_paste": (1024, 32),
}
T2_CLASS = {"tiny": "decode-heavy", "short_gen": "decode-heavy", "long_gen": "decode-heavy",
            "very_long_gen": "decode-heavy", "small_bal": "balanced", "mid_bal": "balanced",
            "mid_paste": "prefill-heavy", "big_paste": "prefill-heavy", "huge_paste": "prefill-heavy"}
SYNTHETIC = tuple(f"{c}_{t}" for c in CONTEXT_CLASSES for t in T2_TYPES)


@dataclass(frozen=True)
class DatasetModel:
    """Statistics of a chat dataset after the PPD benchmark's filter (2-10 turns, <= 2048 tokens per
    message, context <= 8192). Per-turn lengths are lognormal (median, sigma), clipped to [1, 2048]."""
    name: str
    mean_turns: float          # target mean turns per conversation (2..10)
    turn_decay: float          # P(k turns) ~ turn_decay**(k-2), k = 2..10; chosen to hit mean_turns
    in_median: float
    in_sigma: float
    out_median: float
    out_sigma: float
    source: str


DATASETS = {
    # ShareGPT as sampled by the PPD benchmark: 500 conversations, 2204 turns (4.41/conv), mean output 308.9
    # tokens/turn (measured README); user turns 94 +- 626 tokens (WildChat paper, Table 1).
    "sharegpt": DatasetModel("sharegpt", 4.41, 0.775, 38.0, 1.35, 200.0, 0.95,
                             "PPD measured README (4.41 turns, 308.9 output tokens/turn); WildChat paper Table 1"),
    # WildChat as sampled by the PPD benchmark: 2056 turns (4.11/conv), mean output 274.5 tokens/turn;
    # user turns 296 +- 1609 tokens (heavier inputs than ShareGPT).
    "wildchat": DatasetModel("wildchat", 4.11, 0.73, 75.0, 1.55, 178.0, 0.95,
                             "PPD measured README (4.11 turns, 274.5 output tokens/turn); WildChat paper Table 1"),
}

WORKLOAD_NAMES = SYNTHETIC + tuple(DATASETS) + ("trace",)
MAX_CONTEXT = 8192       # the benchmark's max-model-len: later turns are dropped past it
MAX_MESSAGE = 2048       # the benchmark's per-message filter


@dataclass(frozen=True, slots=True)
class Turn:
    new_input: int   # tokens the user adds this turn (Turn 1: the whole prompt)
    output: int      # tokens generated (exact: the benchmarks use ignore_eos)


@dataclass(frozen=True, slots=True)
class Conversation:
    cid: int
    arrival_s: float
    turns: tuple[Turn, ...]

    def prompt_len(self, k: int) -> int:
        """Prompt tokens of turn k (0-based): all earlier inputs and outputs plus this turn's input."""
        return sum(t.new_input + t.output for t in self.turns[:k]) + self.turns[k].new_input


def mean_turns(workload: str) -> float:
    if workload in DATASETS:
        return DATASETS[workload].mean_turns
    return 2.0 if workload in SYNTHETIC else 4.0


def classify_t2(new_input: int, output: int) -> str:
    """The decision engine's nine input/output classes (ppd_decision_engine.py at HEAD)."""
    out = max(output, 1)
    ratio = new_input / out
    if ratio < 0.25:
        return "tiny" if out <= 64 else "short_gen" if out <= 256 else "long_gen" if out <= 512 else "very_long_gen"
    if ratio <= 2.0:
        return "small_bal" if new_input <= 64 else "mid_bal"
    return "mid_paste" if new_input <= 256 else "big_paste" if new_input <= 512 else "huge_paste"


def context_class(ctx: int) -> str:
    return "small" if ctx <= 512 else "large" if ctx <= 4096 else "huge"


def streams(seed: int) -> dict[str, np.random.Generator]:
    names = ("arrivals", "lengths", "routing", "policy")
    seqs = np.random.SeedSequence(seed).spawn(len(names))
    return {n: np.random.Generator(np.random.PCG64(s)) for n, s in zip(names, seqs)}


def arrival_times(sc: "Scenario", rng: np.random.Generator) -> np.ndarray:
    """Poisson conversation arrivals at ``qps``. With ``arrival_window_s`` > 0, the synthetic benchmark's
    rule: int(qps x window) exponential gaps, keep the arrivals that fall inside the window."""
    if sc.arrival_window_s > 0:
        n = int(sc.qps * sc.arrival_window_s)
        t = np.cumsum(rng.exponential(1.0 / sc.qps, size=n))
        return t[t < sc.arrival_window_s]
    return np.cumsum(rng.exponential(1.0 / sc.qps, size=sc.conversations))


def _turn_probs(model: DatasetModel) -> np.ndarray:
    k = np.arange(2, 11)
    p = model.turn_decay ** (k - 2)
    return p / p.sum()


def _dataset_conversations(model: DatasetModel, n: int, n_turns: int | None,
                           rng: np.random.Generator) -> list[tuple[Turn, ...]]:
    """``n`` conversations drawn in one vectorised batch (the draws do not depend on each other)."""
    width = n_turns or 10
    want = rng.choice(np.arange(2, 11), p=_turn_probs(model), size=n) if n_turns is None else np.full(n, n_turns)
    ins = np.clip(np.rint(rng.lognormal(np.log(model.in_median), model.in_sigma, size=(n, width))), 1, MAX_MESSAGE)
    outs = np.clip(np.rint(rng.lognormal(np.log(model.out_median), model.out_sigma, size=(n, width))), 2,
                   MAX_MESSAGE)
    ins, outs = ins.astype(int).tolist(), outs.astype(int).tolist()
    convs = []
    for row_in, row_out, k in zip(ins, outs, want.tolist()):
        turns, ctx = [], 0
        for i, o in zip(row_in[:k], row_out[:k]):
            # the benchmark stops adding turns once the context would pass max-model-len; with messages
            # capped at 2,048 tokens the first two turns always fit, so every conversation keeps >= 2 turns
            if n_turns is None and ctx + i > MAX_CONTEXT:
                break
            turns.append(Turn(i, o))
            ctx += i + o
        convs.append(tuple(turns))
    return convs


def generate(sc: "Scenario", rng_arrivals: np.random.Generator, rng_lengths: np.random.Generator,
             trace: tuple[Conversation, ...] | None = None) -> tuple[Conversation, ...]:
    """All conversations of the scenario, sorted by arrival."""
    if sc.workload == "trace":
        if trace is None:
            from .errors import ScenarioError
            raise ScenarioError("workload", "'trace' needs an imported trace (CLI --trace FILE, or an upload)")
        return trace
    times = arrival_times(sc, rng_arrivals)
    n_turns = sc.turns or None
    convs = []
    if sc.workload in SYNTHETIC:
        ctx, t2 = sc.workload.split("_", 1)
        t1 = Turn(*CONTEXT_CLASSES[ctx])
        later = Turn(*T2_TYPES[t2])
        turns = (t1,) + (later,) * ((n_turns or 2) - 1)
        convs = [Conversation(i, float(t), turns) for i, t in enumerate(times)]
    else:
        drawn = _dataset_conversations(DATASETS[sc.workload], len(times), n_turns, rng_lengths)
        convs = [Conversation(i, t, turns) for i, (t, turns) in enumerate(zip(times.tolist(), drawn))]
    return tuple(convs)
