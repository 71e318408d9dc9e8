"""Shared pieces of the command line: the one-line-error parser and the executor options."""
from __future__ import annotations

import argparse

from ..analysis.executors import EXECUTORS
from ..analysis.pool import MAX_WORKERS


class Parser(argparse.ArgumentParser):
    def error(self, message: str):   # one line, exit 2 (argparse prints usage + message by default)
        self.exit(2, f"error: {message}\n")


def add_executor_args(p) -> None:
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local: a process pool on this machine; dask: a Dask cluster (see --scheduler)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="Dask scheduler address, e.g. tcp://10.0.0.5:8786 (default: a small LocalCluster)")
    p.add_argument("--workers", type=int, metavar="N",
                   help=f"local processes (default: all cores) or LocalCluster workers, 1-{MAX_WORKERS}")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the disk cache ($PPD_CACHE_DIR or .cache/sweeps)")
