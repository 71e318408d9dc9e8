"""The Validation page's runs: ``ppd_core.calibration.validate`` on the bundled calibration set or on checked
uploads, in the server's pool, cached per (input, sample, code version), with the one progress adapter."""
from __future__ import annotations

import streamlit as st

from ppd_core.calibration.validate import validate
from ppd_core.config.paths import MEASURED_DEFAULT

from . import runner, uploads
from . import validation_view as V
from .progress import StreamlitProgress


def _validate(folder: str, sample: int) -> dict:
    with StreamlitProgress("Simulating the measured points") as progress:
        pts, summary, notes = runner.pooled(
            lambda **opt: validate(folder, sample or None, progress=progress, seeds=1, **opt), long=True)
    return {"points": V.points_frame(pts), "summary": summary, "notes": notes, "raw": pts}


@st.cache_data(max_entries=4, show_spinner=False)
def run_bundled(sample: int, version: str) -> dict:
    """Every usable point of the bundled calibration set (``sample`` > 0: a random sample of that many
    points). ``version``: the simulator's code + parameter version. The progress bar is created here, so a
    cache hit replays it and ends empty."""
    return _validate(str(MEASURED_DEFAULT), sample)


@st.cache_data(max_entries=4, show_spinner=False)
def run_uploaded(files: tuple[tuple[str, bytes], ...], sample: int, version: str) -> dict:
    """The same for uploaded CSVs (already checked), written to a fresh temporary folder for the run."""
    with uploads.materialised(files) as folder:
        return _validate(folder, sample)
