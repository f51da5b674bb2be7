"""`.debug_frame` (DWARF 5 §6.4): a CIE, then an FDE per range whose rows are given whole
(CFA and register rules, as unsplit.formats.eh_frame decodes them), each row said as the
changes from the one before. Version 4 CIE, code and data alignment 1 (any offset is said as
it is), no initial instructions (each FDE's first row says every rule), addresses absolute.
Further CIEs (`cie`) carry another section's alignment factors and initial rules, for FDEs
whose instructions are copied as they are. Inverse: unsplit.formats.eh_frame's EntryReader
over a `.debug_frame` section."""

from __future__ import annotations

import struct
from collections.abc import Sequence

from unsplit.formats.eh_frame import CfaRule, Row, Rule
from unsplit.formats.leb128 import encode_sleb128, encode_uleb128

_CIE_ID = 0xFFFFFFFF
_FDE_HEAD = struct.Struct("<IIQQ")  # length, CIE pointer, initial location, address range
# DW_CFA_* (DWARF 5 §7.24)
_ADVANCE_LOC1, _ADVANCE_LOC2, _ADVANCE_LOC4 = 0x02, 0x03, 0x04
_RESTORE_EXTENDED, _UNDEFINED, _SAME_VALUE, _REGISTER = 0x06, 0x07, 0x08, 0x09
_DEF_CFA, _DEF_CFA_EXPRESSION, _EXPRESSION = 0x0C, 0x0F, 0x10
_OFFSET_EXTENDED_SF, _DEF_CFA_SF, _VAL_OFFSET_SF, _VAL_EXPRESSION = 0x11, 0x12, 0x14, 0x16


class DebugFrame:
    """The section being written: the CIE first, FDEs appended."""

    def __init__(self, return_register: int) -> None:
        self.return_register = return_register
        self.data = bytearray()
        self.fdes = 0
        self.cie(1, 1, b"")  # at offset 0: the one `add` uses

    def cie(self, code_alignment: int, data_alignment: int, initial: bytes) -> int:
        """A CIE with these factors and initial instructions; its offset (the FDE's pointer)."""
        offset = len(self.data)
        body = bytearray(struct.pack("<I", _CIE_ID))
        body += bytes([4]) + b"\0" + bytes([8, 0])  # version, augmentation "", sizes
        body += encode_uleb128(code_alignment) + encode_sleb128(data_alignment)
        self._entry(body + encode_uleb128(self.return_register) + initial)
        return offset

    def _entry(self, body: bytearray) -> None:
        while (len(body) + 4) % 8:
            body.append(0)  # DW_CFA_nop
        self.data += struct.pack("<I", len(body)) + body

    def add(self, start: int, end: int, rows: Sequence[Row]) -> None:
        """An FDE for [start, end) whose table is `rows` (ascending, the first at `start`)."""
        self.add_instructions(start, end, self.instructions(rows))

    def add_instructions(self, start: int, end: int, instructions: bytes, cie: int = 0) -> None:
        """An FDE for [start, end) with the call frame instructions `instructions`, under the
        CIE at offset `cie`."""
        size = 20 + len(instructions)  # the pointer, start and size, then the instructions
        pad = -(size + 4) % 8  # DW_CFA_nop to an 8-byte boundary, as _entry
        self.data += _FDE_HEAD.pack(size + pad, cie, start, end - start)
        self.data += instructions
        if pad:
            self.data += bytes(pad)
        self.fdes += 1

    def instructions(self, rows: Sequence[Row]) -> bytes:
        """The instructions that make `rows` from the first one's address on."""
        out = bytearray()
        previous: Row | None = None
        for row in rows:
            if previous is not None and (row.cfa, row.rules) == (previous.cfa, previous.rules):
                continue  # a row that changes nothing
            if previous is not None:
                out += _advance(row.address - previous.address)
            out += _changes(previous, row, self.return_register)
            previous = row
        return bytes(out)


def _advance(delta: int) -> bytes:
    if delta < 0x40:
        return bytes([0x40 | delta])  # DW_CFA_advance_loc
    if delta <= 0xFF:
        return bytes([_ADVANCE_LOC1, delta])
    if delta <= 0xFFFF:
        return bytes([_ADVANCE_LOC2]) + struct.pack("<H", delta)
    return bytes([_ADVANCE_LOC4]) + struct.pack("<I", delta)


def _changes(previous: Row | None, row: Row, return_register: int) -> bytes:
    out = bytearray()
    if previous is None or previous.cfa != row.cfa:
        out += _cfa(row.cfa)
    before = {} if previous is None else previous.rules
    for reg in sorted(row.rules):
        if before.get(reg) != row.rules[reg]:
            out += _rule(reg, row.rules[reg])
    for reg in sorted(set(before) - set(row.rules)):
        # A rule the source dropped: the callee-saved register is its own again (what GDB and
        # LLDB assume of a register without a rule); the return address has no rule at all.
        op = _RESTORE_EXTENDED if reg == return_register else _SAME_VALUE
        out += bytes([op]) + encode_uleb128(reg)
    return bytes(out)


def _cfa(rule: CfaRule) -> bytes:
    if rule.register is None:
        return bytes([_DEF_CFA_EXPRESSION]) + encode_uleb128(len(rule.expr)) + rule.expr
    if rule.offset >= 0:
        return bytes([_DEF_CFA]) + encode_uleb128(rule.register) + encode_uleb128(rule.offset)
    return bytes([_DEF_CFA_SF]) + encode_uleb128(rule.register) + encode_sleb128(rule.offset)


def _rule(reg: int, rule: Rule) -> bytes:
    r = encode_uleb128(reg)
    kind = rule.kind
    if kind == "offset":
        return bytes([_OFFSET_EXTENDED_SF]) + r + encode_sleb128(rule.value)
    if kind == "val_offset":
        return bytes([_VAL_OFFSET_SF]) + r + encode_sleb128(rule.value)
    if kind == "register":
        return bytes([_REGISTER]) + r + encode_uleb128(rule.value)
    if kind in ("expression", "val_expression"):
        op = _EXPRESSION if kind == "expression" else _VAL_EXPRESSION
        return bytes([op]) + r + encode_uleb128(len(rule.expr)) + rule.expr
    if kind == "same":
        return bytes([_SAME_VALUE]) + r
    return bytes([_UNDEFINED]) + r
