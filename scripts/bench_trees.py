"""The command line the checkout-comparing benchmarks share (``bench_cli.py``, ``bench_engine.py``): one or
more ``--tree`` checkouts to run from, a repetition count within bounds, the interpreter and ``--json``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

THIS_CHECKOUT = Path(__file__).resolve().parent.parent


def parse(description: str, repeat_default: int, repeat_max: int, repeat_what: str,
          argv: list[str] | None = None) -> tuple[argparse.Namespace, list[Path]]:
    """The parsed arguments and the checked checkouts (each must hold ``ppd_core/__init__.py``); a bad value
    ends the program with a one-line usage error naming the argument."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--tree", action="append", metavar="DIR",
                    help="a checkout to run from (repeatable; default: this one)")
    ap.add_argument("--repeat", type=int, default=repeat_default,
                    help=f"{repeat_what} (1-{repeat_max})")
    ap.add_argument("--python", default=sys.executable, help="interpreter (default: this one)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args(argv)
    if not 1 <= a.repeat <= repeat_max:
        ap.error(f"--repeat {a.repeat} is out of range; must be an integer in [1, {repeat_max}]")
    trees = [Path(t).resolve() for t in (a.tree or [THIS_CHECKOUT])]
    for t in trees:
        if not (t / "ppd_core" / "__init__.py").is_file():
            ap.error(f"--tree {t}: no ppd_core/ there")
    return a, trees
