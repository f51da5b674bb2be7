"""Call frame information entries (`.eh_frame`, `.debug_frame`) decoded from bytes: CIEs, FDEs,
their instructions and the rule table an FDE defines. Specifications: DWARF 5 §6.4, LSB Core 5.0
§10.6, x86-64 psABI §3.6.2. Read with struct rather than pyelftools, which is slow per FDE,
asserts on ``DW_CFA_GNU_args_size`` and scales ``DW_CFA_def_cfa_sf`` by the wrong factor."""

from __future__ import annotations

import struct
from bisect import bisect_right
from typing import Any, NamedTuple

from unsplit.errors import DecodeError
from unsplit.formats.dwarf_expr import describe_expression, register_name
from unsplit.formats.leb128 import leb128


class DW_CFA:
    """Call frame instruction opcodes (DWARF 5 §7.24, Table 7.29; GNU_args_size from LSB Core
    §10.6.1.3): advance_loc, offset and restore without their operand bits, as pyelftools'
    DW_CFA has them (plain ints: a GDB session need not import pyelftools to unwind)."""

    advance_loc = 0x40
    offset = 0x80
    restore = 0xC0
    nop = 0x00
    set_loc = 0x01
    advance_loc1 = 0x02
    advance_loc2 = 0x03
    advance_loc4 = 0x04
    offset_extended = 0x05
    restore_extended = 0x06
    undefined = 0x07
    same_value = 0x08
    register = 0x09
    remember_state = 0x0A
    restore_state = 0x0B
    def_cfa = 0x0C
    def_cfa_register = 0x0D
    def_cfa_offset = 0x0E
    def_cfa_expression = 0x0F
    expression = 0x10
    offset_extended_sf = 0x11
    def_cfa_sf = 0x12
    def_cfa_offset_sf = 0x13
    val_offset = 0x14
    val_offset_sf = 0x15
    val_expression = 0x16
    GNU_args_size = 0x2E


# -- rules --------------------------------------------------------------------------------------


class Rule(NamedTuple):
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


class CfaRule(NamedTuple):
    register: int | None  # None with an expression
    offset: int = 0
    expr: bytes = b""

    def describe(self) -> str:
        if self.register is None:
            return describe_expression(self.expr)
        name = register_name(self.register)
        return f"{name}{self.offset:+d}" if self.offset else name


class Row(NamedTuple):
    """The rules in effect from `address` to the next row (file addresses)."""

    address: int
    cfa: CfaRule
    rules: dict[int, Rule]

    def __hash__(self) -> int:  # by address and CFA: the rules are a dict
        return hash((self.address, self.cfa))


class FrameDescription(NamedTuple):
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


class Instruction(NamedTuple):
    """One call frame instruction, as pyelftools' CallFrameInstruction spells it: the DW_CFA
    opcode (advance_loc/offset/restore without their operand bits) and its operands, unscaled."""

    opcode: int
    args: tuple[Any, ...]


class Cie(NamedTuple):
    code_alignment_factor: int
    data_alignment_factor: int
    return_address_register: int
    augmentation: bytes
    fde_encoding: int
    instructions: list[Instruction]
    section: str = ".eh_frame"  # where it is: what a DecodeError about its rules names
    offset: int = 0
    initial: tuple[int, int] = (0, 0)  # [start, end) of its initial instructions' bytes


class Fde(NamedTuple):
    cie: Cie
    start: int
    size: int
    instructions: list[Instruction]
    offset: int = 0  # in the CIE's section


_DW_EH_PE_omit = 0xFF
_MASK = (1 << 64) - 1


class EntryReader:
    """Entries of one CFI section read with struct (DWARF 5 §6.4.1, LSB 5.0 §10.6 for
    `.eh_frame`), an order of magnitude faster than pyelftools. Every read is checked:
    malformed bytes raise DecodeError at the field."""

    def __init__(self, section: str, data: bytes, address: int, little: bool,
                 address_size: int) -> None:
        self.section, self.data, self.address = section, data, address
        self.eh = section == ".eh_frame"
        self.e = "<" if little else ">"
        self.address_size = address_size
        self.cies: dict[int, Cie] = {}
        self._usual = struct.Struct(self.e + "IIii").unpack_from

    def uleb(self, i: int) -> tuple[int, int]:
        return leb128(self.data, i, self.section, False)

    def sleb(self, i: int) -> tuple[int, int]:
        return leb128(self.data, i, self.section, True)

    def error(self, at: int, message: str) -> DecodeError:
        return DecodeError(self.section, at, message)

    def unpack(self, fmt: str, at: int, end: int, what: str) -> int:
        """One struct-format number at `at`, which must end by `end`."""
        if at < 0 or at + struct.calcsize(fmt) > end:
            raise self.error(at, f"{what} runs past its entry")
        value: int = struct.unpack_from(self.e + fmt, self.data, at)[0]
        return value

    def byte(self, at: int, end: int, what: str) -> int:
        if not 0 <= at < end:
            raise self.error(at, f"{what} runs past its entry")
        return self.data[at]

    def header(self, offset: int) -> tuple[int, int, int, int]:
        """(end of the entry, its CIE pointer field's offset, the pointer, where its body
        starts); an entry of length 0 is a terminator (end == body)."""
        size_of_data = len(self.data)
        length = self.unpack("I", offset, size_of_data, "an entry's length")
        if length == 0:
            return offset + 4, offset + 4, 0, offset + 4
        if length == 0xFFFFFFFF:
            length = self.unpack("Q", offset + 4, size_of_data, "an entry's 64-bit length")
            id_at, fmt, size = offset + 12, "Q", 8
        else:
            id_at, fmt, size = offset + 4, "I", 4
        end = id_at + length
        if end > size_of_data:
            raise self.error(offset, f"entry length {length:#x} runs past the section")
        cie_id = self.unpack(fmt, id_at, end, "a CIE pointer")
        return end, id_at, cie_id, id_at + size

    def is_cie(self, cie_id: int, id_size: int) -> bool:
        return cie_id == 0 if self.eh else cie_id == (0xFFFFFFFF if id_size == 4 else
                                                      0xFFFFFFFFFFFFFFFF)

    def pointer(self, i: int, encoding: int, end: int) -> tuple[int, int]:
        """A DW_EH_PE-encoded pointer at offset i, inside an entry ending at `end`: (value,
        offset after it)."""
        fmt = encoding & 0x0F
        if fmt == 0x00:
            size_fmt = "Q" if self.address_size == 8 else "I"
        else:
            size_fmt = {0x02: "H", 0x03: "I", 0x04: "Q", 0x0A: "h", 0x0B: "i",
                        0x0C: "q"}.get(fmt, "")
        if size_fmt:
            value = self.unpack(size_fmt, i, end, "a pointer")
            after = i + struct.calcsize(size_fmt)
        elif fmt == 0x01:
            value, after = self.uleb(i)
        elif fmt == 0x09:
            value, after = self.sleb(i)
        else:
            raise self.error(i, f"pointer encoding {encoding:#x}")
        application = encoding & 0x70
        if application == 0x10:  # pcrel
            value += self.address + i
        elif application not in (0x00,):
            raise self.error(i, f"pointer encoding {encoding:#x}")
        return value & 0xFFFFFFFFFFFFFFFF, after

    def cie(self, offset: int) -> Cie:
        found = self.cies.get(offset)
        if found is not None:
            return found
        end, id_at, cie_id, i = self.header(offset)
        if not self.is_cie(cie_id, i - id_at):
            raise self.error(offset, "no CIE here (an FDE's CIE pointer is wrong)")
        data = self.data
        version = self.byte(i, end, "the CIE's version")
        i += 1
        nul = data.find(0, i, end)
        if nul < 0:
            raise self.error(i, "the CIE's augmentation string runs past its entry")
        augmentation = bytes(data[i:nul])
        i = nul + 1
        if not self.eh and version >= 4:
            i += 2  # address_size, segment_selector_size
        caf, i = self.uleb(i)
        daf, i = self.sleb(i)
        if version == 1:
            ra, i = self.byte(i, end, "the return address register"), i + 1
        else:
            ra, i = self.uleb(i)
        fde_encoding = 0x00
        if augmentation.startswith(b"z"):
            length, i = self.uleb(i)
            aug_end = i + length
            for ch in augmentation[1:]:
                if ch == ord("R"):
                    fde_encoding, i = self.byte(i, end, "the FDE pointer encoding"), i + 1
                elif ch == ord("P"):
                    enc, i = self.byte(i, end, "the personality encoding"), i + 1
                    _, i = self.pointer(i, enc & 0x7F, end)
                elif ch == ord("L"):
                    i += 1
                elif ch in (ord("S"), ord("B"), ord("G")):
                    pass
                else:
                    break  # the length says where the instructions start
            i = aug_end
        elif augmentation not in (b"",):
            raise self.error(offset, f"augmentation {augmentation!r} without 'z'")
        if i > end:
            raise self.error(offset, "the CIE's fields run past its entry")
        cie = Cie(caf, daf, ra, augmentation, fde_encoding, self.instructions(i, end),
                  self.section, offset, (i, end))
        self.cies[offset] = cie
        return cie

    def cie_bytes(self, offset: int) -> bytes:
        """The CIE's fields and instructions after its id, without trailing DW_CFA_nop: two
        CIEs with equal bytes give every FDE the same initial rules."""
        end, _, _, body = self.header(offset)
        return self.data[body:end].rstrip(b"\0")

    def fde_head(self, offset: int) -> tuple[int, Cie, int, int, int, int] | None:
        """The FDE at `offset` without its instructions: (its CIE's offset, the CIE, start,
        size, where its instructions begin, where they end); None for a CIE or a terminator."""
        usual = self._usual_head(offset)
        if usual is not None:
            return usual
        end, id_at, cie_id, i = self.header(offset)
        if end == id_at or self.is_cie(cie_id, i - id_at):
            return None
        cie_offset = id_at - cie_id if self.eh else cie_id
        cie = self.cie(cie_offset)
        if self.eh:
            start, i = self.pointer(i, cie.fde_encoding, end)
            size, i = self.pointer(i, cie.fde_encoding & 0x0F, end)
        else:
            start, i = self.pointer(i, 0x00, end)
            size, i = self.pointer(i, 0x00, end)
        if cie.augmentation.startswith(b"z"):
            length, i = self.uleb(i)
            i += length
        if i > end:
            raise self.error(offset, "the FDE's fields run past its entry")
        return cie_offset, cie, start, size, i, end

    def _usual_head(self, offset: int) -> tuple[int, Cie, int, int, int, int] | None:
        """fde_head of the FDE every linker and BOLT write (`.eh_frame`, 32-bit length, a CIE
        already read whose pointers are pcrel|sdata4, a one-byte augmentation length) with
        one struct call; None for anything else, which fde_head reads field by field (the
        same answer: a BOLTed libLLVM's debug file asks for 179k heads)."""
        data = self.data
        if not self.eh or offset < 0 or offset + 17 > len(data):
            return None
        length, cie_id, start, size = self._usual(data, offset)
        end = offset + 4 + length
        if cie_id == 0 or length == 0xFFFFFFFF or end > len(data):
            return None
        cie = self.cies.get(offset + 4 - cie_id)
        if cie is None or cie.fde_encoding != 0x1B:
            return None
        i = offset + 16
        if cie.augmentation.startswith(b"z"):
            if data[i] >= 0x80:
                return None
            i += 1 + data[i]
        if i > end:
            return None
        return (offset + 4 - cie_id, cie, (self.address + offset + 8 + start) & _MASK,
                size & _MASK, i, end)

    def fde(self, offset: int) -> Fde | None:
        """The FDE at `offset`, or None for a CIE or a terminator."""
        head = self.fde_head(offset)
        if head is None:
            return None
        _, cie, start, size, i, end = head
        return Fde(cie, start, size, self.instructions(i, end, cie.fde_encoding), offset)

    def instructions(self, i: int, end: int, encoding: int = 0x00) -> list[Instruction]:
        data = self.data
        uleb, sleb = self.uleb, self.sleb
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
                value, i = self.pointer(i, encoding if self.eh else 0x00, end)
                args = (value,)
            elif op == DW_CFA.advance_loc1:
                args, i = (self.byte(i, end, "DW_CFA_advance_loc1"),), i + 1
            elif op == DW_CFA.advance_loc2:
                args, i = (self.unpack("H", i, end, "DW_CFA_advance_loc2"),), i + 2
            elif op == DW_CFA.advance_loc4:
                args, i = (self.unpack("I", i, end, "DW_CFA_advance_loc4"),), i + 4
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
                raise self.error(i - 1, f"unknown CFI instruction {op:#04x}")
            if i > end:
                raise self.error(end, "an instruction runs past its entry")
            out.append(Instruction(op, args))
        return out


# -- decoding the rule table ---------------------------------------------------------------------


def decode_rows(cie: Cie, fde: Fde, start: int) -> list[Row]:
    """The FDE's table: the CIE's initial instructions, then the FDE's (DWARF 5 §6.4.2)."""
    caf = cie.code_alignment_factor
    daf = cie.data_alignment_factor
    state = initial_state(cie)
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
                raise DecodeError(cie.section, fde.offset, "DW_CFA_restore_state with nothing "
                                  "remembered")
            state = stack.pop()
        else:
            state = apply_instruction(instr, state, initial, caf, daf, (cie.section, fde.offset))
    rows.append(Row(pc, state.cfa, dict(state.rules)))
    # Keep the last row at each address (advances by 0 happen) in address order.
    out: dict[int, Row] = {}
    for row in rows:
        out[row.address] = row
    return sorted(out.values(), key=lambda r: r.address)


class RuleState(NamedTuple):
    cfa: CfaRule
    rules: dict[int, Rule]


def initial_state(cie: Cie) -> RuleState:
    """The rules a CIE's initial instructions set (DecodeError at the CIE for one that moves
    the location or uses a state stack: only an FDE's table has rows)."""
    state = RuleState(CfaRule(None), {})
    for instr in cie.instructions:
        state = apply_instruction(instr, state, None, cie.code_alignment_factor,
                                  cie.data_alignment_factor, (cie.section, cie.offset))
    return state


def apply_instruction(instr: Any, state: RuleState, initial: RuleState | None, caf: int,
                      daf: int, where: tuple[str, int]) -> RuleState:
    """The state after one instruction that sets a rule; `where` (section, offset of the entry)
    is what a DecodeError names for any other."""
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
            raise DecodeError(*where, "DW_CFA_restore in a CIE")
        if args[0] in initial.rules:
            rules[args[0]] = initial.rules[args[0]]
        else:
            rules.pop(args[0], None)
    elif op in (DW_CFA.nop, DW_CFA.GNU_args_size):
        pass
    else:
        raise DecodeError(*where, f"CFI instruction {int(op):#04x} in a CIE's initial instructions")
    return RuleState(cfa, rules)


