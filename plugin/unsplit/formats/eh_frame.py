"""Call frame information entries (`.eh_frame`, `.debug_frame`) decoded from bytes: CIEs, FDEs,
their instructions, and the rule table an FDE defines (rows of CFA and register rules).

Specifications: DWARF 5 §6.4 (call frame information); the LSB's `.eh_frame` encoding (LSB Core
5.0, §10.6); the x86-64 psABI §3.6.2 (DWARF register numbers). Decoded with struct: pyelftools
0.33 takes ~200 µs to parse one FDE (seconds for the cold fragments of a clang-size BOLT
output), its `get_decoded()` asserts on `DW_CFA_GNU_args_size` (glibc has it) and it scales
`DW_CFA_def_cfa_sf` by the code alignment factor instead of the data alignment factor.
Which FDE covers an address of a binary, and unwinding with it, is `unsplit.debug.cfi`.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from elftools.dwarf.constants import DW_CFA

from unsplit.formats.dwarf_expr import describe_expression, register_name
from unsplit.formats.leb128 import leb128

# -- rules --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rule:
    """How to find a register's value in the caller (DWARF 5 §6.4.1)."""

    kind: str  # undefined, same, offset, val_offset, register, expression, val_expression
    value: int = 0  # the offset, or the register number
    expr: bytes = b""

    def describe(self) -> str:
        """As llvm-dwarfdump-22 prints it: `[CFA-8]`, `R9`, `undefined`…"""
        if self.kind == "offset":
            return f"[CFA{self.value:+d}]" if self.value else "[CFA]"
        if self.kind == "val_offset":
            return f"CFA{self.value:+d}" if self.value else "CFA"
        if self.kind == "register":
            return register_name(self.value)
        if self.kind == "expression":
            return f"[{describe_expression(self.expr)}]"
        if self.kind == "val_expression":
            return describe_expression(self.expr)
        return self.kind


@dataclass(frozen=True, slots=True)
class CfaRule:
    register: int | None  # None with an expression
    offset: int = 0
    expr: bytes = b""

    def describe(self) -> str:
        if self.register is None:
            return describe_expression(self.expr)
        name = register_name(self.register)
        return f"{name}{self.offset:+d}" if self.offset else name


@dataclass(frozen=True, slots=True)
class Row:
    """The rules in effect from `address` to the next row (file addresses)."""

    address: int
    cfa: CfaRule
    rules: dict[int, Rule] = field(hash=False)


@dataclass(frozen=True, slots=True)
class FrameDescription:
    """One decoded FDE: [start, end) and its table."""

    section: str
    offset: int  # of the FDE in its section
    start: int
    end: int
    return_register: int
    signal_frame: bool  # augmentation "S": the caller's pc is not a return address
    rows: tuple[Row, ...]

    def row_at(self, address: int) -> Row | None:
        i = bisect_right([r.address for r in self.rows], address) - 1
        return self.rows[i] if i >= 0 else None


# -- finding the FDE of an address ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Instruction:
    """One call frame instruction, as pyelftools' CallFrameInstruction spells it: the DW_CFA
    opcode (advance_loc/offset/restore without their operand bits) and its operands, unscaled."""

    opcode: int
    args: tuple[Any, ...]


@dataclass(slots=True)
class Cie:
    code_alignment_factor: int
    data_alignment_factor: int
    return_address_register: int
    augmentation: bytes
    fde_encoding: int
    instructions: list[Instruction]


@dataclass(slots=True)
class Fde:
    cie: Cie
    start: int
    size: int
    instructions: list[Instruction]


_DW_EH_PE_omit = 0xFF


class EntryReader:
    """Entries of one CFI section read with struct (DWARF 5 §6.4.1, LSB 5.0 §10.6 for
    `.eh_frame`): pyelftools spends ~200 µs on an FDE, a second per 5000; this, ~20 µs.
    Malformed bytes raise struct.error, IndexError or ValueError; the caller says where."""

    def __init__(self, section: str, data: bytes, address: int, little: bool,
                 address_size: int) -> None:
        self.section, self.data, self.address = section, data, address
        self.eh = section == ".eh_frame"
        self.e = "<" if little else ">"
        self.address_size = address_size
        self.cies: dict[int, Cie] = {}

    def uleb(self, i: int) -> tuple[int, int]:
        return leb128(self.data, i, self.section, False)

    def sleb(self, i: int) -> tuple[int, int]:
        return leb128(self.data, i, self.section, True)

    def header(self, offset: int) -> tuple[int, int, int, int]:
        """(end of the entry, its CIE pointer field's offset, the pointer, where its body
        starts); an entry of length 0 is a terminator (end == body)."""
        (length,) = struct.unpack_from(self.e + "I", self.data, offset)
        if length == 0:
            return offset + 4, offset + 4, 0, offset + 4
        if length == 0xFFFFFFFF:
            (length,) = struct.unpack_from(self.e + "Q", self.data, offset + 4)
            id_at, fmt, size = offset + 12, "Q", 8
        else:
            id_at, fmt, size = offset + 4, "I", 4
        end = id_at + length
        if end > len(self.data):
            raise ValueError(f"entry length {length:#x} runs past the section")
        (cie_id,) = struct.unpack_from(self.e + fmt, self.data, id_at)
        return end, id_at, cie_id, id_at + size

    def is_cie(self, cie_id: int, id_size: int) -> bool:
        return cie_id == 0 if self.eh else cie_id == (0xFFFFFFFF if id_size == 4 else
                                                      0xFFFFFFFFFFFFFFFF)

    def pointer(self, i: int, encoding: int) -> tuple[int, int]:
        """A DW_EH_PE-encoded pointer at offset i: (value, offset after it)."""
        fmt = encoding & 0x0F
        if fmt == 0x00:
            size_fmt = "Q" if self.address_size == 8 else "I"
        else:
            size_fmt = {0x02: "H", 0x03: "I", 0x04: "Q", 0x0A: "h", 0x0B: "i",
                        0x0C: "q"}.get(fmt, "")
        if size_fmt:
            (value,) = struct.unpack_from(self.e + size_fmt, self.data, i)
            after = i + struct.calcsize(size_fmt)
        elif fmt == 0x01:
            value, after = self.uleb(i)
        elif fmt == 0x09:
            value, after = self.sleb(i)
        else:
            raise ValueError(f"pointer encoding {encoding:#x}")
        application = encoding & 0x70
        if application == 0x10:  # pcrel
            value += self.address + i
        elif application not in (0x00,):
            raise ValueError(f"pointer encoding {encoding:#x}")
        return value & 0xFFFFFFFFFFFFFFFF, after

    def cie(self, offset: int) -> Cie:
        found = self.cies.get(offset)
        if found is not None:
            return found
        end, id_at, cie_id, i = self.header(offset)
        if not self.is_cie(cie_id, i - id_at):
            raise ValueError(f"no CIE at {offset:#x}")
        data = self.data
        version = data[i]
        i += 1
        nul = data.index(0, i, end)
        augmentation = bytes(data[i:nul])
        i = nul + 1
        if not self.eh and version >= 4:
            i += 2  # address_size, segment_selector_size
        caf, i = self.uleb(i)
        daf, i = self.sleb(i)
        if version == 1:
            ra, i = data[i], i + 1
        else:
            ra, i = self.uleb(i)
        fde_encoding = 0x00
        if augmentation.startswith(b"z"):
            length, i = self.uleb(i)
            aug_end = i + length
            for ch in augmentation[1:]:
                if ch == ord("R"):
                    fde_encoding, i = data[i], i + 1
                elif ch == ord("P"):
                    enc, i = data[i], i + 1
                    _, i = self.pointer(i, enc & 0x7F)
                elif ch == ord("L"):
                    i += 1
                elif ch in (ord("S"), ord("B"), ord("G")):
                    pass
                else:
                    break  # the length says where the instructions start
            i = aug_end
        elif augmentation not in (b"",):
            raise ValueError(f"augmentation {augmentation!r} without 'z'")
        cie = Cie(caf, daf, ra, augmentation, fde_encoding, self.instructions(i, end))
        self.cies[offset] = cie
        return cie

    def fde_head(self, offset: int) -> tuple[int, Cie, int, int, int, int] | None:
        """The FDE at `offset` without its instructions: (its CIE's offset, the CIE, start,
        size, where its instructions begin, where they end); None for a CIE or a terminator."""
        end, id_at, cie_id, i = self.header(offset)
        if end == id_at or self.is_cie(cie_id, i - id_at):
            return None
        cie_offset = id_at - cie_id if self.eh else cie_id
        cie = self.cie(cie_offset)
        if self.eh:
            start, i = self.pointer(i, cie.fde_encoding)
            size, i = self.pointer(i, cie.fde_encoding & 0x0F)
        else:
            start, i = self.pointer(i, 0x00)
            size, i = self.pointer(i, 0x00)
        if cie.augmentation.startswith(b"z"):
            length, i = self.uleb(i)
            i += length
        return cie_offset, cie, start, size, i, end

    def fde(self, offset: int) -> Fde | None:
        """The FDE at `offset`, or None for a CIE or a terminator."""
        head = self.fde_head(offset)
        if head is None:
            return None
        _, cie, start, size, i, end = head
        return Fde(cie, start, size, self.instructions(i, end, cie.fde_encoding))

    def instructions(self, i: int, end: int, encoding: int = 0x00) -> list[Instruction]:
        data = self.data
        uleb, sleb = self.uleb, self.sleb
        e = self.e
        out: list[Instruction] = []
        while i < end:
            op = data[i]
            i += 1
            high = op & 0xC0
            if high == 0x40:
                out.append(Instruction(DW_CFA.advance_loc, (op & 0x3F,)))
                continue
            if high == 0x80:
                off, i = uleb(i)
                out.append(Instruction(DW_CFA.offset, (op & 0x3F, off)))
                continue
            if high == 0xC0:
                out.append(Instruction(DW_CFA.restore, (op & 0x3F,)))
                continue
            args: tuple[Any, ...]
            if op in (DW_CFA.nop, DW_CFA.remember_state, DW_CFA.restore_state):
                args = ()
            elif op == DW_CFA.set_loc:
                value, i = self.pointer(i, encoding if self.eh else 0x00)
                args = (value,)
            elif op == DW_CFA.advance_loc1:
                args, i = (data[i],), i + 1
            elif op == DW_CFA.advance_loc2:
                args, i = struct.unpack_from(e + "H", data, i), i + 2
            elif op == DW_CFA.advance_loc4:
                args, i = struct.unpack_from(e + "I", data, i), i + 4
            elif op in (DW_CFA.offset_extended, DW_CFA.register, DW_CFA.def_cfa,
                        DW_CFA.val_offset):
                a, i = uleb(i)
                b, i = uleb(i)
                args = (a, b)
            elif op in (DW_CFA.offset_extended_sf, DW_CFA.def_cfa_sf, DW_CFA.val_offset_sf):
                a, i = uleb(i)
                b, i = sleb(i)
                args = (a, b)
            elif op in (DW_CFA.restore_extended, DW_CFA.undefined, DW_CFA.same_value,
                        DW_CFA.def_cfa_register, DW_CFA.def_cfa_offset, DW_CFA.GNU_args_size):
                a, i = uleb(i)
                args = (a,)
            elif op == DW_CFA.def_cfa_offset_sf:
                a, i = sleb(i)
                args = (a,)
            elif op == DW_CFA.def_cfa_expression:
                n, i = uleb(i)
                args, i = (data[i:i + n],), i + n
            elif op in (DW_CFA.expression, DW_CFA.val_expression):
                a, i = uleb(i)
                n, i = uleb(i)
                args, i = (a, data[i:i + n]), i + n
            elif op == 0x2F:  # DW_CFA_GNU_negative_offset_extended: an offset, negated
                a, i = uleb(i)
                b, i = uleb(i)
                op, args = DW_CFA.offset_extended, (a, -b)
            else:
                raise ValueError(f"unknown CFI instruction {op:#04x}")
            if i > end:
                raise ValueError("an instruction runs past its entry")
            out.append(Instruction(op, args))
        return out


def one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__



# -- decoding the rule table ---------------------------------------------------------------------


def decode_rows(cie: Cie, fde: Fde, start: int) -> list[Row]:
    """The FDE's table: the CIE's initial instructions, then the FDE's (DWARF 5 §6.4.2)."""
    caf = cie.code_alignment_factor
    daf = cie.data_alignment_factor
    state = RuleState(CfaRule(None), {})
    for instr in cie.instructions:
        state = apply_instruction(instr, state, None, caf, daf)
    initial = RuleState(state.cfa, dict(state.rules))
    rows: list[Row] = []
    pc = start
    stack: list[RuleState] = []
    for instr in fde.instructions:
        op = instr.opcode
        if op in (DW_CFA.advance_loc, DW_CFA.advance_loc1, DW_CFA.advance_loc2,
                  DW_CFA.advance_loc4, DW_CFA.set_loc):
            rows.append(Row(pc, state.cfa, dict(state.rules)))
            pc = instr.args[0] if op == DW_CFA.set_loc else pc + instr.args[0] * caf
        elif op == DW_CFA.remember_state:
            stack.append(RuleState(state.cfa, dict(state.rules)))
        elif op == DW_CFA.restore_state:
            if not stack:
                raise ValueError("DW_CFA_restore_state with nothing remembered")
            state = stack.pop()
        else:
            state = apply_instruction(instr, state, initial, caf, daf)
    rows.append(Row(pc, state.cfa, dict(state.rules)))
    # Keep the last row at each address (advances by 0 happen) in address order.
    out: dict[int, Row] = {}
    for row in rows:
        out[row.address] = row
    return sorted(out.values(), key=lambda r: r.address)


@dataclass(slots=True)
class RuleState:
    cfa: CfaRule
    rules: dict[int, Rule]


def apply_instruction(instr: Any, state: RuleState, initial: RuleState | None, caf: int,
                      daf: int) -> RuleState:
    op, args = instr.opcode, instr.args
    cfa, rules = state.cfa, state.rules
    if op == DW_CFA.def_cfa:
        cfa = CfaRule(args[0], args[1])
    elif op == DW_CFA.def_cfa_sf:
        cfa = CfaRule(args[0], args[1] * daf)
    elif op == DW_CFA.def_cfa_register:
        cfa = CfaRule(args[0], cfa.offset)
    elif op == DW_CFA.def_cfa_offset:
        cfa = CfaRule(cfa.register, args[0], cfa.expr)
    elif op == DW_CFA.def_cfa_offset_sf:
        cfa = CfaRule(cfa.register, args[0] * daf, cfa.expr)
    elif op == DW_CFA.def_cfa_expression:
        cfa = CfaRule(None, 0, bytes(args[0]))
    elif op == DW_CFA.undefined:
        rules[args[0]] = Rule("undefined")
    elif op == DW_CFA.same_value:
        rules[args[0]] = Rule("same")
    elif op in (DW_CFA.offset, DW_CFA.offset_extended, DW_CFA.offset_extended_sf):
        rules[args[0]] = Rule("offset", args[1] * daf)
    elif op in (DW_CFA.val_offset, DW_CFA.val_offset_sf):
        rules[args[0]] = Rule("val_offset", args[1] * daf)
    elif op == DW_CFA.register:
        rules[args[0]] = Rule("register", args[1])
    elif op == DW_CFA.expression:
        rules[args[0]] = Rule("expression", 0, bytes(args[1]))
    elif op == DW_CFA.val_expression:
        rules[args[0]] = Rule("val_expression", 0, bytes(args[1]))
    elif op in (DW_CFA.restore, DW_CFA.restore_extended):
        if initial is None:
            raise ValueError("DW_CFA_restore in a CIE")
        if args[0] in initial.rules:
            rules[args[0]] = initial.rules[args[0]]
        else:
            rules.pop(args[0], None)
    elif op in (DW_CFA.nop, DW_CFA.GNU_args_size):
        pass
    else:
        raise ValueError(f"unsupported CFI instruction {op.name}")
    return RuleState(cfa, rules)


