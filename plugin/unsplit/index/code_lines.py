"""The line rows and inlined calls of a range of code, asked of a module's index byte by byte (or
run by run where the line table can say where its answer changes): what unsplit's debug files
(unsplit.debuginfo.synthesize) and LLDB's Breakpad symbol files (unsplit.debug.breakpad) write.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING, Any

from unsplit.index.inlines import DwarfFrames
from unsplit.index.names.demangle import LLVM

if TYPE_CHECKING:
    from unsplit.index.module_index import ModuleIndex

Row = tuple[int, str, int, int, bool]  # address, path, line, column, is_stmt
Call = tuple[str, str, int, int]  # callee, call file path, call line, call column


class InlinedRun:
    """One run of code inlined at one call site: a DW_TAG_inlined_subroutine (§3.3.8.2)."""

    __slots__ = ("call", "children", "end", "start")

    def __init__(self, call: Call, start: int) -> None:
        self.call, self.start, self.end = call, start, start + 1
        self.children: list[InlinedRun] = []


class CodeWalker:
    """Asks the core about every byte of a module's code: its line (ModuleIndex.line_at) and,
    where DWARF says so, its chain of inlined calls (unsplit.index.inlines, as
    ``unsplit symbolize --inlines`` prints them)."""

    def __init__(self, index: ModuleIndex, inlines: bool = True) -> None:
        self.index = index
        self.inlines = inlines  # False: lines only (no DWARF DIE is read for a chain)
        self.frames = DwarfFrames.of(index, LLVM)
        own = index.dwarf_lines.available
        found = index.input_binary() if "bat" in index.sources_used else None
        self.has_dwarf = own or (found is not None and found.dwarf_binary is not None)
        # With no source that can answer now, no byte need be asked (a symbols-only libc has
        # megabytes of code; a BOLTed libLLVM whose input has no DWARF, 150 MB).
        self.has_lines = index.line_table.lines_now()

    def language(self, address: int) -> int | None:
        """DW_AT_language of the unit the code at `address` was compiled in, where known."""
        return self.frames.language(address) if self.has_dwarf else None

    def walk(self, start: int, end: int) -> tuple[list[Row], list[InlinedRun]]:
        """The rows of [start, end): one where the answer for a byte differs from the previous
        byte's (line 0 where a covered run gives way to bytes no source describes); and the
        inlined runs, outermost first, each holding those nested in it."""
        rows: list[Row] = []
        roots: list[InlinedRun] = []
        open_: list[InlinedRun] = []
        last: tuple[str, int, int, bool] | None = None
        calls: list[Call] = []
        if not self.has_lines:
            return rows, roots
        # Where the line table can say between which addresses its answer stays the same (code
        # BOLT left in place: the input's rows), one question per run of bytes, else per byte:
        # the same rows either way.
        points = self.index.line_table.change_points(start, end)
        addresses = range(start, end) if points is None else points
        for k, address in enumerate(addresses):
            row = self.index.line_at(address)
            if row is None:
                key = None if last is None else (last[0], 0, 0, last[3])
            else:
                key = (row.path or row.file, row.line, row.column or 0, row.is_stmt)
            changed = key != last
            if key is not None and changed:
                rows.append((address, *key))
                last = key
            if self.has_dwarf and self.inlines:
                # An inlined range begins and ends with a line row of its own (the callee's
                # lines are not the caller's): the chain is asked for only where the row changes.
                if changed or address == start:
                    calls = calls_of(self.frames.frames(address))
                run_end = address + 1 if points is None else (
                    points[k + 1] if k + 1 < len(points) else end)
                self._nest(address, run_end, calls, open_, roots)
        return rows, roots

    @staticmethod
    def _nest(address: int, run_end: int, calls: list[Call], open_: list[InlinedRun],
              roots: list[InlinedRun]) -> None:
        """The inlined runs open over [address, run_end), whose chain of calls is `calls`."""
        same = 0
        while same < len(open_) and same < len(calls) and open_[same].call == calls[same]:
            same += 1
        del open_[same:]
        for call in calls[same:]:
            node = InlinedRun(call, address)
            (open_[-1].children if open_ else roots).append(node)
            open_.append(node)
        for node in open_:
            node.end = run_end


def calls_of(frames: list[Any]) -> list[Call]:
    """The inlined calls of DWARF frames (innermost first), outermost first: each inlined
    function with the place the next frame out calls it from."""
    out: list[Call] = []
    for inner, outer in pairwise(frames):
        out.append((inner.function, outer.path or "", outer.line, outer.column))
    return out[::-1]
