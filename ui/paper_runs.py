"""The Paper page's runs: one ``ppd_core.reproduce`` item per call, in the server's pool, cached per (item, grid,
measured folder, code version), with the one progress adapter; a refused item is one line on the page."""
from __future__ import annotations

import streamlit as st

from ppd_core import reproduce as P
from ppd_core.analysis.cache import code_version
from ppd_core.config.errors import PPDError

from . import runner
from .progress import StreamlitProgress


def measured_dir() -> str | None:
    """The bundled measured CSVs' folder, or None where the server does not have them."""
    return str(P.MEASURED_DEFAULT) if P.MEASURED_DEFAULT.is_dir() else None


@st.cache_data(max_entries=32, show_spinner=False)
def run_item(name: str, quick: bool, measured: str | None, version: str) -> P.Item:
    """One paper item (``version``: the simulator's code + parameter version, so recalibration re-runs); the
    progress bar is created here, so a cache hit replays it (ending empty)."""
    with StreamlitProgress(f"{name}: simulating") as progress:
        return runner.pooled(lambda pool=None, workers=None: P.run_item(name, quick=quick, measured_dir=measured,
                                                                         progress=progress, pool=pool), long=True)


def get(name: str, quick: bool = False) -> P.Item:
    """``run_item`` for this server's measured folder and code version; a ppd_core error (or a worker lost
    twice) is one st.error line and stops the page."""
    return runner.run_or_stop(lambda: run_item(name, quick, measured_dir(), code_version()), name)
