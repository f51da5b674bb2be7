"""lldb-dap on a core: a split module whose debug file is not made yet, can only name its
procedures (no source of lines or variables: cache.names_only, a stripped library BOLTed
without its input) and is big enough to take a while (more code than ``UNSPLIT_DEBUGINFO_MAX_KB``,
512 KB by default: a BOLTed libLLVM's file is seconds of CPU, docs/benchmarks.md), gets it from
another process (unsplit.debuginfo.background), which first writes its names file
(unsplit.debuginfo.names_file: its symbols, every fragment named by its procedure). The stop
hook waits for that one alone and gives it to LLDB, so the first ``stackTrace`` names every
frame; a thread of this session waits for the debug file (its DWARF ranges and the fragments'
CFI) and gives it to LLDB in its place (``target symbols add`` again: LLDB drops the module's
symbol file and its frames). ``UNSPLIT_DEBUGINFO_BACKGROUND=0`` writes it at once instead.

Only lldb-dap, only on a core, only a file of names: the command line names frames from the
index, not the symbol file; a live process needs lines before it runs (breakpoints, stops);
and lldb-dap keeps a stop's variables (Variables::ReadyFrame) and VS Code its stack until the
next stop, which a core never has: lines or variables that came later would never be seen."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from unsplit.debuginfo import background
from unsplit.debuginfo.cache import Outcome, names_path
from unsplit.errors import UnsplitError
from unsplit.index.bolt import prebolt

from . import state as state_mod
from .report import report_internal
from .state import PendingFile

if TYPE_CHECKING:
    import lldb

QUIET = ("not split", "has DWARF", "no build-id")  # what needs no file: nothing to say


def wanted(target: lldb.SBTarget, in_lldb_dap: bool) -> bool:
    """Whether this session takes names first: lldb-dap, on a core, not turned off."""
    if not in_lldb_dap or os.environ.get("UNSPLIT_DEBUGINFO_BACKGROUND", "1") == "0":
        return False
    process = target.GetProcess()
    return bool(process.IsValid() and process.GetCoreFile().fullpath)


_LOCK = threading.Lock()  # the watcher threads and the stop hook both give the debug file


def give(debugger: lldb.SBDebugger, target: lldb.SBTarget, path: str, debug_file: str,
         add: Callable[[str], None], then: Callable[[Outcome], str]) -> str:
    """Start writing `path`'s debug file (to `debug_file`), wait for its names file and give
    it (`add`), and have a thread give the debug file once made (`then`: what is done with
    it, said as the module's status). Returns the status (a writer that made neither file
    says why, once; the module is not asked again); UnsplitError when no writer starts (said
    by the caller, which then writes the file here)."""
    st = state_mod.for_debugger(debugger.GetID())
    found = st.pending.get(path)
    if found is None:
        chosen = prebolt.input_for(st.session.indexes.binary(path))
        writer = background.start(path, None if chosen is None else chosen.path, names=True)
        found = st.pending[path] = PendingFile(path, writer, names_path(debug_file))
    if not found.writer.wait_for(found.names):  # ended without one (the debug file was kept)
        said, status = _finish(debugger, found, then)
        if said:
            print(said, file=sys.stderr)
        return status or "not given: its writer made none (it said why)"
    add(found.names)
    print(f"unsplit: {os.path.basename(path)}: its procedures are named by {found.names} while "
          "its debug file is written", file=sys.stderr)
    thread = threading.Thread(target=_watch, args=(debugger, found, then), daemon=True,
                              name=f"unsplit: {os.path.basename(path)}'s debug file")
    thread.start()
    return f"given unsplit's names file: {found.names} (its debug file is being written)"


def _watch(debugger: lldb.SBDebugger, pending: PendingFile, then: Callable[[Outcome], str]) -> None:
    try:
        pending.writer.wait()
        said, _ = _finish(debugger, pending, then)
    except Exception as e:  # a thread's exception would only reach Python's own hook
        report_internal(e, state_mod.for_debugger(debugger.GetID()).reported)
        return
    if said:
        print(said, file=sys.stderr)


def _finish(debugger: lldb.SBDebugger, pending: PendingFile,
            then: Callable[[Outcome], str]) -> tuple[str | None, str | None]:
    """Give the finished writer's file (once): the line that says what became of it, and the
    module's status when it was given."""
    with _LOCK:
        if pending.loaded:
            return None, None
        pending.loaded = True
        outcome = pending.writer.outcome()
        name = os.path.basename(pending.module)
        if outcome.path is None:  # (a module found not split, or with DWARF, needs none)
            quiet = outcome.reason in QUIET
            return None if quiet else f"unsplit: no debug file for {name}: {outcome.reason}", None
        try:
            status = then(outcome)
        except (UnsplitError, OSError) as e:
            return f"unsplit: cannot load {outcome.path} for {name}: {e}", None
        if status.startswith("given unsplit's DWARF"):
            return f"unsplit: debug info for split module {name} ({outcome.path})", status
        return f"unsplit: {name}: {status}", status
