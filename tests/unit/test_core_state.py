"""No cache lives in a module global of the core (issue 14): what is derived from a file is kept
on its Binary (unsplit.elf.derived), what belongs to a session on the Session. A module-level
empty container, weak dictionary or `[0]` counter is how such state used to start; the only
ones left are pure memos, shared by the process because their answers depend on their key
alone (and each says so where it is declared)."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "plugin" / "unsplit"

PURE_MEMOS = {
    ("debug/breakpad.py", "_SAID"),  # a CFI rule's Breakpad text
    ("debug/breakpad.py", "_CFAS"),
    ("debug/breakpad.py", "_FINGERPRINTS"),  # a file's digest by (path, size, mtime)
}


def _starts_state(value: ast.expr) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set)):
        return not (value.keys if isinstance(value, ast.Dict) else value.elts) or (
            isinstance(value, ast.List) and len(value.elts) == 1
            and isinstance(value.elts[0], ast.Constant))  # a [0] counter
    if isinstance(value, ast.Call):
        name = ast.unparse(value.func)
        return name.split(".")[-1] in {"dict", "set", "list", "WeakKeyDictionary",
                                       "WeakValueDictionary", "defaultdict", "OrderedDict"}
    return False


def test_no_module_level_state() -> None:
    found = set()
    for path in sorted(CORE.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            if _starts_state(value):
                found |= {(str(path.relative_to(CORE)), ast.unparse(t)) for t in targets}
    assert found == PURE_MEMOS


def test_caches_by_decorator_are_pure() -> None:
    """functools caches only on the demangler (pure: same name and style, same text) and on the
    handle of libdebuginfod (loading a shared library gives the same library every time)."""
    cached = set()
    for path in sorted(CORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                    ast.unparse(d).split("(")[0].split(".")[-1] in {"cache", "lru_cache"}
                    for d in node.decorator_list):
                cached.add((str(path.relative_to(CORE)), node.name))
    assert cached == {("index/demangle.py", "_cxa"), ("index/demangle.py", "demangle"),
                      ("elf/debuginfod.py", "_library")}
