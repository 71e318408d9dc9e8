"""``python -m ppd_core calibrate --measured DIR [--out FILE.json] [--from-defaults] [--lolo]``."""
from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

from ..calibration.calibrate import calibrate, literature_start, write
from ..calibration.lolo import FAMILIES, families, format_families, format_lolo, lolo
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
    c.add_argument("--families", action="store_true",
                   help="leave one family out: refit without every pD layout / every layout with >= 2 P / the "
                        "ShareGPT runs, report the error on the family held out (writes nothing unless --errors-out)")
    c.add_argument("--family", action="append", choices=tuple(FAMILIES), metavar="NAME",
                   help=f"with --families: only this family (repeatable; one of {', '.join(FAMILIES)})")
    c.add_argument("--errors-out", metavar="FILE.json",
                   help="with --families: write the expected error per validation class (data/expected_error.json "
                        "is what the dashboard reads) from these families and a 4-seed validate")
    c.add_argument("--json", action="store_true", help="with --lolo or --families: print the result as JSON")


def handle(args) -> int:
    if args.workers is not None and not 1 <= args.workers <= 256:
        raise PPDError(f"--workers: {args.workers} is out of range; must be an integer in [1, 256]")
    log = lambda m: print(m, file=sys.stderr)  # noqa: E731
    start = literature_start() if args.from_defaults else default_params()
    if args.errors_out and not args.families:
        raise PPDError("--errors-out: only with --families")
    if args.families:
        if args.lolo:
            raise PPDError("--families: not together with --lolo (run them one after the other)")
        if args.errors_out and args.family:
            raise PPDError("--errors-out: needs every family (drop --family)")
        if args.errors_out and not args.errors_out.endswith(".json"):
            raise PPDError(f"--errors-out: {args.errors_out} must end in .json")
        res = families(args.measured, start, args.workers, log=log, names=tuple(args.family or FAMILIES))
        if args.errors_out:
            from ..calibration.errors_file import write as write_errors
            from ..calibration.validate import validate
            log("validating the calibration set (4 seeds) for the calibrated class ...")
            _, val, _ = validate(args.measured, params=start, workers=args.workers)
            res["errors_file"] = write_errors(Path(args.errors_out), val, res,
                                              "python -m ppd_core calibrate --measured DIR --families --errors-out "
                                              + Path(args.errors_out).name)["classes"]
        print(json.dumps(res, indent=1) if args.json else format_families(res))
        return 0
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
