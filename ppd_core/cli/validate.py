"""``python -m ppd_core validate --measured DIR [--sample N] [--seed S] [--seeds K] [--json]``."""
from __future__ import annotations

import json

from ..analysis.progress import TextProgress
from ..calibration.validate import format_report, point_json, validate
from ..config.errors import PPDError

NAME = "validate"


def add_parser(sub) -> None:
    p = sub.add_parser("validate", help="simulate measured points and report the simulator's error")
    p.add_argument("--measured", required=True, metavar="DIR", help="folder of measured CSV files")
    p.add_argument("--sample", type=int, metavar="N", help="simulate a random sample of N measured points")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample")
    p.add_argument("--seeds", type=int, default=4,
                   help="simulate each point with this many seeds and compare their mean (default 4); the "
                        "seed-to-seed spread is reported as the simulator's noise floor")
    p.add_argument("--json", action="store_true", help="print points and summary as JSON")
    p.add_argument("--workers", type=int, help="processes (default: all cores)")


def handle(args) -> int:
    if args.sample is not None and not 1 <= args.sample <= 1_000_000:
        raise PPDError(f"--sample: {args.sample} is out of range; must be an integer in [1, 1000000]")
    if args.workers is not None and not 1 <= args.workers <= 256:
        raise PPDError(f"--workers: {args.workers} is out of range; must be an integer in [1, 256]")
    if not 1 <= args.seeds <= 64:
        raise PPDError(f"--seeds: {args.seeds} is out of range; must be an integer in [1, 64]")
    bar = None if args.json else TextProgress("simulating", unit="scenarios")
    try:
        pts, summary, notes = validate(args.measured, args.sample, args.seed, workers=args.workers, progress=bar,
                                       seeds=args.seeds)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(json.dumps({"points": [point_json(p) for p in pts], "summary": summary, "notes": notes}))
    else:
        print(format_report(summary, notes))
    return 0
