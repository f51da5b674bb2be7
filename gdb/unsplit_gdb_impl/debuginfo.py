"""Give GDB the truth: each split module without DWARF gets unsplit's debug file
(unsplit.debuginfo.cache) as a separate debug objfile (``Objfile.add_separate_debug_file``),
when it loads, so GDB's own ``bt``, ``info line``, ``list``,
``break FILE:LINE`` and every MI/DAP front end name the procedure and the true line.
``bb debuginfo on|off`` (on by default; ``UNSPLIT_DEBUGINFO=0`` starts it off); a module that
gets one is named once.

Where GDB has missing-debug handlers (GDB >= 15, ``gdb.missing_debug``), the file is this
handler's answer: GDB asks it when its own search (debug-file-directory, debuginfod) found
nothing, before it says "No debugging symbols found", and ``info missing-debug-handler`` lists
it (``disable missing-debug-handler unsplit``). Older GDBs get it from ``gdb.events.new_objfile``.
"""

from __future__ import annotations

import os
from typing import Any

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit.debuginfo.cache import Outcome, debug_file_for, max_code_bytes
from unsplit.index.module_index import IndexCache
from unsplit.render.debuginfo import DebugInfoState, status_text

from .report import report_internal


class DebugInfoLoader:
    def __init__(self, indexes: IndexCache) -> None:
        self.indexes = indexes
        self.enabled = os.environ.get("UNSPLIT_DEBUGINFO", "1") != "0"
        self.outcomes: dict[str, Outcome] = {}
        self.announced: set[str] = set()
        self.answered: set[str] = set()  # modules given as GDB's missing-debug handler

    def missing_debug(self, objfile: Any) -> str | None:
        """GDB >= 15's question for an objfile without debug info: our file's path, or None
        (not ours to answer: the next handler, or GDB's own message)."""
        name = getattr(objfile, "filename", None)
        if not self.enabled or not name or not os.path.isfile(name):
            return None
        objfile.unsplit_debuginfo = True
        outcome = debug_file_for(name, self.indexes, max_code=max_code_bytes())
        self.outcomes[name] = outcome
        if outcome.path is None:
            return None
        self.answered.add(name)
        self._announce(name, outcome.path)
        return outcome.path

    def on_new_objfile(self, event: Any) -> None:
        if self.enabled:
            self.load(event.new_objfile)

    def load(self, objfile: Any) -> None:
        """Give `objfile` its debug file if it needs one; a bug is reported, never raised into
        GDB's loading of the file."""
        try:
            self._load(objfile)
        except Exception as e:
            report_internal(e, once=True)

    def _load(self, objfile: Any) -> None:
        name = getattr(objfile, "filename", None)
        if not name or objfile.owner is not None or not os.path.isfile(name):
            return  # a separate debug objfile, the vDSO, or gone
        if getattr(objfile, "unsplit_debuginfo", False):
            return  # looked at already (GDB keeps attributes set on an Objfile)
        objfile.unsplit_debuginfo = True
        outcome = debug_file_for(name, self.indexes, max_code=max_code_bytes())
        self.outcomes[name] = outcome
        if outcome.path is None:
            return
        try:
            objfile.add_separate_debug_file(outcome.path)
        except gdb.error as e:
            gdb.write(f"unsplit: cannot load {outcome.path} for {name}: {e}\n")
            return
        # Frames GDB made before (a core loaded before the plugin) have no inlined frames
        # and name the procedure with an inlined callee's line: GDB makes them again.
        gdb.invalidate_cached_frames()
        self._announce(name, outcome.path)

    def _announce(self, name: str, path: str) -> None:
        if name not in self.announced:
            self.announced.add(name)
            gdb.write(f"unsplit: debug info for split module {os.path.basename(name)} "
                      f"({path})\n")

    def set_enabled(self, flag: bool | None) -> str:
        if flag is not None:
            self.enabled = flag
            if flag:
                for objfile in gdb.objfiles():
                    self.load(objfile)
        given = [(os.path.basename(m), o.path
                  + (" (GDB's missing-debug handler)" if m in self.answered else ""))
                 for m, o in self.outcomes.items() if o.path]
        too_big = [(os.path.basename(m), o.reason) for m, o in self.outcomes.items()
                   if not o.path and "KB of code" in o.reason]
        state = DebugInfoState(self.enabled, otherwise="no debug file from unsplit (the "
                               "plugin still names their frames)",
                               kept="files already loaded stay until the module reloads")
        return status_text(state, given, too_big, turned_off=flag is False)


def register_missing_debug_handler(loader: DebugInfoLoader) -> bool:
    """Answer GDB's missing-debug questions with `loader` where GDB asks them (GDB >= 15)."""
    try:
        import gdb.missing_debug as missing  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return False

    class Handler(missing.MissingDebugHandler):  # type: ignore[misc, unused-ignore]
        def __call__(self, objfile: Any) -> str | None:
            try:
                return loader.missing_debug(objfile)
            except Exception as e:  # never break GDB's loading of a file
                report_internal(e, once=True)
                return None

    missing.register_handler(None, Handler("unsplit"), replace=True)
    return True
