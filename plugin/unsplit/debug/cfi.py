"""Call frame information of x86-64 ELF files (`.eh_frame`, `.debug_frame`): which FDE covers an
address, the rules in effect there, and one unwinding step with them.

Specifications: DWARF 5 §6.4 (call frame information) and §2.5 (expressions); the LSB's
`.eh_frame` / `.eh_frame_hdr` encoding (LSB Core 5.0, §10.6); the x86-64 psABI §3.6.2
(DWARF register numbers). Entries and rule tables are decoded here, with struct: pyelftools
0.33 takes ~200 µs to parse one FDE (seconds for the cold fragments of a clang-size BOLT
output), its `get_decoded()` asserts on `DW_CFA_GNU_args_size` (glibc has it) and it scales
`DW_CFA_def_cfa_sf` by the code alignment factor instead of the data alignment factor.

Lazily, per binary: the FDE start addresses come from `.eh_frame_hdr`'s sorted table when it is
there (no parsing of the section), else from one pass over the entries; only the FDE that
covers a queried address is parsed and decoded, and then cached.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from elftools.dwarf.constants import DW_CFA

from unsplit.elf.binary import Binary
from unsplit.elf.derived import PerFile
from unsplit.errors import DecodeError, UnsplitError
from unsplit.formats.leb128 import leb128

RSP, RIP = 7, 16
CALLEE_SAVED = (3, 6, 12, 13, 14, 15)  # rbx, rbp, r12-r15: kept when the CFI says nothing
REGISTER_NAMES = ("RAX", "RDX", "RCX", "RBX", "RSI", "RDI", "RBP", "RSP",
                  *(f"R{i}" for i in range(8, 16)), "RIP")

ReadMemory = Callable[[int, int], bytes]


class MemoryReadError(UnsplitError):
    """The debuggee's memory at an address is not available (not in the core, unmapped)."""


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


def registers_from_names(values: dict[str, int]) -> dict[int, int]:
    """DWARF-numbered registers from a debugger's names (`rax`…`r15`, `rip`, `pc`, `sp`; any
    case, LLDB's and GDB's spellings); other names are ignored."""
    numbers = {n.lower(): i for i, n in enumerate(REGISTER_NAMES)}
    numbers.update(pc=RIP, sp=RSP)
    return {numbers[k.lower()]: v for k, v in values.items() if k.lower() in numbers}


def register_name(number: int) -> str:
    return REGISTER_NAMES[number] if 0 <= number < len(REGISTER_NAMES) else f"reg{number}"


# -- finding the FDE of an address ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Instr:
    """One call frame instruction, as pyelftools' CallFrameInstruction spells it: the DW_CFA
    opcode (advance_loc/offset/restore without their operand bits) and its operands, unscaled."""

    opcode: int
    args: tuple[Any, ...]


@dataclass(slots=True)
class _Cie:
    code_alignment_factor: int
    data_alignment_factor: int
    return_address_register: int
    augmentation: bytes
    fde_encoding: int
    instructions: list[_Instr]


@dataclass(slots=True)
class _Fde:
    cie: _Cie
    start: int
    size: int
    instructions: list[_Instr]


_DW_EH_PE_omit = 0xFF


class _Reader:
    """Entries of one CFI section read with struct (DWARF 5 §6.4.1, LSB 5.0 §10.6 for
    `.eh_frame`): pyelftools spends ~200 µs on an FDE, a second per 5000; this, ~20 µs.
    Malformed bytes raise struct.error, IndexError or ValueError; the caller says where."""

    def __init__(self, section: str, data: bytes, address: int, little: bool,
                 address_size: int) -> None:
        self.section, self.data, self.address = section, data, address
        self.eh = section == ".eh_frame"
        self.e = "<" if little else ">"
        self.address_size = address_size
        self.cies: dict[int, _Cie] = {}

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

    def cie(self, offset: int) -> _Cie:
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
        cie = _Cie(caf, daf, ra, augmentation, fde_encoding, self.instructions(i, end))
        self.cies[offset] = cie
        return cie

    def fde_head(self, offset: int) -> tuple[int, _Cie, int, int, int, int] | None:
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

    def fde(self, offset: int) -> _Fde | None:
        """The FDE at `offset`, or None for a CIE or a terminator."""
        head = self.fde_head(offset)
        if head is None:
            return None
        _, cie, start, size, i, end = head
        return _Fde(cie, start, size, self.instructions(i, end, cie.fde_encoding))

    def instructions(self, i: int, end: int, encoding: int = 0x00) -> list[_Instr]:
        data = self.data
        uleb, sleb = self.uleb, self.sleb
        e = self.e
        out: list[_Instr] = []
        while i < end:
            op = data[i]
            i += 1
            high = op & 0xC0
            if high == 0x40:
                out.append(_Instr(DW_CFA.advance_loc, (op & 0x3F,)))
                continue
            if high == 0x80:
                off, i = uleb(i)
                out.append(_Instr(DW_CFA.offset, (op & 0x3F, off)))
                continue
            if high == 0xC0:
                out.append(_Instr(DW_CFA.restore, (op & 0x3F,)))
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
            out.append(_Instr(op, args))
        return out


class _Section:
    """One CFI section: sorted FDE starts and section offsets, and a parser for single entries."""

    def __init__(self, binary: Binary, name: str) -> None:
        self.name = name
        sec = binary.section(name)
        assert sec is not None
        self.address: int = sec["sh_addr"]
        self.data = bytes(sec.data())
        self.reader = _Reader(name, self.data, self.address, binary.elf.little_endian,
                              8 if binary.elf.elfclass == 64 else 4)
        self.starts = array("Q")
        self.offsets = array("Q")
        self.cache: dict[int, FrameDescription | None] = {}
        self.heads: dict[int, tuple[int, _Cie, int, int, int, int] | None] = {}

    def index_all(self) -> None:
        """Every FDE by a pass over the section (no .eh_frame_hdr, or one we cannot trust)."""
        pairs = []
        offset = 0
        try:
            while offset + 4 <= len(self.data):
                end, id_at, _, _ = self.reader.header(offset)
                if end == id_at and self.reader.eh:  # a zero length ends .eh_frame
                    break
                fde = self.reader.fde(offset)
                if fde is not None and fde.size:
                    pairs.append((fde.start, offset))
                offset = end
        except (struct.error, IndexError, ValueError) as e:
            raise DecodeError(self.name, offset, f"bad CFI entry ({_one_line(e)})") from None
        pairs.sort()
        self.starts = array("Q", (p[0] for p in pairs))
        self.offsets = array("Q", (p[1] for p in pairs))

    def lookup(self, address: int) -> FrameDescription | None:
        i = bisect_right(self.starts, address) - 1
        while i >= 0:
            offset = self.offsets[i]
            if offset not in self.cache:
                self.cache[offset] = self.decode(offset)
            fd = self.cache[offset]
            if fd is not None and fd.start <= address < fd.end:
                return fd
            # an empty or shorter FDE at the same start can hide the one that covers `address`
            if i == 0 or self.starts[i - 1] != self.starts[i]:
                return None
            i -= 1
        return None

    def head(self, offset: int) -> tuple[int, _Cie, int, int, int, int] | None:
        """Reader.fde_head of the entry at `offset`, kept."""
        if offset in self.heads:
            return self.heads[offset]
        try:
            head = self.heads[offset] = self.reader.fde_head(offset)
        except (struct.error, IndexError, ValueError) as e:
            raise DecodeError(self.name, offset, f"bad CFI entry ({_one_line(e)})") from None
        return head

    def head_at(self, address: int) -> tuple[int, int, int] | None:
        """(offset, start, end) of the FDE that covers `address`, from its header alone (no
        rows decoded): what lookup finds, for callers that decode rows their own way."""
        i = bisect_right(self.starts, address) - 1
        while i >= 0:
            offset = self.offsets[i]
            head = self.head(offset)
            start, end = (head[2], head[2] + head[3]) if head else (0, 0)
            if start <= address < end:
                return offset, start, end
            if i == 0 or self.starts[i - 1] != self.starts[i]:
                return None
            i -= 1
        return None

    def decode(self, offset: int) -> FrameDescription | None:
        try:
            fde = self.reader.fde(offset)
        except (struct.error, IndexError, ValueError) as e:
            raise DecodeError(self.name, offset, f"bad CFI entry ({_one_line(e)})") from None
        if fde is None:
            return None
        cie = fde.cie
        try:
            rows = decode_rows(cie, fde, fde.start)
        except DecodeError:
            raise
        except Exception as e:
            raise DecodeError(self.name, offset, f"bad CFI instructions ({_one_line(e)})") \
                from None
        return FrameDescription(self.name, offset, fde.start, fde.start + fde.size,
                                cie.return_address_register, b"S" in cie.augmentation,
                                tuple(rows))


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def _eh_frame_hdr(binary: Binary, eh: _Section) -> bool:
    """Fill `eh` from .eh_frame_hdr's binary search table; False when it cannot be used."""
    hdr = binary.section(".eh_frame_hdr")
    if hdr is None:
        return False
    data = bytes(hdr.data())
    base = hdr["sh_addr"]
    # version 1; eh_frame_ptr pcrel|sdata4; fde_count udata4; table datarel|sdata4: what every
    # linker writes. Anything else: parse the section instead.
    if len(data) < 12 or data[:4] != b"\x01\x1b\x03\x3b":
        return False
    eh_ptr, count = struct.unpack_from("<iI", data, 4)
    if base + 4 + eh_ptr != eh.address or len(data) < 12 + 8 * count:
        return False
    table = struct.unpack_from(f"<{2 * count}i", data, 12)
    starts = [(base + table[2 * k]) & 0xFFFFFFFFFFFFFFFF for k in range(count)]
    offsets = [base + table[2 * k + 1] - eh.address for k in range(count)]
    if any(not 0 <= o < len(eh.data) for o in offsets) or starts != sorted(starts):
        return False
    eh.starts = array("Q", starts)
    eh.offsets = array("Q", offsets)
    return True


class CfiTable:
    """The CFI of one binary: `.eh_frame` first (what runs), then `.debug_frame`."""

    def __init__(self, binary: Binary) -> None:
        self.binary = binary
        self._sections: list[_Section] | None = None

    @property
    def sections(self) -> list[_Section]:
        if self._sections is None:
            found = []
            for name in (".eh_frame", ".debug_frame"):
                sec = self.binary.section(name)
                if sec is None or sec["sh_type"] == "SHT_NOBITS" or not sec["sh_size"]:
                    continue
                s = _Section(self.binary, name)
                if name != ".eh_frame" or not _eh_frame_hdr(self.binary, s):
                    s.index_all()
                found.append(s)
            self._sections = found
        return self._sections

    def fde_at(self, address: int) -> FrameDescription | None:
        """The decoded FDE covering file address `address`, or None."""
        for s in self.sections:
            fd = s.lookup(address)
            if fd is not None:
                return fd
        return None

    def head_at(self, address: int) -> tuple[str, int, int, int] | None:
        """(section, offset, start, end) of the FDE fde_at would give, without decoding it."""
        for s in self.sections:
            found = s.head_at(address)
            if found is not None:
                return (s.name, *found)
        return None

    def section_named(self, name: str) -> _Section:
        return next(s for s in self.sections if s.name == name)

    def fde_starts(self) -> list[tuple[str, int]]:
        """(section, start) of every FDE, in address order per section."""
        return [(s.name, a) for s in self.sections for a in s.starts]


_TABLES = PerFile(CfiTable)


def table_for(binary: Binary) -> CfiTable:
    """The CfiTable of `binary`, made once and kept as long as the Binary lives (the index
    cache keeps one Binary per file for the session)."""
    return _TABLES(binary)


# -- decoding the rule table ---------------------------------------------------------------------


def decode_rows(cie: _Cie, fde: _Fde, start: int) -> list[Row]:
    """The FDE's table: the CIE's initial instructions, then the FDE's (DWARF 5 §6.4.2)."""
    caf = cie.code_alignment_factor
    daf = cie.data_alignment_factor
    state = _State(CfaRule(None), {})
    for instr in cie.instructions:
        state = _apply(instr, state, None, caf, daf)
    initial = _State(state.cfa, dict(state.rules))
    rows: list[Row] = []
    pc = start
    stack: list[_State] = []
    for instr in fde.instructions:
        op = instr.opcode
        if op in (DW_CFA.advance_loc, DW_CFA.advance_loc1, DW_CFA.advance_loc2,
                  DW_CFA.advance_loc4, DW_CFA.set_loc):
            rows.append(Row(pc, state.cfa, dict(state.rules)))
            pc = instr.args[0] if op == DW_CFA.set_loc else pc + instr.args[0] * caf
        elif op == DW_CFA.remember_state:
            stack.append(_State(state.cfa, dict(state.rules)))
        elif op == DW_CFA.restore_state:
            if not stack:
                raise ValueError("DW_CFA_restore_state with nothing remembered")
            state = stack.pop()
        else:
            state = _apply(instr, state, initial, caf, daf)
    rows.append(Row(pc, state.cfa, dict(state.rules)))
    # Keep the last row at each address (advances by 0 happen) in address order.
    out: dict[int, Row] = {}
    for row in rows:
        out[row.address] = row
    return sorted(out.values(), key=lambda r: r.address)


@dataclass(slots=True)
class _State:
    cfa: CfaRule
    rules: dict[int, Rule]


def _apply(instr: Any, state: _State, initial: _State | None, caf: int, daf: int) -> _State:
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
    return _State(cfa, rules)


# -- DWARF expressions ---------------------------------------------------------------------------

_DEREF, _CONST1U, _CONST1S, _CONST2U, _CONST2S = 0x06, 0x08, 0x09, 0x0A, 0x0B
_CONST4U, _CONST4S, _CONST8U, _CONST8S, _CONSTU, _CONSTS = 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11
_BINARY: dict[int, tuple[str, Callable[[int, int], int]]] = {
    0x1A: ("DW_OP_and", lambda a, b: a & b),
    0x1C: ("DW_OP_minus", lambda a, b: a - b),
    0x1E: ("DW_OP_mul", lambda a, b: a * b),
    0x21: ("DW_OP_or", lambda a, b: a | b),
    0x22: ("DW_OP_plus", lambda a, b: a + b),
    0x24: ("DW_OP_shl", lambda a, b: a << b),
    0x25: ("DW_OP_shr", lambda a, b: a >> b),
    0x27: ("DW_OP_xor", lambda a, b: a ^ b),
    0x29: ("DW_OP_eq", lambda a, b: int(a == b)),
    0x2A: ("DW_OP_ge", lambda a, b: int(_signed(a) >= _signed(b))),
    0x2B: ("DW_OP_gt", lambda a, b: int(_signed(a) > _signed(b))),
    0x2C: ("DW_OP_le", lambda a, b: int(_signed(a) <= _signed(b))),
    0x2D: ("DW_OP_lt", lambda a, b: int(_signed(a) < _signed(b))),
    0x2E: ("DW_OP_ne", lambda a, b: int(a != b)),
}
_CONSTS_FMT = {_CONST1U: "<B", _CONST1S: "<b", _CONST2U: "<H", _CONST2S: "<h",
               _CONST4U: "<I", _CONST4S: "<i", _CONST8U: "<Q", _CONST8S: "<q"}
_CONST_NAMES = {_CONST1U: "DW_OP_const1u", _CONST1S: "DW_OP_const1s", _CONST2U: "DW_OP_const2u",
                _CONST2S: "DW_OP_const2s", _CONST4U: "DW_OP_const4u", _CONST4S: "DW_OP_const4s",
                _CONST8U: "DW_OP_const8u", _CONST8S: "DW_OP_const8s"}
_STACK_OPS = {0x12: "DW_OP_dup", 0x13: "DW_OP_drop", 0x14: "DW_OP_over", 0x16: "DW_OP_swap"}
_MASK = (1 << 64) - 1


class ExpressionError(UnsplitError):
    """A DWARF expression this unwinder does not evaluate (or a malformed one)."""


def _signed(v: int) -> int:
    v &= _MASK
    return v - (1 << 64) if v >> 63 else v


def _leb(data: bytes, i: int, signed: bool) -> tuple[int, int]:
    result = shift = 0
    while True:
        if i >= len(data):
            raise ExpressionError("expression ends inside a LEB128 number")
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    if signed and shift and result >> (shift - 1) & 1:
        result -= 1 << shift
    return result, i


def _ops(expr: bytes) -> list[tuple[int, int, int]]:
    """(opcode, operand, operand2) of each operation; raises ExpressionError on unknown ones."""
    out, i = [], 0
    while i < len(expr):
        op = expr[i]
        i += 1
        a = b = 0
        if 0x70 <= op <= 0x8F:  # DW_OP_breg0..31 sleb
            a, i = _leb(expr, i, True)
        elif op == 0x92:  # DW_OP_bregx uleb sleb
            a, i = _leb(expr, i, False)
            b, i = _leb(expr, i, True)
        elif op in _CONSTS_FMT:
            size = struct.calcsize(_CONSTS_FMT[op])
            if i + size > len(expr):
                raise ExpressionError("expression ends inside a constant")
            (a,) = struct.unpack_from(_CONSTS_FMT[op], expr, i)
            i += size
        elif op in (_CONSTU, 0x23):  # DW_OP_constu, DW_OP_plus_uconst
            a, i = _leb(expr, i, False)
        elif op == _CONSTS:
            a, i = _leb(expr, i, True)
        elif not (0x30 <= op <= 0x4F or op == _DEREF or op in _BINARY or op in _STACK_OPS):
            raise ExpressionError(f"unsupported DWARF expression operation {op:#04x}")
        out.append((op, a, b))
    return out


def operations(expr: bytes) -> list[tuple[int, int, int]]:
    """(opcode, operand, operand2) of each operation of a DWARF expression; raises
    ExpressionError on operations this module does not know."""
    return _ops(expr)


def describe_expression(expr: bytes) -> str:
    """The expression as llvm-dwarfdump-22 prints it (`DW_OP_breg7 RSP+8, DW_OP_deref`)."""
    try:
        ops = _ops(expr)
    except ExpressionError:
        return "<expression " + expr.hex() + ">"
    parts = []
    for op, a, b in ops:
        if 0x70 <= op <= 0x8F:
            parts.append(f"DW_OP_breg{op - 0x70} {register_name(op - 0x70)}{a:+d}")
        elif op == 0x92:
            parts.append(f"DW_OP_bregx {register_name(a)}{b:+d}")
        elif 0x30 <= op <= 0x4F:
            parts.append(f"DW_OP_lit{op - 0x30}")
        elif op == _DEREF:
            parts.append("DW_OP_deref")
        elif op in _BINARY:
            parts.append(_BINARY[op][0])
        elif op in _STACK_OPS:
            parts.append(_STACK_OPS[op])
        elif op in _CONST_NAMES:
            parts.append(f"{_CONST_NAMES[op]} {a:#x}")
        elif op == _CONSTU:
            parts.append(f"DW_OP_constu {a:#x}")
        elif op == _CONSTS:
            parts.append(f"DW_OP_consts {a:+#x}")
        else:
            parts.append(f"DW_OP_plus_uconst {a:#x}")
    return ", ".join(parts)


def evaluate(expr: bytes, regs: dict[int, int], read_memory: ReadMemory,
             initial: int | None = None) -> int:
    """The value an expression computes; `initial` is pushed first (the CFA for register rules)."""
    stack: list[int] = [] if initial is None else [initial]
    for op, a, b in _ops(expr):
        if 0x70 <= op <= 0x8F or op == 0x92:
            reg, off = (op - 0x70, a) if op != 0x92 else (a, b)
            if reg not in regs:
                raise ExpressionError(f"expression reads {register_name(reg)}, which is unknown")
            stack.append((regs[reg] + off) & _MASK)
        elif 0x30 <= op <= 0x4F:
            stack.append(op - 0x30)
        elif op in _CONSTS_FMT or op in (_CONSTU, _CONSTS):
            stack.append(a & _MASK)
        elif op == 0x23:
            _need(stack, 1)
            stack.append((stack.pop() + a) & _MASK)
        elif op == _DEREF:
            _need(stack, 1)
            stack.append(read_u64(read_memory, stack.pop()))
        elif op in _BINARY:
            _need(stack, 2)
            y, x = stack.pop(), stack.pop()
            stack.append(_BINARY[op][1](x, y) & _MASK)
        elif op == 0x12:
            _need(stack, 1)
            stack.append(stack[-1])
        elif op == 0x13:
            _need(stack, 1)
            stack.pop()
        elif op == 0x14:
            _need(stack, 2)
            stack.append(stack[-2])
        else:  # swap
            _need(stack, 2)
            stack[-1], stack[-2] = stack[-2], stack[-1]
    _need(stack, 1)
    return stack[-1]


def _need(stack: list[int], n: int) -> None:
    if len(stack) < n:
        raise ExpressionError("DWARF expression pops an empty stack")


def read_u64(read_memory: ReadMemory, address: int) -> int:
    data = read_memory(address, 8)
    if len(data) != 8:
        raise MemoryReadError(f"cannot read memory at {address:#x}")
    value: int = struct.unpack("<Q", data)[0]
    return value


# -- one step ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """What unwinding one frame gives: its CFA and the caller's registers (None: outermost)."""

    cfa: int
    caller: dict[int, int] | None
    fde: FrameDescription
    why_outermost: str | None = None


def step(binary: Binary, pc_file_address: int, bias: int, regs: dict[int, int],
         read_memory: ReadMemory, is_innermost: bool) -> Step | None:
    """Unwind the frame whose pc is `pc_file_address` (+ `bias` at run time) with `regs`.

    None when no FDE covers the pc. A caller frame's pc is a return address, which may lie past
    the end of its fragment (a call to a noreturn function last), so it is looked up at pc-1.
    Raises ExpressionError / MemoryReadError / DecodeError (one line each).
    """
    lookup = pc_file_address if is_innermost else pc_file_address - 1
    fde = table_for(binary).fde_at(lookup)
    if fde is None:
        return None
    row = fde.row_at(lookup)
    if row is None:
        return None
    # Rules that name a register by its value read runtime addresses: nothing to relocate
    # except what the CFI computed from rip (a PLT expression), which is runtime already.
    if row.cfa.register is None:
        cfa = evaluate(row.cfa.expr, regs, read_memory)
    else:
        if row.cfa.register not in regs:
            raise ExpressionError(f"CFA is {register_name(row.cfa.register)}"
                                  f"{row.cfa.offset:+d}, and that register is unknown")
        cfa = (regs[row.cfa.register] + row.cfa.offset) & _MASK
    caller: dict[int, int] = {r: regs[r] for r in CALLEE_SAVED if r in regs}
    caller[RSP] = cfa
    for reg, rule in row.rules.items():
        value = _recover(reg, rule, cfa, regs, read_memory)
        if value is None:
            caller.pop(reg, None)
        else:
            caller[reg] = value
    ra = fde.return_register
    if ra != RIP:
        if ra in caller:
            caller[RIP] = caller[ra]
        else:
            caller.pop(RIP, None)
    if ra not in row.rules or row.rules[ra].kind == "undefined":
        return Step(cfa, None, fde, "the return address is undefined (outermost frame)")
    if caller.get(RIP, 0) == 0:
        return Step(cfa, None, fde, "the return address is 0 (outermost frame)")
    return Step(cfa, caller, fde)


def _recover(reg: int, rule: Rule, cfa: int, regs: dict[int, int],
             read_memory: ReadMemory) -> int | None:
    kind = rule.kind
    if kind == "offset":
        return read_u64(read_memory, (cfa + rule.value) & _MASK)
    if kind == "val_offset":
        return (cfa + rule.value) & _MASK
    if kind == "register":
        return regs.get(rule.value)
    if kind == "expression":
        return read_u64(read_memory, evaluate(rule.expr, regs, read_memory, cfa))
    if kind == "val_expression":
        return evaluate(rule.expr, regs, read_memory, cfa)
    if kind == "same":
        return regs.get(reg)
    return None  # undefined


def unwind_step(binary: Binary, pc_file_address: int, bias: int, regs: dict[int, int],
                read_memory: ReadMemory, is_innermost: bool) -> dict[int, int] | None:
    """The caller's registers (rsp = CFA, rip = return address, callee-saved restored), or
    None at the outermost frame or where no CFI covers the pc. Errors as in :func:`step`."""
    found = step(binary, pc_file_address, bias, regs, read_memory, is_innermost)
    return None if found is None else found.caller
