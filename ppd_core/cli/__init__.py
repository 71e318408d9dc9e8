"""Layer 9: the command line, ``python -m ppd_core run|bench|sweep|goodput|advise|validate|calibrate|paper|app ...``
(also installed as ``ppd``; ``ppd --version`` also says which engine runs). One module per command, each with ``NAME``, ``add_parser(sub)`` and ``handle(args)``;
the library modules below hold no argparse.

Bad input never prints a traceback: one line naming the input and what is allowed, exit status 2.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
from typing import Sequence

from ..config.errors import PPDError
from .common import Parser

# in the order `--help` lists them; a command's module is imported only when it runs or `--help` lists them all
COMMANDS = ("run", "bench", "sweep", "goodput", "calibrate", "validate", "paper", "advise", "app")


class _Version(argparse.Action):
    """``--version``: the package's version and the engine this process would run (compiled or pure Python)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version and which engine runs (compiled or python), then exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit(0)


def version_text() -> str:
    """``ppd-explorer 0.1.0, engine compiled (PPD_COMPILED=auto, build /…/_compiled)``."""
    from importlib import metadata
    from ..config import accel
    try:
        version = metadata.version("ppd-explorer")
    except metadata.PackageNotFoundError:
        version = "(not installed: a checkout)"
    build = accel.engine_build()
    where = f", build {accel.BUILD_DIR}" if build == "compiled" else ""
    return f"ppd-explorer {version}, engine {build} ({accel.ENV}={os.environ.get(accel.ENV, 'auto')}{where})"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of command ``only`` alone (so ``run`` imports nothing of ``paper``)."""
    p = Parser(prog="python -m ppd_core", description="PPD Explorer simulator")
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", parser_class=Parser)
    for name in (only,) if only in COMMANDS else COMMANDS:
        __import__(f"{__name__}.{name}")    # not importlib.import_module, whose imports -X importtime hides
        cmd = sys.modules[f"{__name__}.{name}"]
        cmd.add_parser(sub)
        sub.choices[cmd.NAME].set_defaults(handler=cmd.handle)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    # One OpenBLAS thread unless the user chose otherwise, set before numpy is first imported: ppd_core does no
    # float linear algebra a thread pool would speed up, and the pool OpenBLAS starts when numpy is imported
    # costs this process, and each pool worker it starts, ~55 ms of CPU and of wall on the loaded 2-core machine
    # (issue #13). No number depends on it: the simulator's one matrix product is on integers (not BLAS).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    # Every module the command needs is loaded now: move their objects out of the collector's reach (as the
    # pool's workers do, analysis.pool.init_worker), so the full collections a sweep of short runs triggers in
    # this process, which runs chunks too, stop walking pandas' and numpy's module objects.
    gc.freeze()
    if not args.command:
        parser.print_help()
        return 2
    try:
        rc = args.handler(args)
        sys.stdout.flush()          # a closed pipe shows here, not at interpreter exit
        return rc
    except BrokenPipeError:         # `... | head`: the reader left; end quietly (Python docs' recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except PPDError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
