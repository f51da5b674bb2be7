"""Procedures from `.split_info`, lines from the ESL programs of `.opt_table`
(shared/specs/split-info-and-esl.md §1-§3, decoded by :mod:`unsplit.formats.split_info` and
:mod:`unsplit.formats.esl`): a Fragment per contiguous piece (:func:`pieces`), §1's exact
logical offsets, and ESL's rows (:class:`EslLines`), more precise than the module's DWARF."""

from __future__ import annotations

import bisect
import os
from typing import TYPE_CHECKING

from unsplit.elf.binary import Binary
from unsplit.errors import DecodeError
from unsplit.formats.section_ids import ESL_SECTION, SPLIT_INFO_SECTION
from unsplit.index.model.records import HOT, Fragment, LineRow, Procedure
from unsplit.index.sources import BaseSource

if TYPE_CHECKING:  # the decoders: imported for a module with their sections only
    from unsplit.formats import esl
    from unsplit.formats import split_info as si


class LineInfo:
    """The ESL lines of a binary and what went wrong on the way (nothing of it fatal)."""

    __slots__ = ("partial", "rows", "rows_by_procedure", "spans", "without_esl")

    def __init__(self) -> None:
        self.rows: list[LineRow] = []
        # [start, end) address spans each procedure's rows describe (range and branch bytes).
        self.spans: list[tuple[int, int]] = []
        self.partial: dict[int, DecodeError] = {}  # entry -> the error
        self.without_esl: list[int] = []  # PROC entries with no ESL (§2)
        self.rows_by_procedure: dict[int, list[LineRow]] = {}


def _decode(binary: Binary) -> list[si.SplitProcedure]:
    """The proposal's sp_init on a Binary: every split procedure, by entry address."""
    data = binary.section_data(SPLIT_INFO_SECTION)
    split: list[si.SplitProcedure] = []
    if data is not None:
        from unsplit.formats import split_info as si

        records = si.decode(data)
        _check_in_code(records, binary.text_address_ranges())
        funcs = [(f.name, f.value, f.size) for f in binary.functions]
        split = si.sp_init(records, funcs)
    return split


def _check_in_code(records: tuple[si.SplitRecord, ...], code: list[tuple[int, int]]) -> None:
    """Every moved range and branch starts inside an executable section and ends within the
    module's code (a branch's bytes may run over the padding up to the next section): a damaged
    record can say anything else, up to 4 GB past 2^64, and every byte of a range is later asked
    for its line."""
    last = max((end for _, end in code), default=0)
    for r in records:
        for what, lo, hi in (("moved range", r.vaddr, r.moved_end),
                             ("branch", r.branch_addr, r.branch_end)):
            if not (lo <= hi <= last and any(start <= lo < end for start, end in code)):
                raise DecodeError(SPLIT_INFO_SECTION, r.offset,
                                  f"{what} [{lo:#x}, {hi:#x}) is not in the module's code")


def _procedures(binary: Binary, split: list[si.SplitProcedure]) -> list[Procedure]:
    """One model Procedure per split procedure of `.split_info` ([] without the section)."""
    if not split:
        return []
    starts: dict[int, list[str]] = {}
    for f in binary.functions:
        starts.setdefault(f.value, []).append(f.name)
    return [_procedure(sp, starts) for sp in split]


def _procedure(sp: si.SplitProcedure, starts: dict[int, list[str]]) -> Procedure:
    frags: list[Fragment] = []
    used: set[str] = set()
    for i, (lo, hi) in enumerate(pieces(sp)):
        logical = sp.logical_offset(lo)
        assert logical is not None  # every piece starts in a range or a branch
        symbol: str | None = None
        if lo <= sp.start < hi:
            name, symbol = HOT, sp.name
        else:
            name = f"part.{i}"
            for sym in starts.get(lo, ()):
                # foo.cold -> cold; foo.cold.2 -> cold.2: the name a user knows from bt.
                if sym.startswith(sp.name + ".") and sym[len(sp.name) + 1 :] not in used:
                    name, symbol = sym[len(sp.name) + 1 :], sym
                    break
            if name in used:  # two pieces cannot share a name: fall back to the index
                name = f"part.{i}"
        used.add(name)
        frags.append(Fragment(sp.name, name, lo, hi, symbol, logical, "split_info"))
    frags.sort(key=lambda f: (f.name != HOT, f.logical_start))
    return Procedure(sp.name, frags)


def pieces(sp: si.SplitProcedure) -> list[tuple[int, int]]:
    """The procedure's code as it lies now: its body and each moved range, by address.

    A fragment is a contiguous piece of code (as the other sources have it): the procedure's
    own body, branches included, is one piece, and each moved range (with the branches to
    nested moves inside it) another. Logical ranges would leave the branch bytes in no
    fragment and name the code after a branch ``part.N`` instead of ``hot``. The exact
    logical offset of an address is :func:`logical_offset`'s (a piece's bytes after a branch
    do not continue its logical run).
    """
    moved = [(r.vaddr, r.moved_end) for r in sp.records if r.size]
    return sorted([(sp.start, sp.end), *moved])


# --- lines -----------------------------------------------------------------------------------


def _line_info(binary: Binary, split: list[si.SplitProcedure]) -> LineInfo:
    """ESL rows of every PROC at their addresses, plus errors and procedures without ESL."""
    info = LineInfo()
    data = binary.section_data(ESL_SECTION)
    if data is not None:
        from unsplit.formats import esl

        by_entry = {sp.start: sp for sp in split}
        sizes = {f.value: f.size for f in binary.functions if f.size}
        for proc in esl.decode_opt_table(data):
            _add_proc(info, proc, by_entry.get(proc.entry), sizes.get(proc.entry))
        info.spans.sort()
        # Stable: at one address the row the program emitted later stays later, and wins.
        info.rows.sort(key=lambda r: r.address)
    return info


def _add_proc(
    info: LineInfo, proc: esl.OptProc, sp: si.SplitProcedure | None, size: int | None
) -> None:
    if proc.esl is None:
        info.without_esl.append(proc.entry)
        return
    if sp is not None:
        ranges = [(r.start, r.end, r.logical_start) for r in sp.ranges]
        branches = list(sp.branches)
        logical_size: int | None = sp.size
    else:
        # Not split: one range, logical offset = address - entry (§3). Without a symbol the
        # size is unknown, and the range open-ended (bounded only by the program).
        logical_size = size
        ranges = [(proc.entry, proc.entry + (size if size else 1 << 40), 0)]
        branches = []
    from unsplit.formats import esl

    result = esl.run_program(proc, logical_size)
    if result.error is not None:
        info.partial[proc.entry] = result.error
    rows = []
    for placed in esl.map_rows(result.rows, ranges, branches):
        row = placed.row
        # `file` is the table's path as written (a DWARF consumer names a file entry so):
        # two `ledger.h` in different directories stay two files. The table has no
        # compilation directory to join it to, so `path` is that path, normalized.
        name = proc.files[row.file - 1]
        rows.append(LineRow(placed.address, name, row.line, row.column, "esl", True,
                            os.path.normpath(name) if name else name))
    info.rows.extend(rows)
    info.rows_by_procedure[proc.entry] = rows
    if size or sp is not None:
        info.spans.extend((lo, hi) for lo, hi, _ in ranges)
        info.spans.extend((lo, hi) for lo, hi, _ in branches)
    elif rows:  # unsized: the program's own extent is all we know
        info.spans.append((proc.entry, max(r.address for r in rows) + 1))


class EslLines:
    """Address -> LineRow from ESL, answering only inside code that a program describes."""

    def __init__(self, info: LineInfo) -> None:
        self._rows = info.rows
        self._addresses = [r.address for r in info.rows]
        self._span_starts = [s for s, _ in info.spans]
        self._spans = info.spans

    @property
    def available(self) -> bool:
        return bool(self._rows)

    def lookup(self, address: int) -> LineRow | None:
        j = bisect.bisect_right(self._span_starts, address) - 1
        # A row covers code up to the next row of its program, but never past its range:
        # beyond that lies another function, whose lines are not this program's to give.
        if j < 0 or address >= self._spans[j][1]:
            return None
        i = bisect.bisect_right(self._addresses, address) - 1
        if i < 0 or self._rows[i].address < self._spans[j][0]:
            return None
        return self._rows[i]


class SplitInfoSource(BaseSource):
    """`.split_info`'s procedures (§1's exact logical offsets) and ESL's lines, which are more
    precise than the module's DWARF (§2-§3), as a Source."""

    name = "split_info"
    lines_before_dwarf = True

    def __init__(self, binary: Binary) -> None:
        super().__init__(binary)
        self._split: list[si.SplitProcedure] | None = None
        self._info: LineInfo | None = None
        self._esl: EslLines | None = None

    def split_procedures(self) -> list[si.SplitProcedure]:
        """Every split procedure of `.split_info`, by entry address (decoded once)."""
        if self._split is None:
            self._split = _decode(self.binary)
        return self._split

    def procedures(self) -> list[Procedure]:
        return _procedures(self.binary, self.split_procedures())

    def line_info(self) -> LineInfo:
        """ESL's rows at their addresses and what went wrong (decoded once)."""
        if self._info is None:
            self._info = _line_info(self.binary, self.split_procedures())
        return self._info

    def line_rows(self) -> list[LineRow]:
        """Every ESL row at its address, sorted by address (source "esl")."""
        return self.line_info().rows

    def split_procedure_at(self, address: int) -> si.SplitProcedure | None:
        """The split procedure whose ranges or branches hold `address`, if any."""
        for sp in self.split_procedures():
            if sp.contains(address):
                return sp
        return None

    def address_of(self, entry: int, offset: int) -> int | None:
        """The one address that logical `offset` of the split procedure at `entry` maps to."""
        for sp in self.split_procedures():
            if sp.start == entry:
                return sp.address_of(offset)
        return None

    def _lines(self) -> EslLines:
        if self._esl is None:
            self._esl = EslLines(self.line_info())
        return self._esl

    def has_lines(self) -> bool:
        return self._lines().available

    def line_at(self, address: int) -> LineRow | None:
        return self._lines().lookup(address)

    def lines_in(self, start: int, end: int) -> list[LineRow]:
        """ESL rows of split procedures (none without `.split_info`); raises UnsplitError on
        a damaged line section."""
        if not self.binary.has_section(SPLIT_INFO_SECTION):
            return []
        rows = self.line_rows()
        lo = bisect.bisect_left(rows, start, key=lambda r: r.address)
        hi = bisect.bisect_left(rows, end, key=lambda r: r.address)
        return rows[lo:hi]

    def line_starts(self, file: str, line: int) -> set[int]:
        """ESL rows where file:line begins (the first row of each run of that line)."""
        out: set[int] = set()
        previous: LineRow | None = None
        for row in self.lines_in(0, 1 << 64):
            if row.line == line and (file in (row.file, row.path)
                                     or row.file.endswith("/" + file)) and not (
                    previous is not None and previous.line == line
                    and previous.file == row.file):
                out.add(row.address)
            previous = row
        return out

    def next_line(self, file: str, line: int) -> int | None:
        """The first line of `file` after `line` that ESL has a row for."""
        return min((row.line for row in self.lines_in(0, 1 << 64) if row.line > line
                    and (file in (row.file, row.path) or row.file.endswith("/" + file))),
                   default=None)

    def addresses_of(self, procedure: Procedure, offset: int) -> list[int] | None:
        """§1's one address of `offset` (a piece may hold branches: the linear layout of its
        fragments is not exact past one)."""
        if not any(f.source == self.name for f in procedure.fragments):
            return None
        address = self.address_of(procedure.entry, offset)
        return [] if address is None else [address]

    def logical_ranges(self, procedure: Procedure) -> tuple[list[tuple[int, int]], int] | None:
        """§1's own ranges of `procedure` (one of this source's) and its size."""
        if not any(f.source == self.name for f in procedure.fragments):
            return None
        for sp in self.split_procedures():
            if sp.start == procedure.entry:
                return [(r.start, r.end) for r in sp.ranges], sp.size
        return None

    def logical_offset(self, address: int) -> int | None:
        """§1's logical offset of `address` in its split procedure (a branch: its moved
        code's)."""
        sp = self.split_procedure_at(address)
        return None if sp is None else sp.logical_offset(address)
