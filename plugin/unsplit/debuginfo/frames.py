"""The debug file's `.debug_frame`: one FDE per fragment of the split procedures (LLDB 22 plans a
function from the first FDE of each DWARF range), whose rows at each address are those of the
FDE `unsplit.elf.cfi_table` chooses there. Code no FDE covers ends the fragment's FDE."""

from __future__ import annotations

import re
import struct
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence

from unsplit.debuginfo.dwarf.frame import DebugFrame
from unsplit.elf.binary import CodeWindow
from unsplit.elf.cfi_table import CfiSection, CfiTable, table_for
from unsplit.errors import DecodeError, UnsplitError
from unsplit.formats import nops
from unsplit.formats.dwarf_expr import RIP
from unsplit.formats.eh_frame import FrameDescription, Row, initial_state
from unsplit.formats.leb128 import read_uleb, skip_leb
from unsplit.index.module_index import ModuleIndex

_EM_X86_64 = 62  # e_machine: the CFI reader's registers are x86-64's
Spans = tuple[str, str | None, list[tuple[int, int]]]  # one of ModuleIndex.procedure_spans()


class FrameSummary:
    """What the section holds: FDEs written, and fragments (or parts) left without CFI."""

    __slots__ = ("fdes", "problems", "uncovered")

    def __init__(self) -> None:
        self.fdes = 0
        self.uncovered = 0  # fragments with a part no usable FDE covers
        self.problems: list[str] = []  # FDEs that do not decode


def debug_frame(index: ModuleIndex, procedures: Iterable[Spans] | None = None
                ) -> tuple[bytes, FrameSummary] | None:
    """The section for the module `index` describes; None when it has no split procedure,
    is not x86-64 (the CFI reader's registers) or no FDE covers its fragments. `procedures`:
    index.procedure_spans() when the caller already has them."""
    binary = index.binary
    if binary.machine != _EM_X86_64:
        return None
    fragments = split_fragments(index, procedures)
    if not fragments:
        return None
    table = table_for(binary)
    starts = array("Q", sorted(a for _, a in table.fde_starts()))
    section = DebugFrame(RIP)
    summary = FrameSummary()
    copier = _Copier(table, section)
    code, machine = binary.code_window(), binary.machine
    gap_is_code = _GapIsCode(code, machine)
    first = table.sections[0] if table.sections else None
    rest = fragments if first is None else \
        _copy_sole(first, starts, fragments, copier, gap_is_code, summary)
    for frag_start, frag_end in rest:
        whole = _whole(table, starts, frag_start, frag_end, copier)
        if whole is not None:
            section.add_instructions(frag_start, whole[0], whole[2], whole[1])
            if whole[0] < frag_end:
                summary.uncovered += gap_is_code(whole[0], frag_end)
            continue
        pieces = _pieces(table, starts, frag_start, frag_end, summary)
        for start, end, rows in pieces:
            section.add(start, end, rows)
        bounds = [frag_start, *(b for p in pieces for b in p[:2]), frag_end]
        summary.uncovered += _bare(code, machine,
                                   list(zip(bounds[0::2], bounds[1::2], strict=True)))
    summary.fdes = section.fdes
    return (bytes(section.data), summary) if section.fdes else None


class _GapIsCode:
    """Whether the [start, end) past a fragment's FDE is code, not padding (_bare), kept per
    distinct bytes: 3k distinct of a BOLTed libLLVM's 142k gaps."""

    def __init__(self, code: CodeWindow, machine: int) -> None:
        self.code, self.machine = code, machine
        self.known: dict[bytes, bool] = {}

    def __call__(self, start: int, end: int) -> bool:
        return self.count(array("Q", [start]), array("Q", [end])) > 0

    def count(self, starts: array[int], ends: array[int]) -> int:
        """How many of the runs [starts[k], ends[k]), in address order, hold code (the window
        read here, in place of a CodeWindow.at call per run)."""
        code, known, machine = self.code, self.known, self.machine
        data, low, high = b"", 0, 0
        found = 0
        for start, end in zip(starts, ends, strict=True):
            if not (low <= start and end <= high):
                data, pos, _ = code.at(start, end - start)
                low = start - pos
                high = low + len(data)
            gap = data[start - low:end - low]
            bare = known.get(gap)
            if bare is None:
                bare = known[gap] = _bare(code, machine, [(start, end)])
            found += bare
        return found


def _bare(code: CodeWindow, machine: int, gaps: list[tuple[int, int]]) -> bool:
    """Whether some of the [start, end) runs no FDE covers is code, not padding: a fragment
    whose extent the index takes past its FDE (no sized symbol: a stripped library's BAT
    fragments) has its function's padding after its FDE's end."""
    for start, end in gaps:
        if start < end:
            data, pos, endpos = code.at(start, end - start)
            if nops.padding_end(data, machine, pos, endpos) != endpos:
                return True
    return False


def split_fragments(index: ModuleIndex, procedures: Iterable[Spans] | None = None
                    ) -> list[tuple[int, int]]:
    """[start, end) of every fragment of each procedure in more than one, in address order: a
    debugger's function is all of them (DWARF ranges), and takes its plan from each. From
    the index's spans, without a Procedure per function (a BOLTed libLLVM has 89k split)."""
    found: list[tuple[int, int]] = []
    for _, _, spans in index.procedure_spans() if procedures is None else procedures:
        if len(spans) > 1:
            found += spans
    # Sorted as listed (runs already in address order), then each once (no set or dict of
    # them all).
    found.sort()
    return [s for i, s in enumerate(found) if s[0] < s[1] and (not i or s != found[i - 1])]


class _Copier:
    """FDE instructions copied as the module's section has them, under a CIE of the debug file
    per distinct source CIE (same factors and initial instructions): what each of them says is
    then what it says in the module, with nothing decoded. Only for instructions every reader
    of `.debug_frame` knows and that do not depend on the source's encoding (no set_loc, no
    GNU extension), with balanced state pushes; anything else is decoded (_pieces)."""

    def __init__(self, table: CfiTable, section: DebugFrame) -> None:
        self.table, self.section = table, section
        self.cies: dict[tuple[str, int], int | None] = {}
        self.made: dict[tuple[int, int, bytes], int] = {}
        self.bodies: dict[bytes, bool] = {}

    def cie(self, name: str, cfi: CfiSection, offset: int) -> int | None:
        """The debug file's CIE for the source CIE at `offset` of `cfi`, or None when an FDE
        under it must be decoded (a signal frame, a return address in another register)."""
        key = (name, offset)
        if key not in self.cies:
            self.cies[key] = self._make_cie(cfi, offset)
        return self.cies[key]

    def _make_cie(self, cfi: CfiSection, offset: int) -> int | None:
        try:
            cie = cfi.reader.cie(offset)
            initial_state(cie)  # DecodeError for initial instructions that are not rules
        except UnsplitError:
            return None
        initial = cfi.reader.data[cie.initial[0]:cie.initial[1]]
        if (b"S" in cie.augmentation or cie.return_address_register != RIP
                or not copyable(initial)):
            return None
        key = (cie.code_alignment_factor, cie.data_alignment_factor, initial)
        if key not in self.made:
            self.made[key] = self.section.cie(*key)
        return self.made[key]

    def body(self, instructions: bytes) -> bool:
        """Whether an FDE's instruction bytes can be copied (kept per distinct body)."""
        found = self.bodies.get(instructions)
        if found is None:
            found = self.bodies[instructions] = copyable(instructions)
        return found


def copyable(code: bytes) -> bool:
    """Whether `code` is whole DWARF call frame instructions, each a standard one whose
    meaning is the same in `.debug_frame` (DWARF 5 §6.4.2), restore_state never without a
    remembered state."""
    if _PLAIN.fullmatch(code) is not None and b"\x0b" not in code:
        return True  # whole instructions without a block, and no restore_state
    try:
        return _copyable(code)
    except DecodeError:  # a LEB128 that runs off the end: not whole instructions
        return False


def _copyable(code: bytes) -> bool:
    i, n, depth = 0, len(code), 0
    while i < n:
        op = code[i]
        i += 1
        if op & 0xC0:
            if op & 0xC0 == 0x80:  # DW_CFA_offset: a ULEB
                i = skip_leb(code, i, n, _SECTION)
            continue
        operands = _OPERANDS.get(op)
        if operands is None:
            return False
        if op == 0x0A:  # remember_state
            depth += 1
        elif op == 0x0B:  # restore_state
            depth -= 1
            if depth < 0:
                return False
        for kind in operands:
            if kind == "l":
                i = skip_leb(code, i, n, _SECTION)
            elif kind == "b":  # a ULEB length, then that many bytes
                length, i = read_uleb(code, i, n, _SECTION)
                i += length
            else:
                i += int(kind)
        if i > n:
            return False
    return i == n


_SECTION = ".eh_frame"  # where the instructions copyable reads come from

# _OPERANDS' instructions but those with a block (def_cfa_expression, expression,
# val_expression), as one expression: most FDEs' instructions (46k distinct bodies of a BOLTed
# libLLVM) are read by it in C; any other is read by _copyable. Each instruction is known by
# its first byte, so a failed match backtracks little. Not possessive (`*+`): Python 3.11.2's
# possessive repetition of a group matches b"\x05" alone against (?:\x05[\x00-\x7f]...)*+.
_LEB = rb"[\x80-\xff]*[\x00-\x7f]"
_PLAIN = re.compile(
    rb"(?:[\x40-\x7f\xc0-\xff\x00\x0a\x0b]|[\x80-\xbf]" + _LEB + rb"|\x02.|\x03..|\x04...."
    rb"|[\x05\x09\x0c\x11\x12\x14\x15]" + _LEB + _LEB
    + rb"|[\x06\x07\x08\x0d\x0e\x13]" + _LEB + rb")*", re.DOTALL)

# Operands of the standard opcodes below 0x40 (DWARF 5 §7.24): "l" a LEB128, "b" a ULEB length
# and a block, a digit that many bytes. set_loc (its pointer's encoding is the source's) and
# the vendor opcodes (GNU_args_size, ...) are left out: such an FDE is decoded instead.
_OPERANDS: dict[int, str] = {
    0x00: "", 0x02: "1", 0x03: "2", 0x04: "4", 0x05: "ll", 0x06: "l", 0x07: "l", 0x08: "l",
    0x09: "ll", 0x0A: "", 0x0B: "", 0x0C: "ll", 0x0D: "l", 0x0E: "l", 0x0F: "b", 0x10: "lb",
    0x11: "ll", 0x12: "ll", 0x13: "l", 0x14: "ll", 0x15: "ll", 0x16: "lb",
}


def _copy_sole(cfi: CfiSection, starts: array[int], fragments: list[tuple[int, int]],
               copier: _Copier, gap_is_code: _GapIsCode, summary: FrameSummary
               ) -> Iterator[tuple[int, int]]:
    """Writes _whole's answer for each fragment [start, end) where it is plain (BOLT's own
    fragments, nearly all): `cfi`, the table's first section, lists one FDE at the
    fragment's start, which covers it, ends within it, no FDE starts inside and its
    instructions can be copied; yields the others in turn (_whole decides). From the
    section's heads as columns, one loop without a call per fragment: it runs for a BOLTed
    libLLVM's 178k."""
    listed, heads = cfi.starts, cfi.listed_heads()
    sizes, head_cies, bodies_at, ends_at = heads
    data, name = cfi.data, cfi.name
    cies: dict[int, int | None] = {}  # copier.cie by the source CIE's offset
    bodies = copier.bodies
    same = starts == listed  # one section: its own starts are all of them
    n_starts = len(starts)
    out, pack, pad_of = copier.section.data, _FDE_HEAD.pack, _PADS
    gap_starts, gap_ends = array("Q"), array("Q")  # past a copied FDE's end: checked at the end
    for frag_start, frag_end in fragments:
        j = bisect_right(listed, frag_start) - 1
        if j < 0 or listed[j] != frag_start or (j and listed[j - 1] == frag_start):
            yield frag_start, frag_end
            continue
        size = sizes[j]
        if not 0 < size <= frag_end - frag_start:
            yield frag_start, frag_end
            continue
        i = j + 1 if same else bisect_right(starts, frag_start)
        if i < n_starts and starts[i] < frag_end:
            yield frag_start, frag_end
            continue
        at = head_cies[j]
        cie = cies[at] if at in cies else cies.setdefault(at, copier.cie(name, cfi, at))
        instructions = data[bodies_at[j]:ends_at[j]]
        whole = bodies.get(instructions)
        if whole is None:
            whole = copier.body(instructions)
        if cie is None or not whole:
            yield frag_start, frag_end
            continue
        length = 20 + len(instructions)
        pad = -(length + 4) % 8
        out += pack(length + pad, cie, frag_start, size)
        out += instructions
        if pad:
            out += pad_of[pad]
        copier.section.fdes += 1
        if size < frag_end - frag_start:
            gap_starts.append(frag_start + size)
            gap_ends.append(frag_end)
    summary.uncovered += gap_is_code.count(gap_starts, gap_ends)


_FDE_HEAD = struct.Struct("<IIQQ")  # DebugFrame.add_instructions' FDE: length, CIE, start, size
_PADS = [bytes(k) for k in range(8)]


def _whole(table: CfiTable, starts: Sequence[int], frag_start: int, frag_end: int, copier: _Copier
           ) -> tuple[int, int, bytes] | None:
    """(end, CIE, instructions) of the fragment's one FDE, copied, when the unwinder takes a
    single FDE for all of it: the one at its start, ending within it, no other FDE starting
    inside and no longer one at its start (code past the FDE's end, padding or another
    function's, has no CFI). None: _pieces decides, address by address."""
    head = table.head_at(frag_start)
    if head is None or head[2] != frag_start or head[3] > frag_end:
        return None
    i = bisect_right(starts, frag_start)
    if i < len(starts) and starts[i] < frag_end:
        return None
    cfi = table.section_named(head[0])
    first = bisect_left(cfi.starts, frag_start)
    for k in range(first, bisect_right(cfi.starts, frag_start)):
        other = cfi.head(cfi.offsets[k])
        if other is not None and other[2] + other[3] > head[3]:
            return None  # the unwinder goes on with that one past this one's end
    found = cfi.head(head[1])
    if found is None:
        return None
    cie = copier.cie(head[0], cfi, found[0])
    instructions = cfi.reader.data[found[4]:found[5]]
    if cie is None or not copier.body(instructions):
        return None
    return head[3], cie, instructions


def _pieces(table: CfiTable, starts: Sequence[int], frag_start: int, frag_end: int,
            summary: FrameSummary) -> list[tuple[int, int, list[Row]]]:
    """[start, end) runs of `frag` with their rows: one run unless some code of it has no
    usable FDE (a gap ends a run)."""
    out: list[tuple[int, int, list[Row]]] = []
    rows: list[Row] = []
    run_start = addr = frag_start
    decoded: dict[tuple[str, int], FrameDescription | None] = {}
    while addr < frag_end:
        i = bisect_right(starts, addr)
        following = starts[i] if i < len(starts) else frag_end
        fd = _chosen(table, addr, decoded, summary)
        if fd is None:
            if rows:
                out.append((run_start, addr, rows))
            rows = []
            addr = run_start = min(following, frag_end)
            continue
        end = min(fd.end, frag_end, following)
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
        out.append((run_start, frag_end, rows))
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
