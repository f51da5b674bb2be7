"""Line number programs of .debug_line, versions 2 to 5 (DWARF 5 §6.2; §6.2.4 the header,
§6.2.5 the opcodes): a program's rows, decoded as tuples, and rows encoded back into a program
for the same header. The header itself (its file and directory tables) is not decoded: a
writer that keeps a unit's file numbers copies it whole, and only needs where it ends.
"""

from __future__ import annotations

from typing import NamedTuple

from unsplit.errors import DecodeError
from unsplit.formats.leb128 import encode_sleb128 as sleb
from unsplit.formats.leb128 import encode_uleb128 as uleb
from unsplit.formats.leb128 import read_sleb, read_uleb

SECTION = ".debug_line"
# A row: address, file, line, column, flags, isa, discriminator.
Row = tuple[int, int, int, int, int, int, int]
IS_STMT, BASIC_BLOCK, PROLOGUE_END, EPILOGUE_BEGIN = 1, 2, 4, 8
PROGRAM_FLAGS_ONCE = PROLOGUE_END | EPILOGUE_BEGIN  # mark one place in a function
_MASK = (1 << 64) - 1
_WRITTEN_OPCODES = 7  # ProgramWriter writes standard opcodes 1 to 7 (10 to 12 where they are)


class LineHeader(NamedTuple):
    """What running and writing a program needs of its header."""

    offset: int  # of its unit_length
    end: int  # just past the program
    version: int
    offset_size: int
    header_start: int  # of the version field: the header is copied from here...
    program_start: int  # ...to here
    min_inst_length: int
    default_is_stmt: bool
    line_base: int
    line_range: int
    opcode_base: int
    opcode_lengths: bytes  # of the standard opcodes 1 .. opcode_base - 1
    tables_start: int = 0  # where the directory and file tables begin (file_table)


def read_header(data: bytes, offset: int) -> LineHeader:
    """The header of the program at `offset` (a unit's DW_AT_stmt_list)."""
    if offset + 4 > len(data):
        raise DecodeError(SECTION, offset, "the program's header runs past the end")
    length = int.from_bytes(data[offset:offset + 4], "little")
    offset_size, pos = 4, offset + 4
    if length == 0xFFFFFFFF:
        length = int.from_bytes(data[pos:pos + 8], "little")
        offset_size, pos = 8, pos + 8
    end = pos + length
    header_start = pos
    if end > len(data):
        raise DecodeError(SECTION, offset, f"the program's length {length:#x} runs past the "
                          "end of the section")
    version = int.from_bytes(data[pos:pos + 2], "little")
    if not 2 <= version <= 5:
        raise DecodeError(SECTION, offset, f"line table version {version} (2 to 5 are read)")
    pos += 2
    if version >= 5:
        pos += 2  # address_size, segment_selector_size
    header_length = int.from_bytes(data[pos:pos + offset_size], "little")
    pos += offset_size
    program_start = pos + header_length
    if pos + 6 > end:
        raise DecodeError(SECTION, offset, "the header is longer than the program")
    min_inst = data[pos]
    pos += 2 if version >= 4 else 1  # maximum_operations_per_instruction (VLIW) is not used
    default_is_stmt, line_base, line_range, opcode_base = (
        data[pos] != 0, int.from_bytes(data[pos + 1:pos + 2], "little", signed=True),
        data[pos + 2], data[pos + 3])
    lengths = data[pos + 4:pos + 4 + max(opcode_base - 1, 0)]
    if program_start > end or pos + 4 + len(lengths) > program_start:
        raise DecodeError(SECTION, offset, "the header is longer than the program")
    if line_range == 0 or opcode_base == 0 or min_inst == 0:
        raise DecodeError(SECTION, offset, "line_range, opcode_base or minimum_instruction_"
                          "length 0 in the header")
    return LineHeader(offset, end, version, offset_size, header_start, program_start,
                      min_inst, default_is_stmt, line_base, line_range, opcode_base,
                      bytes(lengths), pos + 4 + len(lengths))


# §6.2.4.1 (DWARF 5): the content types and forms a directory or file entry is read in.
_LNCT_PATH, _LNCT_DIRECTORY_INDEX = 1, 2
_FORM_SIZES = {0x0B: 1, 0x05: 2, 0x06: 4, 0x07: 8, 0x1E: 16}  # data1, data2, data4, data8, data16
_FORM_STRING, _FORM_STRP, _FORM_LINE_STRP, _FORM_UDATA, _FORM_BLOCK = 0x08, 0x0E, 0x1F, 0x0F, 0x09


def file_table(data: bytes, h: LineHeader, debug_str: bytes, line_str: bytes
               ) -> tuple[list[str], list[tuple[str, int]]]:
    """The header's directories and its files as (name, directory index), in file number
    order (DWARF 5 numbers them from 0, earlier versions from 1): §6.2.4 items 11-20 (DWARF
    4: include_directories and file_names). A form a DWARF 5 entry does not use for a name or
    an index here (strx: an index into the unit's string offsets) is a DecodeError."""
    pos, end = h.tables_start, min(h.program_start, len(data))
    if h.version < 5:
        dirs: list[str] = []
        while True:
            name, pos = _cstring(data, pos, end)
            if not name:
                break
            dirs.append(name)
        files: list[tuple[str, int]] = []
        while True:
            name, pos = _cstring(data, pos, end)
            if not name:
                return dirs, files
            index, pos = read_uleb(data, pos, end, SECTION)
            for _ in range(2):  # modification time, length
                _, pos = read_uleb(data, pos, end, SECTION)
            files.append((name, index))
    strings = (debug_str, line_str)
    directories, pos = _entries(data, pos, end, h.offset_size, strings)
    entries, pos = _entries(data, pos, end, h.offset_size, strings)
    return [name for name, _ in directories], entries


def _entries(data: bytes, pos: int, end: int, offset_size: int, strings: tuple[bytes, bytes]
             ) -> tuple[list[tuple[str, int]], int]:
    """One DWARF 5 entry table: its format, its count, then (path, directory index) of each."""
    if pos >= end:
        raise DecodeError(SECTION, pos, "an entry format runs past the header")
    count = data[pos]
    pos += 1
    formats = []
    for _ in range(count):
        kind, pos = read_uleb(data, pos, end, SECTION)
        form, pos = read_uleb(data, pos, end, SECTION)
        formats.append((kind, form))
    n, pos = read_uleb(data, pos, end, SECTION)
    out = []
    for _ in range(n):
        name, index = "", 0
        for kind, form in formats:
            value: int | str
            if form == _FORM_STRING:
                value, pos = _cstring(data, pos, end)
            elif form in (_FORM_STRP, _FORM_LINE_STRP):
                offset = int.from_bytes(data[pos:pos + offset_size], "little")
                pos += offset_size
                value = _cstring(strings[form == _FORM_LINE_STRP], offset, None)[0]
            elif form == _FORM_UDATA:
                value, pos = read_uleb(data, pos, end, SECTION)
            elif form == _FORM_BLOCK:
                size, pos = read_uleb(data, pos, end, SECTION)
                value, pos = 0, pos + size
            elif form in _FORM_SIZES:
                value = int.from_bytes(data[pos:pos + _FORM_SIZES[form]], "little")
                pos += _FORM_SIZES[form]
            else:
                raise DecodeError(SECTION, pos, f"a file entry in form {form:#x}")
            if kind == _LNCT_PATH:
                if not isinstance(value, str):
                    raise DecodeError(SECTION, pos, "a file entry's path is not a string")
                name = value
            elif kind == _LNCT_DIRECTORY_INDEX and isinstance(value, int):
                index = value
        if pos > end:
            raise DecodeError(SECTION, pos, "the file table runs past the header")
        out.append((name, index))
    return out, pos


def _cstring(data: bytes, pos: int, end: int | None) -> tuple[str, int]:
    """The NUL-terminated string at `pos` (before `end`) and the offset after it."""
    nul = data.find(b"\0", pos, len(data) if end is None else end)
    if nul < 0 or pos < 0:
        raise DecodeError(SECTION, pos, "a string runs past the end")
    return data[pos:nul].decode("utf-8", "replace"), nul + 1


def sequences(data: bytes, h: LineHeader, marks: list[list[int]] | None = None
              ) -> list[tuple[list[Row], int]]:
    """Each sequence of the program: its rows in program order and its end address (`marks`,
    when given, gets for each sequence the offset in `data` right after each row's opcode:
    the opcodes between two marks make the second row from the first's state)."""
    out: list[tuple[list[Row], int]] = []
    ends: list[int] = []
    mark = ends.append if marks is not None else None
    min_len, line_base, line_range, opcode_base = (h.min_inst_length, h.line_base,
                                                   h.line_range, h.opcode_base)
    lengths = h.opcode_lengths
    const_add = min_len * ((255 - opcode_base) // line_range)
    # each special opcode's address and line advance, worked out once
    advances = [min_len * ((op - opcode_base) // line_range) for op in range(256)]
    steps = [line_base + (op - opcode_base) % line_range for op in range(256)]
    stmt0 = IS_STMT if h.default_is_stmt else 0
    address, file, line, column, flags, isa, disc = 0, 1, 1, 0, stmt0, 0, 0
    rows: list[Row] = []
    pos, end = h.program_start, h.end
    # every read below is checked against `end`; the standard opcodes clang writes most
    # (set_column, advance_line, negate_stmt) are asked first
    while pos < end:
        op = data[pos]
        pos += 1
        if op >= opcode_base:
            address = (address + advances[op]) & _MASK
            line += steps[op]
            rows.append((address, file, line, column, flags, isa, disc))
            flags &= IS_STMT
            disc = 0
            if mark is not None:
                mark(pos)
        elif op == 5:
            column = data[pos] if pos < end else 0x80
            if column < 0x80:
                pos += 1
            else:
                column, pos = read_uleb(data, pos, end, SECTION)
        elif op == 3:
            n = data[pos] if pos < end else 0x80
            if n < 0x80:
                n = n - 0x80 if n & 0x40 else n
                pos += 1
            elif pos + 1 < end and data[pos + 1] < 0x80:  # two bytes: a jump to another file
                n = (n & 0x7F) | data[pos + 1] << 7
                n = n - 0x4000 if n & 0x2000 else n
                pos += 2
            else:
                n, pos = read_sleb(data, pos, end, SECTION)
            line += n
        elif op == 6:
            flags ^= IS_STMT
        elif op == 0:
            size, pos = read_uleb(data, pos, end, SECTION)
            if size and pos >= end:
                raise DecodeError(SECTION, pos, "an extended opcode runs past the end")
            sub = data[pos] if size else 0
            if sub == 1:  # DW_LNE_end_sequence
                out.append((rows, address))
                rows = []
                if marks is not None:
                    marks.append(ends)
                    ends = []
                    mark = ends.append
                address, file, line, column, flags, isa, disc = 0, 1, 1, 0, stmt0, 0, 0
            elif sub == 2:  # DW_LNE_set_address
                address = int.from_bytes(data[pos + 1:pos + size], "little")
            elif sub == 4:  # DW_LNE_set_discriminator
                disc = read_uleb(data, pos + 1, end, SECTION)[0]
            pos += size
        elif op == 1:  # DW_LNS_copy
            rows.append((address, file, line, column, flags, isa, disc))
            flags &= IS_STMT
            disc = 0
            if mark is not None:
                mark(pos)
        elif op == 2:
            n = data[pos] if pos < end else 0x80
            if n < 0x80:  # operands of one byte read inline: most of them
                pos += 1
            else:
                n, pos = read_uleb(data, pos, end, SECTION)
            address = (address + min_len * n) & _MASK
        elif op == 4:
            file = data[pos] if pos < end else 0x80
            if file < 0x80:
                pos += 1
            else:
                file, pos = read_uleb(data, pos, end, SECTION)
        elif op == 7:
            flags |= BASIC_BLOCK
        elif op == 8:
            address = (address + const_add) & _MASK
        elif op == 9:
            address = (address + int.from_bytes(data[pos:pos + 2], "little")) & _MASK
            pos += 2
        elif op == 10:
            flags |= PROLOGUE_END
        elif op == 11:
            flags |= EPILOGUE_BEGIN
        elif op == 12:
            isa, pos = read_uleb(data, pos, end, SECTION)
        else:
            for _ in range(lengths[op - 1] if op - 1 < len(lengths) else 0):
                _, pos = read_uleb(data, pos, end, SECTION)
    if pos > end:
        raise DecodeError(SECTION, end, "the last opcode runs past the end of the program")
    return out


class ProgramWriter:
    """Rows encoded for a program with header `h`'s parameters (special opcodes where they
    fit), one sequence after another; 8-byte addresses."""

    def __init__(self, h: LineHeader) -> None:
        if h.opcode_base <= _WRITTEN_OPCODES:
            raise DecodeError(SECTION, h.offset, f"opcode_base {h.opcode_base}: the standard "
                              f"opcodes up to {_WRITTEN_OPCODES} would read as special ones")
        self.h = h
        self.out = bytearray()
        self._open = False
        self._state = (0, 1, 1, 0, IS_STMT if h.default_is_stmt else 0, 0)

    def row(self, row: Row) -> None:
        self.row_at(row[0], row)

    def row_at(self, address: int, row: Row) -> None:
        """row() of `row` at `address` instead of its own (a row placed elsewhere)."""
        _, file, line, column, flags, isa, disc = row
        h, out = self.h, self.out
        if not self._open:
            out += b"\x00\x09\x02" + address.to_bytes(8, "little")
            self._state = (address, 1, 1, 0, IS_STMT if h.default_is_stmt else 0, 0)
            self._open = True
        at, f, ln, col, stmt, cur_isa = self._state
        if file != f:
            out.append(4)
            out += uleb(file)
        if column != col:
            out.append(5)
            out += uleb(column)
        if (flags ^ stmt) & IS_STMT:
            out.append(6)
        if flags & BASIC_BLOCK:
            out.append(7)
        if flags & PROLOGUE_END and h.opcode_base > 10:
            out.append(10)
        if flags & EPILOGUE_BEGIN and h.opcode_base > 11:
            out.append(11)
        if isa != cur_isa and h.opcode_base > 12:
            out.append(12)
            out += uleb(isa)
        if disc:
            d = uleb(disc)
            out += b"\x00" + uleb(len(d) + 1) + b"\x04" + d
        advance = address - at
        if advance < 0 or advance % h.min_inst_length:
            out += b"\x00\x09\x02" + address.to_bytes(8, "little")
            advance = 0
        advance //= h.min_inst_length
        delta = line - ln
        if not h.line_base <= delta < h.line_base + h.line_range:
            out.append(3)
            out += sleb(delta)
            delta = 0
        special = (delta - h.line_base) + h.line_range * advance + h.opcode_base
        # A header whose line_base is above 0 (or line_range ends below it) has no special
        # opcode for "same line": the row is then made with standard opcodes.
        if special <= 255 and h.line_base <= delta < h.line_base + h.line_range:
            out.append(special)
        else:
            out.append(2)
            out += uleb(advance)
            if delta:
                out.append(3)
                out += sleb(delta)
            out.append(1)
        self._state = (address, file, line, column, flags & IS_STMT, isa)

    def copy(self, first: Row, raw: bytes, last: Row) -> None:
        """Row `first`, then `raw`: the input program's opcodes right after `first`'s, up to
        and including `last`'s (a program with this header: they mean here what they meant
        there, from the state `first` leaves, which is the input's after it)."""
        self.row(first)
        self.out += raw
        address, file, line, column, flags, isa, _ = last
        self._state = (address, file, line, column, flags & IS_STMT, isa)

    def end_sequence(self, end: int) -> None:
        if not self._open:
            return
        at = self._state[0]
        if end > at and not (end - at) % self.h.min_inst_length:
            self.out.append(2)
            self.out += uleb((end - at) // self.h.min_inst_length)
        elif end != at:
            self.out += b"\x00\x09\x02" + end.to_bytes(8, "little")
        self.out += b"\x00\x01\x01"
        self._open = False

    def program(self, data: bytes) -> bytes:
        """The whole program: `data`'s header for it (unit_length recomputed), then the rows."""
        h = self.h
        header = data[h.header_start:h.program_start]
        length = len(header) + len(self.out)
        size = length.to_bytes(4, "little") if h.offset_size == 4 else \
            b"\xff\xff\xff\xff" + length.to_bytes(8, "little")
        return size + header + bytes(self.out)

