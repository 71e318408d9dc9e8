"""How far a run's numbers may be from the measured system: the validation class of its scenario and that
class's expected error (issue #28).

A scenario falls into the first class of this list that describes it (the worst one wins):

* ``extrapolated``: a GPU, model or TP degree the calibration never measured (``model.extrapolation``):
  efficiencies and host constants fitted on 4 x H100-SXM + Llama-3.1-8B are carried over;
* ``unseen_layout``: a layout outside the seven calibration layouts (mixed D/pD, replicas beside a P/D
  pipeline, larger clusters); its error is the worst held-out family (``calibrate --families``);
* ``unseen_trace``: a calibrated layout on natural text other than the ShareGPT runs (WildChat, an imported
  trace); its error is the natural-text family held out;
* ``calibrated``: a calibration layout on a synthetic cell or ShareGPT; its error is ``validate``'s on the
  calibration set.

The expected errors live in ``data/expected_error.json`` (written by ``calibrate --families --errors-out``),
one figure per metric: Turn 2+ TPOT mean (``turn2_tpot_mean``), Turn 2+ p50 TTFT (``turn2_ttft_p50``, the
relative error of any TTFT figure) and the PPD/PD ratio of Turn 2+ mean TTFT (``effect_ttft``, what a
"PPD cuts TTFT by 60 %" sentence rests on). Each is a mean (or median, for the effect) absolute relative error
in %, an estimate of the typical miss, not a bound.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Mapping

from ..config.catalog import gpus, models
from ..config.layout import parse_layout
from ..config.paths import DATA_DIR
from ..config.workload_catalog import SYNTHETIC
from ..model.extrapolation import extrapolation_notes

ERRORS_FILE = DATA_DIR / "expected_error.json"
#: the seven layouts of the synthetic sweep the fit reads (comprehensive.csv) and the ShareGPT runs
CALIBRATED_LAYOUTS = ("4R", "1P_3D", "2P_2D", "3P_1D", "1P_3pD", "2P_2pD", "3P_1pD")
CALIBRATED_WORKLOADS = SYNTHETIC + ("sharegpt",)
CLASSES = ("calibrated", "unseen_trace", "unseen_layout", "extrapolated")    # best to worst
METRICS = MappingProxyType({
    "turn2_tpot_mean": "Turn 2+ TPOT",
    "turn2_ttft_p50": "Turn 2+ TTFT",
    "effect_ttft": "PPD/PD Turn 2+ TTFT ratio",
})


class FidelityDataError(ValueError):
    """data/expected_error.json is missing a class or metric, or holds a value that is not a percentage."""


@dataclass(frozen=True)
class ErrorClass:
    name: str
    label: str
    errors: Mapping[str, float]      # metric -> expected absolute relative error, %
    source: str


@cache
def error_classes() -> Mapping[str, ErrorClass]:
    try:
        raw = json.loads(ERRORS_FILE.read_text())
    except (OSError, ValueError) as e:
        raise FidelityDataError(f"{ERRORS_FILE}: cannot read the expected errors ({e})") from None
    classes = raw.get("classes") if isinstance(raw, dict) else None
    if not isinstance(classes, dict):
        raise FidelityDataError(f"{ERRORS_FILE}: no 'classes' object")
    out = {}
    for name in CLASSES:
        c = classes.get(name)
        if not isinstance(c, dict) or not isinstance(c.get("errors"), dict):
            raise FidelityDataError(f"{ERRORS_FILE}: class {name!r} is missing or has no 'errors'")
        errs = {}
        for m in METRICS:
            v = c["errors"].get(m)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or not 0 <= v <= 1000:
                raise FidelityDataError(f"{ERRORS_FILE}: classes.{name}.errors.{m} must be a percentage in "
                                        f"[0, 1000], got {v!r}")
            errs[m] = float(v)
        out[name] = ErrorClass(name, str(c.get("label", name)), MappingProxyType(errs), str(c.get("source", "")))
    return MappingProxyType(out)


def classify(gpu: str, model: str, tp: int, layout: str, workload: str) -> tuple[list[str], list[str]]:
    """(every class that applies, worst first, ending with "calibrated"; the reasons, worst first)."""
    reasons: list[str] = []
    applies = ["calibrated"]
    lay = parse_layout(layout).text
    if workload not in CALIBRATED_WORKLOADS:
        applies.insert(0, "unseen_trace")
        reasons.append(f"workload {workload} is natural text the fit never read (it read the synthetic cells and "
                       "ShareGPT)")
    if lay not in CALIBRATED_LAYOUTS:
        applies.insert(0, "unseen_layout")
        reasons.insert(0, f"layout {lay} is not one of the seven calibration layouts "
                          f"({', '.join(CALIBRATED_LAYOUTS)})")
    notes = extrapolation_notes(gpu, model, tp)
    if notes:
        applies.insert(0, "extrapolated")
        what = [f"GPU {gpus()[gpu].name}" if gpus()[gpu].name != "H100-SXM" else "",
                f"model {models()[model].name}" if models()[model].name != "Llama-3.1-8B" else "",
                f"TP {tp}" if tp > 1 else ""]
        reasons.insert(0, "not measured: " + ", ".join(w for w in what if w))
    return applies, reasons


def expected_error(gpu: str, model: str, tp: int, layout: str, workload: str) -> dict:
    """``summary["expected_error"]``: the class, its label, the expected error per metric (%), why, and the
    source of the figures. The class is the worst that applies; each metric's error is the largest of the
    classes that apply (an unseen layout on unseen text carries both misses)."""
    applies, reasons = classify(gpu, model, tp, layout, workload)
    table = error_classes()
    c = table[applies[0]]
    errs = {m: max(table[a].errors[m] for a in applies) for m in METRICS}
    return {"class": c.name, "label": c.label, "errors_pct": errs, "reasons": reasons,
            "source": "; ".join(f"{a}: {table[a].source}" for a in applies if a != "calibrated" or len(applies) == 1)}


def for_scenario(sc) -> dict:
    """The expected error of ``sc``; a heterogeneous fleet takes its worst role's (every role is classified on
    its own GPU x TP, and a mixed fleet is never measured: ``extrapolated`` at least)."""
    if not sc.heterogeneous:
        return expected_error(sc.gpu, sc.model, sc.tp_degree, sc.layout, sc.workload)
    per_role = [expected_error(g, sc.model, t, sc.layout, sc.workload) for g, t in sc.role_hardware().values()]
    table = error_classes()
    errs = {m: max([table["extrapolated"].errors[m]] + [e["errors_pct"][m] for e in per_role]) for m in METRICS}
    # named by its hardware, not its roles: PPD, PD and the Replica of one fleet then give the same reason
    hw = dict.fromkeys(sc.role_hardware().values())
    reasons = ["a fleet mixing " + " and ".join(f"{g} x TP {t}" for g, t in hw) + " (a heterogeneous fleet) "
               "was never measured"]
    reasons += list(dict.fromkeys(r for e in per_role for r in e["reasons"]))
    return {"class": "extrapolated", "label": table["extrapolated"].label, "errors_pct": errs, "reasons": reasons,
            "source": table["extrapolated"].source}


def within_error(a: float, b: float, error_pct: float) -> bool:
    """True when two simulated figures differ by less than the expected error of either (|a/b - 1| below it):
    the simulator cannot tell which is lower."""
    if not (math.isfinite(a) and math.isfinite(b)) or a <= 0 or b <= 0:
        return False
    return abs(math.log(a / b)) < math.log1p(error_pct / 100.0)


def metric_for(field: str) -> str:
    """Which expected error applies to a figure: TPOT columns take the TPOT error, the rest the TTFT one."""
    return "turn2_tpot_mean" if "tpot" in field else "turn2_ttft_p50"
