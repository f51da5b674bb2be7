"""One line number program of .debug_line, version 5, DWARF 5 §6.2: the header of §6.2.4 (file
and directory tables with DW_LNCT_path as DW_FORM_line_strp, §6.2.4.1) and the opcodes of §6.2.5,
encoded as rows arrive (special opcodes where they fit), so no row is kept as an object."""

from __future__ import annotations

import os
import struct

from unsplit.debuginfo.dwarf.strings import StringTable
from unsplit.formats.leb128 import encode_sleb128 as sleb
from unsplit.formats.leb128 import encode_uleb128 as uleb

# §6.2.5.2 standard opcodes, §6.2.5.3 extended opcodes, §6.2.4.1 content types (Table 7.27).
DW_LNS_copy = 0x01
DW_LNS_advance_pc = 0x02
DW_LNS_advance_line = 0x03
DW_LNS_set_file = 0x04
DW_LNS_set_column = 0x05
DW_LNS_negate_stmt = 0x06
DW_LNE_end_sequence = 0x01
DW_LNE_set_address = 0x02
DW_LNCT_path = 0x1
DW_LNCT_directory_index = 0x2
DW_FORM_udata = 0x0F
DW_FORM_line_strp = 0x1F

LINE_BASE, LINE_RANGE, OPCODE_BASE = -5, 14, 13
STANDARD_LENGTHS = bytes([0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1])  # opcodes 1..12


class LineProgram:
    """The rows of one compile unit; file 0 is the unit's primary source file (§6.2.4 item 20)."""

    def __init__(self, comp_dir: str, primary: str, line_strings: StringTable) -> None:
        self.strings = line_strings
        self.directories: list[str] = [comp_dir]
        self.files: list[tuple[str, int]] = []
        self._file_index: dict[str, int] = {}
        self._dir_index: dict[str, int] = {comp_dir: 0}
        self.program = bytearray()
        self.file(primary)
        self._in_sequence = False
        self._reset()

    def _reset(self) -> None:
        self._address, self._file, self._line, self._column, self._stmt = 0, 1, 1, 0, True

    def file(self, path: str) -> int:
        """The file number of `path` (added on first use)."""
        found = self._file_index.get(path)
        if found is None:
            directory, name = os.path.split(path)
            d = self._dir_index.get(directory)
            if d is None:
                d = self._dir_index[directory] = len(self.directories)
                self.directories.append(directory)
            found = self._file_index[path] = len(self.files)
            self.files.append((name, d))
        return found

    def row(self, address: int, path: str, line: int, column: int = 0,
            is_stmt: bool = True) -> None:
        """Appends a row; a new sequence begins at the first row and after end_sequence."""
        out = self.program
        if not self._in_sequence:
            out += b"\0" + uleb(9) + bytes([DW_LNE_set_address]) + struct.pack("<Q", address)
            self._address, self._in_sequence = address, True
        file = self.file(path)
        if file != self._file:
            out += bytes([DW_LNS_set_file]) + uleb(file)
            self._file = file
        if column != self._column:
            out += bytes([DW_LNS_set_column]) + uleb(column)
            self._column = column
        if is_stmt != self._stmt:
            out.append(DW_LNS_negate_stmt)
            self._stmt = is_stmt
        advance, delta = address - self._address, line - self._line
        if advance < 0:
            raise ValueError(f"line rows out of order at {address:#x}")
        if not LINE_BASE <= delta < LINE_BASE + LINE_RANGE:
            out += bytes([DW_LNS_advance_line]) + sleb(delta)
            delta = 0
        special = (delta - LINE_BASE) + LINE_RANGE * advance + OPCODE_BASE
        if special <= 255:
            out.append(special)
        else:
            out += bytes([DW_LNS_advance_pc]) + uleb(advance)
            if delta:
                out += bytes([DW_LNS_advance_line]) + sleb(delta)
            out.append(DW_LNS_copy)
        self._address, self._line = address, line

    def end_sequence(self, end: int) -> None:
        """Ends the current sequence at `end` (one past its last byte)."""
        if not self._in_sequence:
            return
        if end > self._address:
            self.program += bytes([DW_LNS_advance_pc]) + uleb(end - self._address)
        self.program += b"\0" + uleb(1) + bytes([DW_LNE_end_sequence])
        self._in_sequence = False
        self._reset()

    def encode(self) -> bytes:
        """The whole unit: §6.2.4 header, then the program."""
        s = self.strings
        header = bytearray()
        header += bytes([1, 1, 1]) + struct.pack("<bBB", LINE_BASE, LINE_RANGE, OPCODE_BASE)
        header += STANDARD_LENGTHS
        header += bytes([1]) + uleb(DW_LNCT_path) + uleb(DW_FORM_line_strp)
        header += uleb(len(self.directories))
        for directory in self.directories:
            header += struct.pack("<I", s.offset(directory))
        header += bytes([2]) + uleb(DW_LNCT_path) + uleb(DW_FORM_line_strp) + \
            uleb(DW_LNCT_directory_index) + uleb(DW_FORM_udata)
        header += uleb(len(self.files))
        for name, directory_index in self.files:
            header += struct.pack("<I", s.offset(name)) + uleb(directory_index)
        after_length = struct.pack("<HBB", 5, 8, 0) + struct.pack("<I", len(header))
        body = after_length + bytes(header) + bytes(self.program)
        return struct.pack("<I", len(body)) + body
