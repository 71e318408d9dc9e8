"""The registry of reproductions: run one by name, parse ``--only``, format an item as text."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..analysis.progress import Progress
from ..config.errors import PPDError
from .engines import engines
from .fig5 import fig5
from .fig6 import fig6
from .headline import headline
from .interference import interference
from .judge import Item, is_nan
from .table1 import table1
from .table2 import table2


# ---- registry and CLI ----------------------------------------------------------------------------------------

ITEMS = ("interference", "table1", "fig5", "fig6", "table2", "headline", "engines")
GRID_ITEMS = ("table1", "table2", "engines")


def run_item(name: str, *, quick: bool = False, measured_dir: str | Path | None = None,
             progress: Progress | None = None, pool=None) -> Item:
    """Run one item by name with the options that apply to it (``pool``: a long-lived ``WorkerPool`` for the
    grid items' runs, e.g. the dashboard's one pool; None: a pool per call)."""
    if name == "interference":
        return interference(measured_dir)
    if name == "table1":
        return table1(progress, measured_dir, pool=pool)
    if name == "fig5":
        return fig5(progress=progress, pool=pool)
    if name == "fig6":
        return fig6(progress=progress, pool=pool)
    if name == "table2":
        return table2(quick, progress, measured_dir=measured_dir, pool=pool)
    if name == "headline":
        return headline(measured_dir=measured_dir, progress=progress, pool=pool)
    if name == "engines":
        return engines(progress, measured_dir, pool=pool)
    raise PPDError(f"--only: {name[:40]!r} is not an item; choose from {', '.join(ITEMS)}")


def parse_only(text: str | None) -> tuple[str, ...]:
    if not text:
        return ITEMS
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    bad = [n for n in names if n not in ITEMS]
    if bad or not names:
        raise PPDError(f"--only: {(bad or [text])[0][:40]!r} is not an item; choose from {', '.join(ITEMS)}")
    return names


def _fmt_cell(v: Any, unit: str = "") -> str:
    if v is None or is_nan(v):
        return "-"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "NO"
    if isinstance(v, (int, float, np.floating)):
        if unit == "bool":
            return "yes" if v >= 0.5 else "no"
        return f"{v:,.2f}" if abs(v) < 100 else f"{v:,.1f}"
    return str(v)


def format_item(item: Item) -> str:
    t = item.table
    view = pd.DataFrame({
        "quantity": t["quantity"], "unit": t["unit"],
        "simulated": [_fmt_cell(v, u) for v, u in zip(t["simulated"], t["unit"])],
        "published": [_fmt_cell(v, u) for v, u in zip(t["published"], t["unit"])],
        "source": t["source"], "tolerance": t["tolerance"],
        "ok": ["-" if w is None else ("yes" if w else "NO") for w in t["within"]],
    })
    ok_n, n = item.counts()
    status = "no judged rows" if n == 0 else f"{ok_n}/{n} within tolerance"
    lines = [f"== {item.title} [{item.name}] — {status} ==", view.to_string(index=False), "",
             f"tolerance: {item.tolerance}", f"verdict:   {item.verdict}"]
    lines += [f"note:      {n_}" for n_ in item.notes]
    return "\n".join(lines)


def summary_rows(items: Mapping[str, Item]) -> pd.DataFrame:
    """One row per item: name, title, judged counts, ok, verdict (for an overview table)."""
    rows = []
    for name, it in items.items():
        ok_n, n = it.counts()
        rows.append({"item": name, "title": it.title, "within": f"{ok_n}/{n}", "ok": it.ok, "verdict": it.verdict})
    return pd.DataFrame(rows)
