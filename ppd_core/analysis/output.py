"""Writing and printing sweep results: CSV/Parquet files and a short text table."""
from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Sequence

from ..config.errors import ScenarioError

OUT_FORMATS = MappingProxyType({".csv": "csv", ".parquet": "parquet", ".pq": "parquet"})


def out_format(path: str) -> str:
    ext = Path(path).suffix.lower()
    if ext not in OUT_FORMATS:
        raise ScenarioError("--out", f"{path[:60]!r}: unknown extension {ext or '(none)'!r}; "
                                     f"use one of {', '.join(OUT_FORMATS)}")
    return OUT_FORMATS[ext]


def write_frame(df, path: str) -> None:
    fmt = out_format(path)
    if fmt == "csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)


SHOW_COLUMNS = ("turn2plus.ttft_ms.mean", "turn2plus.tpot_ms.mean", "success_rate", "throughput.tokens_per_s",
                "local_share")


def format_table(df, swept: Sequence[str], limit: int = 30) -> str:
    """A short text table: the swept keys and a few headline figures."""
    cols = [c for c in swept if c in df.columns]
    slo = [c for c in df.columns if c.startswith("slo_attainment.")][:2]
    cols += [c for c in (*SHOW_COLUMNS[:2], *slo, *SHOW_COLUMNS[2:]) if c in df.columns]
    view = df[cols].head(limit)
    text = view.to_string(index=False, float_format=lambda x: f"{x:,.3f}", na_rep="-")
    if len(df) > limit:
        text += f"\n... {len(df) - limit:,} more rows (write them all with --out FILE.csv or FILE.parquet)"
    return text
