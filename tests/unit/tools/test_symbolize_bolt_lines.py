"""`unsplit symbolize` on BOLT outputs without DWARF gives BOLT's own line (the ``-dbg`` twin's,
llvm-symbolizer-22) at every instruction, as `unsplit where` does (test_bat_lines.py).

Found by bench/realworld.py on Lua: symbolize translated the jumps BOLT inserts at layout by
BAT's interpolation alone, so it named the line of the block the jump goes to, where BOLT's
line table (and `where`) continue the row of the code before the jump.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from unsplit.tools.symbolize import Symbolizer, stream

from ...conftest import ROOT
from ..index.test_bat_lines import code_sections, instructions, twin_lines

VARIANTS = ["bolt-all", "bolt-profile2", "bolt-reverse"]


def _symbolize(exe: Path, addresses: list[int]) -> list[tuple[str, int]]:
    out = io.StringIO()
    stream(Symbolizer(str(exe)), io.StringIO("".join(f"{a:#x}\n" for a in addresses)), out,
           relative=False, inlines=False, as_json=False)
    answers = out.getvalue().split("\n\n")[:-1]
    lines = []
    for answer in answers:
        where = answer.splitlines()[1]
        path, line, _ = where.rsplit(":", 2)
        lines.append((path.rsplit("/", 1)[-1], int(line)))
    return lines


@pytest.mark.parametrize("variant", VARIANTS)
def test_symbolize_lines_equal_the_debug_twin(zoo: dict[str, Any], variant: str) -> None:
    path = ROOT / zoo[variant]["programs"]["crash"]["binary"]
    twin = ROOT / zoo[f"{variant}-dbg"]["programs"]["crash"]["binary"]
    assert code_sections(path) == code_sections(twin)
    addresses = [a for a, _ in instructions(path)]
    theirs = twin_lines(twin, addresses)
    ours = _symbolize(path, addresses)
    assert len(ours) == len(theirs) == len(addresses)
    wrong = [(hex(a), o, t) for a, o, t in zip(addresses, ours, theirs, strict=True)
             if t[1] and o != t]
    assert not wrong, wrong[:10]
    assert sum(1 for t in theirs if t[1]) > 50
