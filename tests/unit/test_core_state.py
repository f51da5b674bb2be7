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


def _module_state(root: Path) -> set[tuple[str, str]]:
    """(file, name) of each module global under `root` that starts state: an empty container,
    a counter, an object of a class of the same module, or a name a function rebinds
    (`global`)."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef) and not any(
            "frozen=True" in ast.unparse(d) for d in n.decorator_list) and not any(
            ast.unparse(b) == "NamedTuple" for b in n.bases)}  # records are values
        rebound = {name for n in ast.walk(tree) if isinstance(n, ast.Global) for name in n.names}
        for node in tree.body:
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            names = {ast.unparse(t) for t in targets}
            made = isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] in (
                classes | {"count", "PerFile", "PerInput"})
            if _starts_state(value) or made or names & rebound:
                found |= {(str(path.relative_to(root.parent)), n) for n in names}
    return found


# Keys of what other layers derive from one file and keep on its Binary (elf/derived.PerFile).
# The sources keep their own decoded state and are not among them.
PER_FILE = {
    ("elf/cfi_table.py", "_TABLES"),  # the file's CFI, by address
    ("index/bolt/bat_translate.py", "_INDEXES"),  # BAT's index (debuginfo, check-cfi, sources)
    ("index/bolt/prebolt.py", "_INPUTS"),  # the pre-BOLT input found or named (`bb input`)
    ("index/bolt/prebolt.py", "_functions"),  # an input's function table
    ("index/bolt/prebolt.py", "_locals"),
    ("index/inlines.py", "_KEPT"),  # DWARF frames for the pre-BOLT input (PerInput)
    ("debug/stepping.py", "_OWN_LINES"),  # a procedure's line spans, per input (PerInput)
    ("debug/stepping.py", "_CFA_RULES"),
    ("debug/stepping.py", "_STEP_LINES"),  # a procedure's step spans, line-0 code joined
    ("debug/stepping.py", "_STATEMENT_LINES"),  # step spans as GDB sees them (PerInput)
    ("debug/stepping.py", "_CALL_STARTS"),  # where inlined calls begin, per input (PerInput)
    ("debug/cfi_check.py", "_CONTESTED"),  # the code whose FDEs compete
    ("index/sources/symbols.py", "_PLAIN"),  # a table's plain functions as columns
    ("index/bolt/scan_ahead.py", "_PENDING"),  # a BAT scan running in another process
}


def test_no_module_level_state() -> None:
    found = {(f.removeprefix("unsplit/"), n) for f, n in _module_state(CORE)}
    assert found == PURE_MEMOS | PER_FILE


# What each adapter keeps for the whole process, and why it cannot be a session's.
ADAPTER_STATE = {
    # GDB runs one session per process; its hooks (events, frame filters, the `frame` command
    # hook) reach the plugin through this one reference.
    ("unsplit_gdb_impl/__init__.py", "_plugin"),
    # gdb.unwinder.register_unwinder keeps one unwinder object per name for the process.
    ("unsplit_gdb_impl/unwinder.py", "_installed"),
    # LLDB calls its script callbacks (frame formats, thread plans) with a debugger id or a
    # frame, never a session object: the sessions by debugger id, and the host class.
    ("unsplit_lldb_impl/state.py", "_STATES"),
    ("unsplit_lldb_impl/state.py", "_HOST_CLASS"),
    # LLDB creates the scripted thread plan itself: its outcome comes back by token.
    ("unsplit_lldb_impl/stepping.py", "_outcomes"),
    ("unsplit_lldb_impl/stepping.py", "_tokens"),
    ("unsplit_lldb_impl/stepping.py", "_imported"),
    # Caches of what a debugger gives (warn-once lines, SBFormat objects, decoded
    # instructions by process, section tables by file).
    ("unsplit_gdb_impl/report.py", "_said"),
    ("unsplit_gdb_impl/host.py", "_SECTION_CACHE"),
    ("unsplit_gdb_impl/stepping.py", "_decoded"),
    ("unsplit_gdb_impl/breakpoints.py", "_NAME_COUNTS"),
    ("unsplit_gdb_impl/breakpoints.py", "_BY_ADDRESS"),
    ("unsplit_lldb_impl/naming.py", "_formats"),
    # A frame callback's last process (id, debugger state, target): one slot, replaced when
    # another process's frame comes.
    ("unsplit_lldb_impl/naming.py", "_last_process"),
    ("unsplit_lldb_impl/stepping.py", "_decoded_cache"),
    ("unsplit_lldb_impl/cfi_symbols.py", "_DONE"),
    # gdb.pretty_printers holds one lookup per process: it knows the texts handed to GDB's
    # frame printer for locals it would print wrong (the last few hundred)
    ("unsplit_gdb_impl/local_errors.py", "_TEXTS"),
}


def test_adapter_state_is_declared() -> None:
    """The adapters' module state is the list above: a new global fails here until it is
    either a session's or listed with its reason."""
    root = CORE.parents[1]
    found = _module_state(root / "gdb" / "unsplit_gdb_impl") | \
        _module_state(root / "lldb" / "unsplit_lldb_impl")
    assert found == ADAPTER_STATE


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
    assert cached == {("index/names/demangle.py", "_cxa"), ("index/names/demangle.py", "demangle"),
                      ("elf/debuginfod.py", "_library")}
