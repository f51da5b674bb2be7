"""The units of .debug_info and .debug_types, copied byte for byte and patched in place where
a value holds a code address or points at something moved (kinds.py says which, by each
declaration's forms): no DIE changes size, so no DIE offset and no reference changes. Each
unit's DIEs are skipped by their forms (unsplit.formats.die_scan) up to the values to patch;
only its top DIE is decoded whole. A unit that does not decode is left out, with one line."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from unsplit.debuginfo.translate import kinds as K
from unsplit.debuginfo.translate.addr import AddrTable, AddrTables
from unsplit.debuginfo.translate.lines import LineTables
from unsplit.debuginfo.translate.lists import Mover, UnitLists
from unsplit.errors import DecodeError
from unsplit.formats import die_scan, dwarf_unit
from unsplit.formats.die_scan import Declaration, Unit
from unsplit.formats.dwarf_lists import encode_v5_range
from unsplit.formats.dwarf_unit import UnitHeader, Value

_PADDED_SEC_OFFSET = b"\x97\x80\x80\x00"  # DW_FORM_sec_offset as a 4-byte ULEB128
# The unit DIE's attributes read as numbers (a damaged abbreviation may give them a block).
_NUMBERS = frozenset((K.DW_AT_addr_base, K.DW_AT_low_pc, K.DW_AT_rnglists_base,
                      K.DW_AT_loclists_base, K.DW_AT_ranges))


class UnitFacts(NamedTuple):
    """What a unit's top DIE says of its code's lines (unsplit.debuginfo.translate.described):
    its line program, compilation directory and language."""

    offset: int  # of the unit in .debug_info
    stmt_list: int | None
    comp_dir: str
    language: int | None


class Rewritten:
    """What became of one section of units."""

    __slots__ = ("addr_bases", "aranges", "data", "kept", "name", "refs")

    def __init__(self, name: str, data: bytearray) -> None:
        self.name = name
        self.data = data  # the section, patched (left-out units still in it)
        self.kept: list[tuple[int, int]] = []  # [start, end) of units kept
        self.aranges: list[tuple[int, list[tuple[int, int]]]] = []
        self.addr_bases: list[tuple[int, int, AddrTable]] = []  # place, size
        self.refs: list[tuple[int, int, int]] = []  # DW_FORM_ref_addr: unit, place, size
        # (unsplit.debuginfo.translate.refs)


class UnitRewriter:
    """Rewrites every unit of a file's .debug_info and .debug_types."""

    def __init__(self, inputs: dict[str, bytes], mover: Mover) -> None:
        self.inputs = inputs
        self.mover = mover
        self.kinds = K.Kinds()
        self.abbrev_in = inputs.get(".debug_abbrev", b"")
        self.abbrev = bytearray(self.abbrev_in)
        self.addr = AddrTables(inputs.get(".debug_addr"))
        self.lines = LineTables(inputs.get(".debug_line", b""), mover)
        self.outputs = {name: bytearray() for name in (".debug_rnglists", ".debug_loclists",
                                                        ".debug_ranges", ".debug_loc")}
        self._tables: dict[int, dict[int, Declaration]] = {}
        self.units = 0
        self.left_out: list[str] = []
        self.facts: dict[int, UnitFacts] = {}  # by unit offset, .debug_info's units

    def section(self, name: str) -> Rewritten:
        data = self.inputs.get(name, b"")
        done = Rewritten(name, bytearray(data))
        try:
            for header in dwarf_unit.unit_headers(data, name):
                where = f"unit at {name}+{header.offset:#x}"
                mark = self._mark()
                try:
                    self._unit(name, data, done, header, where)
                except DecodeError as e:
                    self._rollback(mark)
                    self.left_out.append(f"{where}: {e}: left out")
                    continue
                done.kept.append((header.offset, header.end))
                self.units += 1
        except DecodeError as e:
            self.left_out.append(f"{name}: {e}: the units from there on are left out")
        return done

    def _mark(self) -> tuple[dict[str, int], int]:
        return {k: len(v) for k, v in self.outputs.items()}, len(self.lines.out)

    def _rollback(self, mark: tuple[dict[str, int], int]) -> None:
        sizes, line_size = mark
        for name, size in sizes.items():
            del self.outputs[name][size:]
        self.lines.forget_after(line_size)

    def _declarations(self, offset: int) -> dict[int, Declaration]:
        found = self._tables.get(offset)
        if found is None:
            found = self._tables[offset] = die_scan.declarations(self.abbrev_in, offset)
            for decl in found.values():
                K.patch_declaration(self.abbrev, decl)
        return found

    def _unit(self, name: str, data: bytes, done: Rewritten, header: UnitHeader,
              where: str) -> None:
        if header.address_size != 8:
            raise DecodeError(name, header.offset, f"address size {header.address_size} (8 is "
                              "written)")
        if header.unit_type in (dwarf_unit.DW_UT_skeleton, dwarf_unit.DW_UT_split_compile,
                                dwarf_unit.DW_UT_split_type):
            raise DecodeError(name, header.offset, "a split DWARF unit (.dwo files are not "
                              "read)")
        decls = self._declarations(header.abbrev_offset)
        unit = header.scan
        out = done.data
        code, pos = dwarf_unit.uleb(data, unit.die_start)
        top = decls.get(code)
        if top is None:
            raise DecodeError(name, unit.die_start, f"no abbreviation {code} in the unit's "
                              "table")
        values, _ = dwarf_unit.die_values(data, pos, unit, top)
        attrs = {a: (form, at, value) for a, form, at, value in values
                 if a not in _NUMBERS or isinstance(value, int)}
        for a, form, at, value in values:
            if a in _NUMBERS and not isinstance(value, int):
                raise DecodeError(name, at, f"the unit's attribute {a:#x} in form {form:#x}, "
                                  "not a number")
        table: AddrTable | None = None
        if K.DW_AT_addr_base in attrs:
            _, at, base = attrs[K.DW_AT_addr_base]
            table = self.addr.table(int(base))
            done.addr_bases.append((at, header.offset_size, table))

        addresses = [] if table is None else table.addresses
        count = len(addresses)

        def address_at(index: int) -> int:  # (one call for each list and address index)
            if index < count:
                return addresses[index]
            if table is None:
                raise DecodeError(name, header.offset, "an address index, and no "
                                  "DW_AT_addr_base")
            return self.addr.address(table, index)  # an index past the table: its error

        base_address = 0
        if K.DW_AT_low_pc in attrs:
            form, at, value = attrs[K.DW_AT_low_pc]
            if form not in K.ADDRESS_FORMS:
                raise DecodeError(name, at, f"the unit's DW_AT_low_pc in form {form:#x}, not "
                                  "an address")
            base_address = int(value) if form == K.DW_FORM_addr else address_at(int(value))
        def named_start(index: int) -> None:
            if table is not None:
                self.addr.named_start(table, index)

        lists = UnitLists(self.mover, header.version, header.offset_size, base_address,
                          address_at, self.inputs, self.outputs, where, named_start,
                          addresses)
        for attribute, make in ((K.DW_AT_rnglists_base, lists.ranges_table),
                                (K.DW_AT_loclists_base, lists.locations_table)):
            if attribute in attrs:
                form, at, value = attrs[attribute]
                _put(out, at, header.offset_size, make(int(value)))
        if top.tag in (K.DW_TAG_compile_unit, K.DW_TAG_partial_unit) and \
                K.DW_AT_ranges in attrs and attrs[K.DW_AT_ranges][0] == K.DW_FORM_rnglistx:
            index = int(attrs[K.DW_AT_ranges][2])
            if index < len(lists.indexed_ranges):
                done.aranges.append((header.offset, lists.placed(lists.indexed_ranges[index])))
        if name == ".debug_info":
            self.facts[header.offset] = self._facts(header, attrs)
        sites = die_scan.sites(data, unit, decls, lambda d: self.kinds.of(d, unit))
        _Sites(self, data, out, unit, header, lists, table, address_at, done, where).walk(sites)
        lists.finish()


    def _facts(self, header: UnitHeader, attrs: Mapping[int, tuple[int, int, Value]]
               ) -> UnitFacts:
        stmt = attrs.get(K.DW_AT_stmt_list)
        language = attrs.get(K.DW_AT_language)
        comp_dir = attrs.get(K.DW_AT_comp_dir)
        return UnitFacts(header.offset, stmt[2] if stmt and isinstance(stmt[2], int) else None,
                         "" if comp_dir is None else self._string(header, attrs, *comp_dir[::2]),
                         language[2] if language and isinstance(language[2], int) else None)

    def _string(self, header: UnitHeader, attrs: Mapping[int, tuple[int, int, Value]],
                form: int, value: Value) -> str:
        """A string attribute's text (DWARF 5 §7.5.5 class string); "" where it cannot be
        read."""
        if isinstance(value, bytes):  # DW_FORM_string, its NUL included
            return value.rstrip(b"\0").decode("utf-8", "replace")
        if not isinstance(value, int):
            return ""
        data = self.inputs.get(".debug_line_str" if form == K.DW_FORM_line_strp
                               else ".debug_str", b"")
        offset = value
        if form in K.STRX_FORMS:
            base = attrs.get(K.DW_AT_str_offsets_base)
            table = self.inputs.get(".debug_str_offsets", b"")
            if base is None or not isinstance(base[2], int):
                return ""
            at = base[2] + value * header.offset_size
            offset = int.from_bytes(table[at:at + header.offset_size], "little")
        elif form not in (K.DW_FORM_strp, K.DW_FORM_line_strp):
            return ""
        end = data.find(b"\0", offset)
        return "" if end < 0 else data[offset:end].decode("utf-8", "replace")


class _Sites:
    """Patches one unit's sites, a DIE at a time."""

    def __init__(self, owner: UnitRewriter, data: bytes, out: bytearray, unit: Unit,
                 header: UnitHeader, lists: UnitLists, table: AddrTable | None,
                 address_at: Callable[[int], int], done: Rewritten, where: str) -> None:
        self.owner, self.data, self.out, self.unit = owner, data, out, unit
        self.header, self.lists, self.table, self.done, self.where = (header, lists, table,
                                                                      done, where)
        self.address_at = address_at
        self.mover = owner.mover
        self.location_list = -1  # the new offset of the current DIE's location list
        self._run = (0, 0, 0)  # InputMap.holding's last answer: most pairs fall in it

    def walk(self, sites: die_scan.Sites) -> None:
        positions, numbers, dies = sites.positions, sites.kinds, sites.dies
        table = self.owner.kinds.table
        whats = [kind.what for kind in table]
        # an expression in DW_FORM_exprloc of under 128 bytes without a DW_OP_addr byte:
        # nothing to move (most variables' locations), seen without a call
        exprloc = [kind.what == K.EXPRESSION and kind.form == K.DW_FORM_exprloc
                   for kind in table]
        # clang's DW_AT_low_pc (DW_FORM_addrx) and DW_AT_high_pc (DW_FORM_data4) of a function
        # or scope in a DWARF 5 unit: what pair() does for them done here, without a call, for
        # a range one run of code holds (thousands per unit)
        v5 = self.header.version >= 5
        low_addrx = [v5 and kind.what == K.PAIR_LOW and kind.form == K.DW_FORM_addrx and
                     kind.tag not in K.UNIT_TAGS for kind in table]
        high_data4 = [kind.what == K.PAIR_HIGH and kind.form == K.DW_FORM_data4 and
                      not kind.padded for kind in table]
        addresses = [] if self.table is None else self.table.addresses
        count = len(addresses)
        holding = self.mover.imap.holding
        out, ranges_out = self.out, None
        data = self.data
        n = len(positions)
        i = 0
        while i < n:
            die = dies[i]
            j = i + 1
            while j < n and dies[j] == die:
                j += 1
            if j == i + 2 and low_addrx[numbers[i]] and high_data4[numbers[i + 1]]:
                at = positions[i]
                index = data[at]  # a ULEB128 of one or two bytes (the scan read it whole)
                if index & 0x80:
                    index = (index & 0x7F) | data[at + 1] << 7 if data[at + 1] < 0x80 else count
                low = addresses[index] if index < count else -1
                at = positions[i + 1]
                high = low + int.from_bytes(data[at:at + 4], "little")
                run_lo, run_limit, delta = self._run
                if low >= 0 and not run_lo <= low < high <= run_limit:
                    run = holding(low, high)
                    if run is not None:
                        self._run = run
                        run_lo, run_limit, delta = run
                if run_lo <= low < high <= run_limit:
                    if ranges_out is None:
                        ranges_out = self.lists.range_output()
                    out[at:at + 4] = len(ranges_out).to_bytes(4, "little")
                    ranges_out += encode_v5_range(low + delta, high + delta)
                    i = j
                    continue
            if j == i + 2 and whats[numbers[i]] in _PAIRED and whats[numbers[i + 1]] in _PAIRED:
                self.pair(table[numbers[i]], positions[i], table[numbers[i + 1]],
                          positions[i + 1])
                i = j
                continue
            pair: list[tuple[K.Kind, int]] = []
            views: list[tuple[K.Kind, int]] = []
            self.location_list = -1
            for k in range(i, j):
                number, pos = numbers[k], positions[k]
                if exprloc[number] and data[pos] < 0x80 and \
                        data.find(3, pos + 1, pos + 1 + data[pos]) < 0:
                    continue
                kind = table[number]
                if kind.what in _PAIRED:
                    pair.append((kind, pos))
                elif kind.what == K.LOCVIEWS:
                    views.append((kind, pos))
                else:
                    self.one(kind, pos, die)
            if len(pair) == 2:
                self.pair(*pair[0], *pair[1])
            for kind, pos in views:  # once the DIE's location list is written
                size = self.header.offset_size if kind.form == K.DW_FORM_sec_offset else 4
                _put(self.out, pos, size, self.lists.views(self.location_list))
            i = j

    def _read_address(self, kind: K.Kind, pos: int) -> tuple[int, int, int]:
        """(input address, address index or -1, width of the index: bytes, or -bytes of a
        ULEB128) of an address-class value."""
        data = self.data
        if kind.form == K.DW_FORM_addr:
            return int.from_bytes(data[pos:pos + 8], "little"), -1, 0
        width = K.ADDRX_WIDTH.get(kind.form)
        if width is not None:
            index = int.from_bytes(data[pos:pos + width], "little")
        else:
            index, after = dwarf_unit.uleb(data, pos)
            width = pos - after
        return self.address_at(index), index, width

    def one(self, kind: K.Kind, pos: int, die: int) -> None:
        what, out, mover = kind.what, self.out, self.mover
        if what == K.START:
            address, index, _ = self._read_address(kind, pos)
            if index < 0:
                _put(out, pos, 8, mover.address(address))
        elif what == K.END:
            address, index, width = self._read_address(kind, pos)
            if index < 0:
                new = mover.imap.end(address)
                if new is None:
                    mover.dropped["addresses"] += 1
                _put(out, pos, 8, new or 0)
            elif self.table is not None:
                self.owner.addr.named_end(self.table, index, pos, width)
        elif what in (K.RANGES, K.LOCLIST):
            size = self.header.offset_size if kind.form == K.DW_FORM_sec_offset else \
                (4 if kind.form == K.DW_FORM_data4 else 8)
            old = int.from_bytes(self.data[pos:pos + size], "little")
            locations = what == K.LOCLIST
            name = self.lists.loc_name if locations else self.lists.rng_name
            new = self.lists.list_at(name, old, locations)
            _put(out, pos, size, new)
            if locations:
                self.location_list = new
            if not locations and die == self.unit.die_start:
                self.done.aranges.append((self.header.offset, self.lists.placed(new)))
        elif what == K.EXPRESSION:
            start, end = _block(self.data, pos, kind.form)
            if 3 in self.data[start:end]:
                moved = mover.expression(self.data[start:end], self.header.offset_size,
                                         f"{self.where}: DIE at {die:#x}")
                out[start:end] = moved
        elif what == K.STMT_LIST:
            old = int.from_bytes(self.data[pos:pos + self.header.offset_size], "little")
            new = self.owner.lines.moved(old, self.where)
            _put(out, pos, self.header.offset_size, new)
        elif what == K.INDIRECT:
            mover.dropped["values in DW_FORM_indirect"] += 1
        elif what == K.REF_ADDR:  # DWARF 2 wrote it in an address's size
            size = self.header.offset_size if self.header.version >= 3 else \
                self.header.address_size
            self.done.refs.append((self.header.offset, pos, size))

    def pair(self, first: K.Kind, first_pos: int, second: K.Kind, second_pos: int) -> None:
        """DW_AT_low_pc and DW_AT_high_pc: the ranges their code went to."""
        low_kind, low_pos, high_kind, high_pos = (first, first_pos, second, second_pos) \
            if first.what == K.PAIR_LOW else (second, second_pos, first, first_pos)
        data = self.data
        if low_kind.form == K.DW_FORM_addrx and data[low_pos] < 0x80:  # clang's, inline
            index = data[low_pos]
            low = self.address_at(index)
        else:
            low, index, _ = self._read_address(low_kind, low_pos)
        form = high_kind.form
        if form == K.DW_FORM_udata:
            high = dwarf_unit.uleb(data, high_pos)[0]
        else:
            high = int.from_bytes(data[high_pos:high_pos + _SIZES.get(form, 0)], "little")
        if form != K.DW_FORM_addr:
            high += low
        run_lo, run_limit, delta = self._run
        if not run_lo <= low < high <= run_limit:  # most functions and scopes: one run
            run = self.mover.imap.holding(low, high)
            if run is not None:
                self._run = run
                run_lo, run_limit, delta = run
        held = run_lo <= low < high <= run_limit
        ranges = [(low + delta, high + delta)] if held else \
            self.mover.ranges([(low, high, b"")])
        is_unit = low_kind.tag in K.UNIT_TAGS
        if is_unit:
            self.done.aranges.append((self.header.offset, ranges))
        out = self.out
        if high_kind.what == K.PAIR_HIGH:
            offset = self.lists.write(self.lists.rng_name, [(s, e, b"") for s, e in ranges],
                                      False) if len(ranges) != 1 or self.header.version < 5 \
                else self.lists.write_range(*ranges[0])
            value = offset.to_bytes(4, "little")
            out[high_pos:high_pos + len(value) + (4 if high_kind.padded else 0)] = \
                (_PADDED_SEC_OFFSET + value) if high_kind.padded else value
            if index < 0:
                _put(out, low_pos, 8, 0 if is_unit else low + delta if held else
                     self.mover.address(low))
            return
        # Too small a DW_AT_high_pc for an offset: the entry's range alone, the rest dropped.
        first_range = ranges[0] if ranges else (0, 0)
        self.mover.dropped["range bytes"] += sum(e - s for s, e in ranges[1:])
        if index < 0:
            _put(out, low_pos, 8, first_range[0])
        length = first_range[1] - first_range[0]
        size = _SIZES.get(form, 0)
        _put(out, high_pos, size, length if length < 1 << (8 * size) else 0)


_PAIRED = frozenset((K.PAIR_LOW, K.PAIR_HIGH, K.PAIR_HIGH_KEPT))
_SIZES = {K.DW_FORM_data1: 1, K.DW_FORM_data2: 2, K.DW_FORM_data4: 4, K.DW_FORM_data8: 8,
          K.DW_FORM_addr: 8}


def _block(data: bytes, pos: int, form: int) -> tuple[int, int]:
    """[start, end) of a block value's contents."""
    if form == K.DW_FORM_block1:
        return pos + 1, pos + 1 + data[pos]
    if form == K.DW_FORM_block2:
        return pos + 2, pos + 2 + int.from_bytes(data[pos:pos + 2], "little")
    if form == K.DW_FORM_block4:
        return pos + 4, pos + 4 + int.from_bytes(data[pos:pos + 4], "little")
    length, start = dwarf_unit.uleb(data, pos)
    return start, start + length


def _put(out: bytearray, pos: int, size: int, value: int) -> None:
    out[pos:pos + size] = value.to_bytes(size, "little")
