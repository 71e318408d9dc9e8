"""The named workloads a scenario may ask for: the paper's 18 synthetic cells (Turn-1 context class x nine
Turn-2 shapes) and the chat-dataset models (ShareGPT, WildChat), plus the decision engine's classes of a
request. Plain immutable data: the generators live in ``ppd_core.workloads``."""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

# Turn 1 (context class): new input -> output tokens.
CONTEXT_CLASSES = MappingProxyType({"small": (128, 128), "large": (1024, 1024)})
# Turn 2 shapes (paper section 4.2 / measured README): new input -> output tokens.
T2_TYPES = MappingProxyType({
    "tiny": (16, 32), "short_gen": (32, 256), "long_gen": (32, 512), "very_long_gen": (64, 1024),
    "small_bal": (64, 64), "mid_bal": (128, 128),
    "mid_paste": (256, 64), "big_paste": (512, 64), "huge_paste": (1024, 32),
})
T2_CLASS = MappingProxyType({"tiny": "decode-heavy", "short_gen": "decode-heavy", "long_gen": "decode-heavy",
            "very_long_gen": "decode-heavy", "small_bal": "balanced", "mid_bal": "balanced",
            "mid_paste": "prefill-heavy", "big_paste": "prefill-heavy", "huge_paste": "prefill-heavy"})
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


DATASETS = MappingProxyType({
    # ShareGPT as sampled by the PPD benchmark: 500 conversations, 2204 turns (4.41/conv), mean output 308.9
    # tokens/turn (measured README); user turns 94 +- 626 tokens (WildChat paper, Table 1).
    "sharegpt": DatasetModel("sharegpt", 4.41, 0.775, 38.0, 1.35, 200.0, 0.95,
                             "PPD measured README (4.41 turns, 308.9 output tokens/turn); WildChat paper Table 1"),
    # WildChat as sampled by the PPD benchmark: 2056 turns (4.11/conv), mean output 274.5 tokens/turn;
    # user turns 296 +- 1609 tokens (heavier inputs than ShareGPT).
    "wildchat": DatasetModel("wildchat", 4.11, 0.73, 75.0, 1.55, 178.0, 0.95,
                             "PPD measured README (4.11 turns, 274.5 output tokens/turn); WildChat paper Table 1"),
})

WORKLOAD_NAMES = SYNTHETIC + tuple(DATASETS) + ("trace",)
MAX_CONTEXT = 8192       # the benchmark's max-model-len: later turns are dropped past it
MAX_MESSAGE = 2048       # the benchmark's per-message filter

# Trace import (``ppd_core.workloads.traces``): the timestamp units a trace may state and the Mooncake block
# size. Here rather than with the readers so the command line's --time-unit / --block-tokens options need
# no trace reader loaded (issue #13).
TIME_UNITS = MappingProxyType({"s": 1, "ms": 1_000, "us": 1_000_000})   # timestamp unit -> units per second
MOONCAKE_BLOCK_TOKENS = 512         # tokens per Mooncake hash id (the default block size; detected if trivial)



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
