"""String offsets, .debug_str_offsets (DWARF 5 §7.26): the input's, except where one points
into the middle of a string (a linker merges a string into another that ends with it). That
is valid DWARF, but llvm-dwarfdump --verify calls it an error; such a string gets a copy of
its own at the end of .debug_str, and its offset is moved there. Every other byte is the
input's."""

from __future__ import annotations

from unsplit.errors import DecodeError

SECTION = ".debug_str_offsets"


def own_strings(strings: bytes, offsets: bytes) -> tuple[bytes, bytes, list[str]]:
    """(.debug_str, .debug_str_offsets) with every offset at a string's start, and one line
    for each contribution that does not decode (kept as it is)."""
    out_str = bytearray(strings)
    out_offsets = bytearray(offsets)
    copies: dict[int, int] = {}
    problems: list[str] = []
    pos = 0
    while pos + 8 <= len(offsets):
        length = int.from_bytes(offsets[pos:pos + 4], "little")
        size, body = 4, pos + 4
        if length == 0xFFFFFFFF:
            length = int.from_bytes(offsets[pos + 4:pos + 12], "little")
            size, body = 8, pos + 12
        end = body + length
        if end > len(offsets) or length < 4:
            problems.append(str(DecodeError(SECTION, pos, "a contribution runs past the end "
                                            "of the section: the rest is kept as it is")))
            break
        for at in range(body + 4, end - size + 1, size):
            value = int.from_bytes(offsets[at:at + size], "little")
            if value == 0 or value >= len(strings) or strings[value - 1] == 0:
                continue
            copy = copies.get(value)
            if copy is None:
                stop = strings.find(b"\0", value)
                copy = copies[value] = len(out_str)
                out_str += strings[value:stop if stop >= 0 else len(strings)] + b"\0"
            out_offsets[at:at + size] = copy.to_bytes(size, "little")
        pos = end
    return bytes(out_str), bytes(out_offsets), problems
