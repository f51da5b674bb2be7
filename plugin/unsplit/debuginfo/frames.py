"""The debug file's `.debug_frame`: the CFI of every fragment of the split procedures, one FDE
per fragment, whose rows at each address are those of the FDE `unsplit.elf.cfi_table` chooses
there (the plugin's unwinder's choice: BOLT's `.eh_frame` can hold several FDEs starting at one
address, and a debugger that takes another one unwinds into the heap).

One FDE per fragment because LLDB 22 builds a function's plan from the first FDE in each of its
DWARF ranges (DWARFCallFrameInfo::GetUnwindPlan), and prefers `.debug_frame` to `.eh_frame` for
a function in several ranges; GDB searches a separate debug file's FDEs before its module's
(the debug objfile comes first in its list). Code no FDE covers ends the fragment's FDE there.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from unsplit.debuginfo.dwarf.frame import DebugFrame
from unsplit.elf.cfi_table import CfiTable, table_for
from unsplit.errors import UnsplitError
from unsplit.formats.dwarf_expr import RIP
from unsplit.formats.eh_frame import FrameDescription, Row
from unsplit.index.model import Fragment
from unsplit.index.module_index import ModuleIndex


@dataclass
class FrameSummary:
    """What the section holds: FDEs written, and fragments (or parts) left without CFI."""

    fdes: int = 0
    uncovered: int = 0  # fragments with a part no usable FDE covers
    problems: list[str] = field(default_factory=list)  # FDEs that do not decode


def debug_frame(index: ModuleIndex) -> tuple[bytes, FrameSummary] | None:
    """The section for the module `index` describes; None when it has no split procedure,
    is not x86-64 (the CFI reader's registers) or no FDE covers its fragments."""
    binary = index.binary
    if binary.elf["e_machine"] != "EM_X86_64":
        return None
    fragments = split_fragments(index)
    if not fragments:
        return None
    table = table_for(binary)
    starts = sorted(a for _, a in table.fde_starts())
    section = DebugFrame(RIP)
    summary = FrameSummary()
    for frag in fragments:
        pieces = _pieces(table, starts, frag, summary)
        for start, end, rows in pieces:
            section.add(start, end, rows)
        summary.uncovered += [p[:2] for p in pieces] != [(frag.start, frag.end)]
    summary.fdes = section.fdes
    return (bytes(section.data), summary) if section.fdes else None


def split_fragments(index: ModuleIndex) -> list[Fragment]:
    """Every fragment of each procedure with moved code, in address order: a debugger's
    function is all of them (DWARF ranges), and takes its plan from each."""
    seen: dict[tuple[int, int], Fragment] = {}
    procedures: set[int] = set()
    for moved in index.moved_fragments():
        seen.setdefault((moved.start, moved.end), moved)
        proc = index.procedure_at(moved.start)
        if proc is None or id(proc) in procedures:
            continue
        procedures.add(id(proc))
        for frag in proc.fragments:
            seen.setdefault((frag.start, frag.end), frag)
    return [seen[k] for k in sorted(seen) if k[0] < k[1]]


def _pieces(table: CfiTable, starts: list[int], frag: Fragment, summary: FrameSummary
            ) -> list[tuple[int, int, list[Row]]]:
    """[start, end) runs of `frag` with their rows: one run unless some code of it has no
    usable FDE (a gap ends a run)."""
    out: list[tuple[int, int, list[Row]]] = []
    rows: list[Row] = []
    run_start = addr = frag.start
    decoded: dict[tuple[str, int], FrameDescription | None] = {}
    while addr < frag.end:
        i = bisect_right(starts, addr)
        following = starts[i] if i < len(starts) else frag.end
        fd = _chosen(table, addr, decoded, summary)
        if fd is None:
            if rows:
                out.append((run_start, addr, rows))
            rows = []
            addr = run_start = min(following, frag.end)
            continue
        end = min(fd.end, frag.end, following)
        at = fd.row_at(addr)
        here = ([] if at is None else [Row(addr, at.cfa, at.rules)]) + \
            [r for r in fd.rows if addr < r.address < end]
        for row in here:
            if not rows or (row.cfa, row.rules) != (rows[-1].cfa, rows[-1].rules):
                rows.append(row)
        if not rows:  # an FDE without a row here: as good as none
            run_start = end
        addr = end
    if rows:
        out.append((run_start, frag.end, rows))
    return out


def _chosen(table: CfiTable, address: int, decoded: dict[tuple[str, int], FrameDescription | None],
            summary: FrameSummary) -> FrameDescription | None:
    """The FDE the plugin unwinds `address` with, decoded once per fragment; None where there
    is none, it does not decode, or the debug file's CIE cannot carry it (a signal frame, a
    return address in another register)."""
    head = table.head_at(address)
    if head is None:
        return None
    key = (head[0], head[1])
    if key not in decoded:
        try:
            fd = table.section_named(head[0]).decode(head[1])
        except UnsplitError as e:
            summary.problems.append(f"{head[0]}+{head[1]:#x}: {e}")
            fd = None
        if fd is not None and (fd.signal_frame or fd.return_register != RIP):
            fd = None
        decoded[key] = fd
    return decoded[key]
