"""The core must never import a debugger module: it runs in plain Python, gdb and lldb alike."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "plugin" / "unsplit"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_core_imports_no_debugger() -> None:
    files = sorted(CORE.rglob("*.py"))
    assert files, "core package not found"
    offenders = {str(p.relative_to(CORE)): sorted(_imports(p) & {"gdb", "lldb"}) for p in files}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_adapter_folders_are_not_packages() -> None:
    root = CORE.parents[1]
    for folder in ("gdb", "lldb"):
        init = root / folder / "__init__.py"
        assert not init.exists(), f"{init} would shadow the real {folder} module"
        assert not (root / folder / "unsplit.py").exists()
