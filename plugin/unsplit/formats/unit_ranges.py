"""The code ranges of each compile unit, from its top DIE (DWARF 5 §3.1.1: DW_AT_low_pc and
DW_AT_high_pc, or DW_AT_ranges with DW_AT_low_pc as the lists' base address), read from the
sections' bytes: which unit covers an address, where .debug_aranges is missing (clang writes
none by default); and where its line program starts (DW_AT_stmt_list: `bb break FILE:LINE`).

Why by hand: pyelftools parses each unit's whole abbreviation table into objects to read one
DIE, a cost every session's first `bt` and `bb break` on a libc with debug info paid
(docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

from unsplit.errors import DecodeError
from unsplit.formats import die_scan, dwarf_lists
from unsplit.formats.dwarf_unit import UnitHeader, Value, die_values, read_header, uleb

DW_AT_stmt_list, DW_AT_low_pc, DW_AT_high_pc, DW_AT_ranges = 0x10, 0x11, 0x12, 0x55
DW_TAG_inlined_subroutine = 0x1D
DW_AT_addr_base, DW_AT_rnglists_base, DW_AT_GNU_addr_base = 0x73, 0x74, 0x2133
DW_FORM_addr, DW_FORM_sec_offset, DW_FORM_rnglistx = 0x01, 0x17, 0x23
_ADDRX = frozenset((0x1B, 0x29, 0x2A, 0x2B, 0x2C, 0x1F01))  # addrx, addrx1-4, GNU_addr_index
_DW_UT_compile_units = frozenset((0x01, 0x03, 0x04))  # compile, partial, skeleton


class Sections(NamedTuple):
    """The bytes the ranges are read from (b"" for a section the file lacks)."""

    info: bytes
    abbrev: bytes
    addr: bytes = b""
    rnglists: bytes = b""
    ranges: bytes = b""


def unit_ranges(sections: Sections) -> Iterator[tuple[int, list[tuple[int, int]] | DecodeError]]:
    """(offset of the unit, its non-empty [lo, hi) ranges, or why they cannot be read) for each
    compile unit in order; DecodeError is raised where a unit header does not parse (what
    follows cannot be found)."""
    pos = 0
    while pos < len(sections.info):
        header = read_header(sections.info, pos, ".debug_info")
        pos = header.end
        if header.unit_type not in _DW_UT_compile_units:
            continue
        try:
            yield header.offset, _ranges(sections, header)
        except DecodeError as e:
            yield header.offset, e


def line_programs(sections: Sections) -> Iterator[tuple[int, int | DecodeError | None]]:
    """(offset of the unit, where its line program starts in .debug_line or None when it has
    none, or why that cannot be read) for every unit in order; DecodeError is raised where a
    unit header does not parse."""
    pos = 0
    while pos < len(sections.info):
        header = read_header(sections.info, pos, ".debug_info")
        pos = header.end
        try:
            yield header.offset, _number(_top_attributes(sections, header), DW_AT_stmt_list,
                                         header)
        except DecodeError as e:
            yield header.offset, e


def _top_attributes(s: Sections, header: UnitHeader) -> dict[int, tuple[int, Value]]:
    """attribute -> (form, value) of the unit's first DIE (none when it has no DIE)."""
    code, pos = uleb(s.info, header.die_start)
    if code == 0:
        return {}
    decl = _declaration(s.abbrev, header.abbrev_offset, code)
    if decl is None:
        raise DecodeError(".debug_info", header.die_start,
                          f"abbreviation {code} of the unit's first DIE is not in its table")
    return {a: (form, value) for a, form, _, value in die_values(s.info, pos, header.scan,
                                                                 decl)[0]}


def _ranges(s: Sections, header: UnitHeader) -> list[tuple[int, int]]:
    top = _top_die(s, header)
    if top is None:
        return []
    attrs, address = top
    low = attrs.get(DW_AT_low_pc)
    base = address(*_int(low, header)) if low is not None else 0
    if DW_AT_ranges in attrs:
        return _range_list(s, header, attrs, base, address)
    high = attrs.get(DW_AT_high_pc)
    if low is None or high is None:
        return []
    form, value = _int(high, header)
    end = address(form, value) if form == DW_FORM_addr or form in _ADDRX else base + value
    return [(base, end)] if end > base else []


def inlined_ranges(s: Sections, unit_offset: int) -> list[tuple[int, int]]:
    """The [lo, hi) ranges of every DW_TAG_inlined_subroutine of the unit at `unit_offset`
    that says where its code is (its DW_AT_low_pc/high_pc pair, else DW_AT_ranges from the
    unit's base address, as unsplit.elf.dwarf_lines.die_ranges reads a DIE): where none covers
    an address, no call is inlined there, and no DIE need be parsed to learn it."""
    header = read_header(s.info, unit_offset, ".debug_info")
    top = _top_die(s, header)
    if top is None:
        return []
    abbrevs = die_scan.abbreviations(s.abbrev, header.abbrev_offset)
    found = die_scan.offsets_with(s.info, header.scan, abbrevs, DW_TAG_inlined_subroutine,
                                  frozenset((DW_AT_low_pc, DW_AT_ranges)))
    if not found:
        return []
    attrs, address = top
    low = attrs.get(DW_AT_low_pc)
    base = address(*_int(low, header)) if low is not None else 0
    decls = die_scan.declarations(s.abbrev, header.abbrev_offset)
    out: list[tuple[int, int]] = []
    for at in found:
        code, pos = uleb(s.info, at)
        own = {a: (form, value) for a, form, _, value in
               die_values(s.info, pos, header.scan, decls[code])[0]}
        low, high = own.get(DW_AT_low_pc), own.get(DW_AT_high_pc)
        if low is not None and high is not None:
            lo = address(*_int(low, header))
            form, value = _int(high, header)
            end = address(form, value) if form == DW_FORM_addr or form in _ADDRX else lo + value
            out.extend([(lo, end)] if end > lo else [])
        elif DW_AT_ranges in own:
            out.extend(_range_list(s, header, {**attrs, DW_AT_ranges: own[DW_AT_ranges]}, base,
                                   address))
    return out


def _top_die(s: Sections, header: UnitHeader) -> tuple[dict[int, tuple[int, Value]],
                                                       Callable[[int, int], int]] | None:
    """The unit's first DIE's attributes and the reader of its addresses (a DW_FORM_addrx
    index through the unit's DW_AT_addr_base); None for a unit without DIEs."""
    attrs = _top_attributes(s, header)
    if not attrs:
        return None
    addr_base = _number(attrs, DW_AT_addr_base, header) or _number(attrs, DW_AT_GNU_addr_base,
                                                                   header)

    def address(form: int, value: int) -> int:
        if form not in _ADDRX:
            return value
        if addr_base is None and header.version >= 5:
            raise DecodeError(".debug_info", header.offset,
                              "an indexed address without the unit's DW_AT_addr_base")
        at = (addr_base or 0) + value * header.address_size
        if at + header.address_size > len(s.addr):
            raise DecodeError(".debug_addr", at, "an address index past the end of the section")
        return int.from_bytes(s.addr[at:at + header.address_size], "little")

    return attrs, address


def _range_list(s: Sections, header: UnitHeader, attrs: dict[int, tuple[int, Value]],
                base: int, address: Callable[[int, int], int]) -> list[tuple[int, int]]:
    form, value = _int(attrs[DW_AT_ranges], header)
    if header.version < 5:
        entries = dwarf_lists.read_v4_list(s.ranges, value, ".debug_ranges", False,
                                           header.address_size, base)
    else:
        if form == DW_FORM_rnglistx:
            lists_base = _number(attrs, DW_AT_rnglists_base, header)
            if lists_base is None:
                raise DecodeError(".debug_info", header.offset,
                                  "DW_FORM_rnglistx without the unit's DW_AT_rnglists_base")
            at = lists_base + value * header.offset_size
            if at + header.offset_size > len(s.rnglists):
                raise DecodeError(".debug_rnglists", at, "a list index past the end of the "
                                  "section")
            value = lists_base + int.from_bytes(s.rnglists[at:at + header.offset_size],
                                                "little")
        entries = dwarf_lists.read_v5_list(
            s.rnglists, value, ".debug_rnglists", False, header.address_size, base,
            lambda index: address(0x1B, index))
    return [(lo, hi) for lo, hi, _ in entries if hi > lo]


def _declaration(data: bytes, offset: int, code: int) -> die_scan.Declaration | None:
    """Declaration `code` of the abbreviation table at `offset`, read up to it only (a unit's
    first DIE has the first code, most often: a clang unit's table has hundreds)."""
    return next((d for d in die_scan.each_declaration(data, offset) if d.code == code), None)


_ABBREV = ".debug_abbrev"


def _int(attr: tuple[int, Value], header: UnitHeader) -> tuple[int, int]:
    form, value = attr
    if not isinstance(value, int):
        raise DecodeError(".debug_info", header.die_start,
                          f"an attribute of form {form:#x} of the unit's DIE is not a number")
    return form, value


def _number(attrs: dict[int, tuple[int, Value]], attribute: int, header: UnitHeader
            ) -> int | None:
    found = attrs.get(attribute)
    return None if found is None else _int(found, header)[1]
