"""The dashboard's layering (issue #9, dashboard half): pages -> ui -> ppd_core, never upward; ppd_core never
imports Streamlit; no module over ~400 lines; no module-level mutable state in ui/."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 400


def _imports(path: Path) -> set[str]:
    """Every imported top-level package, function-level imports included."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_ppd_core_never_imports_streamlit_ui_or_pages():
    for f in (ROOT / "ppd_core").rglob("*.py"):
        assert not _imports(f) & {"streamlit", "ui", "pages"}, f


def test_ui_never_imports_pages():
    for f in (ROOT / "ui").glob("*.py"):
        assert "pages" not in _imports(f), f


def test_modules_are_small():
    for f in [*(ROOT / "ui").glob("*.py"), *(ROOT / "pages").glob("*.py")]:
        n = len(f.read_text().splitlines())
        assert n <= MAX_LINES, f"{f.relative_to(ROOT)}: {n} lines"


def test_no_module_level_mutable_state_in_ui():
    mutable = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
    for f in (ROOT / "ui").glob("*.py"):
        for node in ast.parse(f.read_text()).body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            assert not isinstance(value, mutable), f"{f.name}:{node.lineno} module-level mutable value"
