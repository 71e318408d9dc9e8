"""Write ``data/expected_error.json`` (read by ``metrics.fidelity``) from what the validation measured: the
calibration set's own error (``validate``), the held-out families (``lolo.families``) and the public anchors
outside the measured hardware (docs/fidelity.md, ``tests/test_anchors.py``)."""
from __future__ import annotations

import json
import math
from datetime import date
from pathlib import Path

from ..config.errors import PPDError
from ..metrics.fidelity import CLASSES, METRICS

#: mean |simulated/public - 1| of the six judged anchors on hardware or models the calibration never measured
#: (H200, A100-80GB, Llama-3.1-70B TP 4, A100-40GB x2, Qwen3-30B-A3B): +8, +4, -8, -11, -14, +20 % (README
#: "Fidelity", public anchors table; sources in data/anchors/anchors_used.csv)
ANCHOR_EXTRAPOLATED_PCT = round((8 + 4 + 8 + 11 + 14 + 20) / 6, 1)
LABELS = {
    "calibrated": "calibrated layout and workload",
    "unseen_trace": "natural text the fit never read",
    "unseen_layout": "layout family the fit never read",
    "extrapolated": "extrapolated hardware, model or TP",
}


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def classes(validation: dict, fams: dict, anchor_pct: float = ANCHOR_EXTRAPOLATED_PCT) -> dict:
    """{class: {label, errors, source}} from ``validate``'s summary and ``families()``'s result."""
    ov = validation["overall"]
    eff = (validation.get("effect_size") or {}).get("ttft") or {}
    cal = {"turn2_tpot_mean": _num(ov["turn2_tpot_mean"]["mape"]),
           "turn2_ttft_p50": _num(ov["turn2_ttft_p50_unsaturated"]["mape"]),
           "effect_ttft": _num(eff.get("median_abs_pct"))}
    if any(v is None for v in cal.values()):
        raise PPDError(f"--errors-out: the validation has no figure for {[k for k, v in cal.items() if v is None]}")
    f = fams["families"]

    def fam(name, metric):
        d = f.get(name)
        if d is None:
            return None
        v = d["effect_ttft"] if metric == "effect_ttft" else d[
            "turn2_tpot_mean" if metric == "turn2_tpot_mean" else "turn2_ttft_p50_unsaturated"]["mape"]
        return _num(v)
    layout_fams = [n for n in ("pD", "multi_P") if n in f]
    if not layout_fams or "natural_text" not in f:
        raise PPDError("--errors-out needs the families pD or multi_P and natural_text")
    lay = {m: max([cal[m]] + [v for n in layout_fams if (v := fam(n, m)) is not None]) for m in METRICS}
    nat = {m: max(cal[m], fam("natural_text", m) or 0.0) for m in METRICS}
    nat["effect_ttft"] = lay["effect_ttft"]       # no PPD/PD pairs in the ShareGPT runs: the layout families'
    ext = {m: round(math.hypot(lay[m], anchor_pct), 1) for m in METRICS}
    fam_txt = ", ".join(layout_fams)
    return {
        "calibrated": {"label": LABELS["calibrated"], "errors": {m: round(v, 1) for m, v in cal.items()},
                       "source": f"validate on the calibration set, {validation.get('seeds', 1)} seeds"},
        "unseen_trace": {"label": LABELS["unseen_trace"], "errors": {m: round(v, 1) for m, v in nat.items()},
                         "source": "calibrate --families: natural_text held out (effect: the layout families')"},
        "unseen_layout": {"label": LABELS["unseen_layout"], "errors": {m: round(v, 1) for m, v in lay.items()},
                          "source": f"calibrate --families: the worst of {fam_txt} held out"},
        "extrapolated": {"label": LABELS["extrapolated"], "errors": ext,
                         "source": f"unseen_layout and the public anchors off the measured hardware "
                                   f"({anchor_pct:g} % mean), added in quadrature"},
    }


def write(path: Path, validation: dict, fams: dict, command: str) -> dict:
    out = {
        "_doc": "Expected simulator error per validation class (ppd_core/metrics/fidelity.py, which says what "
                "each class is): mean absolute relative error in % of Turn 2+ TPOT mean and of Turn 2+ p50 TTFT "
                "(points under 1 s with >= 95 % success), and the median absolute error of the PPD/PD Turn 2+ "
                "mean TTFT ratio. Written by `calibrate --families --errors-out`; do not edit by hand.",
        "measured": {"command": command, "date": date.today().isoformat(),
                     "families_seconds": fams.get("seconds")},
        "families": {n: {k: d[k] for k in ("doc", "held_out_layouts", "turn2_tpot_mean",
                                            "turn2_ttft_p50_unsaturated", "effect_ttft", "converged")}
                     for n, d in fams["families"].items()},
        "classes": {c: classes(validation, fams)[c] for c in CLASSES},
    }
    path.write_text(json.dumps(out, indent=1) + "\n")
    return out
