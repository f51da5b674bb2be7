"""The lines of the procedures a translated debug file describes by name (what no input unit
covers) from what the translation has already read: BOLT's patched original ``foo.org.0`` takes
the input's row at foo's entry, as the index gives it (unsplit.index.sources.bat). Code it cannot
answer for is walked the index's way (unsplit.index.code_lines), which reads the input's DWARF
again."""

from __future__ import annotations

import os
from array import array
from bisect import bisect_right

from unsplit.debuginfo.translate.lines import LineTables
from unsplit.debuginfo.translate.units import UnitFacts
from unsplit.errors import DecodeError
from unsplit.formats import line_program
from unsplit.formats.line_program import IS_STMT
from unsplit.index.bolt.input_map import InputMap
from unsplit.index.code_lines import CodeWalker, InlinedRun, Row
from unsplit.index.module_index import ModuleIndex

_ORIGINAL_MAX = 64  # bytes: a patched original is one jump


class TranslatedLines(CodeWalker):
    """A CodeWalker (no inlined calls) that answers from the translated units' facts where it
    can (see the module's docstring), and asks the index elsewhere."""

    def __init__(self, index: ModuleIndex, imap: InputMap, units: list[tuple[int, UnitFacts]],
                 lines: LineTables, strings: tuple[bytes, bytes]) -> None:
        super().__init__(index, inlines=False)
        self.imap = imap
        units.sort(key=lambda u: u[0])
        self._starts = array("Q", (start for start, _ in units))
        self._units = [facts for _, facts in units]
        self._ends = [0] * len(units)
        self.lines = lines
        self.strings = strings
        self._paths: dict[int, tuple[int, list[tuple[str, str]]]] = {}
        self._addresses: dict[int, list[array[int]]] = {}

    @classmethod
    def of(cls, index: ModuleIndex, imap: InputMap,
           spans: list[tuple[UnitFacts, list[tuple[int, int]]]], lines: LineTables,
           strings: tuple[bytes, bytes]) -> TranslatedLines:
        """`spans`: each unit and the output ranges its code went to."""
        flat = [(s, e, facts) for facts, ranges in spans for s, e in ranges if e > s]
        flat.sort(key=lambda u: u[0])
        found = cls(index, imap, [(s, f) for s, _, f in flat], lines, strings)
        found._ends = [e for _, e, _ in flat]
        return found

    def walk(self, start: int, end: int) -> tuple[list[Row], list[InlinedRun]]:
        found = self._original(start, end)
        if found is None:
            return super().walk(start, end)
        unit, at = found
        row = self._row(unit, at)
        return ([] if row is None else [(start, *row)]), []

    def language(self, address: int) -> int | None:
        found = self._original(address, address + 1)
        if found is None:
            return super().language(address)
        return found[0].language

    def _original(self, start: int, end: int) -> tuple[UnitFacts, int] | None:
        """(the unit, the input address) when every byte of [start, end) stands for one input
        address (a patched original's jump) that a translated unit covers, else None."""
        index = self.index
        if end - start > _ORIGINAL_MAX or index.input_location(start) is not None:
            return None
        at = index.bat_input_address(start)
        if at is None or any(index.bat_input_address(b) != at for b in range(start + 1, end)):
            return None
        placed = self.imap.start(at)
        i = -1 if placed is None else bisect_right(self._starts, placed) - 1
        if i >= 0 and placed is not None and placed < self._ends[i]:
            unit: UnitFacts | None = self._units[i]
        else:  # input code BOLT gave no place (folded): the unit whose rows cover it
            unit = next((u for u in self._units if self._covers(u, at)), None)
        return (unit, at) if unit is not None and unit.stmt_list is not None and \
            unit.stmt_list in self.lines.rows else None

    def _covers(self, unit: UnitFacts, address: int) -> bool:
        sequences = self.lines.rows.get(-1 if unit.stmt_list is None else unit.stmt_list, [])
        return any(rows and rows[0][0] <= address < end for rows, end in sequences)

    def _row(self, unit: UnitFacts, address: int) -> tuple[str, int, int, bool] | None:
        """(path, line, column, is_stmt) of the row in effect at input `address` in the unit's
        program, as unsplit.elf.dwarf_lines finds it (the last row at or before it, none past
        a sequence's end); None for none or line 0."""
        offset = unit.stmt_list
        assert offset is not None
        sequences = self.lines.rows[offset]
        addresses = self._addresses.get(offset)
        if addresses is None:
            addresses = self._addresses[offset] = [array("Q", (r[0] for r in rows))
                                                   for rows, _ in sequences]
        best: tuple[int, int, int] | None = None  # (address, 1 for a row, order)
        found = None
        for k, (rows, end) in enumerate(sequences):
            if end <= address:
                candidate = (end, 0, k)  # the sequence's end marker: no line from there
                if best is None or candidate > best:
                    best, found = candidate, None
                continue
            i = bisect_right(addresses[k], address) - 1
            if i >= 0:
                candidate = (rows[i][0], 1, k)
                if best is None or candidate > best:
                    best, found = candidate, rows[i]
        if found is None or not found[2]:
            return None
        version, names = self._names(unit)
        k = found[1] - (0 if version >= 5 else 1)
        path = names[k][1] if 0 <= k < len(names) else "??"
        return path, found[2], found[3], bool(found[4] & IS_STMT)

    def _names(self, unit: UnitFacts) -> tuple[int, list[tuple[str, str]]]:
        """(version, (name, full path) of each file) of the unit's program, as
        unsplit.elf.dwarf_lines joins them (DWARF 5 numbers directories from 0)."""
        offset = unit.stmt_list
        assert offset is not None
        found = self._paths.get(offset)
        if found is None:
            data = self.lines.data
            try:
                h = line_program.read_header(data, offset)
                dirs, files = line_program.file_table(data, h, *self.strings)
            except DecodeError:
                found = self._paths[offset] = (5, [])
                return found
            names = []
            for name, index in files:
                d = index if h.version >= 5 else index - 1
                path = name
                if not os.path.isabs(name):
                    directory = dirs[d] if 0 <= d < len(dirs) else ""
                    path = os.path.join(unit.comp_dir, directory, name)
                names.append((name, os.path.normpath(path)))
            found = self._paths[offset] = (h.version, names)
        return found
