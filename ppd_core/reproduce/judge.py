"""The judging framework of the reproductions: an ``Item`` (one figure or table), tolerances, table rows,
and the benchmark setting every grid item runs in."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from ..analysis.grid import PAPER_BASE
from ..analysis.progress import Progress
from ..analysis.sweep import run_grid
from ..calibration.measured import HASH_QUIRK_FRAC
from ..config.errors import PPDError
from ..config.scenario import Scenario





#: The synthetic benchmark setting of the paper's sweep (section 4.2) as it was measured: a 10 s Poisson window,
#: a 50-connection client, a 120 s timeout, x=0 layouts routed through P (``sweep --paper-grid``), plus the
#: proxy's routing-key quirk that sent ~2/9 of Turn-2 requests down P->D as "new conversations" (measured
#: README; ``validate`` simulates the comprehensive points the same way). Table 1 and Table 2 were computed
#: from those measurements, so they are reproduced with the quirk.
BENCH = MappingProxyType({**{k: str(v) for k, v in PAPER_BASE.items()}, "rehash_frac": str(HASH_QUIRK_FRAC)})



@dataclass(frozen=True, eq=False)
class Item:
    """One reproduced figure or table."""
    name: str
    title: str
    table: pd.DataFrame          # quantity, unit, simulated, published, source, diff, tolerance, within
    verdict: str
    tolerance: str
    data: pd.DataFrame           # the simulated series behind the chart (item-specific tidy columns)
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool | None:
        """True if every judged row is within its tolerance; None if nothing is judged."""
        judged = [w for w in self.table["within"].tolist() if w is not None and not is_nan(w)]
        return None if not judged else all(bool(w) for w in judged)

    def counts(self) -> tuple[int, int]:
        judged = [bool(w) for w in self.table["within"].tolist() if w is not None and not is_nan(w)]
        return sum(judged), len(judged)

    def to_json(self) -> dict:
        return {"name": self.name, "title": self.title, "verdict": self.verdict, "tolerance": self.tolerance,
                "ok": self.ok, "notes": list(self.notes), "table": json_records(self.table),
                "data": json_records(self.data)}


# ---- small helpers -------------------------------------------------------------------------------------------

def is_nan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def as_number(x: Any) -> float:
    """A summary figure as a float (NaN for missing)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v if math.isfinite(v) else math.nan


def json_records(df: pd.DataFrame) -> list[dict]:
    out = []
    for rec in df.to_dict("records"):
        clean = {}
        for k, v in rec.items():
            if isinstance(v, (np.integer,)):
                v = int(v)
            elif isinstance(v, (np.floating, float)):
                v = None if not math.isfinite(float(v)) else float(v)
            elif isinstance(v, np.bool_):
                v = bool(v)
            elif v is pd.NA:
                v = None
            clean[str(k)] = v
        out.append(clean)
    return out


def pct_change(new: float, old: float) -> float:
    return 100.0 * (new / old - 1.0) if old and math.isfinite(old) and math.isfinite(new) else math.nan


@dataclass(frozen=True)
class Tol:
    """A tolerance: ``abs`` |sim - pub| <= a, ``rel`` |sim/pub - 1| <= a, ``range`` a <= sim <= b, ``holds``
    a yes/no property (sim is 1.0 for yes)."""
    kind: str
    a: float = 0.0
    b: float = 0.0

    def text(self, unit: str = "") -> str:
        u = f" {unit}" if unit and unit not in ("%",) else ""
        if self.kind == "abs":
            return f"±{self.a:g}{' pp' if unit == '%' else u}"
        if self.kind == "rel":
            return f"±{100 * self.a:g} %"
        if self.kind == "range":
            return f"{self.a:g} to {self.b:g}{' %' if unit == '%' else u}"
        if self.kind == "holds":
            return "must hold"
        return self.kind

    def check(self, sim: float, pub: float) -> bool | None:
        if not math.isfinite(sim):
            return False
        if self.kind == "abs":
            return abs(sim - pub) <= self.a + 1e-9
        if self.kind == "rel":
            return abs(sim / pub - 1.0) <= self.a + 1e-9 if pub else None
        if self.kind == "range":
            return self.a - 1e-9 <= sim <= self.b + 1e-9
        if self.kind == "holds":
            return sim >= 0.5
        return None


def judged_row(quantity: str, unit: str, sim: float, pub: float, tol: Tol | None, source: str = "paper") -> dict:
    sim, pub = as_number(sim), as_number(pub)
    within = tol.check(sim, pub) if tol is not None else None
    return {"quantity": quantity, "unit": unit, "simulated": sim, "published": pub, "source": source,
            "diff": sim - pub if math.isfinite(sim) and math.isfinite(pub) else math.nan,
            "tolerance": tol.text(unit) if tol is not None else "context only", "within": within}


def judged_table(rows: Iterable[dict]) -> pd.DataFrame:
    cols = ["quantity", "unit", "simulated", "published", "source", "diff", "tolerance", "within"]
    df = pd.DataFrame(list(rows), columns=cols)
    df["within"] = df["within"].astype(object)
    return df


def run_scenarios(scenarios: Sequence[Scenario], progress: Progress | None, pool=None) -> pd.DataFrame:
    """``run_grid`` of an item's scenarios (``pool``: a long-lived ``WorkerPool``, e.g. the dashboard's)."""
    return run_grid(list(scenarios), progress=progress, pool=pool)


def bench_scenario(**changes: Any) -> Scenario:
    return Scenario(**{**dict(BENCH), **changes})


def judged_counts(rows: Iterable[dict]) -> tuple[int, int]:
    w = [r["within"] for r in rows if r["within"] is not None]
    return sum(bool(x) for x in w), len(w)


def measured_dir_or_none(path: str | Path | None) -> Path | None:
    """The measured folder if given and present; a given folder that is missing is an error."""
    if path is None or str(path) == "":
        return None
    p = Path(path)
    if not p.is_dir():
        raise PPDError(f"--measured: {path} is not a directory")
    return p
