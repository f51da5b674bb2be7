"""Unit headers of .debug_info and .debug_types, DWARF 5 §7.5.1 (versions 2-4: §7.5.1.1 of
DWARF 4), and the values of one DIE's attributes (§7.5.4-§7.5.6), for the few DIEs a reader
decodes whole (a unit's top DIE); die_scan skips the others by their forms."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from unsplit.errors import DecodeError
from unsplit.formats import die_scan
from unsplit.formats.die_scan import Declaration, Unit
from unsplit.formats.leb128 import read_sleb, read_uleb

DW_UT_compile, DW_UT_type, DW_UT_partial = 0x01, 0x02, 0x03  # §7.5.1, Table 7.2
DW_UT_skeleton, DW_UT_split_compile, DW_UT_split_type = 0x04, 0x05, 0x06


class UnitHeader(NamedTuple):
    """One unit's header: where it is, how its DIEs are read."""

    offset: int  # of its unit_length field
    end: int  # just past the unit
    version: int
    unit_type: int  # DW_UT_* (versions 2-4: DW_UT_compile, or DW_UT_type in .debug_types)
    abbrev_offset: int
    address_size: int
    offset_size: int
    die_start: int

    @property
    def scan(self) -> Unit:
        """What die_scan needs of it."""
        return Unit(self.die_start, self.end, self.version, self.address_size,
                    self.offset_size)


def unit_headers(data: bytes, section: str = ".debug_info") -> Iterator[UnitHeader]:
    """Every unit of the section, in order; DecodeError (after the good ones) where a header
    does not parse or a unit runs past the section: what follows cannot be found."""
    pos = 0
    size = len(data)
    while pos < size:
        header = read_header(data, pos, section)
        yield header
        pos = header.end


def read_header(data: bytes, pos: int, section: str) -> UnitHeader:
    """The header of the unit at `pos`."""
    start = pos
    if pos + 4 > len(data):
        raise DecodeError(section, pos, "a unit header runs past the end of the section")
    length = int.from_bytes(data[pos:pos + 4], "little")
    offset_size, pos = 4, pos + 4
    if length == 0xFFFFFFFF:
        length = int.from_bytes(data[pos:pos + 8], "little")
        offset_size, pos = 8, pos + 8
    elif length >= 0xFFFFFFF0:
        raise DecodeError(section, start, f"reserved unit length {length:#x}")
    end = pos + length
    if end > len(data) or length < 2:
        raise DecodeError(section, start, f"the unit's length {length:#x} runs past the end "
                          "of the section")
    version = int.from_bytes(data[pos:pos + 2], "little")
    pos += 2
    if not 2 <= version <= 5:
        raise DecodeError(section, start, f"unit version {version} (2 to 5 are read)")
    unit_type = DW_UT_type if section == ".debug_types" else DW_UT_compile
    if version >= 5:
        unit_type, address_size = data[pos], data[pos + 1]
        abbrev = int.from_bytes(data[pos + 2:pos + 2 + offset_size], "little")
        pos += 2 + offset_size
        if unit_type in (DW_UT_type, DW_UT_split_type):
            pos += 8 + offset_size  # type_signature, type_offset
        elif unit_type in (DW_UT_skeleton, DW_UT_split_compile):
            pos += 8  # dwo_id
        elif unit_type not in (DW_UT_compile, DW_UT_partial):
            raise DecodeError(section, start, f"unit type {unit_type:#x} unknown")
    else:
        abbrev = int.from_bytes(data[pos:pos + offset_size], "little")
        address_size = data[pos + offset_size]
        pos += offset_size + 1
        if unit_type == DW_UT_type:
            pos += 8 + offset_size
    if address_size not in (4, 8):
        raise DecodeError(section, start, f"address size {address_size} (4 or 8 are read)")
    if pos > end:
        raise DecodeError(section, start, "the unit header is longer than the unit")
    return UnitHeader(start, end, version, unit_type, abbrev, address_size, offset_size, pos)


Value = int | bytes  # a number, or the bytes of a block, exprloc or inline string


def die_values(data: bytes, pos: int, unit: Unit, decl: Declaration
               ) -> tuple[list[tuple[int, int, int, Value]], int]:
    """The attributes of the DIE whose attributes start at `pos`, as (attribute, form, value
    offset, value), and the offset after them. DW_FORM_indirect gives the form it names."""
    out: list[tuple[int, int, int, Value]] = []
    for attribute, form in decl.specs:
        if form == die_scan.DW_FORM_indirect:
            form, pos = uleb(data, pos)
        at = pos
        value: Value
        size = die_scan.form_size(form, unit)
        if form == die_scan.DW_FORM_implicit_const:
            value = 0
        elif size is not None:
            value = int.from_bytes(data[pos:pos + size], "little")
            pos += size
        else:
            after = die_scan.skip_value(data, pos, form, unit)
            if form in _LEB_FORMS:
                value = uleb(data, pos)[0] if form != 0x0D else _sleb(data, pos)
            else:
                value = bytes(data[pos:after])
            pos = after
        if pos > len(data):
            raise DecodeError(die_scan.SECTION, at, "a value runs past the end of the section")
        out.append((attribute, form, at, value))
    return out, pos


_LEB_FORMS = frozenset((0x0D, 0x0F, 0x15, 0x1A, 0x1B, 0x22, 0x23, 0x1F01, 0x1F02))


def block_contents(form: int, value: bytes) -> tuple[int, bytes]:
    """(length of the block's own length field, its contents) of a block or exprloc value
    as die_values gives it (the length field included)."""
    if form == 0x0A:  # block1
        return 1, value[1:]
    if form == 0x03:  # block2
        return 2, value[2:]
    if form == 0x04:  # block4
        return 4, value[4:]
    _, start = uleb(value, 0)
    return start, value[start:]


def uleb(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """The ULEB128 at `pos` of .debug_info and the offset after it."""
    return read_uleb(data, pos, len(data), die_scan.SECTION)


def _sleb(data: bytes | memoryview, pos: int) -> int:
    return read_sleb(data, pos, len(data), die_scan.SECTION)[0]
