"""Workload generation: the paper's 18 synthetic cells and ShareGPT-/WildChat-like conversations.

Generation is a pure function of (scenario, seed): numpy ``Generator`` streams spawned from one
``SeedSequence``, one stream per purpose, so changing one aspect never reshuffles another.
"""
from __future__ import annotations

from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from ..config.errors import ScenarioError
from ..config.workload_catalog import CONTEXT_CLASSES, DATASETS, MAX_CONTEXT, MAX_MESSAGE, SYNTHETIC, T2_TYPES, \
    DatasetModel
from .conversation import Conversation, Turn

if TYPE_CHECKING:
    from ..config.scenario import Scenario


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


def _quota(p: np.ndarray, n: int) -> np.ndarray:
    """Counts summing to ``n`` closest to n*p (largest remainders): the sample's turn-count histogram is
    the model's, not a draw around it."""
    raw = n * p
    counts = np.floor(raw).astype(int)
    counts[np.argsort(-(raw - counts), kind="stable")[: n - counts.sum()]] += 1
    return counts


def _stratified_lognormal(rng: np.random.Generator, median: float, sigma: float, used: np.ndarray) -> np.ndarray:
    """Lognormal draws for the ``used`` cells (turns that exist), stratified: the N used cells take the N
    equal-probability strata in random order, so the sample mean sits on the model's (no +-5 % swing from
    the heavy tail between draws). Unused cells hold the median."""
    n_used = int(used.sum())
    u = (rng.permutation(n_used) + rng.random(n_used)) / max(n_used, 1)
    inv_cdf = NormalDist().inv_cdf        # the standard library's, so a plain run does not import scipy
    z = np.fromiter((inv_cdf(x) for x in u.tolist()), dtype=float, count=n_used)
    out = np.full(used.shape, median)
    out[used] = np.exp(np.log(median) + sigma * z)
    return out


def _dataset_conversations(model: DatasetModel, n: int, n_turns: int | None,
                           rng: np.random.Generator) -> list[tuple[Turn, ...]]:
    """``n`` conversations drawn in one vectorised batch (the draws do not depend on each other). Turn counts
    follow the model's histogram exactly (shuffled) and lengths are stratified, so 500 conversations carry
    the measured benchmark's request count and mean output length (tests/test_calibration.py)."""
    width = n_turns or 10
    if n_turns is None:
        want = rng.permutation(np.repeat(np.arange(2, 11), _quota(_turn_probs(model), n)))
    else:
        want = np.full(n, n_turns)
    used = np.arange(width)[None, :] < want[:, None]
    ins = np.clip(np.rint(_stratified_lognormal(rng, model.in_median, model.in_sigma, used)), 1, MAX_MESSAGE)
    outs = np.clip(np.rint(_stratified_lognormal(rng, model.out_median, model.out_sigma, used)), 2, MAX_MESSAGE)
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
        convs = [Conversation(i, t, turns) for i, t in enumerate(times.tolist())]
    else:
        drawn = _dataset_conversations(DATASETS[sc.workload], len(times), n_turns, rng_lengths)
        convs = [Conversation(i, t, turns) for i, (t, turns) in enumerate(zip(times.tolist(), drawn))]
    return tuple(convs)
