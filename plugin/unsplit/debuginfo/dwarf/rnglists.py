"""Range lists, .debug_rnglists, DWARF 5 §7.28 (header) and §2.17.3 (entries): one contribution
for the whole file (DW_AT_ranges in DW_FORM_sec_offset points into it, §7.5.5), each list made of
DW_RLE_start_length entries ended by DW_RLE_end_of_list."""

from __future__ import annotations

import struct

from unsplit.formats.leb128 import encode_uleb128 as uleb

DW_RLE_end_of_list = 0x00
DW_RLE_start_length = 0x07
_START = struct.Struct("<BQ")
_START_SHORT = struct.Struct("<BQB")
_START_TWO = struct.Struct("<BQBB")


class RangeLists:
    HEADER = 12  # unit_length, version, address_size, segment_selector_size, offset_entry_count

    def __init__(self, start: int = 0) -> None:
        self.start = start  # where the contribution goes in the section
        self.data = bytearray(struct.pack("<IHBBI", 0, 5, 8, 0, 0))

    def add(self, ranges: list[tuple[int, int]]) -> int:
        """Writes [start, end) ranges as one list; returns its section offset."""
        offset = self.start + len(self.data)
        data = self.data
        for start, end in ranges:
            length = end - start
            if 0 <= length < 0x80:  # a ULEB128 of one or two bytes: one pack (nearly all of
                data += _START_SHORT.pack(DW_RLE_start_length, start, length)  # libLLVM's)
            elif 0x80 <= length < 0x4000:
                data += _START_TWO.pack(DW_RLE_start_length, start, length & 0x7F | 0x80,
                                        length >> 7)
            else:
                data += _START.pack(DW_RLE_start_length, start)
                data += uleb(length)
        data.append(DW_RLE_end_of_list)
        return offset

    def finish(self) -> bytes:
        struct.pack_into("<I", self.data, 0, len(self.data) - 4)
        return bytes(self.data)
