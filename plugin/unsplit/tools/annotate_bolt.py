"""`unsplit annotate` for BOLTed binaries: `.split_info` and ESL lines from BAT + the input's DWARF.

Specification: shared/specs/split-info-and-esl.md (§1 logical layout, §3 ESL in logical order),
shared/specs/bolt-bat.md (§3.2 BOLT's translate rule, §3.5 input offsets need the input binary).

BOLT drops DWARF from its output (shared/NOTES.md); the true line of output code is the
pre-BOLT ("input") binary's line at ``input function + BAT input offset``. Annotating turns that
look-up, which needs the input binary at debug time, into data carried by the output itself.

**What a range is for a BOLTed function.** BOLT splits a function into fragments (``foo`` hot,
``foo.warm``, ``foo.cold``, ``foo.cold.N``), each one contiguous run of output code, and it
reorders basic blocks *inside* each fragment and across them: a fragment's code is in general
not contiguous, nor in order, in the input function. The spec's layout cannot say that: a
moved range may not overlap its own procedure (§1), so the hot fragment's own block order is
fixed, and every moved range is one contiguous piece of output code. We therefore keep
**fragment granularity**: one `.split_info` record per non-hot fragment, its vaddr/size the
fragment's, placed logically where control first leaves for it:

- the first branch, in logical order (hot code by address first, then the fragments already
  placed, so a fragment reached only from another cold fragment becomes a nested move), whose
  target lies inside the fragment: that branch is the record's branch_addr/branch_size;
- a fragment no branch reaches (an exception landing pad, a jump-table case) is placed by input
  order instead: a zero-size record (a pure insertion point, the §1 formula with
  branch_size 0) at the start of the hot block that follows the fragment's first input offset,
  else before the hot fragment's last instruction.

The alternative, one record per run of input-contiguous blocks, would need branches that do not
exist and still could not express reordering inside the hot fragment. Block order is instead
carried by the ESL program: rows are per output instruction, in logical order, and a return to
an earlier input line is just a negative line delta; so every address gets its true line even
though logical offsets are not input offsets (BAT, kept in the binary, still gives those).

Functions BOLT left in place (not in BAT) keep their input addresses: their lines are the input
DWARF's at the same address, when the input has the same function there.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from unsplit.elf.binary import Binary
from unsplit.elf.dwarf_lines import DwarfLines
from unsplit.formats import bat
from unsplit.index.bolt import bat_translate, prebolt
from unsplit.index.model.records import LineRow, Procedure

Insn = tuple[int, str, str]  # (address, mnemonic, operands)


class BoltLines:
    """Output address ranges -> rows at output addresses, one per instruction whose line changes.

    Each instruction is translated through BAT to its input function + offset and looked up in
    the input binary's DWARF; rows with line 0 are skipped (the previous row goes on).
    """

    def __init__(self, binary: Binary, input_binary: Binary, insns: Sequence[Insn]) -> None:
        self.index = bat_translate.load(binary)
        self.input = input_binary
        self.dwarf = DwarfLines(input_binary)
        self._addrs = [a for a, _, _ in insns]
        self._same: dict[str, bool] = {}
        out_funcs = {f.name: (f.value, f.size) for f in binary.functions}
        in_funcs = {f.name: (f.value, f.size) for f in input_binary.functions}
        # Untouched functions: same name, address and size in both files.
        self._unmoved = [
            (v, v + s) for n, (v, s) in out_funcs.items() if s and in_funcs.get(n) == (v, s)
        ]
        self._unmoved.sort()

    @property
    def available(self) -> bool:
        return self.dwarf.available

    def input_address(self, address: int) -> int | None:
        tr = None if self.index is None else self.index.translate(address)
        if tr is not None:
            base = prebolt.function_address(self.input, tr.procedure)
            return None if base is None else base + tr.input_offset
        i = bisect_right(self._unmoved, (address, 1 << 64)) - 1
        if i >= 0 and self._unmoved[i][0] <= address < self._unmoved[i][1]:
            return address
        return None

    def line_of(self, address: int) -> LineRow | None:
        """The input's row for the instruction at output `address` (None: no line there)."""
        source = self.input_address(address)
        row = None if source is None else self.dwarf.lookup(source)
        return None if row is None or row.line < 1 else row

    def rows_in(self, lo: int, hi: int) -> list[LineRow]:
        out: list[LineRow] = []
        last: tuple[str, int, int] | None = None
        first = bisect_left(self._addrs, lo)
        for k in range(first, bisect_left(self._addrs, hi)):
            a = self._addrs[k]
            row = self.line_of(a)
            if row is None and k == first:
                # A range that starts without a line (a jump BOLT made) continues the code
                # before it in address order, not whatever precedes it logically.
                row = self._line_before(k)
            if row is None:
                continue
            key = (row.path or row.file, row.line, row.column)
            if key != last:
                out.append(LineRow(a, row.file, row.line, row.column, "bat", True, row.path))
                last = key
        return out

    def _line_before(self, k: int) -> LineRow | None:
        frag = None if self.index is None else self.index.fragment_at(self._addrs[k])
        bound = frag.start if frag is not None else self._addrs[k]
        for j in range(k - 1, -1, -1):
            if self._addrs[j] < bound:
                break
            row = self.line_of(self._addrs[j])
            if row is not None:
                return row
        return None


def insertion_point(binary: Binary, proc: Procedure, frag_start: int, insns: Sequence[Insn]) -> int:
    """Where a fragment no branch reaches sat in input order: the output address of the hot
    block whose input offset is the smallest above the fragment's first one, else the hot
    fragment's last instruction (a zero-size record must start inside the procedure)."""
    hot = proc.fragments[0]
    index = bat_translate.load(binary)
    if index is not None and hot.start in index.table.maps and frag_start in index.table.maps:
        frag_map = index.table.maps[frag_start]
        firsts = [v >> 1 for v in frag_map.input_values if not v & bat.BRANCHENTRY]
        hot_map = index.table.maps[hot.start]
        if firsts:
            first = min(firsts)
            after = [
                (v >> 1, out)
                for out, v in zip(hot_map.output_offsets, hot_map.input_values, strict=True)
                if not v & bat.BRANCHENTRY and v >> 1 > first and out < hot.size
            ]
            if after:
                return hot.start + min(after)[1]
    addrs = [a for a, _, _ in insns]
    i = bisect_left(addrs, hot.end) - 1
    return addrs[i] if i >= 0 and addrs[i] >= hot.start else hot.start
