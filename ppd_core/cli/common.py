"""Shared pieces of the command line: the one-line-error parser, the executor options and the trace options."""
from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

from ..config.errors import ScenarioError
from ..config.workload_catalog import MOONCAKE_BLOCK_TOKENS, TIME_UNITS

if TYPE_CHECKING:
    from ..workloads.conversation import Conversation


class Parser(argparse.ArgumentParser):
    """``epilog`` may be a function: it is called when the help is printed, not on every run (issue #13)."""

    def error(self, message: str):   # one line, exit 2 (argparse prints usage + message by default)
        self.exit(2, f"error: {message}\n")

    def format_help(self) -> str:
        if callable(self.epilog):
            self.epilog = self.epilog()
        return super().format_help()


def add_executor_args(p) -> None:
    from ..analysis.executors import EXECUTORS
    from ..analysis.pool import MAX_WORKERS
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local: a process pool on this machine; dask: a Dask cluster (see --scheduler)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="Dask scheduler address, e.g. tcp://10.0.0.5:8786 (default: a small LocalCluster)")
    p.add_argument("--workers", type=int, metavar="N",
                   help=f"local processes (default: all cores) or LocalCluster workers, 1-{MAX_WORKERS}")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the disk cache ($PPD_CACHE_DIR, else .cache/sweeps in a checkout, "
                        "~/.cache/ppd-explorer/sweeps when installed)")


def add_trace_args(p, trace_help: str) -> None:
    """``--trace FILE`` (``trace_help`` says what the sub-command does with it), ``--time-unit`` and
    ``--block-tokens``."""
    p.add_argument("--trace", metavar="FILE", help=trace_help)
    p.add_argument("--time-unit", choices=tuple(TIME_UNITS), default=None,
                   help="unit of the trace's timestamps (default: the format's documented unit, Mooncake "
                        "integer ms, CSV arrival in s; a Mooncake timestamp with a fraction needs it)")
    p.add_argument("--block-tokens", type=int, default=None, metavar="N",
                   help=f"tokens per Mooncake hash id (default: detected, else {MOONCAKE_BLOCK_TOKENS})")


def cli_trace(args: Any, qps: Iterable[float], out: TextIO) -> tuple[Conversation, ...] | None:
    """Import ``args.trace`` (None if not given), printing to ``out`` what the import found and how each
    qps value times it (``TraceStats.describe``, ``describe_replay``)."""
    convs = load_cli_trace(args, out)
    if convs is not None:
        describe_rates(convs, qps, out)
    return convs


def load_cli_trace(args: Any, out: TextIO) -> tuple[Conversation, ...] | None:
    """Import ``args.trace`` (None if not given) and print what the import found; ``--time-unit`` or
    ``--block-tokens`` without ``--trace`` is one ScenarioError."""
    if not getattr(args, "trace", None):
        for flag, value in (("--time-unit", getattr(args, "time_unit", None)),
                            ("--block-tokens", getattr(args, "block_tokens", None))):
            if value is not None:
                raise ScenarioError(flag, "applies only to a trace; add --trace FILE")
        return None
    from ..workloads.traces import import_trace   # the trace readers: only with a trace
    convs, stats = import_trace(args.trace, time_unit=args.time_unit, block_tokens=args.block_tokens)
    print(stats.describe(), file=out)
    return convs


def describe_rates(convs: tuple[Conversation, ...], qps: Iterable[float], out: TextIO) -> None:
    """One line per qps value saying how it times the trace (``describe_replay``)."""
    from ..workloads.traces import describe_replay
    for q in sorted(set(qps)):
        print(f"  qps={q:g}: {describe_replay(convs, q)}", file=out)
