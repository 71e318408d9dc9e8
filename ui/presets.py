"""Presets that teach (issue #12): one click each, each a share link, each stating the one thing to look at
and a claim about the numbers that a test checks against the run (tests/test_presets.py).

One data table (``PRESETS``) so the presets can be retuned in one place when the engine's physics, client
defaults or Eq.1 change: a claim is a qualitative relation with a margin, ``a ≤ factor · b`` between two
(system, scenario overrides) points of one metric. Pure data and arithmetic, no Streamlit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

from ppd_core.config.scenario import Scenario, baselines, parse

#: Summary paths of the metrics a claim can name, with their label and unit.
METRICS = MappingProxyType({
    "ttft": ("groups.turn2plus.ttft_ms.mean", "Turn 2+ TTFT mean", "ms"),
    "tpot": ("groups.turn2plus.tpot_ms.mean", "Turn 2+ TPOT mean", "ms"),
    "local": ("local_share", "local share", "%"),
})


def metric_value(summary: Mapping, metric: str) -> float:
    cur = summary
    for p in METRICS[metric][0].split("."):
        cur = cur[p]
    return float("nan") if cur is None else float(cur)


@dataclass(frozen=True)
class Point:
    """One number of a claim: ``metric`` of ``system`` (PPD, PD or Replica) in the preset's scenario changed
    by ``overrides`` (empty: the preset itself, i.e. what the page shows)."""
    system: str
    overrides: Mapping[str, str] = field(default_factory=dict)

    def label(self) -> str:
        extra = ", ".join(f"{k}={v}" for k, v in self.overrides.items())
        return self.system + (f" at {extra}" if extra else "")


@dataclass(frozen=True)
class Claim:
    """``metric(a) ≤ factor · metric(b)``."""
    metric: str
    a: Point
    b: Point
    factor: float

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"claim metric {self.metric!r}: must be one of {', '.join(METRICS)}")
        if not (math.isfinite(self.factor) and self.factor > 0):
            raise ValueError(f"claim factor {self.factor!r}: must be a finite number > 0")


@dataclass(frozen=True)
class Preset:
    key: str                     # URL value of ``preset=``
    title: str
    params: Mapping[str, str]    # scenario keys (the rest: defaults)
    look_at: str                 # the one thing to look at, in plain words
    why: str
    claims: tuple[Claim, ...]

    def scenario(self) -> Scenario:
        return parse(dict(self.params))

    def query(self) -> dict[str, str]:
        return {**self.scenario().to_params(), "preset": self.key}


def _p(system: str, **overrides: str) -> Point:
    return Point(system, MappingProxyType(dict(overrides)))


PRESETS: tuple[Preset, ...] = (
    Preset("paper", "Paper headline", {"conversations": "300"},
           "Turn 2+ TTFT: PPD against PD on the same four GPUs.",
           "PD re-prefills the whole context on P and ships its KV every turn; PPD appends only the new tokens "
           "on the decode node that holds the conversation (the paper reports −68 % Turn 2+ TTFT).",
           (Claim("ttft", _p("PPD"), _p("PD"), 0.6), Claim("tpot", _p("PPD"), _p("PD"), 1.15))),
    Preset("slow-link", "Slow link", {"conversations": "300", "bandwidth_gbps": "2"},
           "PD's Turn 2+ TTFT at 2 GB/s against 150 GB/s; PPD's hardly moves.",
           "Every PD turn moves the KV of the whole context P → D; PPD's Turn 2+ moves nothing.",
           (Claim("ttft", _p("PD", bandwidth_gbps="150"), _p("PD"), 1 / 1.5),
            Claim("ttft", _p("PPD"), _p("PPD", bandwidth_gbps="150"), 1.1))),
    Preset("weights", "Prefill-heavy: the weights matter",
           {"conversations": "300", "layout": "2P_2D", "workload": "large_huge_paste", "w_tpot": "100"},
           "The local share: at w_tpot = 100 Eq.1 sends most Turn 2+ back to P; at w_tpot = 1 it serves them "
           "locally.",
           "Long pastes make an append-prefill on a D node slow down its co-batched decodes; a large w_tpot "
           "says that TPOT loss is not worth the TTFT gain (Eq.1: S = w_ttft·ΔTTFT − w_tpot·ΔTPOT).",
           (Claim("local", _p("PPD"), _p("PPD", w_tpot="1"), 0.5),)),
    Preset("overload", "Overload", {"conversations": "400", "qps": "30"},
           "PD's Turn 2+ TTFT, ten times PPD's, and the saturation notice: which resource gave out in each system.",
           "Open-loop arrivals at 30 conversations/s: PD queues every turn at P; PPD and the replicas spread "
           "Turn 2+ over the decode nodes.",
           (Claim("ttft", _p("PPD"), _p("PD"), 1 / 3), Claim("ttft", _p("Replica"), _p("PD"), 1 / 3))),
    Preset("replicas", "Replicas win", {"conversations": "300", "layout": "3P_1pD"},
           "Replica's Turn 2+ TTFT and TPOT against PPD's with only one pD node.",
           "PPD serves every Turn 2+ on its one pD node while three P nodes only do Turn 1; four replicas "
           "share all turns over four GPUs.",
           (Claim("ttft", _p("Replica"), _p("PPD"), 0.85), Claim("tpot", _p("Replica"), _p("PPD"), 0.85))),
)
PRESET_KEYS = tuple(p.key for p in PRESETS)


def by_key(key: str) -> Preset | None:
    return next((p for p in PRESETS if p.key == key), None)


@dataclass(frozen=True)
class Verdict:
    claim: Claim
    a: float
    b: float

    @property
    def holds(self) -> bool:
        return math.isfinite(self.a) and math.isfinite(self.b) and self.a <= self.claim.factor * self.b

    def text(self) -> str:
        _, label, unit = METRICS[self.claim.metric]
        f = (lambda v: f"{100 * v:.0f} %") if unit == "%" else (lambda v: f"{v:,.1f} {unit}")
        rel = "≤" if self.holds else "is not ≤"
        return (f"{label}: {self.claim.a.label()} {f(self.a)} {rel} {self.claim.factor:.2g} × "
                f"{self.claim.b.label()} {f(self.b)}")


def point_scenario(preset_sc: Scenario, point: Point) -> Scenario:
    sc = parse({**preset_sc.to_params(), **point.overrides}) if point.overrides else preset_sc
    return baselines(sc)[point.system]


def check(preset: Preset, summary_of: Callable[[Scenario], Mapping], sc: Scenario | None = None) -> list[Verdict]:
    """Every claim of ``preset`` evaluated with ``summary_of(scenario) -> summary`` (the page passes its cached
    runner; the test ``ppd_core.run``). ``sc``: the scenario shown (default: the preset's)."""
    base = sc or preset.scenario()
    return [Verdict(c, metric_value(summary_of(point_scenario(base, c.a)), c.metric),
                    metric_value(summary_of(point_scenario(base, c.b)), c.metric)) for c in preset.claims]
