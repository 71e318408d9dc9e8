"""The compiled engine: the event engine, the dense/MoE latency models and the conversation type built by mypyc
into C extensions (``scripts/build_engine.py``, run by ``scripts/setup.sh``), ~3x faster per run and
byte-identical to the pure-Python modules, which stay the reference (``tests/test_compiled.py`` runs the golden
outputs through both).

In a checkout the build lives outside the source tree, in ``.build/mypyc/`` (``ppd_core/sim/engine.cpython-311-….so``
… and mypyc's shared runtime library), with the SHA-256 of the sources it was built from. A wheel
(``setup.py``) carries the same folder, built by the same recipe, as ``ppd_core/_compiled/`` beside the
``.py`` sources it was built from; when that folder exists it is the build (``BUILD_DIR``). The packages that
hold compiled modules (``ppd_core.sim``, ``ppd_core.model``, ``ppd_core.workloads``) call ``extend`` from their
``__init__``, which puts the build's folder first on the package's ``__path__`` when the build is used, so
``import ppd_core.sim.engine`` finds the extension before the ``.py`` file. Kept apart from the sources, the
extensions never shadow them: ``PPD_COMPILED=0`` gives the pure-Python engine from a wheel too.

``PPD_COMPILED`` (environment) decides, once per process:

* unset or ``auto``: the build when it exists and matches the sources byte for byte, else pure Python (an
  edited source silently falls back: a stale build never runs);
* ``1``: the build, or ``CompiledEngineError`` naming what is missing or stale;
* ``0``: pure Python (the test suite's default: its test doubles subclass engine classes, which compiled
  classes do not allow).
"""
from __future__ import annotations

import hashlib
import os
import sys
from functools import cache

from .errors import PPDError
from .paths import PACKAGE_DIR, REPO_ROOT

ENV = "PPD_COMPILED"
CHOICES = ("auto", "0", "1")
WHEEL_BUILD = "_compiled"            # the build's folder inside an installed ppd_core (setup.py puts it there)
BUILD_DIR = (PACKAGE_DIR / WHEEL_BUILD if (PACKAGE_DIR / WHEEL_BUILD).is_dir()
             else REPO_ROOT / ".build" / "mypyc")
DIGEST_FILE = "sources.sha256"

#: The modules mypyc compiles, as paths under the repository. ``model/moe.py`` is here because it subclasses
#: ``PerfModel`` (an interpreted class cannot subclass a compiled one); ``workloads/conversation.py`` because
#: the engine reads its turns on every request.
COMPILED = (
    "ppd_core/sim/engine.py", "ppd_core/sim/node.py", "ppd_core/sim/memory.py", "ppd_core/sim/kvcache.py",
    "ppd_core/sim/request.py", "ppd_core/sim/client.py", "ppd_core/sim/fabric.py", "ppd_core/sim/estimate.py",
    "ppd_core/sim/view.py", "ppd_core/sim/events.py", "ppd_core/sim/router.py", "ppd_core/sim/policies.py",
    "ppd_core/model/dense.py", "ppd_core/model/moe.py", "ppd_core/workloads/conversation.py",
)


class CompiledEngineError(PPDError):
    """``PPD_COMPILED=1`` but the compiled build is missing or was built from other sources."""


def sources_digest() -> str:
    """SHA-256 over the compiled modules' sources (path and bytes), as the build records it."""
    h = hashlib.sha256()
    for rel in COMPILED:
        h.update(rel.encode() + b"\0" + (REPO_ROOT / rel).read_bytes() + b"\0")
    return h.hexdigest()


def _suffix() -> str:
    import importlib.machinery
    return importlib.machinery.EXTENSION_SUFFIXES[0]


def build_problem(build_dir=BUILD_DIR) -> str | None:
    """Why the build in ``build_dir`` cannot be used by this interpreter (None: it can)."""
    recorded = build_dir / DIGEST_FILE
    if not recorded.is_file():
        return f"no compiled build in {build_dir} (run: python scripts/build_engine.py)"
    missing = [rel for rel in COMPILED if not (build_dir / (rel[:-3] + _suffix())).is_file()]
    if missing:
        return (f"the build in {build_dir} has no {missing[0][:-3] + _suffix()} for this Python "
                f"(rebuild: python scripts/build_engine.py)")
    if recorded.read_text().strip() != sources_digest():
        return f"the build in {build_dir} is stale: the sources changed since (rebuild: python scripts/build_engine.py)"
    return None


def decide(raw: str | None, build_dir=BUILD_DIR) -> bool:
    """Whether to use the build, from the value of ``PPD_COMPILED`` (see the module docstring)."""
    value = (raw or "auto").strip().lower()
    if value not in CHOICES:
        raise CompiledEngineError(f"{ENV}={raw!r} is not allowed; use one of {', '.join(CHOICES)}")
    if value == "0":
        return False
    problem = build_problem(build_dir)
    if problem is not None and value == "1":
        raise CompiledEngineError(f"{ENV}=1: {problem}")
    return problem is None


@cache
def enabled() -> bool:
    """This process's decision (made once: modules are imported once)."""
    return decide(os.environ.get(ENV))


def extend(package: str, path: list[str]) -> None:
    """Called by a package holding compiled modules with its name and ``__path__``: when the build is used, its
    folder for that package goes first (and the build's root, home of mypyc's shared library, on sys.path)."""
    if not enabled():
        return
    folder = str(BUILD_DIR.joinpath(*package.split(".")))
    if folder not in path:
        path.insert(0, folder)
    root = str(BUILD_DIR)
    if root not in sys.path:
        sys.path.append(root)


def engine_build() -> str:
    """"compiled" or "python": which engine this process runs (for benchmarks and the bench command)."""
    import importlib.util
    spec = importlib.util.find_spec("ppd_core.sim.engine")      # looked up as the import would, not imported
    return "python" if spec is None or str(spec.origin).endswith(".py") else "compiled"
