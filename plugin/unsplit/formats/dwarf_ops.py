"""The operands of DWARF expression operations (DWARF 5 §2.5, §7.7.1 Table 7.9, and the GNU
operations GCC writes, include/dwarf2.def of binutils), read only to find where each one is: a
writer that moves code rewrites the address operand of DW_OP_addr in place."""

from __future__ import annotations

from unsplit.errors import DecodeError
from unsplit.formats.leb128 import read_uleb, skip_leb

DW_OP_addr = 0x03
# Operand shapes: a string of letters, one per operand. 1 2 4 8: fixed bytes; a: an address;
# o: a section offset; u/s: ULEB128/SLEB128; b: a ULEB128 length then that many bytes; e: a
# ULEB128 length then a nested expression; c: a 1-byte size then that many bytes.
_SHAPES: dict[int, str] = {
    0x03: "a", 0x06: "", 0x08: "1", 0x09: "1", 0x0A: "2", 0x0B: "2", 0x0C: "4", 0x0D: "4",
    0x0E: "8", 0x0F: "8", 0x10: "u", 0x11: "s", 0x15: "1", 0x23: "u", 0x28: "2", 0x2F: "2",
    0x90: "u", 0x91: "s", 0x92: "us", 0x93: "u", 0x94: "1", 0x95: "1", 0x98: "2", 0x99: "4",
    0x9A: "o", 0x9D: "uu", 0x9E: "b", 0xA0: "os", 0xA1: "u", 0xA2: "u", 0xA3: "e",
    0xA4: "uc", 0xA5: "uu", 0xA6: "1u", 0xA7: "1u", 0xA8: "u", 0xA9: "u",
    0xE0: "", 0xF0: "", 0xF2: "os", 0xF3: "e", 0xF4: "uc", 0xF5: "uu", 0xF6: "1u", 0xF7: "u",
    0xF9: "u", 0xFA: "4", 0xFB: "u", 0xFC: "u", 0xFD: "o",
}
for _op in (*range(0x12, 0x15), *range(0x16, 0x23), *range(0x24, 0x28), *range(0x29, 0x2F),
            *range(0x30, 0x70), 0x96, 0x97, 0x9B, 0x9C, 0x9F):
    _SHAPES[_op] = ""
for _op in range(0x70, 0x90):
    _SHAPES[_op] = "s"


def address_operands(expr: bytes | memoryview, address_size: int, offset_size: int,
                     section: str = "expression", base: int = 0) -> list[int]:
    """Offsets in `expr` of the address operand of each DW_OP_addr, nested expressions
    (DW_OP_entry_value) included; DecodeError (at `base` + the offset) for an operation this
    table does not know or an operand past the end."""
    out: list[int] = []
    _walk(expr, 0, len(expr), address_size, offset_size, section, base, out)
    return out


def _walk(expr: bytes | memoryview, pos: int, end: int, address_size: int, offset_size: int,
          section: str, base: int, out: list[int]) -> None:
    while pos < end:
        op = expr[pos]
        shape = _SHAPES.get(op)
        if shape is None:
            raise DecodeError(section, base + pos, f"DWARF operation {op:#x} unknown")
        pos += 1
        for kind in shape:
            if kind == "a":
                if op == DW_OP_addr:
                    out.append(pos)
                pos += address_size
            elif kind == "o":
                pos += offset_size
            elif kind in "1248":
                pos += int(kind)
            elif kind in "us":
                pos = skip_leb(expr, pos, end, section, base)
            elif kind == "c":
                if pos >= end:
                    raise DecodeError(section, base + pos, "an operand runs past the end")
                pos += 1 + expr[pos]
            else:  # "b" or "e"
                length, pos = read_uleb(expr, pos, end, section, base)
                if kind == "e":
                    if pos + length > end:
                        raise DecodeError(section, base + pos, "a nested expression runs past "
                                          "the end")
                    _walk(expr, pos, pos + length, address_size, offset_size, section, base,
                          out)
                pos += length
        if pos > end:
            raise DecodeError(section, base + end, "an operand runs past the end")

