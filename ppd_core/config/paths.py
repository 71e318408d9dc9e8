"""Where ppd_core finds its files. From a checkout the catalogs are the repository's ``data/*.json`` and the
dashboard is the repository's ``app.py`` (with ``pages/``, ``ui/``, ``.streamlit/``); an installed wheel
(``pip install .``, ``python -m build --wheel``: see setup.py) carries the same files as ``ppd_core/data/`` and
``ppd_core/dashboard/``."""
from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent        # .../ppd_core
REPO_ROOT = PACKAGE_DIR.parent                               # the checkout (or site-packages when installed)
INSTALLED = (PACKAGE_DIR / "data").is_dir()                  # an installed package, not a checkout
DATA_DIR = PACKAGE_DIR / "data" if INSTALLED else REPO_ROOT / "data"
#: the folder of the dashboard's ``app.py`` (``ppd app`` serves it with ``streamlit run``)
DASHBOARD_DIR = PACKAGE_DIR / "dashboard" if (PACKAGE_DIR / "dashboard" / "app.py").is_file() else REPO_ROOT
PARAMS_FILE = DATA_DIR / "perf_params.json"                  # written by ``calibrate``, read by model.params
MEASURED_DEFAULT = REPO_ROOT.parent / "shared" / "data" / "ppd-measured"
