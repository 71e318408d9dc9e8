"""Re-exports imported on first use (PEP 562): a package lists which of its modules defines each name it
re-exports, and importing the package imports none of them. So ``python -m ppd_core run --json`` loads the
modules the run uses and not, say, the micro-benchmark drivers that ``ppd_core.model`` also re-exports
(issue #13, imports on demand). tests/test_architecture.py reads the module names of every ``lazy_exports``
call as imports, so the layer rule holds for them too.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import MappingProxyType


def lazy_exports(package: str, exports: Mapping[str, tuple[str, ...]]
                 ) -> tuple[list[str], Callable[[str], object], Callable[[], list[str]]]:
    """``__all__, __getattr__, __dir__`` for ``package``, which re-exports the names ``exports`` lists under
    each of its modules, named relative to it with one leading dot (``{".base": ("build", ...)}``). A name
    equal to the module's own last part (``{".model": ("model",)}``) is that module. Nothing is cached in the
    package: the import system keeps the modules, and each access is one ``sys.modules`` lookup."""
    where = MappingProxyType({name: package + module for module, names in exports.items() for name in names})

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        __import__(module)      # not importlib.import_module, whose imports `-X importtime` does not show
        mod = sys.modules[module]
        return mod if module == f"{package}.{name}" else getattr(mod, name)

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return list(where), __getattr__, __dir__
