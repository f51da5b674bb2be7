"""LEB128 (DWARF 5 §7.6) decoding from a bytes buffer at an offset.

Every decoder here returns ``(value, next_offset)`` and raises :class:`DecodeError` naming the
section and the offset where the number *started* when the buffer ends inside it, or when it does
not fit in ``bits`` bits (LLVM's DataExtractor refuses such numbers too, so accepting them would
make us read notes that LLVM itself rejects).
"""

from __future__ import annotations

from ..errors import DecodeError


def uleb128(data: bytes, offset: int, section: str, bits: int = 64) -> tuple[int, int]:
    """Unsigned LEB128 at ``data[offset:]`` -> (value, offset after it)."""
    start = offset
    end = len(data)
    value = 0
    shift = 0
    while True:
        if offset >= end:
            raise DecodeError(section, start, "truncated ULEB128")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            break
    if value >> bits:
        raise DecodeError(section, start, f"ULEB128 does not fit in {bits} bits")
    return value, offset


def sleb128(data: bytes, offset: int, section: str, bits: int = 64) -> tuple[int, int]:
    """Signed LEB128 at ``data[offset:]`` -> (value, offset after it)."""
    start = offset
    end = len(data)
    value = 0
    shift = 0
    while True:
        if offset >= end:
            raise DecodeError(section, start, "truncated SLEB128")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            break
    if byte & 0x40:
        value -= 1 << shift
    if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise DecodeError(section, start, f"SLEB128 does not fit in {bits} bits")
    return value, offset


def encode_uleb128(value: int) -> bytes:
    """ULEB128 bytes of a non-negative ``value`` (for tests and round trips)."""
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
    """SLEB128 bytes of ``value`` (for tests and round trips)."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40):
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)
