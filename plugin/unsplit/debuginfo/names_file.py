"""The symbol file a session gets at once for a module whose debug file takes seconds to write
(a BOLTed libLLVM's: docs/benchmarks.md): the module's own symbols, and every fragment of its
procedures named by its procedure, in a `.symtab`; no DWARF. LLDB names frames by it (lldb-dap
reads names from a module's symbol file alone) until the debug file, written meanwhile by
another process (unsplit.debuginfo.background), replaces it: LLDB takes a module's symbol
file again at each ``target symbols add``."""

from __future__ import annotations

import mmap

from unsplit.debuginfo.dwarf.elf import Renamed, write_debug_file
from unsplit.index.module_index import ModuleIndex


def renamed(index: ModuleIndex) -> Renamed:
    """Each fragment the module has no symbol of its procedure's name for (every moved one; a
    stripped library's unexported functions), named by its procedure; a moved fragment's own
    symbols (`foo.cold.1`) dropped."""
    added: list[tuple[str, int, int]] = []
    dropped: set[int] = set()
    for name, start, end, moved in index.unnamed_fragments():
        if moved:
            dropped.add(start)
        added.append((name, start, max(end - start, 0)))
    return Renamed(added, dropped)


def make(index: ModuleIndex) -> bytes:
    """The names file of the module `index` describes."""
    with open(index.binary.path, "rb") as f, \
            mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as module:
        # mapped, not read: only its headers, notes and symbols are copied
        return write_debug_file(module, index.binary.path, [], renamed(index))
