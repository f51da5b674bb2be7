"""Address ranges by compile unit, .debug_aranges, DWARF 5 §6.1.2 and §7.21: per unit a header
(version 2), padding to twice the address size, (address, length) pairs, a (0, 0) terminator."""

from __future__ import annotations

import struct


class ArangesWriter:
    def __init__(self) -> None:
        self.data = bytearray()

    def add(self, info_offset: int, ranges: list[tuple[int, int]]) -> None:
        start = len(self.data)
        self.data += struct.pack("<IHIBB", 0, 2, info_offset, 8, 0)
        self.data += b"\0" * 4  # the tuples begin at a multiple of 16 from the set's start
        for low, high in ranges:
            self.data += struct.pack("<QQ", low, high - low)
        self.data += struct.pack("<QQ", 0, 0)
        struct.pack_into("<I", self.data, start, len(self.data) - start - 4)

    def finish(self) -> bytes:
        return bytes(self.data)
