"""Where ppd_core finds its files. From a checkout the catalogs are the repository's ``data/*.json``; an
installed package (``pip install .``) carries the same files as ``ppd_core/data/`` (see pyproject.toml)."""
from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent        # .../ppd_core
REPO_ROOT = PACKAGE_DIR.parent                               # the checkout (or site-packages when installed)
DATA_DIR = PACKAGE_DIR / "data" if (PACKAGE_DIR / "data").is_dir() else REPO_ROOT / "data"
PARAMS_FILE = DATA_DIR / "perf_params.json"                  # written by ``calibrate``, read by model.params
MEASURED_DEFAULT = REPO_ROOT.parent / "shared" / "data" / "ppd-measured"
