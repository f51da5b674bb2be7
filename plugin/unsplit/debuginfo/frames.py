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

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from elftools.dwarf.constants import DW_CFA

from unsplit.debuginfo.dwarf.frame import DebugFrame
from unsplit.elf.cfi_table import CfiSection, CfiTable, table_for
from unsplit.errors import UnsplitError
from unsplit.formats.dwarf_expr import RIP
from unsplit.formats.eh_frame import FrameDescription, Row, decode_rows
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
    bodies: dict[tuple[str, int, bytes], list[tuple[int, bytes]] | None] = {}
    for frag in fragments:
        whole = _whole(table, starts, frag, section, bodies)
        if whole is not None:
            section.add_instructions(frag.start, whole[0], whole[1])
            summary.uncovered += whole[0] < frag.end
            continue
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


def _whole(table: CfiTable, starts: list[int], frag: Fragment, section: DebugFrame,
           bodies: dict[tuple[str, int, bytes], list[tuple[int, bytes]] | None]
           ) -> tuple[int, bytes] | None:
    """(end, instructions) of `frag`'s one FDE when the unwinder takes a single FDE for all of
    it: the one at its start, ending within it, no other FDE starting inside and no longer one
    at its start (code past the FDE's end, padding or another function's, has no CFI). FDEs
    with one CIE and instruction bytes have the same rows at the same offsets (set_loc
    aside), so each distinct body is decoded once. None: _pieces decides, address by address."""
    head = table.head_at(frag.start)
    if head is None or head[2] != frag.start or head[3] > frag.end:
        return None
    i = bisect_right(starts, frag.start)
    if i < len(starts) and starts[i] < frag.end:
        return None
    cfi = table.section_named(head[0])
    first = bisect_left(cfi.starts, frag.start)
    for k in range(first, bisect_right(cfi.starts, frag.start)):
        other = cfi.head(cfi.offsets[k])
        if other is not None and other[2] + other[3] > head[3]:
            return None  # the unwinder goes on with that one past this one's end
    found = cfi.head(head[1])
    if found is None:
        return None
    cie_offset, _, _, size, body, body_end = found
    key = (head[0], cie_offset, cfi.reader.data[body:body_end])
    if key not in bodies:
        bodies[key] = _relative_chunks(cfi, head[1], section)
    chunks = bodies[key]
    if chunks is None:
        return None
    return head[3], b"".join(chunk for at, chunk in chunks if at < size)


def _relative_chunks(cfi: CfiSection, offset: int, section: DebugFrame
                     ) -> list[tuple[int, bytes]] | None:
    """The FDE at `offset`'s instruction chunks (DebugFrame.chunks) at offsets from its start;
    None where _pieces decides: set_loc (rows not a function of the body), a signal frame, a
    return address in another register, or CFI that does not decode (_pieces says so)."""
    try:
        fde = cfi.reader.fde(offset)
        if fde is None or any(i.opcode == DW_CFA.set_loc for i in fde.instructions):
            return None
        cie = fde.cie
        if b"S" in cie.augmentation or cie.return_address_register != RIP:
            return None
        rows = decode_rows(cie, fde, 0)
    except UnsplitError:
        return None
    return section.chunks(rows)


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
