"""Frame names in LLDB's ``bt`` and stop line, through ``${script.frame:…}`` format entries.

LLDB 22 calls ``unsplit_lldb.frame_function(frame, internal_dict)`` (and friends) for every
frame it prints with ``frame-format``/``thread-format`` and prints the string returned. These
callbacks name a frame in moved code by its logical procedure and fragment (``transfer [cold]``)
and render everything else with the user's own format text, so nothing else changes.

They run for every frame of every ``bt``: locations are cached by pc (see
:func:`unsplit_lldb_impl.host.loaded_modules` for when the cache is dropped), and a callback
never raises: an exception would print a traceback into the backtrace.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import lldb
from unsplit.index.frame import lookup_pc
from unsplit.index.location_cache import LINES, NO_LINES
from unsplit.index.model import Location
from unsplit.index.names import names_procedure

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

def get_setting(debugger: Any, name: str) -> str:
    return str(debugger.GetSetting(name).GetStringValue(1 << 20))


def set_setting(debugger: Any, name: str, value: str) -> str | None:
    """Set a format setting; returns LLDB's error text, or None."""
    error = lldb.SBDebugger.SetInternalVariable(name, value, debugger.GetInstanceName())
    return None if error.Success() else str(error.GetCString())


def install(debugger: Any) -> list[str]:
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


def restore(debugger: Any) -> list[str]:
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


def set_enabled(debugger: Any, flag: bool) -> list[str]:
    state_mod.for_debugger(debugger.GetID()).session.enabled = flag
    return install(debugger) if flag else restore(debugger)


# -- the callbacks --------------------------------------------------------------------------

# (state, target, process, thread) of a frame: what one callback needs, fetched once per
# callback
_Context = tuple[state_mod.DebuggerState, Any, Any, Any]


def _context(frame: Any) -> _Context:
    thread = frame.GetThread()
    process = thread.GetProcess()
    target = process.GetTarget()
    return state_mod.for_debugger(target.GetDebugger().GetID()), target, process, thread


# id(DebuggerState) -> (process, stop, module count) whose module list was last checked
_checked: dict[int, tuple[int, int, int]] = {}


def locate_frame(frame: Any, context: _Context | None = None, *,
                 lines: bool = False) -> tuple[Location | None, int]:
    """The frame's Location and how far its pc lies past the address looked up.

    A caller's pc is a return address, which may already be the first byte of the next
    fragment; like LLDB's own symbolication we look up pc - 1 for every frame but the first.
    A `bt` calls this for every frame: while the process has not run and no module came or
    went since the module list was last checked, a cached pc skips the check (measured by
    bench/bt.py: the check and a second _context were half of a warm frame's cost).
    `lines`: with the source line, which only frames LLDB has no line for need (the first line
    question in a module with big DWARF, libc's, costs a scan of its CUs).
    """
    st, target, process, thread = context if context is not None else _context(frame)
    cache = st.session.locations  # dropped by `bb input` and by a new module list
    pc = int(frame.GetPC())
    lookup = lookup_pc(pc, _holds_return_address(frame, thread))
    epoch = (int(process.GetUniqueID()), int(process.GetStopID()), int(target.GetNumModules()))
    key = (lookup, LINES if lines else NO_LINES)
    if _checked.get(id(st)) == epoch and key in cache:
        return cache[key], pc - lookup
    host = state_mod.make_host(target.GetDebugger(), target, frame)
    host.modules()  # refreshes the module list and drops stale locations
    _checked[id(st)] = epoch
    if key not in cache:
        cache[key] = loc = st.session.locate(host, lookup, lines=lines)
        for warning in st.session.new_warnings(loc):  # e.g. damaged DWARF: said once
            print(f"unsplit: {warning}", file=sys.stderr)
    return cache[key], pc - lookup


def _holds_return_address(frame: Any, thread: Any) -> bool:
    """A caller's pc is a return address, but not where LLDB made the frame: frame 0 holds
    where the thread stopped, and a frame whose newer frame is an inlined call holds the first
    address of that call's range (LLDB's pc for the scope an inlined block is in), perhaps a
    fragment's first byte, where pc - 1 is the last byte of another procedure's fragment.
    Only a frame whose newer frame is a real (not inlined) one holds a return address."""
    newer = int(frame.GetFrameID()) - 1
    return newer >= 0 and not thread.GetFrameAtIndex(newer).IsInlined()


def render_native(frame: Any, text: str) -> str:
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


def logical_name(frame: Any, callback: str) -> str:
    context = _context(frame)
    st = context[0]
    part = st.formats.parts.get(callback, DEFAULT_PART)
    if not st.session.enabled:
        return render_native(frame, part)
    loc, delta = locate_frame(frame, context)
    if loc is None or not loc.in_moved_code or loc.procedure is None:
        return render_native(frame, part)
    if frame.IsInlined() and not _names_procedure(str(frame.GetFunctionName() or ""), loc):
        return render_native(frame, part)  # an inlined function keeps its own name, as in GDB
    style = st.session.demangling()
    function = frame.GetFunction()
    if function.IsValid() and loc.fragment_symbol not in (function.GetMangledName(),
                                                          function.GetName()):
        # DWARF's function (not the symbol file's FUNC for a fragment, named by its symbol);
        # rendering LLDB's part costs most of a frame: only here.
        native = render_native(frame, part)
        base = loc.name(style, parameters=False) or ""
        if native.startswith(base + "("):
            # DWARF knows the procedure: keep LLDB's arguments, add the fragment tag.
            return loc.label(style, parameters=False) + native[len(base):]
    return loc.label(style) + pc_offset(frame, (loc.offset or 0) + delta)


def pc_offset(frame: Any, offset: int) -> str:
    """The offset as LLDB's default format writes ``${function.pc-offset}``: `` + 46``, in
    decimal, only for a frame without debug information (``${frame.no-debug}``: no line
    entry) and a non-zero offset, so that one backtrace has one offset style."""
    if offset <= 0 or frame.GetLineEntry().IsValid():
        return ""
    return f" + {offset}"


def _names_procedure(name: str, loc: Location) -> bool:
    return loc.procedure is not None and (name == loc.fragment_symbol
                                          or names_procedure(name, loc.procedure))


def source_line(frame: Any) -> str:
    """` at file:line[:col]` from the core when LLDB has no line for the frame, else ""."""
    loc = plugin_line(frame)
    if loc is None:
        return ""
    column = f":{loc.column}" if loc.column else ""
    return f" at {os.path.basename(loc.file or '')}:{loc.line}{column}"


def plugin_line(frame: Any) -> Location | None:
    """The core's line of a frame LLDB has no line for (its file and line known), else None."""
    line_entry = frame.GetLineEntry()
    if line_entry.IsValid() and line_entry.GetLine() > 0:
        return None  # LLDB's own line stands (checked first: it is cheaper than the state)
    context = _context(frame)
    if not context[0].session.enabled:
        return None
    loc, _ = locate_frame(frame, context, lines=True)
    if loc is None:
        return None
    # LLDB has no frames for calls inlined here (it has no line here either): the procedure's
    # own line goes with the procedure's name, never an inlined callee's.
    loc = loc.as_procedure()
    return loc if loc.file is not None and loc.line else None


def guarded_name(frame: Any, callback: str) -> str:
    try:
        return logical_name(frame, callback)
    except Exception as e:
        _report(frame, e)
        return str(frame.GetDisplayFunctionName() or "??")


def guarded_line(frame: Any) -> str:
    try:
        return source_line(frame)
    except Exception as e:
        _report(frame, e)
        return ""


def _report(frame: Any, e: Exception) -> None:
    """A bug in a callback: said once per debugger session (a `bt` calls the callbacks for
    every frame); the frame is then named as LLDB names it."""
    report_internal(e, _context(frame)[0].reported)
