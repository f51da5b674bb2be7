"""Range and location lists moved through the input map: each input list read
(unsplit.formats.dwarf_lists), each entry's range placed (a range BOLT split becomes several
entries; what has no place is dropped and counted), DW_OP_addr operands moved, and written as
absolute entries. A DWARF 5 unit gets its own contribution to .debug_rnglists and
.debug_loclists (its offsets array kept, so DW_FORM_rnglistx and DW_FORM_loclistx values stay
as they are); DWARF 4 units share .debug_ranges and .debug_loc. A list that does not decode is
written empty, with one line saying which and why."""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Callable

from unsplit.errors import DecodeError
from unsplit.formats import dwarf_lists as L
from unsplit.formats import dwarf_ops
from unsplit.index.bolt.input_map import InputMap, merge


class Mover:
    """What moving addresses and lists needs from the whole file: the map, the counts of
    what was dropped, and the lines said about damaged input."""

    def __init__(self, imap: InputMap) -> None:
        self.imap = imap
        self.dropped: Counter[str] = Counter()
        self.warnings: list[str] = []

    def address(self, address: int) -> int:
        """A code or data address moved (0, counted, for input code with no place)."""
        new = self.imap.start(address)
        if new is None:
            self.dropped["addresses"] += 1
            return 0
        return new

    def expression(self, expr: bytes, offset_size: int, where: object) -> bytes:
        """`expr` with the operand of each DW_OP_addr moved (an expression that does not
        decode is kept as it is, and said)."""
        places = self._operands(expr, offset_size, where)
        if not places:
            return expr
        out = bytearray(expr)
        for at in places:
            old = int.from_bytes(out[at:at + 8], "little")
            out[at:at + 8] = self.address(old).to_bytes(8, "little")
        return bytes(out)

    def moves(self, expr: bytes, offset_size: int, where: object) -> bool:
        """Whether expression() would change `expr` (an expression that does not decode is
        said here, and kept)."""
        places = self._operands(expr, offset_size, where)
        start = self.imap.start
        return any(start(old) != old for old in (
            int.from_bytes(expr[at:at + 8], "little") for at in places))

    def _operands(self, expr: bytes, offset_size: int, where: object) -> list[int]:
        """Where each DW_OP_addr's operand is in `expr` (none for an expression that does not
        decode: it is said, and kept as it is)."""
        if dwarf_ops.DW_OP_addr not in expr:
            return []
        try:
            return dwarf_ops.address_operands(expr, 8, offset_size)
        except DecodeError as e:
            self.warnings.append(f"{where}: {e.message}: kept as it is")
            return []

    def ranges(self, entries: list[L.Entry]) -> list[tuple[int, int]]:
        """Where input ranges went, the range holding the first one's start first (a
        function's or inlined call's entry: GDB and LLDB take the first range's start)."""
        found: list[tuple[int, int]] = []
        for begin, end, _ in entries:
            placed = self.imap.place(begin, end)
            found += placed.ranges
            self.dropped["range bytes"] += placed.missing
        return _entry_first(merge(found), self.imap.start(entries[0][0]) if entries else None)

    def locations(self, entries: list[L.Entry], offset_size: int, where: object
                  ) -> list[L.Entry]:
        out: list[L.Entry] = []
        place, shift = self.imap.place, self.imap.shift
        missing = lost = 0
        for begin, end, expr in entries:
            moved = self.expression(expr, offset_size, where) \
                if dwarf_ops.DW_OP_addr in expr else expr
            if begin == L.DEFAULT:
                out.append((begin, end, moved))
                continue
            delta = shift(begin, end)  # place's answer when one run holds the entry
            if delta is not None:
                out.append((begin + delta, end + delta, moved))
                continue
            ranges, gone = place(begin, end)
            if gone:
                missing += gone
                lost += not ranges
            if len(ranges) == 1:
                out.append((*ranges[0], moved))
            else:
                out += [(s, t, moved) for s, t in ranges]
        if missing:
            self.dropped["location bytes"] += missing
            self.dropped["location entries"] += lost
        return out


def _entry_first(ranges: list[tuple[int, int]], entry: int | None) -> list[tuple[int, int]]:
    """`ranges` with the one holding `entry` first."""
    if entry is not None and len(ranges) > 1:
        for i, (start, end) in enumerate(ranges):
            if start <= entry < end:
                ranges.insert(0, ranges.pop(i))
                break
    return ranges


class UnitLists:
    """One unit's lists: where the new ones go and the memo of those already written."""

    def __init__(self, mover: Mover, version: int, offset_size: int, base_address: int,
                 address_at: L.AddressAt, inputs: dict[str, bytes],
                 outputs: dict[str, bytearray], unit_name: str,
                 named_start: Callable[[int], None] = lambda index: None,
                 addresses: list[int] | None = None) -> None:
        self.mover = mover
        self.named_start = named_start  # an address index a copied list names as a start
        self.version = version
        self.offset_size = offset_size
        self.base_address = base_address
        self.address_at = address_at
        self.addresses = addresses or []  # the unit's .debug_addr table (address_at's)
        self.inputs = inputs
        self.outputs = outputs
        self.unit_name = unit_name
        self.rng_name, self.loc_name = (".debug_rnglists", ".debug_loclists") if version >= 5 \
            else (".debug_ranges", ".debug_loc")
        self._starts: dict[str, int] = {}  # section -> where this unit's contribution starts
        self._done: dict[tuple[str, int], int] = {}
        self.indexed_ranges: list[int] = []  # new range lists by DW_FORM_rnglistx index
        self._placed: dict[int, list[tuple[int, int]]] = {}  # a new range list's ranges
        self._copied_from: dict[int, tuple[int, int]] = {}  # a copied range list's input
        #                                                     offset and how far it moved
        self._shifts: dict[int, int] = {}  # base address index -> how far its entry moved,
        #                                    once a copied list has named it (so as a start)
        self.bounded: dict[int, int] = {}  # a new location list's entries that have a range

    def _contribution(self, name: str, offsets: int = 0) -> int:
        """Starts this unit's DWARF 5 contribution to `name` (room for `offsets`); its base."""
        out = self.outputs[name]
        if name not in self._starts:
            self._starts[name] = len(out)
            out += L.lists_header(5, 8, [0] * offsets, 0)
        return self._starts[name] + 12

    def finish(self) -> None:
        """Fills in the length of each contribution this unit started."""
        for name, start in self._starts.items():
            out = self.outputs[name]
            out[start:start + 4] = (len(out) - start - 4).to_bytes(4, "little")

    def ranges_table(self, old_base: int) -> int:
        """The unit's DW_AT_rnglists_base: every list of its offsets array moved; the new
        base (DW_FORM_rnglistx values keep their meaning)."""
        return self._table(self.rng_name, old_base, False)

    def locations_table(self, old_base: int) -> int:
        return self._table(self.loc_name, old_base, True)

    def _table(self, name: str, old_base: int, locations: bool) -> int:
        data = self.inputs.get(name, b"")
        header = L.read_lists_header(data, old_base, name)
        offsets = L.offsets_array(data, header)
        base = self._contribution(name, len(offsets))
        moved = self._lists(name, data, [old_base + relative for relative in offsets],
                            locations)
        self.outputs[name][base:base + 4 * len(moved)] = struct.pack(
            f"<{len(moved)}I", *(new - base for new in moved))
        if not locations:
            self.indexed_ranges += moved
        return base

    def _lists(self, name: str, data: bytes, starts: list[int], locations: bool) -> list[int]:
        """list_at() of each list at `starts`, in order; their new offsets. The plain lists
        of code that moved whole (dwarf_lists.plain_v5_lists) are copied here as _copied
        copies them, the run of code the last one fell in asked first, without a look-up."""
        spans = L.plain_v5_lists(data, starts, locations, self.addresses) \
            if self.version >= 5 else [None] * len(starts)
        out, done, shifts = self.outputs[name], self._done, self._shifts
        imap = self.mover.imap
        holding, addresses = imap.holding, self.addresses
        run_lo = run_limit = delta = 0  # the run [run_lo, run_limit) moved by delta
        found: list[int] = []
        for start, span in zip(starts, spans, strict=True):
            key = (name, start)
            if span is not None and key not in done:
                end, lo, hi, index, bounded = span
                if not run_lo <= lo < hi <= run_limit:
                    run = holding(lo, hi)
                    run_lo, run_limit, delta = (0, 0, 0) if run is None else run
                if not run_limit:  # code BOLT split up: the list is placed entry by entry
                    found.append(self.list_at(name, start, locations, copy=False))
                    continue
                moved = shifts.get(index)
                if moved is None and imap.start(addresses[index]) == addresses[index] + delta:
                    self.named_start(index)  # its base moves with it (as _rebased finds)
                    moved = shifts[index] = delta
                new = done[key] = len(out)
                if moved == delta:
                    out += data[start:end]
                else:  # its base stays or moves elsewhere: named by address (as _rebased)
                    out += L.base_address_entry(addresses[index] + delta, locations)
                    out += data[start + (2 if data[start + 1] < 0x80 else 3):end]
                if locations:
                    self.bounded[new] = bounded
                else:
                    self._copied_from[new] = (start, delta)
                found.append(new)
                continue
            found.append(self.list_at(name, start, locations))
        return found

    def placed(self, new: int) -> list[tuple[int, int]]:
        """The output ranges of the range list written at `new`, the entry's first."""
        found = self._placed.get(new)
        if found is None:
            start, delta = self._copied_from[new]
            ranges = [(b, e) for b, e, _ in L.read_v5_list(
                self.inputs.get(self.rng_name, b""), start, self.rng_name, False, 8,
                self.base_address, self.address_at)]
            found = self._placed[new] = _entry_first(
                merge([(b + delta, e + delta) for b, e in ranges if b < e]),
                self.mover.imap.start(ranges[0][0]) if ranges else None)
        return found

    def list_at(self, name: str, offset: int, locations: bool, copy: bool = True) -> int:
        """The list at `offset` of input section `name`, moved; its new offset (`copy`
        False: the caller knows its bytes cannot be copied)."""
        key = (name, offset)
        found = self._done.get(key)
        if found is not None:
            return found
        data = self.inputs.get(name, b"")
        try:
            if self.version >= 5 and copy:
                copied = self._copied(name, data, offset, locations)
                if copied is not None:
                    self._done[key] = copied
                    return copied
            if self.version >= 5:
                entries = L.read_v5_list(data, offset, name, locations, 8, self.base_address,
                                         self.address_at)
            else:
                entries = L.read_v4_list(data, offset, name, locations, 8, self.base_address)
        except DecodeError as e:
            self.mover.warnings.append(f"{_ListPlace(self.unit_name, name, offset)}: "
                                       f"{e.message}: left out")
            entries = []
        where = _ListPlace(self.unit_name, name, offset)  # (a list copied needs none)
        if locations:
            moved = self.mover.locations(entries, self.offset_size, where)
            new = self.write(name, moved, True)
            self.bounded[new] = sum(1 for begin, _, _ in moved if begin != L.DEFAULT)
        else:
            ranges = self.mover.ranges(entries)
            new = self.write(name, [(s, e, b"") for s, e in ranges], False)
            self._placed[new] = ranges
        self._done[key] = new
        return new

    def _copied(self, name: str, data: bytes, offset: int, locations: bool) -> int | None:
        """The DWARF 5 list at `offset` appended as its bytes are, when every address in them
        moved the same distance (code BOLT left where it was, or one run of code it moved
        whole): its offset pairs hold, and its address indices name entries of the unit's
        .debug_addr, moved the same way. Its new offset; None when it must be decoded and
        written again (Mover)."""
        span = L.span_v5_list(data, offset, name, locations, 8, self.base_address,
                              self.address_at)
        if span is None:
            return None
        end, lo, hi, bounded, bases, indices, literal, unit_base, addr_op, ranges = span
        imap = self.mover.imap
        delta = 0 if hi < 0 else imap.shift(lo, hi if hi > lo else lo + 1)
        if delta is None or (delta and literal):
            return None
        if addr_op:
            where = _ListPlace(self.unit_name, name, offset)
            if any(self.mover.moves(expr, self.offset_size, where) for _, _, expr in
                   L.read_v5_list(data, offset, name, True, 8, self.base_address,
                                  self.address_at)):
                return None
        for index in indices:  # a start entry's address, in the run: moved as it is
            self.named_start(index)
        raw = data[offset:end]
        shifts = self._shifts
        for _, _, index in bases:
            if shifts.get(index) != delta:
                raw = self._rebased(data, offset, span, delta, locations)
                break
        if unit_base:  # the unit's base, moved, named first (the unit's own may move otherwise)
            raw = L.base_address_entry(self.base_address + delta, locations) + raw
        new = self._append(name, raw)
        if locations:
            self.bounded[new] = bounded
        else:
            self._placed[new] = _entry_first(
                merge([(b + delta, e + delta) for b, e in ranges if b < e]),
                imap.start(ranges[0][0]) if ranges else None)
        return new

    def _rebased(self, data: bytes, offset: int, span: L.ListSpan, delta: int,
                 locations: bool) -> bytes:
        """The list's bytes, each base address index kept where its .debug_addr entry moves
        with the list, else replaced by the base address itself, moved (clang names one base
        for a whole section's lists: a function BOLT moved may hold it)."""
        address_at, start = self.address_at, self.mover.imap.start
        out = bytearray()
        at = offset
        for entry, after, index in span.bases:
            address = address_at(index)
            if start(address) == address + delta:
                self.named_start(index)
                self._shifts[index] = delta  # the next list on this base takes it as it is
                continue
            out += data[at:entry]
            out += L.base_address_entry(address + delta, locations)
            at = after
        if at == offset:
            return data[offset:span.end]
        out += data[at:span.end]
        return bytes(out)

    def views(self, location_list: int) -> int:
        """Where GCC's DW_AT_GNU_locviews of the location list written at `location_list`
        (-1: none) now points: a view pair (0, 0) for each of its entries with a range. The
        input's view numbers count line table rows at an address, and the rows are not the
        input's once moved; view 0 is the first at the address, as with no views at all."""
        count = self.bounded.get(location_list, 0)
        if self.version >= 5:
            self._contribution(self.loc_name)
        out = self.outputs[self.loc_name]
        offset = len(out)
        out += bytes(2 * count)  # ULEB128 zeros
        return offset

    def write(self, name: str, entries: list[L.Entry], locations: bool) -> int:
        """Appends a list to this unit's part of `name`; its offset in the section."""
        return self._append(name, L.encode_v5_list(entries, locations) if self.version >= 5
                            else L.encode_v4_list(entries, locations))

    def range_output(self) -> bytearray:
        """The section this unit's range lists go to, its contribution begun: where a caller
        appends its own (write_range's bytes) without a call each."""
        self._append(self.rng_name, b"")
        return self.outputs[self.rng_name]

    def write_range(self, begin: int, end: int) -> int:
        """write() of a DWARF 5 range list of [begin, end) alone (most functions' and
        scopes')."""
        return self._append(self.rng_name, L.encode_v5_range(begin, end))

    def _append(self, name: str, data: bytes) -> int:
        if self.version >= 5 and name not in self._starts:
            self._contribution(name)
        out = self.outputs[name]
        offset = len(out)
        out += data
        return offset


class _ListPlace:
    """Which list a warning is about, made into text only when one is said (a unit has
    thousands of lists)."""

    __slots__ = ("offset", "section", "unit")

    def __init__(self, unit: str, section: str, offset: int) -> None:
        self.unit, self.section, self.offset = unit, section, offset

    def __str__(self) -> str:
        return f"{self.unit}: list at {self.section}+{self.offset:#x}"
