"""A jump BOLT inserted right after a conditional branch that is its block's first instruction
gets the branch's line (found by bench/realworld.py on Lua's `tconcat.cold.0`:
``jne rel32`` (``jne rel8`` in the input) opens block %5, then BOLT's ``jmp`` back to the hot
fall-through; BOLT's line table continues the jne's row, line 168, and `where` said 148).

BAT keeps no branch entry for a branch at its block's start (spec §2.3: it would coincide with
the block entry), so the anchor of the inserted jump is a *block* entry. The case is rare enough
that the zoo has none: here a real cold block entry of a zoo BOLT binary is given those bytes.
"""

from __future__ import annotations

from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.index.bolt import bat_translate
from unsplit.index.module_index import ModuleIndex

from ...conftest import ROOT


def test_inserted_jump_after_a_block_opening_branch(zoo: dict[str, Any],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    binary = Binary(str(ROOT / zoo["bolt-all"]["programs"]["crash"]["binary"]))
    index = ModuleIndex(binary)
    bat = bat_translate.load(binary)
    assert bat is not None
    # A block entry in a cold fragment, and what BAT says of it.
    anchor = next(t for t in (bat.translate(f.start) for h in bat.table.hot
                                                     for f in bat.fragments_at(h)
                              if f.name != "hot") if t is not None and t.exact and not t.is_branch)
    jump = anchor.address + 6
    real = bat_translate.BatIndex.translate

    def translate(self: bat_translate.BatIndex, address: int) -> bat_translate.Translation | None:
        if address in (jump - 1, jump):  # non-exact, from the block entry, as BAT does
            return anchor._replace(address=address, exact=False,
                                   input_offset=anchor.input_offset + address - anchor.address)
        return real(self, address)

    code = {anchor.address: 0x0F, anchor.address + 1: 0x85, jump: 0xE9}  # jne rel32; jmp
    monkeypatch.setattr(bat_translate.BatIndex, "translate", translate)
    monkeypatch.setattr(index.binary, "code_byte", lambda a: code.get(a, 0x90))
    found = index.input_location(anchor.address)
    assert found is not None and found[2] is not None
    assert index.sources.bat._inserted_jump(jump)
    assert index.bat_input_address(jump) == found[2] + found[1]  # the jne's, not past it
