""".debug_addr (DWARF 5 §7.27): each unit's table of addresses (DW_FORM_addrx, DW_OP_addrx,
list entries), read from the input and written again with every address moved.

An entry is moved as where code begins (InputMap.start), unless every value that names it is
an address right after something (a call's return address): then as such (InputMap.end). An
entry named both ways, whose two answers differ, gets a second entry for the return
addresses, appended to its table, where the index fits the value's form."""

from __future__ import annotations

import struct

from unsplit.errors import DecodeError
from unsplit.index.bolt.input_map import InputMap

SECTION = ".debug_addr"
_START, _END = 1, 2


class AddrTable:
    """One contribution: the input's addresses, how each is named, what was added."""

    __slots__ = ("addresses", "base", "ends", "extra", "new_base", "uses")

    def __init__(self, base: int, addresses: list[int], uses: bytearray) -> None:
        self.base = base  # the input's DW_AT_addr_base
        self.addresses = addresses
        self.uses = uses
        self.extra: list[int] = []  # addresses appended
        self.ends: list[tuple[int, int, int]] = []  # (index, place, width)
        self.new_base = 0


class AddrTables:
    """The tables units name, by their input base, in the order first named."""

    def __init__(self, data: bytes | None) -> None:
        self.data = data or b""
        self.tables: dict[int, AddrTable] = {}

    def table(self, base: int) -> AddrTable:
        found = self.tables.get(base)
        if found is None:
            found = self.tables[base] = self._read(base)
        return found

    def _read(self, base: int) -> AddrTable:
        data = self.data
        if base < 8 or base > len(data):
            raise DecodeError(SECTION, base, "no table at the unit's DW_AT_addr_base")
        length = int.from_bytes(data[base - 8:base - 4], "little")
        version, size, segment = struct.unpack_from("<HBB", data, base - 4)
        end = base - 4 + length
        if version != 5 or size != 8 or segment != 0 or end > len(data) or length < 4:
            raise DecodeError(SECTION, base - 8, "not a version 5 table of 8-byte addresses")
        count = (end - base) // 8
        addresses = list(struct.unpack_from(f"<{count}Q", data, base))
        return AddrTable(base, addresses, bytearray(count))

    def address(self, table: AddrTable, index: int) -> int:
        if index >= len(table.addresses):
            raise DecodeError(SECTION, table.base, f"index {index} past the unit's "
                              f"{len(table.addresses)} addresses")
        return table.addresses[index]

    def named_start(self, table: AddrTable, index: int) -> None:
        if index < len(table.uses):
            table.uses[index] |= _START

    def named_end(self, table: AddrTable, index: int, place: int, width: int) -> None:
        """A return address names entry `index` from `width` bytes at `place` of
        .debug_info (0: a ULEB128 of that many bytes is -width)."""
        if index < len(table.uses):
            table.uses[index] |= _END
            table.ends.append((index, place, width))

    def write(self, imap: InputMap, info: bytearray) -> tuple[bytes, int]:
        """The new .debug_addr, with return addresses' second entries patched into `info`,
        and how many addresses no output place was found for (written as 0)."""
        out = bytearray()
        unplaced = 0
        for table in self.tables.values():
            moved: list[int] = []
            for address, uses in zip(table.addresses, table.uses, strict=True):
                new = imap.end(address) if uses == _END else imap.start(address)
                if new is None:
                    unplaced += 1
                moved.append(new or 0)
            extra: dict[int, int] = {}
            for index, place, width in table.ends:
                if table.uses[index] == _END:
                    continue
                new = imap.end(table.addresses[index])
                if new is None or new == moved[index]:
                    continue
                number = extra.get(new)
                if number is None:
                    number = extra[new] = len(moved) + len(extra)
                if not _patch_index(info, place, width, number):
                    unplaced += 1
            moved += list(extra)
            header = struct.pack("<IHBB", 4 + 8 * len(moved), 5, 8, 0)
            out += header
            table.new_base = len(out)
            out += struct.pack(f"<{len(moved)}Q", *moved)
        return bytes(out), unplaced


def _patch_index(info: bytearray, place: int, width: int, number: int) -> bool:
    """Writes `number` over an address index in place; False when it does not fit."""
    if width > 0:
        if number >= 1 << (8 * width):
            return False
        info[place:place + width] = number.to_bytes(width, "little")
        return True
    size = -width
    if number >= 1 << (7 * size):
        return False
    for i in range(size):
        byte = (number >> (7 * i)) & 0x7F
        info[place + i] = byte | (0x80 if i + 1 < size else 0)
    return True
