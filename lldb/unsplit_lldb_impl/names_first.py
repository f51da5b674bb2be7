"""lldb-dap on a core, a big split module that can only be named (no lines or variables to
give): another process starts writing its files as soon as LLDB lists the core's modules;
LLDB gets its names file at the stop and the whole debug file once written (``target
symbols add`` again). Why only then: docs/architecture.md, "Inside the adapters"."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


def enabled(in_lldb_dap: bool) -> bool:
    """Whether this session may take names first: lldb-dap, not turned off."""
    return in_lldb_dap and os.environ.get("UNSPLIT_DEBUGINFO_BACKGROUND", "1") != "0"


def wanted(target: lldb.SBTarget, in_lldb_dap: bool) -> bool:
    """Whether this session takes names first: lldb-dap, on a core, not turned off."""
    if not enabled(in_lldb_dap):
        return False
    process = target.GetProcess()
    return bool(process.IsValid() and process.GetCoreFile().fullpath)


# Which modules get a writer at once: the path of the debug file one should get, or None.
Eligible = Callable[["lldb.SBDebugger", str], "str | None"]
POLL = 0.01  # seconds between two looks at the module list while LLDB loads a core
WATCH_AT_MOST = 120.0  # seconds: a session whose stop hook never runs


def watch(debugger: lldb.SBDebugger, eligible: Eligible) -> None:
    """Start writers while LLDB still loads a core: it lists the core's modules at once but
    reads their symbol tables for seconds before any stop hook runs, and a first session's
    stackTrace waits for the writer's names file. A thread looks at the selected target's
    modules until the stop hook ends it (`settle`), or a live process is seen."""
    st = state_mod.for_debugger(debugger.GetID())
    if st.watcher is not None:
        return
    stop = threading.Event()
    thread = threading.Thread(target=_watch_core, args=(debugger, eligible, stop), daemon=True,
                              name="unsplit: a core's split modules")
    st.watcher = (thread, stop)
    thread.start()


def settle(debugger: lldb.SBDebugger) -> None:
    """End the watcher (its writers go on), so that the stop hook alone looks at modules.
    Joined safely: the watcher calls no SB API that takes the target's API mutex."""
    st = state_mod.for_debugger(debugger.GetID())
    if st.watcher is not None and st.watcher[0].is_alive():
        st.watcher[1].set()
        st.watcher[0].join()


def _watch_core(debugger: lldb.SBDebugger, eligible: Eligible, stop: threading.Event) -> None:
    looked: set[str] = set()
    end = time.monotonic() + WATCH_AT_MOST
    try:
        while not stop.wait(POLL) and time.monotonic() < end:
            target = debugger.GetSelectedTarget()
            process = target.GetProcess() if target.IsValid() else None
            if process is None or not process.IsValid():
                continue
            if not process.GetCoreFile().fullpath:
                return  # a live process: its modules are looked at when it stops
            for module in target.module_iter():  # (LLDB's module list takes no API mutex)
                path = module.GetFileSpec().fullpath or ""
                if path and path not in looked and not stop.is_set():
                    looked.add(path)
                    try:
                        debug_file = eligible(debugger, path)
                        if debug_file is not None:
                            _writer(debugger, path, debug_file)
                    except (UnsplitError, OSError):
                        pass  # the stop hook looks at the module again, and says why
    except Exception as e:  # a thread's exception would only reach Python's own hook
        report_internal(e, state_mod.for_debugger(debugger.GetID()).reported)


def _writer(debugger: lldb.SBDebugger, path: str, debug_file: str) -> PendingFile:
    """`path`'s writer, started now unless it already is; UnsplitError when none starts."""
    st = state_mod.for_debugger(debugger.GetID())
    found = st.pending.get(path)
    if found is None:
        chosen = prebolt.input_for(st.session.indexes.binary(path))
        writer = background.start(path, None if chosen is None else chosen.path, names=True)
        found = st.pending[path] = PendingFile(path, writer, names_path(debug_file))
    return found


_LOCK = threading.Lock()  # the watcher threads and the stop hook both claim a debug file


def give(debugger: lldb.SBDebugger, target: lldb.SBTarget, path: str, debug_file: str,
         add: Callable[[str], None], then: Callable[[Outcome], str]) -> str:
    """Start writing `path`'s debug file (to `debug_file`), wait for its names file and give
    it (`add`), and have a thread give the debug file once made (`then`: what is done with
    it, said as the module's status). Returns the status (a writer that made neither file
    says why, once; the module is not asked again); UnsplitError when no writer starts (said
    by the caller, which then writes the file here)."""
    found = _writer(debugger, path, debug_file)
    if not found.writer.wait_for(found.names):  # ended without one (the debug file was kept)
        said, status = _finish(debugger, found, then)
        if said:
            print(said, file=sys.stderr)
        return status or "not given: its writer made none (it said why)"
    add(found.names)
    print(f"unsplit: {os.path.basename(path)}: its procedures are named by {found.names} while "
          "its debug file is written", file=sys.stderr)
    thread = threading.Thread(target=_watch, args=(debugger, target, found, then), daemon=True,
                              name=f"unsplit: {os.path.basename(path)}'s debug file")
    thread.start()
    return f"given unsplit's names file: {found.names} (its debug file is being written)"


def _watch(debugger: lldb.SBDebugger, target: lldb.SBTarget, pending: PendingFile,
           then: Callable[[Outcome], str]) -> None:
    try:
        pending.writer.wait()
        with api_lock(target):
            said, _ = _finish(debugger, pending, then)
    except Exception as e:  # a thread's exception would only reach Python's own hook
        report_internal(e, state_mod.for_debugger(debugger.GetID()).reported)
        return
    if said:
        print(said, file=sys.stderr)


@contextmanager
def api_lock(target: lldb.SBTarget, poll: float = 0.01) -> Iterator[None]:
    """Hold `target`'s API mutex, which lldb-dap (LLDB 21 and later) holds through each request
    it serves and while it reports a stop: the symbol file is then replaced between two
    requests, never under one whose frames hold the old file's symbols (`target symbols add`
    takes no such lock of its own). Polled rather than waited for, so that a thread waiting
    here never holds Python's lock against the adapter's. An LLDB without SBMutex has no such
    lock to take, nor an lldb-dap that takes it."""
    if not hasattr(target, "GetAPIMutex"):
        yield
        return
    mutex = target.GetAPIMutex()
    while not mutex.try_lock():
        time.sleep(poll)
    try:
        yield
    finally:
        mutex.unlock()


def _claim(pending: PendingFile) -> bool:
    """Whether this caller is the one to give `pending`'s file (the stop hook and the watcher
    may both try). Nothing else is done under _LOCK, so no thread waits for another lock while
    holding it."""
    with _LOCK:
        if pending.loaded:
            return False
        pending.loaded = True
        return True


def _finish(debugger: lldb.SBDebugger, pending: PendingFile,
            then: Callable[[Outcome], str]) -> tuple[str | None, str | None]:
    """Give the finished writer's file (once): the line that says what became of it, and the
    module's status when it was given."""
    if not _claim(pending):
        return None, None
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
