"""Layer 8: reproduce the paper's figures and tables with the simulator, overlaid on the published and
measured values (``python -m ppd_core paper [--only NAME[,NAME...]] [--json] [--quick] [--measured DIR]``).

Every item is a function returning an ``Item``: ``table`` (tidy: one row per compared quantity with
``simulated``, ``published`` and the ``tolerance`` it is judged by, ``within`` True/False, or None for rows
shown for context only), ``data`` (the full simulated series behind the chart), a one-line ``verdict`` and
the ``tolerance`` text. Simulated numbers always come from a run of the simulator (the calibrated model in
``data/perf_params.json`` when present); the only numbers written in this package are the paper's (``published``) (PPD paper, "Not All
Prefills Are Equal", ICML 2026, as digested in ../shared/reference/ppd-paper.md sections 3, 7 and 8) and the
measured ones read from the CSV files of ../shared/data/ppd-measured.

One module per item, plus ``published`` (the paper's numbers), ``judge`` (``Item``, tolerances) and
``items`` (the registry). Items (``ITEMS``):
  interference  Fig.2 / Fig.7: decode TPOT vs decode batch with a full or an append prefill in the batch.
  table1        Table 1: Turn-2 TTFT change x=0 -> x=1 per P:D ratio and load band.
  fig5          Fig.5: PD vs PPD against KV-transfer bandwidth (1P_3D, WildChat-like, QPS 1).
  fig6          Fig.6: the Eq.1 weight sweep (local share and the TTFT-TPOT frontier).
  table2        Table 2: which layout category wins each (workload, QPS) cell, and the 92.2 % figure.
  headline      The ~68 % Turn 2+ TTFT reduction on ShareGPT-like traffic at competitive TPOT.
  engines       The offline lookup table (``dynamic-table``) against the online Eq.1 engine (``dynamic``).
"""
from __future__ import annotations

from ..config.paths import MEASURED_DEFAULT
from .engines import engine_scenarios, engines
from .fig5 import fig5, fig5_scenarios
from .fig6 import fig6, fig6_scenarios
from .headline import headline, headline_scenarios
from .interference import INTERFERENCE_BATCHES, interference
from .items import GRID_ITEMS, ITEMS, format_item, parse_only, run_item, summary_rows
from .judge import BENCH, Item, Tol, measured_dir_or_none
from .published import *  # noqa: F401,F403  (the published numbers, by name)
from .published import __all__ as _published_names
from .table1 import table1, table1_scenarios
from .table2 import category, table2, table2_scenarios

__all__ = ["MEASURED_DEFAULT", "engine_scenarios", "engines", "fig5", "fig5_scenarios", "fig6", "fig6_scenarios",
           "headline", "headline_scenarios", "INTERFERENCE_BATCHES", "interference", "GRID_ITEMS", "ITEMS",
           "format_item", "parse_only", "run_item", "summary_rows", "BENCH", "Item", "Tol", "measured_dir_or_none",
           "table1", "table1_scenarios", "category", "table2", "table2_scenarios", *_published_names]
