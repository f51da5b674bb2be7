"""DWARF expressions (DWARF 5 §2.5) as call frame information uses them: decoded, printed as
llvm-dwarfdump-22 prints them, and evaluated against registers and memory."""

from __future__ import annotations

import struct
from collections.abc import Callable

from unsplit.errors import DecodeError, ExpressionError, MemoryReadError

RSP, RIP = 7, 16  # DWARF register numbers of x86-64 (psABI §3.6.2)
REGISTER_NAMES = ("RAX", "RDX", "RCX", "RBX", "RSI", "RDI", "RBP", "RSP",
                  *(f"R{i}" for i in range(8, 16)), "RIP")

ReadMemory = Callable[[int, int], bytes]


def registers_from_names(values: dict[str, int]) -> dict[int, int]:
    """DWARF-numbered registers from a debugger's names (`rax`…`r15`, `rip`, `pc`, `sp`; any
    case, LLDB's and GDB's spellings); other names are ignored."""
    numbers = {n.lower(): i for i, n in enumerate(REGISTER_NAMES)}
    numbers.update(pc=RIP, sp=RSP)
    return {numbers[k.lower()]: v for k, v in values.items() if k.lower() in numbers}


def register_name(number: int) -> str:
    return REGISTER_NAMES[number] if 0 <= number < len(REGISTER_NAMES) else f"reg{number}"


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
_SECTION = "DWARF expression"  # what a DecodeError names: offsets are inside the expression


def _signed(v: int) -> int:
    v &= _MASK
    return v - (1 << 64) if v >> 63 else v


def _leb(data: bytes, i: int, signed: bool) -> tuple[int, int]:
    result = shift = 0
    while True:
        if i >= len(data):
            raise DecodeError(_SECTION, i, "ends inside a LEB128 number")
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
    """(opcode, operand, operand2) of each operation; DecodeError (at the offset in the
    expression) on unknown or truncated ones."""
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
                raise DecodeError(_SECTION, i, "ends inside a constant")
            (a,) = struct.unpack_from(_CONSTS_FMT[op], expr, i)
            i += size
        elif op in (_CONSTU, 0x23):  # DW_OP_constu, DW_OP_plus_uconst
            a, i = _leb(expr, i, False)
        elif op == _CONSTS:
            a, i = _leb(expr, i, True)
        elif not (0x30 <= op <= 0x4F or op == _DEREF or op in _BINARY or op in _STACK_OPS):
            raise DecodeError(_SECTION, i - 1, f"unsupported operation {op:#04x}")
        out.append((op, a, b))
    return out


def operations(expr: bytes) -> list[tuple[int, int, int]]:
    """(opcode, operand, operand2) of each operation of a DWARF expression; raises
    DecodeError on operations this module does not know."""
    return _ops(expr)


def describe_expression(expr: bytes) -> str:
    """The expression as llvm-dwarfdump-22 prints it (`DW_OP_breg7 RSP+8, DW_OP_deref`)."""
    try:
        ops = _ops(expr)
    except DecodeError:
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


