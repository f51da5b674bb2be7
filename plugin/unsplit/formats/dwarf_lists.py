"""Range and location lists: .debug_rnglists and .debug_loclists (DWARF 5 §2.17.3, §2.6.2,
§7.28-§7.29, entry kinds Tables 7.30 and 7.31), .debug_ranges and .debug_loc (DWARF 4
§2.17.3, §2.6.2). A list decodes to absolute [begin, end) entries, whatever base address and
address-index entries it was written with; one encodes them back as absolute entries (a
base address selection first in DWARF 4: the unit's base then does not matter).

The unit header of a DWARF 5 contribution (§7.28: unit_length, version, address_size,
segment_selector_size, offset_entry_count, then the offsets) is read and written here too."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import NamedTuple

from unsplit.errors import DecodeError
from unsplit.formats.leb128 import encode_uleb128 as uleb
from unsplit.formats.leb128 import read_uleb

DEFAULT = -1  # begin of a DW_LLE_default_location entry (no range: §2.6.2)
# One entry: begin, end, and for a location list its expression (b"" in a range list).
Entry = tuple[int, int, bytes]
AddressAt = Callable[[int], int]  # an address index (DW_FORM_addrx...) -> the address

# §7.29 Table 7.31 (DW_LLE_*) and §7.28 Table 7.30 (DW_RLE_*): the codes that differ.
_LLE_END, _LLE_BASEX, _LLE_STARTX_ENDX, _LLE_STARTX_LENGTH, _LLE_OFFSET_PAIR = 0, 1, 2, 3, 4
_LLE_DEFAULT, _LLE_BASE, _LLE_START_END, _LLE_START_LENGTH, _LLE_GNU_VIEW_PAIR = 5, 6, 7, 8, 9
_RLE_BASE, _RLE_START_END, _RLE_START_LENGTH = 5, 6, 7


class ListsHeader(NamedTuple):
    """A DWARF 5 contribution to .debug_rnglists or .debug_loclists (§7.28, §7.29)."""

    offset: int  # of its unit_length
    end: int
    version: int
    address_size: int
    offset_size: int
    offset_entries: int
    base: int  # where its offsets array begins: what DW_AT_*lists_base names


def read_lists_header(data: bytes, base: int, section: str) -> ListsHeader:
    """The header of the contribution whose offsets array begins at `base` (a unit's
    DW_AT_rnglists_base or DW_AT_loclists_base)."""
    for offset_size, size in ((4, 12), (8, 20)):
        start = base - size
        if start < 0:
            continue
        length = int.from_bytes(data[start:start + 4], "little")
        if (offset_size == 4) != (length != 0xFFFFFFFF):
            continue
        at = start + 4 if offset_size == 4 else start + 12
        if offset_size == 8:
            length = int.from_bytes(data[start + 4:start + 12], "little")
        end = at + length
        if at + 8 > len(data):
            raise DecodeError(section, start, "the contribution header runs past the end of "
                              "the section")
        version, address_size, segment, count = struct.unpack_from("<HBBI", data, at)
        if version != 5 or end > len(data) or segment != 0 or base + count * offset_size > end:
            raise DecodeError(section, start, "no contribution header (version 5, segment "
                              "selector size 0) before the unit's base")
        return ListsHeader(start, end, version, address_size, offset_size, count, base)
    raise DecodeError(section, base, "no contribution header before the unit's base")


def offsets_array(data: bytes, header: ListsHeader) -> list[int]:
    """The contribution's offsets, each relative to its base (§7.28)."""
    n, size, base = header.offset_entries, header.offset_size, header.base
    return [int.from_bytes(data[base + i * size:base + (i + 1) * size], "little")
            for i in range(n)]


def lists_header(version: int, address_size: int, offsets: list[int], length: int) -> bytes:
    """A 32-bit DWARF contribution header and offsets array for `length` bytes of lists."""
    body = struct.pack("<HBBI", version, address_size, 0, len(offsets)) + \
        b"".join(struct.pack("<I", o) for o in offsets)
    return struct.pack("<I", len(body) + length) + body


def read_v5_list(data: bytes, pos: int, section: str, locations: bool, address_size: int,
                 base_address: int, address_at: AddressAt) -> list[Entry]:
    """The list at `pos` of .debug_rnglists (`locations` False) or .debug_loclists.

    The offset pairs and expression lengths that fit a byte are read here, not by read_uleb:
    they are most of a clang list's numbers (docs/benchmarks.md: bench/debuginfo.py
    --realworld)."""
    out: list[Entry] = []
    base = base_address
    size = len(data)
    start = pos
    while True:
        if pos >= size:
            raise DecodeError(section, start, "the list runs past the end of the section")
        kind = data[pos]
        at = pos
        pos += 1
        if kind == _LLE_END:
            return out
        begin = end = -2
        if kind == _LLE_BASEX:
            index = data[pos] if pos < size else 0x80
            if index < 0x80:
                pos += 1
            else:
                index, pos = read_uleb(data, pos, size, section)
            base = address_at(index)
            continue
        if locations and kind == _LLE_GNU_VIEW_PAIR:
            _, pos = read_uleb(data, pos, size, section)
            _, pos = read_uleb(data, pos, size, section)
            continue
        if kind == _LLE_STARTX_ENDX:
            a, pos = read_uleb(data, pos, size, section)
            b, pos = read_uleb(data, pos, size, section)
            begin, end = address_at(a), address_at(b)
        elif kind == _LLE_STARTX_LENGTH:
            a, pos = read_uleb(data, pos, size, section)
            n, pos = read_uleb(data, pos, size, section)
            begin = address_at(a)
            end = begin + n
        elif kind == _LLE_OFFSET_PAIR:
            a = data[pos] if pos < size else 0x80
            if a < 0x80:
                pos += 1
            elif pos + 1 < size and data[pos + 1] < 0x80:
                a = (a & 0x7F) | data[pos + 1] << 7
                pos += 2
            else:
                a, pos = read_uleb(data, pos, size, section)
            b = data[pos] if pos < size else 0x80
            if b < 0x80:
                pos += 1
            elif pos + 1 < size and data[pos + 1] < 0x80:
                b = (b & 0x7F) | data[pos + 1] << 7
                pos += 2
            else:
                b, pos = read_uleb(data, pos, size, section)
            begin, end = base + a, base + b
        elif locations and kind == _LLE_DEFAULT:
            begin = end = DEFAULT
        elif kind == (_LLE_BASE if locations else _RLE_BASE):
            base = _address(data, pos, address_size, section)
            pos += address_size
            continue
        elif kind == (_LLE_START_END if locations else _RLE_START_END):
            begin = _address(data, pos, address_size, section)
            end = _address(data, pos + address_size, address_size, section)
            pos += 2 * address_size
        elif kind == (_LLE_START_LENGTH if locations else _RLE_START_LENGTH):
            begin = _address(data, pos, address_size, section)
            n, pos = read_uleb(data, pos + address_size, size, section)
            end = begin + n
        else:
            raise DecodeError(section, at, f"list entry kind {kind:#x} unknown")
        expr = b""
        if locations:
            n = data[pos] if pos < size else 0x80
            if n < 0x80:
                pos += 1
            else:
                n, pos = read_uleb(data, pos, size, section)
            if pos + n > size:
                raise DecodeError(section, pos, "an expression runs past the end of the "
                                  "section")
            expr = data[pos:pos + n]
            pos += n
        out.append((begin, end, expr))


def read_v4_list(data: bytes, pos: int, section: str, locations: bool, address_size: int,
                 base_address: int) -> list[Entry]:
    """The list at `pos` of .debug_ranges (`locations` False) or .debug_loc."""
    out: list[Entry] = []
    base = base_address
    top = (1 << (8 * address_size)) - 1
    while True:
        if pos + 2 * address_size > len(data):
            raise DecodeError(section, pos, "the list runs past the end of the section")
        begin = _address(data, pos, address_size, section)
        end = _address(data, pos + address_size, address_size, section)
        pos += 2 * address_size
        if begin == 0 and end == 0:
            return out
        if begin == top:
            base = end
            continue
        expr = b""
        if locations:
            if pos + 2 > len(data):
                raise DecodeError(section, pos, "the list runs past the end of the section")
            n = int.from_bytes(data[pos:pos + 2], "little")
            if pos + 2 + n > len(data):
                raise DecodeError(section, pos, "an expression runs past the end of the section")
            expr = data[pos + 2:pos + 2 + n]
            pos += 2 + n
        out.append((base + begin, base + end, expr))


_KIND_ADDRESS = struct.Struct("<BQ")


def encode_v5_list(entries: list[Entry], locations: bool) -> bytes:
    """DW_LLE_start_length / DW_RLE_start_length entries (8-byte addresses) and the end."""
    out = bytearray()
    kind = _LLE_START_LENGTH if locations else _RLE_START_LENGTH
    for begin, end, expr in entries:
        if begin == DEFAULT:
            out.append(_LLE_DEFAULT)
            out += uleb(len(expr))
            out += expr
            continue
        out += _KIND_ADDRESS.pack(kind, begin)
        length = end - begin
        if 0 <= length < 0x80:  # as in read_v5_list: the call costs more than the byte
            out.append(length)
        else:
            out += uleb(length)
        if locations:
            if len(expr) < 0x80:
                out.append(len(expr))
            else:
                out += uleb(len(expr))
            out += expr
    out.append(_LLE_END)
    return bytes(out)


def encode_v5_range(begin: int, end: int) -> bytes:
    """encode_v5_list([(begin, end, b"")], False) of a non-empty range: one DW_RLE_start_length
    and the end."""
    length = end - begin
    return _KIND_ADDRESS.pack(_RLE_START_LENGTH, begin) + (
        bytes((length, _LLE_END)) if length < 0x80 else uleb(length) + b"\x00")


def base_address_entry(address: int, locations: bool) -> bytes:
    """DW_LLE_base_address / DW_RLE_base_address of an 8-byte `address`."""
    return _KIND_ADDRESS.pack(_LLE_BASE if locations else _RLE_BASE, address)


def encode_v4_list(entries: list[Entry], locations: bool) -> bytes:
    """A base address selection of 0, absolute (begin, end) entries and the end (8-byte
    addresses); DW_LLE_default_location has no DWARF 4 form and is left out."""
    out = bytearray(struct.pack("<QQ", (1 << 64) - 1, 0))
    for begin, end, expr in entries:
        if begin == DEFAULT:
            continue
        out += struct.pack("<QQ", begin, end)
        if locations:
            out += struct.pack("<H", len(expr)) + expr
    out += struct.pack("<QQ", 0, 0)
    return bytes(out)


# One plain list (plain_v5_lists): the offset after its end entry, its entries' lowest begin
# and highest end, its base address index, and its entries with a range.
PlainSpan = tuple[int, int, int, int, int]
_PLAIN_ENTRY_MAX = 10  # bytes of an entry before its expression, read without bounds checks


def plain_v5_lists(data: bytes, starts: list[int], locations: bool, addresses: list[int]
                   ) -> list[PlainSpan | None]:
    """The span of each list at `starts` that is plain (clang's: a base address index into
    `addresses`, then offset pairs of non-empty ranges or default locations, no DW_OP_addr
    byte), else None: what span_v5_list tells of it, with no object per list. It never
    raises: a list it cannot take whole (damaged, near the section's end, an operand over
    three bytes) is left to span_v5_list and read_v5_list, which say what is wrong. A third
    reader, kept because a benchmark says so (bench/debuginfo_ab.py: simdjson's lists)."""
    out: list[PlainSpan | None] = []
    append = out.append
    size = len(data) - _PLAIN_ENTRY_MAX  # an entry's operands start before it
    count = len(addresses)
    for pos in starts:
        span = None
        if 0 <= pos < size and data[pos] == _LLE_BASEX:
            index = data[pos + 1]
            pos += 2
            if index & 0x80:
                index = (index & 0x7F) | data[pos] << 7 if data[pos] < 0x80 else count
                pos += 1
            if index < count:
                lo, hi, bounded = 1 << 64, -1, 0  # offsets from the base, then addresses
                while pos < size:
                    kind = data[pos]
                    pos += 1
                    if kind == _LLE_OFFSET_PAIR:
                        a = data[pos]
                        if a < 0x80:
                            pos += 1
                        elif data[pos + 1] < 0x80:
                            a = (a & 0x7F) | data[pos + 1] << 7
                            pos += 2
                        elif data[pos + 2] < 0x80:
                            a = (a & 0x7F) | (data[pos + 1] & 0x7F) << 7 | data[pos + 2] << 14
                            pos += 3
                        else:
                            break
                        b = data[pos]
                        if b < 0x80:
                            pos += 1
                        elif data[pos + 1] < 0x80:
                            b = (b & 0x7F) | data[pos + 1] << 7
                            pos += 2
                        elif data[pos + 2] < 0x80:
                            b = (b & 0x7F) | (data[pos + 1] & 0x7F) << 7 | data[pos + 2] << 14
                            pos += 3
                        else:
                            break
                        if b <= a:
                            break  # an empty entry: one written again leaves it out
                        bounded += 1
                        if a < lo:
                            lo = a
                        if b > hi:
                            hi = b
                    elif kind == _LLE_END:
                        if bounded:
                            base = addresses[index]
                            span = (pos, base + lo, base + hi, index, bounded)
                        break
                    elif not (locations and kind == _LLE_DEFAULT):
                        break
                    if locations:
                        n = data[pos]
                        if n == 1:  # one operation without operands (DW_OP_regN): most
                            if data[pos + 1] == 3:
                                break
                            pos += 2
                        elif n < 0x80 and pos + 1 + n <= size and \
                                data.find(3, pos + 1, pos + 1 + n) < 0:
                            pos += 1 + n
                        else:
                            break
        append(span)
    return out


def _address(data: bytes, pos: int, size: int, section: str) -> int:
    if pos + size > len(data):
        raise DecodeError(section, pos, "an address runs past the end of the section")
    return int.from_bytes(data[pos:pos + size], "little")


class ListSpan(NamedTuple):
    """What a copy of a DWARF 5 list's bytes depends on (span_v5_list)."""

    end: int  # the offset after its end entry
    lo: int  # its entries' lowest begin and highest end (lo > hi: no entry has a range)
    hi: int
    bounded: int  # entries with a range (all but DW_LLE_default_location)
    bases: list[tuple[int, int, int]]  # its DW_LLE_base_addressx entries: offset, end, index
    indices: list[int]  # address indices its start entries name
    literal: bool  # it holds an address itself (base_address, start_end, start_length)
    unit_base: bool  # an offset pair on the unit's base address (before any base entry)
    addr_op: bool  # an expression holds a DW_OP_addr byte (perhaps an operand's)
    ranges: list[tuple[int, int]]  # a range list's [begin, end) (a location list's: [])


_new_span = tuple.__new__  # a ListSpan made as NamedTuple._make makes it, without the Python
#                            call of ListSpan(...) (one per list: thousands per unit)


def span_v5_list(data: bytes, pos: int, section: str, locations: bool, address_size: int,
                 base_address: int, address_at: AddressAt) -> ListSpan | None:
    """read_v5_list's walk over the same list, keeping only what says whether its bytes stay
    right where every address in it moves the same distance; None for a list whose bytes
    mean something only where they are (a start-end index pair, a GNU view pair) or that
    has an empty entry. A second reader, kept
    because a benchmark says so: it makes no entry (docs/benchmarks.md, bench/debuginfo.py
    --realworld); it reads what read_v5_list reads, and raises DecodeError where it does."""
    size = len(data)
    lo, hi, bounded = 1 << 64, -1, 0
    base = base_address  # the unit's, until the list sets its own
    own_base = False
    bases: list[tuple[int, int, int]] = []
    indices: list[int] = []
    ranges: list[tuple[int, int]] = []
    literal = unit_base = addr_op = False
    start = pos
    while True:
        if pos >= size:
            raise DecodeError(section, start, "the list runs past the end of the section")
        kind = data[pos]
        at = pos
        pos += 1
        if kind == _LLE_OFFSET_PAIR:
            if not own_base:
                unit_base = True
            # offsets of up to three bytes inline: nearly all of a clang list's
            a = data[pos] if pos < size else 0x80
            if a < 0x80:
                pos += 1
            elif pos + 1 < size and data[pos + 1] < 0x80:
                a = (a & 0x7F) | data[pos + 1] << 7
                pos += 2
            elif pos + 2 < size and data[pos + 2] < 0x80:
                a = (a & 0x7F) | (data[pos + 1] & 0x7F) << 7 | data[pos + 2] << 14
                pos += 3
            else:
                a, pos = read_uleb(data, pos, size, section)
            b = data[pos] if pos < size else 0x80
            if b < 0x80:
                pos += 1
            elif pos + 1 < size and data[pos + 1] < 0x80:
                b = (b & 0x7F) | data[pos + 1] << 7
                pos += 2
            elif pos + 2 < size and data[pos + 2] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] & 0x7F) << 7 | data[pos + 2] << 14
                pos += 3
            else:
                b, pos = read_uleb(data, pos, size, section)
            begin, end = base + a, base + b
        elif kind == _LLE_END:
            return _new_span(ListSpan, (pos, lo, hi, bounded, bases, indices, literal,
                                        unit_base, addr_op, ranges))
        elif kind == _LLE_BASEX:
            index = data[pos] if pos < size else 0x80
            if index < 0x80:  # an index of one byte inline: most of clang's
                pos += 1
            else:
                index, pos = read_uleb(data, pos, size, section)
            base = address_at(index)
            own_base = True
            bases.append((at, pos, index))
            continue
        elif kind == _LLE_STARTX_LENGTH:
            index, pos = read_uleb(data, pos, size, section)
            n, pos = read_uleb(data, pos, size, section)
            begin = address_at(index)
            end = begin + n
            indices.append(index)
        elif (locations and kind == _LLE_GNU_VIEW_PAIR) or kind == _LLE_STARTX_ENDX:
            return None
        elif locations and kind == _LLE_DEFAULT:
            begin = end = DEFAULT
        elif kind == (_LLE_BASE if locations else _RLE_BASE):
            base = _address(data, pos, address_size, section)
            pos += address_size
            literal = own_base = True
            continue
        elif kind == (_LLE_START_END if locations else _RLE_START_END):
            begin = _address(data, pos, address_size, section)
            end = _address(data, pos + address_size, address_size, section)
            pos += 2 * address_size
            literal = True
        elif kind == (_LLE_START_LENGTH if locations else _RLE_START_LENGTH):
            begin = _address(data, pos, address_size, section)
            n, pos = read_uleb(data, pos + address_size, size, section)
            end = begin + n
            literal = True
        else:
            raise DecodeError(section, at, f"list entry kind {kind:#x} unknown")
        if begin != DEFAULT:
            bounded += 1
            if begin < lo:
                lo = begin
            if end > hi:
                hi = end
            if end <= begin:
                return None  # an empty entry: one written again leaves it out
        if locations:
            n = data[pos] if pos < size else 0x80
            if n < 0x80:
                pos += 1
            else:
                n, pos = read_uleb(data, pos, size, section)
            if pos + n > size:
                raise DecodeError(section, pos, "an expression runs past the end of the "
                                  "section")
            if not addr_op and data.find(b"\x03", pos, pos + n) >= 0:
                addr_op = True
            pos += n
        else:
            ranges.append((begin, end))
