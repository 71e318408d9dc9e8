"""Build the compiled engine of a checkout: mypyc turns the modules in ``ppd_core.config.accel.COMPILED`` into
C extensions in ``.build/mypyc/`` and records the SHA-256 of the sources it compiled. ``scripts/setup.sh`` runs
it; the pure-Python modules stay the reference and run whenever the build is missing or stale (see accel.py).
The recipe (mypy flags, the build_ext that lays the folder out) is the wheel's, in ``setup.py``: a wheel
carries the same folder as ``ppd_core/_compiled/``.

    .venv/bin/python scripts/build_engine.py            # build (about 20-40 s on 2 cores)
    .venv/bin/python scripts/build_engine.py --check    # say whether the build is current; exit 1 if not

Needs mypy (which ships mypyc) and setuptools from ``requirements-build.txt``, a C compiler and the Python
headers. The build goes to a temporary folder first and replaces the old one only when it succeeded.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ppd_core.config import accel  # noqa: E402


def recipe():
    """The repository's setup.py as a module (imported, it builds nothing: only its __main__ calls setup())."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("ppd_setup", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build() -> float:
    try:
        import mypyc.build  # noqa: F401
        import setuptools
    except ImportError as exc:
        raise SystemExit(f"build_engine: {exc.name} is not installed (pip install -r requirements-build.txt)")
    # setuptools reads the repository's pyproject.toml and may warn about its [tool.setuptools] table: nothing
    # of that table is used here (build_ext only), so the warning is noise in every setup
    warnings.filterwarnings("ignore", message=r"Support for `\[tool\.setuptools\]`")
    ppd_setup = recipe()
    t0 = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="ppd-mypyc-"))
    lib = work / "lib"
    try:
        setuptools.setup(name="ppd-core-compiled", ext_modules=ppd_setup.engine_extensions(str(work / "c")),
                         cmdclass={"build_ext": ppd_setup.BuildEngine}, script_args=[
                             "-q", "build_ext", "--build-lib", str(lib), "--build-temp", str(work / "tmp")])
        out = lib / "ppd_core" / accel.WHEEL_BUILD          # where BuildEngine put the build, digest included
        accel.BUILD_DIR.parent.mkdir(parents=True, exist_ok=True)
        old = accel.BUILD_DIR.with_name(accel.BUILD_DIR.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if accel.BUILD_DIR.exists():
            accel.BUILD_DIR.rename(old)
        shutil.move(str(out), str(accel.BUILD_DIR))
        shutil.rmtree(old, ignore_errors=True)
    finally:
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
