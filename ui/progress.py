"""The one progress adapter of the pages: a Streamlit implementation of the core's ``Progress`` protocol
(``ppd_core.analysis.progress``: a callable ``progress(done, total)``), used by Sweep, Advisor, Paper and
Validation for every long job they hand to ``ppd_core``."""
from __future__ import annotations

from typing import Any

import streamlit as st

MAX_PROGRESS_UPDATES = 40


class StreamlitProgress:
    """``progress(done, total)`` drawing a Streamlit progress bar, redrawn at most ``MAX_PROGRESS_UPDATES``
    times; ``close()`` (or leaving the ``with`` block) removes it. Created inside an ``st.cache_data`` function
    it is replayed on a cache hit (ending empty)."""

    def __init__(self, label: str, unit: str = "runs"):
        self.label, self.unit = label, unit
        self.bar = st.progress(0.0, text=f"{label}…")
        self.step = 0

    def __call__(self, done: int, total: int) -> None:
        total = max(total, 1)
        if done >= total or done * MAX_PROGRESS_UPDATES >= (self.step + 1) * total:
            self.step = done * MAX_PROGRESS_UPDATES // total
            self.bar.progress(min(done / total, 1.0), text=f"{self.label}… {done:,}/{total:,} {self.unit}")

    def close(self) -> None:
        self.bar.empty()

    def __enter__(self) -> "StreamlitProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
