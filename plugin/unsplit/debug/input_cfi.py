"""Unwinding rules for moved code no FDE of its binary describes: the pre-BOLT input's CFI at the
address BAT maps it to (BOLT moves instructions without changing what they do to the stack).
None without the input, where it has no CFI either, or where its rules are DWARF expressions
(they may compute from the input's pc)."""

from __future__ import annotations

from dataclasses import dataclass

from unsplit.elf.binary import Binary
from unsplit.elf.cfi_table import table_for
from unsplit.formats.eh_frame import FrameDescription, Row
from unsplit.index.bolt import bat_translate, prebolt


@dataclass(frozen=True, slots=True)
class MovedRow:
    """The input's `row` (of its FDE `fde`) at `input_address`, for output code of the moved
    fragment starting at `output_start` (file addresses)."""

    row: Row
    fde: FrameDescription
    output_start: int
    input_address: int


def row_for_moved_code(binary: Binary, lookup: int) -> MovedRow | None:
    """The input's rules at the address BAT maps file address `lookup` to; None outside the
    code BAT describes, without the input, or where the input has no usable rules. Raises
    DecodeError for BAT or CFI that does not decode."""
    index = bat_translate.load(binary)
    found = None if index is None else index.translate(lookup)
    if found is None:
        return None
    input_binary = prebolt.input_for(binary)
    if input_binary is None:
        return None
    base = prebolt.function_address(
        input_binary, found.procedure,
        prebolt.output_unit(binary, found.procedure, found.parent_address))
    if base is None:
        return None
    address = base + found.input_offset
    fde = table_for(input_binary).fde_at(address)
    row = None if fde is None else fde.row_at(address)
    if fde is None or row is None or row.cfa.register is None or any(
            rule.kind in ("expression", "val_expression") for rule in row.rules.values()):
        return None  # an expression may compute from the pc, which is not the input's here
    return MovedRow(row, fde, found.fragment_start, address)
