"""``python -m ppd_core calibrate --measured DIR [--out FILE.json] [--from-defaults] [--lolo]``."""
from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

from ..calibration.calibrate import calibrate, literature_start, write
from ..calibration.lolo import format_lolo, lolo
from ..config.errors import PPDError
from ..config.paths import PARAMS_FILE
from ..model.params import default_params

NAME = "calibrate"


def add_parser(sub) -> None:
    c = sub.add_parser("calibrate", help="fit the performance model to measured data")
    c.add_argument("--measured", required=True, metavar="DIR")
    c.add_argument("--out", default=str(PARAMS_FILE), help="where to write the parameters (JSON)")
    c.add_argument("--workers", type=int, help="processes (default: all cores)")
    c.add_argument("--from-defaults", action="store_true",
                   help="start from the literature defaults (and data/physics_params.json for what no stage fits): "
                        "what the shipped file is; default: the current calibrated file")
    c.add_argument("--lolo", action="store_true",
                   help="leave-one-layout-out: refit on six calibration layouts, report the error on the "
                        "seventh, for each (warm start: the current parameters; writes nothing)")
    c.add_argument("--json", action="store_true", help="with --lolo: print the result as JSON")


def handle(args) -> int:
    if args.workers is not None and not 1 <= args.workers <= 256:
        raise PPDError(f"--workers: {args.workers} is out of range; must be an integer in [1, 256]")
    log = lambda m: print(m, file=sys.stderr)  # noqa: E731
    start = literature_start() if args.from_defaults else default_params()
    if args.lolo:
        res = lolo(args.measured, start, args.workers, log=log)
        print(json.dumps(res, indent=1) if args.json else format_lolo(res))
        return 0
    out = Path(args.out)
    if out.suffix != ".json":
        raise PPDError(f"--out: {args.out} must end in .json")
    p, report = calibrate(args.measured, start, args.workers, log=log)
    write(p, report, out, args.measured)
    print(json.dumps({"params": asdict(p), "converged": report["converged"], "passes": report["passes"],
                      "validation": report["validation"]["overall"]}, indent=1))
    return 0
