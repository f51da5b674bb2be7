"""bench/bt.py's "floor" mode for LLDB: `frame-format` with the function scope through the line
scope replaced by one ``${script.frame:…}`` entry that renders that same span through
``SBFrame.GetDescriptionWithFormat`` and names nothing. What any plugin pays that renames
frames with a format callback and keeps LLDB's own arguments: the Python call (and the
session LLDB sets up for it when `bt` is typed) and the arguments rendered through the SB API.

    command script import bench/lldb_floor.py
"""

from __future__ import annotations

from typing import Any

import lldb

# LLDB 22's default function scope and line scope, side by side in its default frame-format
SPAN = ("{${function.name-with-args}{${frame.no-debug}${function.pc-offset}}}"
        "{ at ${ansi.fg.cyan}${line.file.basename}${ansi.normal}:${ansi.fg.yellow}"
        "${line.number}${ansi.normal}{:${ansi.fg.yellow}${line.column}${ansi.normal}}}")
_FORMAT: list[Any] = []


def render(frame: lldb.SBFrame, internal_dict: dict[str, Any]) -> str:
    if not _FORMAT:
        _FORMAT.append(lldb.SBFormat(SPAN, lldb.SBError()))
    stream = lldb.SBStream()
    frame.GetDescriptionWithFormat(_FORMAT[0], stream)
    return str(stream.GetData() or "")


def __lldb_init_module(debugger: lldb.SBDebugger, internal_dict: dict[str, Any]) -> None:
    current = debugger.GetSetting("frame-format").GetStringValue(1 << 20)
    if SPAN not in current:
        raise RuntimeError(f"frame-format has no default function and line scopes: {current}")
    lldb.SBDebugger.SetInternalVariable(
        "frame-format", current.replace(SPAN, "${script.frame:lldb_floor.render}"),
        debugger.GetInstanceName())
