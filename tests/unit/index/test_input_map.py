"""index.bolt.input_map.InputMap.rebuilt_jump: the jumps BOLT made as it laid blocks out (the
translated line table gives them the row before), never a function's own jump where BOLT left
the function in place (lite mode: a BOLTed Lua's translated lines lost 222 rows of real jumps
in kept functions, each taking the line before it)."""

from __future__ import annotations

import re
import subprocess
from contextlib import closing
from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.index.bolt.input_map import InputMap

from ...conftest import ROOT, facts

VARIANTS = ["bolt-patched", "bolt-nonreloc", "bolt-statics", "bolt-all"]


def _functions(path: str) -> dict[str, tuple[int, int]]:
    """Function name -> (address, size), from nm."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return {m[4]: (int(m[1], 16), int(m[2], 16)) for m in
            re.finditer(r"(?m)^([0-9a-f]+) ([0-9a-f]+) ([tTwW]) (\S+)$", out)}


def _jumps(path: str) -> list[int]:
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return [int(m[1], 16) for m in re.finditer(r"(?m)^\s+([0-9a-f]+):\s+jmp\b", out)]


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_kept_functions_jump_is_not_one_bolt_made(zoo: dict[str, Any], variant: str) -> None:
    program = next(iter(zoo[variant]["programs"]))
    f = facts(zoo, variant, program)
    output, given = str(ROOT / f["binary"]), str(ROOT / f["input"])
    theirs, ours = _functions(given), _functions(output)
    kept = [(a, a + n) for name, (a, n) in theirs.items() if n and ours.get(name) == (a, n)]
    jumps = _jumps(output)
    in_kept = [j for j in jumps if any(lo <= j < hi for lo, hi in kept)]
    with closing(Binary(output)) as out, closing(Binary(given)) as inp:
        imap = InputMap.of(out, inp)
        assert imap is not None
        if variant == "bolt-all":  # no kept function: the jumps BOLT made are still found
            assert not kept and any(imap.rebuilt_jump(j) for j in jumps)
            return
        assert in_kept, "no jump in a function BOLT left in place: the case is not exercised"
        assert [j for j in in_kept if imap.rebuilt_jump(j)] == []
