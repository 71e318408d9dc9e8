"""Downloads of what is on screen: per-request records (CSV), summaries (JSON), charts (PNG via kaleido)."""
from __future__ import annotations

import json
from typing import Any, Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go


def records_csv(results: Mapping[str, dict]) -> bytes:
    frames = [r["records"].assign(system=name) for name, r in results.items()]
    df = pd.concat(frames, ignore_index=True)
    cols = ["system"] + [c for c in df.columns if c != "system"]
    return df[cols].to_csv(index=False).encode()


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


def png_bytes(fig: go.Figure) -> bytes:
    """Render with kaleido (drives Debian's /usr/bin/chromium); called only when a download is clicked."""
    return fig.to_image(format="png", width=1100, height=int(fig.layout.height or 450), scale=2)
