"""The wheel's build recipe, beside pyproject.toml (which holds the metadata): ``python -m build --wheel`` or
``pip wheel .`` makes a platform wheel that carries

* the compiled engine: mypyc compiles the modules listed in ``ppd_core.config.accel.COMPILED`` (the one list of
  them; ``scripts/build_engine.py`` compiles the same list with this same recipe for a checkout) into
  ``ppd_core/_compiled/``, the layout of a checkout's ``.build/mypyc/``, with the SHA-256 of the sources
  (``accel`` uses the build only when it matches the installed ``.py`` files, which stay the reference);
* the dashboard: ``app.py``, ``pages/``, ``ui/`` and ``.streamlit/config.toml`` as ``ppd_core/dashboard/``
  (``ppd app`` serves it); the catalogs ``data/*.json`` are ``ppd_core/data/`` (pyproject.toml).

Needs what ``[build-system] requires`` lists (mypy, which ships mypyc, and setuptools), a C compiler and the
Python headers.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from ppd_core.config import accel  # noqa: E402  (stdlib only: importing it loads neither numpy nor the engine)

# mypy's view of the sources: modules outside COMPILED are read for their types only, and their own type
# errors (or missing stubs of third-party packages) do not stop the build
MYPY_FLAGS = ("--follow-imports=silent", "--ignore-missing-imports", "--python-version",
              f"{sys.version_info.major}.{sys.version_info.minor}")
OPT_LEVEL = "3"
#: the dashboard's files, relative to the repository: single files, or folders whose ``*.py`` are taken
DASHBOARD = ("app.py", ".streamlit/config.toml", "pages", "ui")
DASHBOARD_PACKAGE_DIR = ("ppd_core", "dashboard")


def engine_extensions(target_dir: str) -> list:
    """The mypyc extensions of ``accel.COMPILED`` (C sources written to ``target_dir``)."""
    from mypyc.build import mypycify
    cwd = os.getcwd()
    os.chdir(ROOT)                      # mypycify names the modules by their paths relative to here
    try:
        return mypycify([*MYPY_FLAGS, *accel.COMPILED], opt_level=OPT_LEVEL, target_dir=target_dir)
    finally:
        os.chdir(cwd)


class BuildEngine(build_ext):
    """build_ext that puts every extension (the modules and mypyc's shared library) under
    ``<build lib>/ppd_core/_compiled/`` instead of beside the ``.py`` files, and records there the digest of the
    sources it compiled. Apart from the sources, an extension never shadows its ``.py`` file, so ``accel``
    still decides which engine runs. An editable install (or ``--inplace``) compiles nothing: it runs the
    checkout's own ``.build/mypyc`` (``scripts/build_engine.py``), or pure Python."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def in_place(self) -> bool:
        return bool(self.inplace or getattr(self, "editable_mode", False))

    def build_root(self) -> Path:
        return Path(self.build_lib, "ppd_core", accel.WHEEL_BUILD)

    def get_ext_fullpath(self, ext_name: str) -> str:
        modpath = self.get_ext_fullname(ext_name).split(".")
        return str(self.build_root().joinpath(*modpath[:-1], self.get_ext_filename(modpath[-1])))

    def run(self) -> None:
        if self.in_place():
            print("build_ext: in place: not compiling; the checkout's engine is built by scripts/build_engine.py")
            return
        digest = accel.sources_digest()
        super().run()
        if accel.sources_digest() != digest:
            raise SystemExit("build_ext: the engine's sources changed during the build; build again")
        root = self.build_root()
        root.mkdir(parents=True, exist_ok=True)
        (root / accel.DIGEST_FILE).write_text(digest + "\n")

    def get_outputs(self) -> list[str]:
        if self.in_place():
            return []
        return [*super().get_outputs(), str(self.build_root() / accel.DIGEST_FILE)]


class BuildPyWithDashboard(build_py):
    """build_py that also copies the dashboard (``DASHBOARD``) into ``<build lib>/ppd_core/dashboard/``."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:          # an editable install serves the checkout's own app.py
            return
        dest = Path(self.build_lib, *DASHBOARD_PACKAGE_DIR)
        for rel in dashboard_files():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / rel, target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        out = super().get_outputs(include_bytecode)
        if not self.editable_mode:
            out += [str(Path(self.build_lib, *DASHBOARD_PACKAGE_DIR, rel)) for rel in dashboard_files()]
        return out


def dashboard_files() -> list[str]:
    """The dashboard's files to ship, as paths relative to the repository (sorted)."""
    files: list[str] = []
    for rel in DASHBOARD:
        path = ROOT / rel
        if path.is_dir():
            files += [p.relative_to(ROOT).as_posix() for p in path.rglob("*.py") if "__pycache__" not in p.parts]
        elif path.is_file():
            files.append(rel)
        else:
            raise SystemExit(f"setup.py: the dashboard's {rel} is missing")
    return sorted(files)


if __name__ == "__main__":              # the build backend runs this file as __main__; build_engine.py imports it
    setup(ext_modules=engine_extensions(os.path.join("build", "mypyc-c")),
          cmdclass={"build_ext": BuildEngine, "build_py": BuildPyWithDashboard})
