"""Downloads of what is on screen: per-request records (CSV), summaries (JSON), charts (PNG via kaleido)."""
from __future__ import annotations

import json
import threading
from typing import Any, Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go


def describe(sc: Any) -> str:
    """The scenario in one short line (PNG footers, CSV headers)."""
    return (f"PPD Explorer · {sc.layout} · policy {sc.policy} · {sc.gpu} · {sc.model} tp={sc.tp} · "
            f"{sc.workload} · qps {sc.qps:g} · {sc.bandwidth_gbps:g} GB/s · w_ttft {sc.w_ttft:g} · "
            f"w_tpot {sc.w_tpot:g} · {sc.conversations} conversations · seed {sc.seed}")


def header(link: str | None, description: str | None = None) -> str:
    """``# ``-comment lines that put a CSV in context (pandas: ``read_csv(..., comment="#")``)."""
    lines = [f"# {description}"] if description else []
    if link:
        lines.append(f"# link: {link}")
    return "".join(line + "\n" for line in lines)


def csv_with_context(df: pd.DataFrame, link: str | None, description: str | None = None) -> bytes:
    return (header(link, description) + df.to_csv(index=False)).encode()


def records_csv(results: Mapping[str, dict], scenarios: Mapping[str, Any] | None = None,
                link: str | None = None) -> bytes:
    """Per-request records of every system, with its layout and policy columns (``scenarios``) and the share
    link in a header comment."""
    frames = []
    for name, r in results.items():
        extra = {"system": name}
        if scenarios is not None and name in scenarios:
            extra.update(layout=scenarios[name].layout, policy=scenarios[name].policy)
        frames.append(r["records"].assign(**extra))
    df = pd.concat(frames, ignore_index=True)
    first = [c for c in ("system", "layout", "policy") if c in df.columns]
    cols = first + [c for c in df.columns if c not in first]
    return csv_with_context(df[cols], link)


def summary_json(results: Mapping[str, dict], url: str) -> bytes:
    payload = {"share_url": url, "systems": {name: r["summary"] for name, r in results.items()}}
    return json.dumps(payload, indent=2, default=_json_default).encode()


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def with_footer(fig: go.Figure, context: str | None) -> go.Figure:
    """A copy of ``fig`` with ``context`` (the scenario's short description and link) as a footer line."""
    out = go.Figure(fig)
    if not context:
        return out
    bottom = int(out.layout.margin.b or 40)
    out.update_layout(margin=dict(b=bottom + 60))
    out.add_annotation(text=context.replace("\n", "<br>"), xref="paper", yref="paper", x=0, y=0, yshift=-bottom - 50,
                       xanchor="left", yanchor="top", showarrow=False, align="left",
                       font=dict(size=11, color="#555"))
    return out


PNG_TIMEOUT_S = 120.0


class PNGExportTimeout(RuntimeError):
    """The PNG export's browser did not answer in time (picklable: a plain message)."""


def png_bytes(fig: go.Figure, context: str | None = None) -> bytes:
    """Render with kaleido (drives Debian's /usr/bin/chromium); called only when a download is clicked.
    ``context`` goes in a footer so the PNG says which scenario it shows."""
    out = with_footer(fig, context)
    height = int(out.layout.height or 450) + (60 if context else 0)
    # bounded: kaleido's own 90 s timeout covers rendering, not Chromium's start, which hung once under load
    # (a clean-clone CI run, 2026-12-02); a hung export must not hold this session's download forever. A
    # daemon thread, not an executor: concurrent.futures joins its workers at exit, so one hung export would
    # also keep the process from ending
    box: dict[str, Any] = {}

    def render() -> None:
        try:
            box["png"] = out.to_image(format="png", width=1100, height=height, scale=2)
        except Exception as exc:        # noqa: BLE001 - re-raised in the caller's thread below
            box["error"] = exc
    worker = threading.Thread(target=render, name="png-export", daemon=True)
    worker.start()
    worker.join(PNG_TIMEOUT_S)
    if worker.is_alive():
        raise PNGExportTimeout(f"PNG export: Chromium did not answer within {PNG_TIMEOUT_S:g} s; "
                               "try the download again")
    if "error" in box:
        raise box["error"]
    return box["png"]
