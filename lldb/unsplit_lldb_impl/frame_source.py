"""`frame select` (`f`, `up`, `down`) of a frame LLDB has no line for where the plugin has one:
LLDB's own output, with the source around the plugin's line in place of the disassembly. Only a
plain `frame select [N]` / `-r N` of such a frame is taken over."""

from __future__ import annotations

import sys

import lldb
from unsplit.index.model.records import Location
from unsplit.render import stop as stop_text

from . import state as state_mod
from .naming import plugin_line


def setting(debugger: lldb.SBDebugger, name: str, default: str) -> str:
    values = lldb.SBDebugger.GetInternalVariableValue(name, debugger.GetInstanceName())
    if values is None or values.GetSize() == 0:
        return default
    return str(values.GetStringAtIndex(0) or default)


def with_source(debugger: lldb.SBDebugger, lines: list[str], heading: str,
                loc: Location) -> list[str]:
    """`lines` (LLDB's output for a frame without a line) with the source of `loc` under the
    line holding `heading` (``frame #N:``), in place of the disassembly unless
    ``stop-disassembly-display`` is ``always``."""
    block = stop_text.lldb_source_block(
        loc, int(setting(debugger, "stop-line-count-before", "3")),
        int(setting(debugger, "stop-line-count-after", "3")),
        caret=setting(debugger, "stop-show-column", "ansi-or-caret") in
        ("caret", "ansi-or-caret") and not debugger.GetUseColor(),
        read=state_mod.for_debugger(debugger.GetID()).session.source_lines)
    at = next((i for i, line in enumerate(lines) if heading in line), None)
    if block is None or at is None:
        return lines
    keep = setting(debugger, "stop-disassembly-display", "no-debuginfo") == "always"
    return [*lines[:at + 1], *block.splitlines(), *(lines[at + 1:] if keep else [])]


def _frame_asked(thread: lldb.SBThread, words: tuple[str, ...]) -> int | None:
    """The frame `frame select ARGS` selects, for the plain forms (else None: LLDB's own)."""
    args = words[2:]
    current = int(thread.GetSelectedFrame().GetFrameID())
    if not args:
        return current
    try:
        if len(args) == 1:
            return int(args[0], 0)
        if len(args) == 2 and args[0] in ("-r", "--relative"):
            return current + int(args[1], 0)
    except ValueError:
        return None
    return None


class FrameSelect:
    """The override callback's second half for `frame select` (after the CFI sync)."""

    def __init__(self, debugger: lldb.SBDebugger) -> None:
        self.debugger = debugger
        self.running = False  # our own HandleCommand of the same command

    def __call__(self, *words: str) -> bool:
        """True when the command ran here (its output printed), False: LLDB runs it."""
        if self.running or tuple(words[:2]) != ("frame", "select"):
            return False
        thread = self.debugger.GetSelectedTarget().GetProcess().GetSelectedThread()
        index = _frame_asked(thread, words) if thread.IsValid() else None
        if index is None or not 0 <= index < thread.GetNumFrames():
            return False
        loc = plugin_line(thread.GetFrameAtIndex(index))
        if loc is None:
            return False
        result = lldb.SBCommandReturnObject()
        self.running = True
        try:
            self.debugger.GetCommandInterpreter().HandleCommand(" ".join(words), result)
        finally:
            self.running = False
        lines = str(result.GetOutput() or "").rstrip("\n").splitlines()
        if result.Succeeded():
            lines = with_source(self.debugger, lines, f"frame #{index}:", loc)
        if lines:
            print("\n".join(lines))
        if result.GetError():
            print(str(result.GetError()).rstrip("\n"), file=sys.stderr)
        return True
