"""Build the compiled engine: mypyc turns the modules in ``ppd_core.config.accel.COMPILED`` into C extensions
in ``.build/mypyc/`` and records the SHA-256 of the sources it compiled. ``scripts/setup.sh`` runs it; the
pure-Python modules stay the reference and run whenever the build is missing or stale (see accel.py).

    .venv/bin/python scripts/build_engine.py            # build (about 20-40 s on 2 cores)
    .venv/bin/python scripts/build_engine.py --check    # say whether the build is current; exit 1 if not

Needs mypy (which ships mypyc) and setuptools from ``requirements-build.txt``, a C compiler and the Python
headers. The build goes to a temporary folder first and replaces the old one only when it succeeded.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ppd_core.config import accel  # noqa: E402

# mypy's view of the sources: modules outside COMPILED are read for their types only, and their own type
# errors (or missing stubs of third-party packages) do not stop the build
MYPY_FLAGS = ("--follow-imports=silent", "--ignore-missing-imports", "--python-version",
              f"{sys.version_info.major}.{sys.version_info.minor}")


def build() -> float:
    try:
        from mypyc.build import mypycify
        from setuptools import setup
    except ImportError as exc:
        raise SystemExit(f"build_engine: {exc.name} is not installed (pip install -r requirements-build.txt)")
    # setuptools reads the repository's pyproject.toml and warns that its [tool.setuptools] table is "beta":
    # nothing of that table is used here (build_ext only), so the warning is noise in every setup
    warnings.filterwarnings("ignore", message=r"Support for `\[tool\.setuptools\]`")
    digest = accel.sources_digest()
    t0 = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="ppd-mypyc-"))
    out = work / "lib"
    cwd = os.getcwd()
    os.chdir(ROOT)                      # mypycify names the modules by their paths relative to here
    try:
        exts = mypycify([*MYPY_FLAGS, *accel.COMPILED], opt_level="3", target_dir=str(work / "c"))
        setup(name="ppd-core-compiled", ext_modules=exts, script_args=[
            "-q", "build_ext", "--build-lib", str(out), "--build-temp", str(work / "tmp"),
            "--parallel", str(os.cpu_count() or 1)])
    finally:
        os.chdir(cwd)
    if accel.sources_digest() != digest:
        shutil.rmtree(work, ignore_errors=True)
        raise SystemExit("build_engine: the sources changed during the build; run it again")
    (out / accel.DIGEST_FILE).write_text(digest + "\n")
    accel.BUILD_DIR.parent.mkdir(parents=True, exist_ok=True)
    old = accel.BUILD_DIR.with_name(accel.BUILD_DIR.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if accel.BUILD_DIR.exists():
        accel.BUILD_DIR.rename(old)
    shutil.move(str(out), str(accel.BUILD_DIR))
    shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only say whether the build is current (exit 1 if not)")
    args = ap.parse_args(argv)
    if args.check:
        problem = accel.build_problem()
        print(problem or f"compiled engine current: {accel.BUILD_DIR}")
        return 1 if problem else 0
    seconds = build()
    problem = accel.build_problem()
    if problem:
        print(f"build_engine: built, but {problem}", file=sys.stderr)
        return 1
    print(f"compiled engine built in {seconds:.1f} s: {len(accel.COMPILED)} modules in {accel.BUILD_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
