"""`unsplit annotate` for BOLTed binaries: `.split_info` and ESL lines from BAT and the input's
DWARF (shared/specs/split-info-and-esl.md §1, §3; shared/specs/bolt-bat.md §3.2, §3.5), so the
output carries the lines the pre-BOLT input would give. One record per moved fragment (above
:func:`insertion_point`: why); block order is carried by the ESL rows."""

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


# What a range is for a BOLTed function: BOLT reorders blocks inside and across fragments, and
# the spec's layout cannot say that (a moved range may not overlap its own procedure, §1). So we
# keep fragment granularity: one `.split_info` record per non-hot fragment, placed where control
# first leaves for it (the first branch in logical order whose target lies in it; a fragment no
# branch reaches, a landing pad or a jump-table case, gets a zero-size record at the start of the
# hot block after its first input offset, else before the hot fragment's last instruction).
# Block order is carried by the ESL rows, per output instruction in logical order.
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
