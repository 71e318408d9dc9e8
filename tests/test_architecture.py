"""The import contract of ppd_core (``ppd_core._layers``): every import - module-level or inside a function -
goes to the module's own layer or below, modules import each other without cycles, and nothing in ppd_core
imports Streamlit or Plotly."""
from __future__ import annotations

import ast
from pathlib import Path

from ppd_core._layers import FORBIDDEN, LAYERS, OUTSIDE

PKG = Path(__file__).resolve().parents[1] / "ppd_core"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in the file, at any depth (functions, TYPE_CHECKING), and of
    every module a package re-exports on first use (the keys of a ``lazy_exports(__name__, {...})`` call).
    ``from X import a`` counts as importing ``X.a`` when that is a module, else as importing ``X``."""
    known = set(_modules())
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]

    def absolute(level: int, module: str | None) -> str:
        if not level:
            return module or ""
        base = package.split(".")
        return ".".join(base[:len(base) - level + 1] + ([module] if module else []))

    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = absolute(node.level, node.module)
            for a in node.names:
                sub = f"{mod}.{a.name}"
                out.append((node.lineno, sub if sub in known else mod))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "lazy_exports"
              and len(node.args) == 2 and isinstance(node.args[1], ast.Dict)):
            for key in node.args[1].keys:
                rel = key.value
                dots = len(rel) - len(rel.lstrip("."))
                out.append((key.lineno, absolute(dots, rel[dots:] or None)))
    return out


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py")) if "__pycache__" not in p.parts}


def _layer(mod: str) -> str | None:
    parts = mod.split(".")
    if len(parts) < 2 or parts[0] != "ppd_core":
        return None
    return parts[1]


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        for _, target in _imports(path):
            if target in mods and target != m:
                graph[m].add(target)
    return graph


def test_every_module_is_in_a_layer():
    for m in _modules():
        layer = _layer(m)
        assert layer is None or layer in LAYERS or layer in OUTSIDE, f"{m}: not in ppd_core._layers.LAYERS"
        assert m == "ppd_core" or _layer(m) is not None


def test_imports_only_look_down():
    rank = {name: i for i, name in enumerate(LAYERS)}
    bad = []
    for m, path in _modules().items():
        src = _layer(m)
        if src not in rank:
            continue
        for line, target in _imports(path):
            dst = _layer(target)
            if target == "ppd_core" or (target.startswith("ppd_core.") and dst in OUTSIDE):
                bad.append(f"{path.relative_to(PKG.parent)}:{line} imports the front door {target}")
            elif dst in rank and rank[dst] > rank[src]:
                bad.append(f"{path.relative_to(PKG.parent)}:{line} ({src}) imports {target} ({dst}), a layer above")
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            # a package's __init__ importing its own submodules (and them importing siblings) is not a cycle
            # through the package: edges into a package __init__ from its own submodules are ignored
            if m.startswith(n + "."):
                continue
            if state.get(n) == 1:
                cycles.append(" -> ".join(stack[stack.index(n):] + [n]))
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_streamlit_or_plotly():
    bad = [f"{p.relative_to(PKG.parent)}:{line} imports {t}" for m, p in _modules().items()
           for line, t in _imports(p) if t.split(".")[0] in FORBIDDEN]
    assert not bad, "\n".join(bad)


def test_no_module_over_400_lines():
    long = {m: n for m, p in _modules().items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 420}
    assert not long, long


def test_pyproject_ships_every_subpackage_and_the_catalogs():
    import tomllib
    conf = tomllib.loads((PKG.parent / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(conf["tool"]["setuptools"]["packages"])
    packages = {_module_name(p.parent / "__init__.py") for p in PKG.rglob("__init__.py") if "__pycache__" not in p.parts}
    assert packages <= listed, packages - listed
    assert conf["tool"]["setuptools"]["package-dir"]["ppd_core.data"] == "data"
    assert conf["project"]["scripts"]["ppd"] == "ppd_core.cli:main"


def test_the_walk_sees_function_level_and_type_checking_imports():
    scenario = _imports(PKG / "config" / "scenario.py")
    assert any(t == "ppd_core.config.workload_catalog" for _, t in scenario)      # inside _workload_names()
    node = _imports(PKG / "sim" / "node.py")
    assert any(t == "ppd_core.sim.events" for _, t in node)                      # under TYPE_CHECKING
    model = _imports(PKG / "model" / "__init__.py")
    assert any(t == "ppd_core.model.microbench" for _, t in model)               # a lazy_exports key
    front = _imports(PKG / "__init__.py")
    assert any(t == "ppd_core.analysis.runs" for _, t in front)
