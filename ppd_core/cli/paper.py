"""``python -m ppd_core paper [--only NAME[,NAME]] [--json] [--quick] [--measured DIR]``."""
from __future__ import annotations

import argparse
import json
import sys

from ..analysis.progress import TextProgress
from ..config.paths import MEASURED_DEFAULT
from ..reproduce.items import ITEMS, format_item, parse_only, run_item
from ..reproduce.judge import measured_dir_or_none
from ..reproduce.published import QUICK_LAYOUTS, QUICK_QPS, QUICK_WORKLOADS

NAME = "paper"


def add_parser(sub) -> None:
    p = sub.add_parser(
        "paper", help="reproduce the paper's figures and tables against the published/measured numbers",
        description="Runs the simulator for each item (Fig.2/7 interference, Table 1, Fig.5, Fig.6, Table 2, the "
                    "headline and the decision engines) and prints simulated vs published values, the tolerance "
                    "used and a one-line verdict. Grid runs are cached on disk (see `sweep`).",
        epilog="examples:\n  python -m ppd_core paper --only table1,fig5\n  python -m ppd_core paper --quick --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", metavar="NAME[,NAME]", help=f"items to run: {', '.join(ITEMS)} (default: all)")
    p.add_argument("--json", action="store_true", help="print every item as JSON (tables, data, verdicts)")
    p.add_argument("--quick", action="store_true",
                   help=f"Table 2 on a reduced grid ({len(QUICK_LAYOUTS)} core layouts x {len(QUICK_WORKLOADS)} "
                        f"workloads x {len(QUICK_QPS)} QPS) instead of the paper's 3,060 runs")
    p.add_argument("--measured", metavar="DIR", default=None,
                   help="folder of measured CSVs to overlay (default: ../shared/data/ppd-measured if present; "
                        "'' for none)")


def handle(args) -> int:
    names = parse_only(args.only)
    if args.measured is None:
        mdir = str(MEASURED_DEFAULT) if MEASURED_DEFAULT.is_dir() else None
    else:
        mdir = str(measured_dir_or_none(args.measured)) if args.measured else None
    out = {}
    for i, name in enumerate(names):
        bar = None if args.json else TextProgress(name, stream=sys.stderr)
        item = run_item(name, quick=args.quick, measured_dir=mdir, progress=bar)
        if args.json:
            out[name] = item.to_json()
        else:
            if i:
                print()
            print(format_item(item), flush=True)
    if args.json:
        print(json.dumps({"items": out, "measured_dir": mdir, "quick": bool(args.quick)}))
    return 0
