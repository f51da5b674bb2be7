"""LEB128 (DWARF 5 §7.6) decoding from a bytes buffer at an offset.

Every decoder here returns ``(value, next_offset)`` and raises :class:`DecodeError` naming the
section and the offset where the number *started* when the buffer ends inside it, or when it does
not fit in ``bits`` bits (LLVM's DataExtractor refuses such numbers too, so accepting them would
make us read notes that LLVM itself rejects). ``what`` names the field in those messages
(``"truncated ULEB128 (entry count)"``), and ``base`` is added to the offset they report when
``data`` is a slice that starts ``base`` bytes into the section.
"""

from __future__ import annotations

from unsplit.errors import DecodeError


def uleb128(
    data: bytes, offset: int, section: str, bits: int = 64, what: str = "", base: int = 0
) -> tuple[int, int]:
    """Unsigned LEB128 at ``data[offset:]`` -> (value, offset after it)."""
    return leb128(data, offset, section, False, bits, what, base)


def sleb128(
    data: bytes, offset: int, section: str, bits: int = 64, what: str = "", base: int = 0
) -> tuple[int, int]:
    """Signed LEB128 at ``data[offset:]`` -> (value, offset after it)."""
    return leb128(data, offset, section, True, bits, what, base)


def leb128(
    data: bytes, offset: int, section: str, signed: bool, bits: int = 64, what: str = "",
    base: int = 0,
) -> tuple[int, int]:
    """Either kind of LEB128 at ``data[offset:]``: the one loop behind :func:`uleb128` and
    :func:`sleb128`, called directly (positionally) where a decoder reads millions of them."""
    end = len(data)
    # Fast path: most numbers are one byte, and a non-negative one in a signed LEB128.
    if offset < end and data[offset] < (0x40 if signed else 0x80) and bits >= 7:
        return data[offset], offset + 1
    start = offset
    value = 0
    shift = 0
    while True:
        if offset >= end:
            raise DecodeError(section, base + start, f"truncated {_name(signed, what)}")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            break
    if signed and byte & 0x40:
        value -= 1 << shift
    # It fits when every bit above the top one (unsigned) or the sign bit (signed) equals it.
    if value >> (bits - 1 if signed else bits) not in (0, -1):
        raise DecodeError(
            section, base + start, f"{_name(signed, what)} does not fit in {bits} bits"
        )
    return value, offset


def read_uleb(data: bytes | memoryview, pos: int, end: int, section: str, base: int = 0
              ) -> tuple[int, int]:
    """The ULEB128 at ``pos`` that must end before ``end`` (its unit's, list's, program's or
    expression's end) -> (value, offset after it); DecodeError at ``base`` + where it started
    otherwise. Its size is not limited: the DWARF readers check a value where they use it.
    The one bounded reader of the DWARF decoders, millions of calls on a big file."""
    if pos < end:
        byte = data[pos]
        if byte < 0x80:
            return byte, pos + 1
    start = pos
    value = shift = 0
    while pos < end:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise DecodeError(section, base + start, "a ULEB128 runs past the end")


def read_sleb(data: bytes | memoryview, pos: int, end: int, section: str, base: int = 0
              ) -> tuple[int, int]:
    """The SLEB128 at ``pos`` that must end before ``end``, as :func:`read_uleb` reads."""
    start = pos
    value = shift = 0
    while pos < end:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return (value - (1 << shift) if byte & 0x40 else value), pos
    raise DecodeError(section, base + start, "an SLEB128 runs past the end")


def skip_leb(data: bytes | memoryview, pos: int, end: int, section: str, base: int = 0) -> int:
    """The offset past the LEB128 (either kind) at ``pos``, which must end before ``end``."""
    start = pos
    while pos < end:
        if data[pos] < 0x80:
            return pos + 1
        pos += 1
    raise DecodeError(section, base + start, "a LEB128 runs past the end")


def _name(signed: bool, what: str) -> str:
    name = "SLEB128" if signed else "ULEB128"
    return f"{name} ({what})" if what else name


_ONE_BYTE = [bytes((v,)) for v in range(0x80)]


def encode_uleb128(value: int) -> bytes:
    """ULEB128 bytes of a non-negative ``value`` (round trips, and the DWARF writer, §7.6)."""
    if 0 <= value < 0x80:  # most numbers a line table or list holds
        return _ONE_BYTE[value]
    if value < 0:
        raise ValueError("ULEB128 of a negative number")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_sleb128(value: int) -> bytes:
    """SLEB128 bytes of ``value`` (round trips, and the DWARF writer, §7.6)."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40):
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)
