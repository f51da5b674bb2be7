"""LLDB's `bt` with unsplit's frame names at LLDB's own speed: `bt` becomes an alias of
``unsplit-bt``, which runs LLDB's ``_regexp-bt`` with a frame-format that renders every frame
natively and marks the facts the naming reads of it (formats.mark), then puts the names and
lines of frames in moved code into that text, frames alike named once per stop. A
``${script.frame:}`` callback per frame would cost more than LLDB's whole `bt`
(docs/benchmarks.md); `thread backtrace`, the stop line and `frame` keep those callbacks."""

from __future__ import annotations

import re
from typing import Any

import lldb

from . import cfi_symbols, naming
from . import state as state_mod
from .formats import FACTS_END, FIELD, FRAME_MARK, LINE_MARK, PART_END, PART_MARK, mark
from .report import report_internal
from .stop_memo import Renamed

COMMAND = "unsplit-bt"
LLDB_BT = "_regexp-bt"  # what LLDB's own `bt` is an alias of
_OWN_ALIAS = "'bt' is an abbreviation for '_regexp-bt'"
_OURS_ALIAS = f"'bt' is an abbreviation for '{COMMAND}'"
_FACTS = re.compile(f"(\\d+){FIELD}(\\d+){FIELD}(0x[0-9a-fA-F]+){FIELD}(i?){FIELD}(\\d*)")
_MARKS = re.compile(f"[{FRAME_MARK}{FIELD}{FACTS_END}{PART_MARK}{PART_END}{LINE_MARK}]")


def _run(debugger: lldb.SBDebugger, line: str) -> tuple[bool, str]:
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(line, result)
    return result.Succeeded(), (result.GetOutput() or "") + (result.GetError() or "")


def install(debugger: lldb.SBDebugger) -> list[str]:
    """Make `bt` ours where it is LLDB's own (a user's `bt` alias is left alone); idempotent."""
    st = state_mod.for_debugger(debugger.GetID())
    if COMMAND not in st.registered:
        ok, out = _run(debugger, f"command script add -f unsplit_lldb.backtrace {COMMAND}")
        if not ok:
            return [f"unsplit: cannot add {COMMAND}: {out.strip()}"]
        st.registered.add(COMMAND)
    if _OWN_ALIAS in _run(debugger, "help bt")[1]:
        _run(debugger, "command unalias bt")
        ok, out = _run(debugger, f"command alias bt {COMMAND}")
        if not ok:
            _run(debugger, f"command alias bt {LLDB_BT}")
            return [f"unsplit: cannot make bt name frames quickly: {out.strip()}"]
    return []


def restore(debugger: lldb.SBDebugger) -> None:
    """Give `bt` back to LLDB's own command, where it is still ours."""
    if _OURS_ALIAS in _run(debugger, "help bt")[1]:
        _run(debugger, "command unalias bt")
        _run(debugger, f"command alias bt {LLDB_BT}")


def run(debugger: lldb.SBDebugger, command: str, exe_ctx: lldb.SBExecutionContext,
        result: lldb.SBCommandReturnObject) -> None:
    """`bt COMMAND` into `result`: LLDB's backtrace in the marked format, named, where the
    plugin names frames and its frame-format stands; otherwise, on an error, where a frame's
    marks are missing, or after a bug (said once), LLDB's own `bt` (with the callbacks)."""
    st = state_mod.for_debugger(debugger.GetID())
    line = f"{LLDB_BT} {command}".rstrip()
    cfi_symbols.sync_first(debugger)  # the symbol files first, then the frames of the context
    thread = exe_ctx.GetThread()
    if thread.IsValid():
        exe_ctx = lldb.SBExecutionContext(thread)
    try:
        text, status = _fast(debugger, st, line, exe_ctx)
    except Exception as e:  # never into LLDB: the bug is said once, the callbacks name frames
        report_internal(e, st.reported)
        text, status = None, None
    if text is None or status is None:
        debugger.GetCommandInterpreter().HandleCommand(line, exe_ctx, result)
        return
    result.PutCString(text)
    result.SetStatus(status)


def _fast(debugger: lldb.SBDebugger, st: state_mod.DebuggerState, line: str,
          exe_ctx: lldb.SBExecutionContext) -> tuple[str | None, Any]:
    """The named text of `line` run in the marked format and its status; None where it
    cannot be had (see run)."""
    fs = st.formats
    installed = fs.installed.get("frame-format")
    user = fs.saved.get("frame-format")
    marked = mark(user) if user is not None else None
    if not st.session.enabled or marked is None or installed is None or \
            naming.get_setting(debugger, "frame-format") != installed:
        return None, None
    inner = lldb.SBCommandReturnObject()
    if naming.set_setting(debugger, "frame-format", marked) is not None:
        return None, None
    try:
        debugger.GetCommandInterpreter().HandleCommand(line, exe_ctx, inner)
    finally:
        naming.set_setting(debugger, "frame-format", installed)
    if not inner.Succeeded() or inner.GetError():
        return None, None
    return _named(exe_ctx, st, str(inner.GetOutput() or "")), inner.GetStatus()


def _named(exe_ctx: lldb.SBExecutionContext, st: state_mod.DebuggerState,
           text: str) -> str | None:
    """`text` (the marked format's `bt`) with each frame's function part and line as the
    callbacks would have them; None where the marks cannot say it (a scope of the user's
    format that failed, and took a mark with it, on a frame the plugin names)."""
    pieces = text.split(FRAME_MARK)
    out = [pieces[0]]
    if len(pieces) > 1:
        process = exe_ctx.GetProcess()
        namer = _Namer(st, process.GetTarget(), process)
        for piece in pieces[1:]:
            named = namer.frame(piece)
            if named is None:
                return None
            out.append(named)
    whole = "".join(out)
    return None if _MARKS.search(whole) else whole


class _Namer:
    """One `bt`'s frames, named through the stop's memo (stop_memo.StopMemo): by the facts
    LLDB rendered, and through the SB API only for facts not seen at this stop."""

    def __init__(self, st: state_mod.DebuggerState, target: lldb.SBTarget,
                 process: lldb.SBProcess) -> None:
        self.st = st
        self.target = target
        self.process = process
        self.threads: dict[int, Any] = {}
        self.seen: dict[tuple[int, int], tuple[int, bool]] = {}  # (thread, frame) -> pc, inlined
        self.memo = naming.stop_memo((st, target, process, None))
        self.memo.follow_symbols(tuple(str(m.GetSymbolFileSpec().fullpath or "")
                                       for m in target.module_iter()))

    def _thread(self, index_id: int) -> Any:
        thread = self.threads.get(index_id)
        if thread is None:
            thread = self.threads[index_id] = self.process.GetThreadByIndexID(index_id)
        return thread

    def frame(self, piece: str) -> str | None:
        """One frame's text (`piece`: from after its FRAME_MARK to the next) as shown."""
        facts, found, rest = piece.partition(FACTS_END)
        m = _FACTS.fullmatch(facts)
        if not found or m is None:
            return None
        renamed, line_text = self._shown(int(m.group(1)), int(m.group(2)), int(m.group(3), 16),
                                         m.group(4) == "i", int(m.group(5)) if m.group(5) else None)
        if PART_MARK in rest:
            before, _, rest = rest.partition(PART_MARK)
            part, found, rest = rest.partition(PART_END)
            if not found:
                return None
            rest = before + naming.with_label_text(renamed, part) + rest
        elif renamed is not None:
            return None
        if LINE_MARK not in rest:
            return None if line_text else rest
        return rest.replace(LINE_MARK, line_text, 1)

    def _shown(self, tid: int, index: int, pc: int, inlined: bool,
               line: int | None) -> tuple[Renamed | None, str]:
        self.seen[(tid, index)] = (pc, inlined)
        newer_pc: int | None = None
        newer_inlined: bool | None = None
        if index > 0:
            newer = self.seen.get((tid, index - 1))
            if newer is None:
                frame = self._thread(tid).GetFrameAtIndex(index - 1)
                newer = (int(frame.GetPC()), bool(frame.IsInlined()))
            newer_pc, newer_inlined = (newer[0], True) if newer[1] else (-1, False)
        key = (pc, inlined, newer_pc, newer_inlined, line)
        shown = self.memo.shown.get(key)
        if shown is None:
            thread = self._thread(tid)
            shown = naming.shown_in_bt(thread.GetFrameAtIndex(index),
                                       (self.st, self.target, self.process, thread), self.memo)
            if not (newer_inlined and newer_pc == pc):  # as naming._memoizable
                self.memo.shown[key] = shown
        return shown
