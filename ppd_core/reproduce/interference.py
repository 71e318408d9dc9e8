"""Reproduction: Fig.2 / Fig.7: decode TPOT vs decode batch with a full or an append prefill in the batch."""
from __future__ import annotations

import math
from pathlib import Path
from types import MappingProxyType
from typing import Sequence

import pandas as pd

from ..config.scenario import Scenario
from ..model.microbench import default_meas, fit_mape, interference_tpot_ms
from .judge import Item, Tol, judged_row, judged_table, measured_dir_or_none
from .published import PUB_INTERFERENCE


INTERFERENCE_BATCHES = tuple(range(0, 251, 10))
FIG2_SHARED_PREFIX = 2048   # the micro-benchmark's decodes share one cached 2,048-token prompt (cascade attention)
_CURVES = (("decode only", "none", 1), ("+1 full prefill", "full", 1), ("+1 append-prefill", "append", 1),
           ("+4 full prefills", "full", 4), ("+4 append-prefills", "append", 4))
_MEASURED_SCEN = MappingProxyType({"decoding_only": "decode only",
                                   "decoding_with_1_full_prefill": "+1 full prefill",
                                   "decoding_with_1_append_prefill": "+1 append-prefill",
                                   "decoding_with_4_full_prefill": "+4 full prefills",
                                   "decoding_with_4_append_prefill": "+4 append-prefills"})


def interference(measured_dir: str | Path | None = None, params=None,
                 batches: Sequence[int] = INTERFERENCE_BATCHES) -> Item:
    """Fig.2: decode TPOT vs decode batch (context 2,048+4 tokens, 64 output tokens) alone, with one full
    prefill (1,024 tokens, no cache) and with one append-prefill (1,024 new tokens on a 2,048-token cache);
    Fig.7: the same with four prefills. From ``model.interference_tpot_ms``."""
    sc = Scenario(shared_prefix_tokens=FIG2_SHARED_PREFIX)
    rows = []
    for label, kind, n in _CURVES:
        for b in batches:
            rows.append({"batch": int(b), "curve": label, "source": "simulated",
                         "tpot_ms": interference_tpot_ms(sc, int(b), kind=kind, n_prefills=n, prefill_tokens=1024,
                                                         cached_tokens=2048, decode_ctx=2048 + 4,
                                                         output_tokens=64, params=params)})
    data = pd.DataFrame(rows)
    mdir = measured_dir_or_none(measured_dir)
    notes = ["Measured CSV: an older configuration of the same benchmark (decodes add 32 tokens, the append "
             "adds 128 tokens to the 2,048 context; client-measured through the API server), which gave "
             "+117 % / +9 % at batch 200, not the paper's +48 % / +2 %: shown for shape only, not judged."]
    if mdir is not None and (mdir / "interference_core.csv").exists():
        m = pd.read_csv(mdir / "interference_core.csv")
        m = m[m["scenario"].isin(list(_MEASURED_SCEN))]
        data = pd.concat([data, pd.DataFrame({
            "batch": m["decode_count"].astype(int), "curve": m["scenario"].map(dict(_MEASURED_SCEN)),
            "source": "measured (older config)", "tpot_ms": m["decode_avg_tpot_ms_mean"].astype(float)})],
            ignore_index=True)
    data = data.dropna(subset=["tpot_ms"])
    base = data[data["curve"] == "decode only"].set_index(["source", "batch"])["tpot_ms"]
    key = list(zip(data["source"], data["batch"]))
    data["slowdown_pct"] = [100.0 * (t / base.get(k, math.nan) - 1.0) if base.get(k, 0) else math.nan
                            for t, k in zip(data["tpot_ms"], key)]

    def at(curve: str, source: str = "simulated", b: int = 200) -> pd.Series:
        d = data[(data["curve"] == curve) & (data["source"] == source) & (data["batch"] == b)]
        return d.iloc[0] if len(d) else pd.Series({"tpot_ms": math.nan, "slowdown_pct": math.nan})

    one, four = Tol("abs", 5.0), Tol("abs", 10.0)
    t = [judged_row("decode-only TPOT at batch 200", "ms", at("decode only")["tpot_ms"],
              PUB_INTERFERENCE["decode_only_ms_b200"], Tol("rel", 0.30)),
         judged_row("+1 full prefill: TPOT slowdown at batch 200", "%", at("+1 full prefill")["slowdown_pct"],
              PUB_INTERFERENCE[("full", 1)], one),
         judged_row("+1 append-prefill: TPOT slowdown at batch 200", "%", at("+1 append-prefill")["slowdown_pct"],
              PUB_INTERFERENCE[("append", 1)], one),
         judged_row("+4 full prefills: TPOT slowdown at batch 200", "%", at("+4 full prefills")["slowdown_pct"],
              PUB_INTERFERENCE[("full", 4)], four),
         judged_row("+4 append-prefills: TPOT slowdown at batch 200", "%", at("+4 append-prefills")["slowdown_pct"],
              PUB_INTERFERENCE[("append", 4)], four)]
    if mdir is not None and (data["source"] == "measured (older config)").any():
        src = "measured (older config)"
        for curve, label in (("decode only", "decode-only TPOT at batch 200"),
                             ("+1 full prefill", "+1 full prefill: TPOT slowdown at batch 200"),
                             ("+1 append-prefill", "+1 append-prefill: TPOT slowdown at batch 200")):
            col = "tpot_ms" if curve == "decode only" else "slowdown_pct"
            sim_col = at(curve)[col]
            t.append(judged_row(label, "ms" if col == "tpot_ms" else "%", sim_col, at(curve, src)[col], None, src))
    table = judged_table(t)
    full1, app1, full4, app4 = (table.loc[i, "simulated"] for i in (1, 2, 3, 4))
    ok1 = bool(table.loc[1, "within"]) and bool(table.loc[2, "within"])
    ok4 = bool(table.loc[3, "within"]) and bool(table.loc[4, "within"])
    verdict = (f"1 prefill at batch 200: full {full1:+.0f} % vs +48 %, append {app1:+.0f} % vs +2 % "
               f"({'within' if ok1 else 'outside'} ±5 pp); 4 prefills: {full4:+.0f} % / {app4:+.0f} % vs "
               f"+57 % / +21 % ({'within' if ok4 else 'outside'} ±10 pp); decode-only "
               f"{table.loc[0, 'simulated']:.1f} ms vs ≈28 ms "
               f"({'within' if table.loc[0, 'within'] else 'outside'} ±30 %).")
    if not (table.loc[1, "within"] and table.loc[3, "within"]):
        mape = fit_mape()
        fitted = f", MAPE {mape:.2f} %" if mape is not None else ""
        verdict += (" Full prefills: the interference law (the cascade read the batch loses while a request without "
                    f"the shared 2,048-token prefix runs, fitted on all 193 measured micro-benchmark rows{fitted}) "
                    "prices it engine-side; with that benchmark's client-side streaming cost "
                    f"(~{default_meas().stream_us:.0f} us per stream per step) it is the measured configuration's "
                    "≈ +117 %, about 2.4x the paper's figure; the paper's +48 % / +57 % come from a configuration "
                    "with no raw data here, so the law is not bent to them.")
    tol = ("slowdowns at batch 200: ±5 pp with one prefill (the paper's headline claim), ±10 pp with four "
           "(figure readings); decode-only TPOT ±30 % (a figure reading). Unchanged since the interference law "
           "replaced the fitted per-request constants: the full-prefill rows now fall outside, for the reason "
           "in the verdict.")
    return Item("interference", "Fig.2 / Fig.7: prefill-decode interference", table, verdict, tol, data,
                tuple(notes))
