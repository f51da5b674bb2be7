"""Compile units of .debug_info, DWARF 5 §7.5.1.1 (unit header) and §7.5.2-§7.5.6 (DIEs):
a DIE is its abbreviation code then each attribute's value in its form; a DIE with children
ends them with a 0 code."""

from __future__ import annotations

import struct

from unsplit.debuginfo.dwarf import abbrev as A
from unsplit.debuginfo.dwarf.abbrev import AbbrevTable
from unsplit.formats.leb128 import encode_uleb128 as uleb

DW_UT_compile = 0x01  # §7.5.1, Table 7.2

Value = int | bytes


class InfoWriter:
    """Appends units and DIEs to one .debug_info; DIE offsets are section offsets."""

    def __init__(self, abbrevs: AbbrevTable, start: int = 0, abbrev_offset: int = 0) -> None:
        self.abbrevs = abbrevs
        self.data = bytearray()
        self.start = start  # where these units go in .debug_info
        self.abbrev_offset = abbrev_offset  # where `abbrevs` goes in .debug_abbrev
        self._unit_start = 0

    def begin_unit(self) -> int:
        """Starts a DWARF 5 compile unit (32-bit format, 8-byte addresses); returns its offset."""
        self._unit_start = len(self.data)
        self.data += struct.pack("<IHBBI", 0, 5, DW_UT_compile, 8, self.abbrev_offset)
        return self.start + self._unit_start

    def end_unit(self) -> None:
        self.data += b"\0"  # closes the compile unit DIE's children
        length = len(self.data) - self._unit_start - 4
        struct.pack_into("<I", self.data, self._unit_start, length)

    def die(self, tag: int, children: bool, attributes: list[tuple[int, int, Value]]) -> int:
        """Writes one DIE; returns its section offset (for DW_FORM_ref4, less the unit's)."""
        offset = len(self.data)
        shape = tuple((a, f) for a, f, _ in attributes)
        self.data += uleb(self.abbrevs.code(tag, children, shape))
        for _, form, value in attributes:
            self.data += _encode(form, value)
        return offset

    def end_children(self) -> None:
        self.data += b"\0"

    def unit_relative(self, offset: int) -> int:
        return offset - self._unit_start


def _encode(form: int, value: Value) -> bytes:
    if isinstance(value, bytes):
        return value
    if form in (A.DW_FORM_addr, A.DW_FORM_data8):
        return struct.pack("<Q", value)
    if form in (A.DW_FORM_strp, A.DW_FORM_line_strp, A.DW_FORM_sec_offset, A.DW_FORM_data4,
                A.DW_FORM_ref4):
        return struct.pack("<I", value)
    if form == A.DW_FORM_data2:
        return struct.pack("<H", value)
    if form == A.DW_FORM_udata:
        return uleb(value)
    if form == A.DW_FORM_flag_present:
        return b""
    raise ValueError(f"form {form:#x} is not written by this writer")
