"""Frame names in LLDB's ``bt`` and stop line, through ``${script.frame:…}`` format entries.

LLDB 22 calls ``unsplit_lldb.frame_function(frame, internal_dict)`` (and friends) for every
frame it prints with ``frame-format``/``thread-format`` and prints the string returned. These
callbacks name a frame in moved code by its logical procedure and fragment (``transfer [cold]``)
and render everything else with the user's own format text, so nothing else changes.

They run for every frame of every ``bt``: the session's FrameNamer (unsplit.debug.frame_namer)
names each from its location cache, and a callback never raises: an exception would print a
traceback into the backtrace.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import lldb
from unsplit.debug.frame_namer import FrameKind, FrameView, Naming, Shown, kind_by_name
from unsplit.index.model import Location

from . import modules
from . import state as state_mod
from .formats import rewrite
from .report import report_internal

# setting -> the callback (in module unsplit_lldb) that replaces its function part
CALLBACKS = {
    "frame-format": "frame_function",
    "thread-format": "thread_function",
    "thread-stop-format": "thread_stop_function",
}
LINE_CALLBACK = "frame_line"
_MODULE = "unsplit_lldb"
DEFAULT_PART = "${function.name-with-args}{${frame.no-debug}${function.pc-offset}}"

_formats: dict[str, Any] = {}  # format text -> SBFormat


def entry(callback: str) -> str:
    return "${script.frame:" + _MODULE + "." + callback + "}"


# -- settings -------------------------------------------------------------------------------

def get_setting(debugger: lldb.SBDebugger, name: str) -> str:
    return str(debugger.GetSetting(name).GetStringValue(1 << 20))


def set_setting(debugger: lldb.SBDebugger, name: str, value: str) -> str | None:
    """Set a format setting; returns LLDB's error text, or None."""
    error = lldb.SBDebugger.SetInternalVariable(name, value, debugger.GetInstanceName())
    return None if error.Success() else str(error.GetCString())


def install(debugger: lldb.SBDebugger) -> list[str]:
    """Put our entries into the user's current formats (idempotent); returns warnings."""
    fs = state_mod.for_debugger(debugger.GetID()).formats
    notes = []
    for setting, callback in CALLBACKS.items():
        current = get_setting(debugger, setting)
        if fs.installed.get(setting) == current:
            continue  # still ours
        rewritten = rewrite(current, entry(callback), entry(LINE_CALLBACK))
        if rewritten is None:
            continue  # no function name in this format (thread-stop-format by default)
        error = set_setting(debugger, setting, rewritten.text)
        if error:
            notes.append(f"unsplit: could not set {setting}: {error}")
            continue
        fs.saved[setting] = current
        fs.installed[setting] = get_setting(debugger, setting)
        fs.parts[callback] = rewritten.function_part
    return notes


def restore(debugger: lldb.SBDebugger) -> list[str]:
    """Give the user's formats back, unless they changed them since; returns warnings."""
    fs = state_mod.for_debugger(debugger.GetID()).formats
    notes = []
    for setting, saved in list(fs.saved.items()):
        if get_setting(debugger, setting) == fs.installed.get(setting):
            error = set_setting(debugger, setting, saved)
            if error:
                notes.append(f"unsplit: could not restore {setting}: {error}")
                continue
        else:
            notes.append(f"unsplit: {setting} was changed after unsplit set it; left as it is")
        del fs.saved[setting]
        fs.installed.pop(setting, None)
    return notes


def set_enabled(debugger: lldb.SBDebugger, flag: bool) -> list[str]:
    state_mod.for_debugger(debugger.GetID()).session.enabled = flag
    return install(debugger) if flag else restore(debugger)


# -- the callbacks --------------------------------------------------------------------------

# (state, target, process, thread) of a frame: what one callback needs, fetched once per
# callback
_Context = tuple[state_mod.DebuggerState, Any, Any, Any]


def _context(frame: lldb.SBFrame) -> _Context:
    thread = frame.GetThread()
    process = thread.GetProcess()
    target = process.GetTarget()
    return state_mod.for_debugger(target.GetDebugger().GetID()), target, process, thread


class LldbFrame:
    """An SBFrame as the core's FrameView (unsplit.debug.frame_namer), each answer fetched from
    LLDB when a rule asks. LLDB marks no signal trampoline: with `trampolines` they are known
    by name (the selected frame's questions); frame names leave them out, as they always did,
    since a name per frame costs `bt` about 8% (bench/bt.py --clock cpu)."""

    __slots__ = ("_kind", "frame", "thread", "trampolines")

    def __init__(self, frame: lldb.SBFrame, thread: lldb.SBThread,
                 trampolines: bool = False) -> None:
        self.frame = frame
        self.thread = thread
        self.trampolines = trampolines
        self._kind: FrameKind | None = None

    def pc(self) -> int:
        return int(self.frame.GetPC())

    def kind(self) -> FrameKind:
        if self._kind is None:
            frame = self.frame
            self._kind = kind_by_name(frame.IsInlined(), frame.GetFunctionName()) \
                if self.trampolines else FrameKind.INLINE if frame.IsInlined() \
                else FrameKind.NORMAL
        return self._kind

    def newer(self) -> FrameView | None:
        newer = int(self.frame.GetFrameID()) - 1
        return None if newer < 0 else \
            LldbFrame(self.thread.GetFrameAtIndex(newer), self.thread, self.trampolines)

    def has_line(self) -> bool:
        line_entry = self.frame.GetLineEntry()
        return bool(line_entry.IsValid() and line_entry.GetLine() > 0)

    def name(self) -> str:
        return str(self.frame.GetFunctionName() or "")


def name_frame(frame: lldb.SBFrame, context: _Context | None = None) -> Naming:
    """What the session's FrameNamer says of `frame`, its module map brought up to LLDB's
    module list first when the process ran or a module came or went (a `bt` asks for every
    frame: a cheap check, measured by bench/bt.py)."""
    st, target, process, thread = context if context is not None else _context(frame)
    namer = st.session.namer
    modules.sync(st.session, target, process, live=True)
    naming = namer.name(LldbFrame(frame, thread))
    for warning in namer.take_warnings():  # e.g. damaged DWARF: said once
        print(f"unsplit: {warning}", file=sys.stderr)
    return naming


def render_native(frame: lldb.SBFrame, text: str) -> str:
    fmt = _formats.get(text)
    if fmt is None:
        error = lldb.SBError()
        fmt = lldb.SBFormat(text, error)
        if error.Fail():
            return str(frame.GetDisplayFunctionName() or "")
        _formats[text] = fmt
    stream = lldb.SBStream()
    if frame.GetDescriptionWithFormat(fmt, stream).Fail():
        return str(frame.GetDisplayFunctionName() or "")
    return str(stream.GetData() or "")


def logical_name(frame: lldb.SBFrame, callback: str) -> str:
    context = _context(frame)
    st = context[0]
    part = st.formats.parts.get(callback, DEFAULT_PART)
    if not st.session.enabled:
        return render_native(frame, part)
    naming = name_frame(frame, context)
    loc = naming.location
    if naming.shown is not Shown.RENAME or loc is None:
        return render_native(frame, part)
    style = st.session.demangling()
    function = frame.GetFunction()
    if function.IsValid() and loc.fragment_symbol not in (function.GetMangledName(),
                                                          function.GetName()):
        # DWARF's function (not the symbol file's FUNC for a fragment, named by its symbol);
        # rendering LLDB's part costs most of a frame: only here.
        native = render_native(frame, part)
        base = loc.name(style, parameters=False) or ""
        at = native.find(base + "(") if base else -1
        if at == 0 or (at > 0 and native[at - 1] == " "):
            # DWARF knows the procedure: keep LLDB's arguments (and the return type LLDB
            # writes before a function template's name), add the fragment tag.
            return native[:at] + loc.label(style, parameters=False) + native[at + len(base):]
    return loc.label(style) + pc_offset(frame, (loc.offset or 0) + naming.pc - naming.lookup)


def pc_offset(frame: lldb.SBFrame, offset: int) -> str:
    """The offset as LLDB's default format writes ``${function.pc-offset}``: `` + 46``, in
    decimal, only for a frame without debug information (``${frame.no-debug}``: no line
    entry) and a non-zero offset, so that one backtrace has one offset style."""
    if offset <= 0 or frame.GetLineEntry().IsValid():
        return ""
    return f" + {offset}"


def source_line(frame: lldb.SBFrame) -> str:
    """` at file:line[:col]` from the core when LLDB has no line for the frame, else ""."""
    loc = plugin_line(frame)
    if loc is None:
        return ""
    column = f":{loc.column}" if loc.column else ""
    return f" at {os.path.basename(loc.file or '')}:{loc.line}{column}"


def plugin_line(frame: lldb.SBFrame) -> Location | None:
    """The core's line of a frame LLDB has no line for (its file and line known), else None."""
    line_entry = frame.GetLineEntry()
    if line_entry.IsValid() and line_entry.GetLine() > 0:
        return None  # LLDB's own line stands (checked first: it is cheaper than the state)
    context = _context(frame)
    if not context[0].session.enabled:
        return None
    loc = name_frame(frame, context).location
    if loc is None:
        return None
    # LLDB has no frames for calls inlined here (it has no line here either): the procedure's
    # own line goes with the procedure's name, never an inlined callee's.
    loc = loc.as_procedure()
    return loc if loc.file is not None and loc.line else None


def guarded_name(frame: lldb.SBFrame, callback: str) -> str:
    try:
        return logical_name(frame, callback)
    except Exception as e:
        _report(frame, e)
        return str(frame.GetDisplayFunctionName() or "??")


def guarded_line(frame: lldb.SBFrame) -> str:
    try:
        return source_line(frame)
    except Exception as e:
        _report(frame, e)
        return ""


def _report(frame: lldb.SBFrame, e: Exception) -> None:
    """A bug in a callback: said once per debugger session (a `bt` calls the callbacks for
    every frame); the frame is then named as LLDB names it."""
    report_internal(e, _context(frame)[0].reported)
