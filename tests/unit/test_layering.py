"""The core's layers (docs/architecture.md): each package imports only the layers below it, and the
core never imports a debugger module (it runs in plain Python, gdb and lldb alike)."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "plugin" / "unsplit"

BASE = {"errors", "host", "dependencies", "cache_dir", "collector", "unsplit"}
# What each layer may import besides itself and BASE (lowest layer first).
ALLOWED: dict[str, set[str]] = {
    "formats": set(),
    "elf": {"formats"},
    "index": {"formats", "elf"},
    "debuginfo": {"formats", "elf", "index"},
    "render": {"formats", "index"},
    "debug": {"formats", "elf", "index", "render"},
    "session": {"elf", "index", "debug", "render"},
    "commands": {"formats", "elf", "index", "debug", "render", "session"},
    "tools": {"formats", "elf", "index", "debug", "debuginfo", "render", "session"},
    "cli": {"formats", "elf", "index", "debug", "debuginfo", "render", "session", "commands",
            "tools"},
    "__main__": {"cli"},
}
BASE_ALLOWED = {"errors": set(), "host": {"errors"}, "dependencies": set(), "cache_dir": set(),
                "collector": set(), "__init__": set()}
# index/'s own layers: what each of its subpackages may import of index/ besides itself (lowest
# first). The modules at index/'s top (module_index, line_table, inlines, code_lines,
# session_view) are the index itself and may import every subpackage; no subpackage imports them.
INDEX_ALLOWED: dict[str, set[str]] = {
    "names": set(),
    "model": {"names"},
    "bolt": {"names", "model"},
    "sources": {"names", "model", "bolt"},
    "cache": {"names", "model", "sources"},
}
# Known debts, each with the module that owes it: to be paid, never added to.
DEBTS: set[tuple[str, str]] = set()


def _layer_under(core: Path, path: Path) -> str:
    rel = path.relative_to(core)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports(path: Path) -> set[str]:
    """Every module `path` imports by absolute name, at any depth (lazy and TYPE_CHECKING
    imports too), with `from X import Y` also as X.Y."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_core_imports_no_debugger() -> None:
    files = sorted(CORE.rglob("*.py"))
    assert files, "core package not found"
    offenders = {str(p.relative_to(CORE)): sorted({n.split(".")[0] for n in _imports(p)}
                                                  & {"gdb", "lldb"}) for p in files}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_core_uses_absolute_imports() -> None:
    relative = [str(p.relative_to(CORE)) for p in CORE.rglob("*.py")
                if any(isinstance(n, ast.ImportFrom) and n.level
                       for n in ast.walk(ast.parse(p.read_text())))]
    assert relative == []


def _index_layer(core: Path, path: Path) -> str | None:
    """The index/ subpackage `path` is in; None for a module at index/'s top."""
    parts = path.relative_to(core / "index").parts
    return parts[0] if len(parts) > 1 else None


def _wrong_index_import(layer: str | None, name: str) -> bool:
    """Whether a module of index/ `layer` (None: index/'s top) may not import `name`."""
    parts = name.split(".")
    if layer is None or parts[:2] != ["unsplit", "index"] or len(parts) < 3:
        return False
    return parts[2] != layer and parts[2] not in INDEX_ALLOWED[layer]


def _wrong_imports(core: Path) -> list[str]:
    """Every import under `core` that reaches up or sideways: across the core's layers, and
    across index/'s own."""
    wrong = []
    for path in sorted(core.rglob("*.py")):
        rel = str(path.relative_to(core))
        layer = _layer_under(core, path)
        allowed = ALLOWED.get(layer, BASE_ALLOWED.get(layer))
        assert allowed is not None, f"{rel}: a module outside every layer"
        sublayer = _index_layer(core, path) if layer == "index" else None
        assert sublayer is None or sublayer in INDEX_ALLOWED, \
            f"{rel}: index/{sublayer}/ is in no layer of index/ (INDEX_ALLOWED)"
        for name in sorted(_imports(path)):
            if _wrong_index_import(sublayer, name):
                wrong.append(f"{rel} imports {name}")
            parts = name.split(".")
            if parts[0] != "unsplit" or len(parts) < 2:
                continue
            target = parts[1]
            if target == layer or target == "__version__":
                continue
            if target in BASE - {"unsplit"} and layer not in BASE_ALLOWED:
                continue
            if target not in allowed and (rel, target) not in DEBTS:
                wrong.append(f"{rel} imports {name}")
    return wrong


def test_layers_import_only_downwards() -> None:
    assert _wrong_imports(CORE) == []


def test_the_layer_rules_catch_an_import_that_reaches_up(tmp_path: Path) -> None:
    """The checker itself, on a small core with one allowed and four wrong imports."""
    core = tmp_path / "unsplit"
    modules = {
        "index/sources/ok.py": "from unsplit.index.bolt import prebolt",  # allowed: below it
        "index/model/up.py": "from unsplit.index.module_index import ModuleIndex",
        "index/names/up.py": "import unsplit.index.model.records",
        "index/bolt/sideways.py": "from unsplit.index.cache import store",
        "elf/up.py": "from unsplit.index.model.records import Location",
    }
    for rel, text in modules.items():
        (core / rel).parent.mkdir(parents=True, exist_ok=True)
        (core / rel).write_text(text + "\n")
    assert _wrong_imports(core) == [
        "elf/up.py imports unsplit.index.model.records",
        "elf/up.py imports unsplit.index.model.records.Location",
        "index/bolt/sideways.py imports unsplit.index.cache",
        "index/bolt/sideways.py imports unsplit.index.cache.store",
        "index/model/up.py imports unsplit.index.module_index",
        "index/model/up.py imports unsplit.index.module_index.ModuleIndex",
        "index/names/up.py imports unsplit.index.model.records",
    ]


def test_debts_are_still_owed() -> None:
    """A paid debt leaves the list (so the list never hides a new one)."""
    owed = set()
    for rel, target in DEBTS:
        if any(n.split(".")[1:2] == [target] for n in _imports(CORE / rel)
               if n.startswith("unsplit.")):
            owed.add((rel, target))
    assert owed == DEBTS


def test_adapter_folders_are_not_packages() -> None:
    root = CORE.parents[1]
    for folder in ("gdb", "lldb"):
        init = root / folder / "__init__.py"
        assert not init.exists(), f"{init} would shadow the real {folder} module"
        assert not (root / folder / "unsplit.py").exists()


def _adapter_edges(folder: Path) -> dict[str, set[str]]:
    """Each adapter module's relative imports, at any depth (a lazy import is still an edge)."""
    edges: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                found.update([node.module] if node.module else [a.name for a in node.names])
        edges[path.stem] = found - {path.stem}
    return edges


def _reaches(edges: dict[str, set[str]], start: str, goal: str, seen: set[str]) -> bool:
    for nxt in edges.get(start, ()):
        if nxt == goal or (nxt not in seen and _reaches(edges, nxt, goal, seen | {nxt})):
            return True
    return False


def test_adapters_have_no_import_circle() -> None:
    root = CORE.parents[1]
    for folder in (root / "gdb" / "unsplit_gdb_impl", root / "lldb" / "unsplit_lldb_impl"):
        edges = _adapter_edges(folder)
        assert edges, folder
        circles = sorted(m for m in edges if _reaches(edges, m, m, {m}))
        assert circles == [], f"{folder.name}: modules on an import circle: {circles}"


# -- one way down for a frame's name: adapter -> FrameNamer -> index -> sources ----------------

ADAPTERS = ("gdb/unsplit_gdb_impl", "lldb/unsplit_lldb_impl")
# What only the FrameNamer reaches: the location cache, the module map, the frame rules.
NAMER_ONLY = ("unsplit.index.cache.locations", "unsplit.debug.module_map",
              "unsplit.index.model.frame")


def _calls_on_session(path: Path) -> list[str]:
    """`….session.X(` and `session.X(` calls of a frame-finding method (the namer's job)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("locate", "module_of", "image_mismatch"):
            receiver = node.func.value
            name = receiver.attr if isinstance(receiver, ast.Attribute) else \
                getattr(receiver, "id", "")
            if name == "session":
                found.append(f"{path.name}:{node.lineno} session.{node.func.attr}")
    return found


def test_adapters_name_frames_only_through_the_frame_namer() -> None:
    """An adapter translates its frames to FrameViews and the namer's answer back: it never
    finds a frame's module or location itself (the session's locate, the location cache, the
    frame rules)."""
    root = CORE.parents[1]
    wrong = []
    for folder in ADAPTERS:
        for path in sorted((root / folder).glob("*.py")):
            wrong += [f"{path.name} imports {name}" for name in sorted(_imports(path))
                      if name.startswith(NAMER_ONLY)]
            wrong += _calls_on_session(path)
    assert wrong == []


def test_the_frame_namer_never_calls_back_into_the_adapter() -> None:
    """The namer gets modules (and a memory reader, a service) pushed to it: it takes no host
    and asks no debugger, and finds locations through the index alone, never a source."""
    for name in ("frame_namer", "module_map"):
        path = CORE / "debug" / f"{name}.py"
        imports = _imports(path)
        assert not {i for i in imports if i.startswith("unsplit.host.")} - \
            {"unsplit.host.LoadedModule"}, name
        assert not [i for i in imports if i.startswith(("unsplit.session", "unsplit.commands",
                                                        "unsplit.index.sources"))], name
