"""``python -m ppd_core calibrate --measured DIR [--out FILE.json] [--from-defaults]``."""
from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

from ..calibration.calibrate import calibrate, write
from ..config.errors import PPDError
from ..config.paths import PARAMS_FILE
from ..model.params import PerfParams, default_params

NAME = "calibrate"


def add_parser(sub) -> None:
    c = sub.add_parser("calibrate", help="fit the performance model to measured data")
    c.add_argument("--measured", required=True, metavar="DIR")
    c.add_argument("--out", default=str(PARAMS_FILE), help="where to write the parameters (JSON)")
    c.add_argument("--workers", type=int, help="processes (default: all cores)")
    c.add_argument("--from-defaults", action="store_true",
                   help="start from the literature defaults instead of the current calibrated file")


def handle(args) -> int:
    out = Path(args.out)
    if out.suffix != ".json":
        raise PPDError(f"--out: {args.out} must end in .json")
    start = PerfParams() if args.from_defaults else default_params()
    p, report = calibrate(args.measured, start, args.workers, log=lambda m: print(m, file=sys.stderr))
    write(p, report, out, args.measured)
    print(json.dumps({"params": asdict(p), "validation": report["validation"]["overall"]}, indent=1))
    return 0
