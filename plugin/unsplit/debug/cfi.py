"""One unwinding step with a binary's call frame information: registers of the caller from those
of the callee, with the FDE `unsplit.elf.cfi_table` chooses. Specification: DWARF 5 §6.4.
"""

from __future__ import annotations

from dataclasses import dataclass

from unsplit.debug import input_cfi
from unsplit.elf.binary import Binary
from unsplit.elf.cfi_table import table_for
from unsplit.errors import ExpressionError, UnsplitError
from unsplit.formats.dwarf_expr import (
    RIP,
    RSP,
    ReadMemory,
    evaluate,
    read_u64,
    register_name,
)
from unsplit.formats.eh_frame import FrameDescription, Row, Rule
from unsplit.index.model.frame import lookup_pc

_MASK = (1 << 64) - 1
CALLEE_SAVED = (3, 6, 12, 13, 14, 15)  # rbx, rbp, r12-r15: kept when the CFI says nothing


def is_signal_frame(binary: Binary, file_address: int) -> bool:
    """Whether the FDE covering `file_address` is a signal trampoline's ("S" augmentation):
    the frame above it was interrupted at its pc rather than calling. False where no CFI
    covers it or the CFI cannot be read."""
    try:
        fde = table_for(binary).fde_at(file_address)
    except UnsplitError:
        return False
    return fde is not None and fde.signal_frame


# -- one step ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """What unwinding one frame gives: its CFA and the caller's registers (None: outermost),
    by `row` of `fde`, whose code starts at `start` (a file address of the binary unwound:
    the frame's function or fragment). `fde` is the pre-BOLT input's where no FDE of the
    binary covers moved code."""

    cfa: int
    caller: dict[int, int] | None
    fde: FrameDescription
    why_outermost: str | None = None
    row: Row | None = None
    start: int = 0


def step(binary: Binary, pc_file_address: int, bias: int, regs: dict[int, int],
         read_memory: ReadMemory, is_innermost: bool) -> Step | None:
    """Unwind the frame whose pc is `pc_file_address` (+ `bias` at run time) with `regs`.

    Where no FDE of the binary covers the pc but it is moved code, the rules are the pre-BOLT
    input's where BAT maps it (input_cfi); None when neither covers it. A caller frame's pc is
    a return address, which may lie past the end of its fragment (a call to a noreturn
    function last), so it is looked up at pc-1.
    Raises ExpressionError / MemoryReadError / DecodeError (one line each).
    """
    lookup = lookup_pc(pc_file_address, holds_return_address=not is_innermost)
    fde = table_for(binary).fde_at(lookup)
    if fde is None:
        moved = input_cfi.row_for_moved_code(binary, lookup)
        if moved is None:
            return None
        return _apply(moved.row, moved.fde, regs, read_memory, moved.output_start)
    row = fde.row_at(lookup)
    if row is None:
        return None
    return _apply(row, fde, regs, read_memory, fde.start)


def _apply(row: Row, fde: FrameDescription, regs: dict[int, int], read_memory: ReadMemory,
           start: int) -> Step:
    """The caller's registers by `row` (of `fde`, for its return-address register)."""
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
        return Step(cfa, None, fde, "the return address is undefined (outermost frame)", row,
                    start)
    if caller.get(RIP, 0) == 0:
        return Step(cfa, None, fde, "the return address is 0 (outermost frame)", row, start)
    return Step(cfa, caller, fde, None, row, start)


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
