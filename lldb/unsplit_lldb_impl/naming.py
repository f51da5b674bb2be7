"""Frame names in LLDB's ``bt`` and stop line, through ``${script.frame:…}`` format entries: a
frame in moved code is named by its logical procedure and fragment (``transfer [cold]``) by the
session's FrameNamer, everything else rendered with the user's own format text. A callback never
raises (a traceback would land in the backtrace)."""

from __future__ import annotations

import os
import sys
from typing import Any

import lldb
from unsplit.debug.frame_namer import FrameKind, FrameView, Naming, Shown, kind_by_name
from unsplit.index.model.records import Location

from . import modules
from . import state as state_mod
from .formats import Merged, Rewrite, merge, rewrite
from .report import report_internal
from .stop_memo import FrameFacts, Renamed, StopMemo

# setting -> the callback (in module unsplit_lldb) that replaces its function part
CALLBACKS = {
    "frame-format": "frame_function",
    "thread-format": "thread_function",
    "thread-stop-format": "thread_stop_function",
}
LINE_CALLBACK = "frame_line"
# setting -> the callback for its function scope, the line scope after it and what lies between
MERGED_CALLBACKS = {"frame-format": "frame_function_line"}
_MODULE = "unsplit_lldb"
DEFAULT_PART = "${function.name-with-args}{${frame.no-debug}${function.pc-offset}}"
DEFAULT_TAIL = ("{ at ${ansi.fg.cyan}${line.file.basename}${ansi.normal}:${ansi.fg.yellow}"
                "${line.number}${ansi.normal}{:${ansi.fg.yellow}${line.column}${ansi.normal}}}")

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
        merged = merge(current, entry(MERGED_CALLBACKS[setting])) \
            if setting in MERGED_CALLBACKS else None
        done: Merged | Rewrite | None = merged or \
            rewrite(current, entry(callback), entry(LINE_CALLBACK))
        if done is None:
            continue  # no function name in this format (thread-stop-format by default)
        error = set_setting(debugger, setting, done.text)
        if error:
            notes.append(f"unsplit: could not set {setting}: {error}")
            continue
        fs.saved[setting] = current
        fs.installed[setting] = get_setting(debugger, setting)
        if isinstance(done, Merged):
            fs.spans[MERGED_CALLBACKS[setting]] = (done.span, done.tail)
        else:
            fs.parts[callback] = done.function_part
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


# The last process a callback saw: (its unique id, its debugger's state, its target). A frame
# gives its thread and process, not its debugger: this saves three SB calls per frame.
_last_process: list[tuple[int, state_mod.DebuggerState, Any]] = []


def _context(frame: lldb.SBFrame) -> _Context:
    thread = frame.GetThread()
    process = thread.GetProcess()
    uid = int(process.GetUniqueID())  # never reused within LLDB's process
    if _last_process and _last_process[0][0] == uid:
        return _last_process[0][1], _last_process[0][2], process, thread
    target = process.GetTarget()
    st = state_mod.for_debugger(target.GetDebugger().GetID())
    if process.IsValid():
        _last_process[:] = [(uid, st, target)]
    return st, target, process, thread


class LldbFrame:
    """An SBFrame as the core's FrameView (unsplit.debug.frame_namer), each answer fetched from
    LLDB when a rule asks (or given: `pc`, `inlined`, `newer`, already fetched). LLDB marks no
    signal trampoline: with `trampolines` they are known by name (the selected frame's
    questions); frame names leave them out, as they always did, since a name per frame costs
    `bt` about 8% (bench/bt.py --clock cpu)."""

    __slots__ = ("_kind", "_line", "_name", "_newer", "_pc", "frame", "thread", "trampolines")

    def __init__(self, frame: lldb.SBFrame, thread: lldb.SBThread, trampolines: bool = False,
                 pc: int | None = None, inlined: bool | None = None,
                 newer: tuple[int | None, bool] | None = None) -> None:
        self.frame = frame
        self.thread = thread
        self.trampolines = trampolines
        self._pc = pc
        self._kind: FrameKind | None = None
        if inlined is not None and not trampolines:
            self._kind = FrameKind.INLINE if inlined else FrameKind.NORMAL
        self._newer = newer
        self._line: bool | None = None  # has_line, when known
        self._name: str | None = None

    def pc(self) -> int:
        if self._pc is None:
            self._pc = int(self.frame.GetPC())
        return self._pc

    def kind(self) -> FrameKind:
        if self._kind is None:
            frame = self.frame
            self._kind = kind_by_name(frame.IsInlined(), frame.GetFunctionName()) \
                if self.trampolines else FrameKind.INLINE if frame.IsInlined() \
                else FrameKind.NORMAL
        return self._kind

    def newer(self) -> FrameView | None:
        newer = int(self.frame.GetFrameID()) - 1
        if newer < 0:
            return None
        frame = self.thread.GetFrameAtIndex(newer)
        if self._newer is None:
            return LldbFrame(frame, self.thread, self.trampolines)
        return LldbFrame(frame, self.thread, self.trampolines, *self._newer)

    def has_line(self) -> bool:
        if self._line is None:
            line_entry = self.frame.GetLineEntry()
            self._line = bool(line_entry.IsValid() and line_entry.GetLine() > 0)
        return self._line

    def name(self) -> str:
        if self._name is None:
            self._name = str(self.frame.GetFunctionName() or "")
        return self._name


def name_frame(frame: lldb.SBFrame, context: _Context | None = None,
               view: LldbFrame | None = None) -> Naming:
    """What the session's FrameNamer says of `frame` (`view`: it as a FrameView), its module
    map brought up to LLDB's module list first when the process ran or a module came or went
    (a `bt` asks for every frame: a cheap check, measured by bench/bt.py)."""
    st, target, process, thread = context if context is not None else _context(frame)
    namer = st.session.namer
    modules.sync(st.session, target, process, live=True)
    # LLDB's own line stands wherever it has one (_line_text): no line of the core's there.
    naming = namer.name(view if view is not None else LldbFrame(frame, thread), own_lines=True)
    for warning in namer.take_warnings():  # e.g. damaged DWARF: said once
        print(f"unsplit: {warning}", file=sys.stderr)
    return naming


def render_native(frame: lldb.SBFrame, text: str) -> str:
    """`text` (a part of the user's format) as LLDB renders it for `frame`; LLDB's own name
    of the frame where it cannot."""
    out = _render(frame, text)
    return str(frame.GetDisplayFunctionName() or "") if out is None else out


def _render(frame: lldb.SBFrame, text: str) -> str | None:
    fmt = _formats.get(text)
    if fmt is None:
        error = lldb.SBError()
        fmt = lldb.SBFormat(text, error)
        if error.Fail():
            return None
        _formats[text] = fmt
    stream = lldb.SBStream()
    if frame.GetDescriptionWithFormat(fmt, stream).Fail():
        return None
    return str(stream.GetData() or "")


def _span(st: state_mod.DebuggerState, callback: str) -> tuple[str, str]:
    return st.formats.spans.get(callback, ("{" + DEFAULT_PART + "}" + DEFAULT_TAIL, DEFAULT_TAIL))


def logical_name_and_line(frame: lldb.SBFrame, callback: str) -> str:
    """The function scope through the line scope of `frame-format` (formats.merge): as
    logical_name and source_line would have them, in one call."""
    context = _context(frame)
    st = context[0]
    span, tail = _span(st, callback)
    if not st.session.enabled:
        return render_native(frame, span)
    facts = _facts(frame, context[3])
    memo = stop_memo(context)
    renamed = _renamed(frame, context, facts, memo)
    line = _line_text(frame, context, facts, memo)
    named = _with_label(frame, renamed, span)
    if named is None and renamed is not None:
        named = renamed.text + (_render(frame, tail) or "")
    return (named or "") + line


def logical_name(frame: lldb.SBFrame, callback: str) -> str:
    context = _context(frame)
    st = context[0]
    part = st.formats.parts.get(callback, DEFAULT_PART)
    if not st.session.enabled:
        return render_native(frame, part)
    renamed = _renamed(frame, context, _facts(frame, context[3]), stop_memo(context))
    named = _with_label(frame, renamed, part)
    if named is None and renamed is not None:
        named = renamed.text
    return named or ""


def _with_label(frame: lldb.SBFrame, renamed: Renamed | None, part: str) -> str | None:
    """`part` as LLDB renders it, its name replaced by the label where `frame` is renamed;
    None where the frame is renamed and LLDB's part does not start with the procedure's name
    and its arguments (the renamed text stands then)."""
    if renamed is None:
        return render_native(frame, part)
    if renamed.base is not None:
        # DWARF's function (not the symbol file's FUNC for a fragment, named by its symbol);
        # rendering LLDB's part costs most of a frame: only here.
        return _labelled(renamed, render_native(frame, part))
    return None


def _labelled(renamed: Renamed, native: str) -> str | None:
    """`native` (LLDB's function part) with `renamed`'s base name replaced by its label, or
    None where it does not hold the base followed by its arguments."""
    at = native.find(renamed.base + "(") if renamed.base else -1
    if at == 0 or (at > 0 and native[at - 1] == " "):
        # DWARF knows the procedure: keep LLDB's arguments (and the return type LLDB writes
        # before a function template's name), add the fragment tag.
        return native[:at] + renamed.label + native[at + len(renamed.base or ""):]
    return None


def with_label_text(renamed: Renamed | None, native: str) -> str:
    """The function part `bt` shows for a frame LLDB rendered as `native`."""
    if renamed is None:
        return native
    labelled = _labelled(renamed, native) if renamed.base is not None else None
    return renamed.text if labelled is None else labelled


def shown_in_bt(frame: lldb.SBFrame, context: _Context,
                memo: StopMemo) -> tuple[Renamed | None, str]:
    """How `frame` is renamed and the line text after its line scope, from this stop's memo
    (the same answers as the callbacks')."""
    facts = _facts(frame, context[3])
    return _renamed(frame, context, facts, memo), _line_text(frame, context, facts, memo)


def _facts(frame: lldb.SBFrame, thread: lldb.SBThread) -> FrameFacts:
    """What the naming rules read of `frame` (stop_memo.FrameFacts): the newer frame's pc
    only where it is an inlined call, the one case the rules compare it; LLDB's function and
    line, which change when a symbol file comes (`target symbols add`) within a stop."""
    pc, inlined, index = int(frame.GetPC()), bool(frame.IsInlined()), int(frame.GetFrameID())
    function = frame.GetFunction()
    names = (function.GetName(), function.GetMangledName()) if function.IsValid() else None
    line_entry = frame.GetLineEntry()
    line = int(line_entry.GetLine()) if line_entry.IsValid() else None
    own = str(frame.GetFunctionName() or "") if inlined else None
    if index == 0:
        return pc, inlined, None, None, names, line, own
    newer = thread.GetFrameAtIndex(index - 1)
    if not newer.IsInlined():
        return pc, inlined, -1, False, names, line, own
    return pc, inlined, int(newer.GetPC()), True, names, line, own


def _view(frame: lldb.SBFrame, thread: lldb.SBThread, facts: FrameFacts) -> LldbFrame:
    pc, inlined, newer_pc, newer_inlined, _, line, own = facts
    newer = None if newer_inlined is None else \
        (newer_pc if newer_inlined else None, newer_inlined)
    view = LldbFrame(frame, thread, pc=pc, inlined=inlined, newer=newer)
    view._line = line is not None and line > 0
    view._name = own
    return view


def _memoizable(facts: FrameFacts) -> bool:
    """Facts that decide the rules: not so where the frame shares its pc with an inlined call
    made in it, as the rules then read that call's own newer frame too."""
    return not (facts[3] and facts[2] == facts[0])


def stop_memo(context: _Context) -> StopMemo:
    """The debugger's memo of this stop's frames, emptied (and the module map synced) when
    the process stopped again, a module came or went, the locations or the style changed."""
    st, target, process, _ = context
    memo = st.frames
    live = modules.live_key(target, process)
    locations = st.session.namer.locations
    key = (*live, locations.generation, st.session.demangling())
    if key != memo.key:
        modules.sync(st.session, target, process, live=True, key=live)
        # The key again: the sync may have dropped locations (a new generation).
        memo.reset((*live, locations.generation, st.session.demangling()))
    return memo


def _renamed(frame: lldb.SBFrame, context: _Context, facts: FrameFacts,
             memo: StopMemo) -> Renamed | None:
    """How `frame` is renamed (None: LLDB's own name stands), from this stop's memo."""
    if facts in memo.names:
        return memo.names[facts]
    naming = name_frame(frame, context, _view(frame, context[3], facts))
    renamed = _rename(naming, facts, context[0].session.demangling())
    if _memoizable(facts):
        memo.names[facts] = renamed
    return renamed


def _rename(naming: Naming, facts: FrameFacts, style: str | None) -> Renamed | None:
    loc = naming.location
    if naming.shown is not Shown.RENAME or loc is None:
        return None
    function, line = facts[4], facts[5]
    base = None
    if function is not None and loc.fragment_symbol not in (function[1], function[0]):
        base = loc.name(style, parameters=False) or ""
    offset = (loc.offset or 0) + naming.pc - naming.lookup
    return Renamed(loc.label(style, parameters=False), base,
                   loc.label(style) + pc_offset(offset, line is not None))


def pc_offset(offset: int, has_line_entry: bool) -> str:
    """The offset as LLDB's default format writes ``${function.pc-offset}``: `` + 46``, in
    decimal, only for a frame without debug information (``${frame.no-debug}``: no line
    entry) and a non-zero offset, so that one backtrace has one offset style."""
    if offset <= 0 or has_line_entry:
        return ""
    return f" + {offset}"


def source_line(frame: lldb.SBFrame) -> str:
    """` at file:line[:col]` from the core when LLDB has no line for the frame, else ""."""
    if _lldb_says_line(frame.GetLineEntry()):
        return ""  # LLDB's own line stands (checked first: it is cheaper than the state)
    context = _context(frame)
    if not context[0].session.enabled:
        return ""
    return _line_text(frame, context, _facts(frame, context[3]), stop_memo(context))


def _line_text(frame: lldb.SBFrame, context: _Context, facts: FrameFacts,
               memo: StopMemo) -> str:
    """source_line's text, from this stop's memo."""
    line = facts[5]
    if line is not None and (line > 0 or _lldb_says_line(frame.GetLineEntry())):
        return ""  # LLDB's own line stands
    text = memo.lines.get(facts)
    if text is None:
        loc = _plugin_line(frame, context, _view(frame, context[3], facts))
        column = "" if loc is None or not loc.column else f":{loc.column}"
        text = "" if loc is None else f" at {os.path.basename(loc.file or '')}:{loc.line}{column}"
        if _memoizable(facts):
            memo.lines[facts] = text
    return text


def _lldb_says_line(line_entry: lldb.SBLineEntry) -> bool:
    """Whether LLDB writes `at FILE:LINE` for the frame: a line, or line 0 (the compiler's "no
    line", which LLDB writes `crash.c:0:1` as on the input too) of a file. The core's line
    added after it read `at crash.c:0:1 at crash.c:35:1`."""
    return bool(line_entry.IsValid() and (line_entry.GetLine() > 0 or
                                          line_entry.GetFileSpec().IsValid()))


def plugin_line(frame: lldb.SBFrame) -> Location | None:
    """The core's line of a frame LLDB has no line for (its file and line known), else None."""
    line_entry = frame.GetLineEntry()
    if line_entry.IsValid() and line_entry.GetLine() > 0:
        return None  # LLDB's own line stands (checked first: it is cheaper than the state)
    context = _context(frame)
    if not context[0].session.enabled:
        return None
    return _plugin_line(frame, context)


def _plugin_line(frame: lldb.SBFrame, context: _Context,
                 view: LldbFrame | None = None) -> Location | None:
    loc = name_frame(frame, context, view).location
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


def guarded_name_and_line(frame: lldb.SBFrame, callback: str) -> str:
    try:
        return logical_name_and_line(frame, callback)
    except Exception as e:
        _report(frame, e)
    try:  # LLDB's own function and line parts
        return render_native(frame, _span(_context(frame)[0], callback)[0])
    except Exception:  # never into LLDB's backtrace (the bug is said above)
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
