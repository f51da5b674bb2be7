"""Each split module without DWARF gets unsplit's debug file (unsplit.debuginfo.cache) as a
separate debug objfile, so GDB's own `bt`, `info line`, `list`, `break FILE:LINE` and MI/DAP
name the procedure and the true line: a missing-debug handler where GDB has them (15+), else at
``new_objfile``. The file is written in the background; what needs it (a live process,
WAITING_COMMANDS) waits. ``bb debuginfo on|off``; ``UNSPLIT_DEBUGINFO=0`` starts it off."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit.debuginfo.cache import TO_WRITE, Outcome, debug_file_for, max_code_bytes
from unsplit.errors import UnsplitError
from unsplit.index.bolt import prebolt
from unsplit.index.module_index import IndexCache

from . import frame_hooks
from .host import loaded_core
from .report import report_internal

if TYPE_CHECKING:
    from unsplit.debuginfo import background

WAITING_COMMANDS = ("break", "tbreak", "until", "advance", "list", "info line", "info scope",
                    "info address", "info args", "info locals", "print", "output", "call",
                    "ptype", "whatis", "finish")
"""The commands that read what the debug file says (source lines, symbols, values): each waits
for a file being written (its pre-hook, ``define hook-print``)."""

HOOKED_COMMANDS = (*WAITING_COMMANDS, "backtrace", "frame", "up", "down", "info frame")
"""The commands before which a file made meanwhile is loaded (the others of them show frames,
and do not wait: the plugin names and lines frames without the file)."""

HOOK_CALL = "python import unsplit_gdb_impl; unsplit_gdb_impl.before_command({wait})"


class DebugInfoLoader:
    """`loaded` hears of each module GDB reads our file for (FrameNamer.describe)."""

    def __init__(self, indexes: IndexCache, loaded: Callable[[str], None]) -> None:
        self.indexes = indexes
        self.loaded = loaded
        self.enabled = os.environ.get("UNSPLIT_DEBUGINFO", "1") != "0"
        self.outcomes: dict[str, Outcome] = {}
        self.announced: set[str] = set()
        self.answered: set[str] = set()  # modules given as GDB's missing-debug handler
        self.background = os.environ.get("UNSPLIT_DEBUGINFO_BACKGROUND", "1") != "0"
        self.pending: dict[str, tuple[Any, background.Writer]] = {}  # module -> being written
        # Lines of a file loaded from a command's pre-hook, said at the next prompt or wait:
        # the hook also runs for the plugin's own `gdb.execute(..., to_string=True)` of that
        # command, which would swallow them.
        self.unsaid: list[str] = []
        self.deferring = False
        # module -> the core (host.loaded_core) already loaded when its file, written in the
        # background, was: GDB printed that core's frame without the file (StopPrinter.on_prompt).
        self.after_core: dict[str, tuple[object, ...]] = {}

    def missing_debug(self, objfile: Any) -> str | None:
        """GDB >= 15's question for an objfile without debug info: our file's path, or None
        (not ours to answer: the next handler, or GDB's own message)."""
        name = getattr(objfile, "filename", None)
        if not self.enabled or not name or not os.path.isfile(name):
            return None
        objfile.unsplit_debuginfo = True
        path = self._file_now(objfile, name)
        if path is None:
            return None
        self.answered.add(name)
        self.loaded(name)
        self._announce(name, path)
        return path

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
        path = self._file_now(objfile, name)
        if path is not None:
            self._attach(objfile, name, path)

    def _file_now(self, objfile: Any, name: str) -> str | None:
        """The file to give `objfile` now: kept, or written here where the session needs it at
        once (a live process: its breakpoints and stops; or no background); None when it needs
        none, or when it is being written in the background (:meth:`poll` gives it)."""
        later = self.background and not _live_process()
        outcome = debug_file_for(name, self.indexes, max_code=max_code_bytes(), write=not later)
        self.outcomes[name] = outcome
        if outcome.reason != TO_WRITE:
            return outcome.path
        if name in self.pending:  # the file read again while its writer runs: one writer
            self.pending[name] = (objfile, self.pending[name][1])
            return None
        found = prebolt.input_for(self.indexes.binary(name))
        from unsplit.debuginfo import background  # a session on files already written: never

        try:
            writer = background.start(name, None if found is None else found.path)
        except UnsplitError as e:  # no interpreter to run it: written here, as without
            gdb.write(f"{e}; writing it now\n")
            outcome = debug_file_for(name, self.indexes, max_code=max_code_bytes())
            self.outcomes[name] = outcome
            return outcome.path
        self.pending[name] = (objfile, writer)
        return None

    def poll(self, _: object = None, hook: bool = False) -> None:
        """Load every file whose writer has finished (before a prompt, at a stop, before a
        command of HOOKED_COMMANDS: `hook`, whose lines wait for the prompt); while the program
        runs, the next stop does."""
        try:
            if self.pending and not _running():
                self.deferring = hook
                try:
                    for name in [n for n, (_, w) in self.pending.items() if w.done()]:
                        self._finish(name)
                finally:
                    self.deferring = False
            if not hook:
                self.say_unsaid()
        except Exception as e:
            report_internal(e, once=True)

    def _say(self, line: str) -> None:
        if self.deferring:
            self.unsaid.append(line)
        else:
            gdb.write(line)

    def say_unsaid(self) -> None:
        for line in self.unsaid:
            gdb.write(line)
        self.unsaid.clear()

    def wait(self) -> None:
        """Load every file being written, waiting for each (a command or a live process that
        needs it)."""
        try:
            self.say_unsaid()
            for name in list(self.pending):
                self._finish(name)
            self.say_unsaid()
        except Exception as e:
            report_internal(e, once=True)

    def on_new_thread(self, event: Any) -> None:
        if self.pending and _live_process():
            self.wait()  # before the program runs: breakpoints and stops need the file

    def _finish(self, name: str) -> None:
        objfile, writer = self.pending.pop(name)
        if not writer.done():
            gdb.write(f"unsplit: waiting for the debug file of {os.path.basename(name)} "
                      f"(being written for {time.monotonic() - writer.started:.1f} s)\n")
        outcome = writer.wait()
        self.outcomes[name] = outcome
        if outcome.path is None:
            self._say(f"unsplit: no debug file for {os.path.basename(name)}: "
                               f"{outcome.reason}\n")
        elif objfile.is_valid():
            core = loaded_core()
            if core is not None:
                self.after_core[name] = core
            self._attach(objfile, name, outcome.path)

    def _attach(self, objfile: Any, name: str, path: str) -> None:
        try:
            objfile.add_separate_debug_file(path)
        except gdb.error as e:
            self._say(f"unsplit: cannot load {path} for {name}: {e}\n")
            return
        # Frames GDB made before (a core loaded before the plugin, a `bt` before the file was
        # made) have no inlined frames and name the procedure with an inlined callee's line:
        # GDB makes them again.
        gdb.invalidate_cached_frames()
        self.loaded(name)
        self._announce(name, path)

    def _announce(self, name: str, path: str) -> None:
        if name not in self.announced:
            self.announced.add(name)
            self._say(f"unsplit: debug info for split module {os.path.basename(name)} "
                               f"({path})\n")

    def set_enabled(self, flag: bool | None) -> str:
        if flag is not None:
            self.enabled = flag
            if flag:
                for objfile in gdb.objfiles():
                    self.load(objfile)
        given = [(os.path.basename(m), o.path
                  + (" (GDB's missing-debug handler)" if m in self.answered else ""))
                 for m, o in self.outcomes.items() if o.path and m not in self.pending]
        too_big = [(os.path.basename(m), o.reason) for m, o in self.outcomes.items()
                   if not o.path and "KB of code" in o.reason]
        too_big += [(os.path.basename(m), f"being written since {time.monotonic() - w.started:.1f}"
                     " s (its variables follow once it is loaded)")
                    for m, (_, w) in self.pending.items()]
        from unsplit.render.debuginfo import DebugInfoState, status_text  # (bb debuginfo)

        state = DebugInfoState(self.enabled, otherwise="no debug file from unsplit (the "
                               "plugin still names their frames)",
                               kept="files already loaded stay until the module reloads")
        return status_text(state, given, too_big, turned_off=flag is False)


def _live_process() -> bool:
    """Whether the inferior is a running program (not a core, nor none yet)."""
    inferior = gdb.selected_inferior()
    return bool(inferior.pid) and \
        getattr(getattr(inferior, "connection", None), "type", None) != "core"


def _running() -> bool:
    thread = gdb.selected_thread()
    return thread is not None and thread.is_valid() and thread.is_running()


def install_hooks() -> list[str]:
    """Define a pre-hook on each command of HOOKED_COMMANDS that has none of the user's;
    return one warning per command left without (it may then answer before the file is
    loaded)."""
    def pre_hook(command: str) -> str:
        prefix, _, last = command.rpartition(" ")
        return f"{prefix} hook-{last}".lstrip()
    return frame_hooks.define_hooks(
        ((c, pre_hook(c), HOOK_CALL.format(wait=c in WAITING_COMMANDS)) for c in HOOKED_COMMANDS),
        HOOK_CALL.split("(")[0], "may answer before a debug file being written is loaded")


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
