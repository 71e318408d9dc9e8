"""The one progress interface of long jobs (sweeps, validation, the advisor, paper items): a callable
``progress(done, total)``. ``TextProgress`` draws it on a terminal; the dashboard adapts it to a
Streamlit progress bar."""
from __future__ import annotations

import sys
from time import perf_counter
from typing import Protocol


class Progress(Protocol):
    def __call__(self, done: int, total: int) -> None: ...


class TextProgress:
    """A one-line progress bar on a stream (stderr), redrawn at most every 0.1 s."""

    def __init__(self, label: str = "sweep", stream=None, width: int = 30, unit: str = "runs"):
        self.label, self.stream, self.width, self.unit = label, stream or sys.stderr, width, unit
        self.t0 = perf_counter()
        self.last = -1.0
        self.open_line = False

    def __call__(self, done: int, total: int) -> None:
        now = perf_counter()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        frac = done / total if total else 1.0
        bar = "#" * round(frac * self.width)
        self.stream.write(f"\r{self.label} [{bar:<{self.width}}] {done:,}/{total:,} {self.unit}  "
                          f"{now - self.t0:5.1f} s")
        self.open_line = done < total
        if not self.open_line:
            self.stream.write("\n")
        self.stream.flush()

    def close(self) -> None:
        """End a line left open by an interrupted run, so an error message starts on its own line."""
        if self.open_line:
            self.stream.write("\n")
            self.stream.flush()
            self.open_line = False
