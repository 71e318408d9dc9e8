"""The interference stage's targets: the paper's Fig.2/Fig.7 TPOT slowdowns at decode batch 200 (kept apart
from the measured-row stages so the interference law can be replaced on its own)."""
from __future__ import annotations

import numpy as np

from ..config.scenario import Scenario
from ..model.microbench import interference_tpot_ms
from ..model.params import PerfParams

PAPER_INTERFERENCE = (  # (kind, prefills, relative TPOT increase at decode batch 200), PPD paper 4.1, C.1
    ("full", 1, 0.48), ("append", 1, 0.02), ("full", 4, 0.57), ("append", 4, 0.21))


def interference_residuals(p: PerfParams) -> np.ndarray:
    sc = Scenario()
    base = interference_tpot_ms(sc, 200, "none", decode_ctx=2052, params=p)
    out = []
    for kind, n, target in PAPER_INTERFERENCE:
        t = interference_tpot_ms(sc, 200, kind, n_prefills=n, decode_ctx=2052, params=p)
        out.append((t / base - 1) - target)
    return np.asarray(out)
