"""The translator copies a DWARF 5 list of code BOLT left where it was as the input's bytes
(translate/lists.py, UnitLists._copied) instead of decoding it and writing it again: in the
translated file of a zoo program, every location list whose ranges all lie in one function
the output's symbol table has at the input's address and size is, entry for entry, the
input's list of the same index (llvm-dwarfdump-22 --debug-loclists: same kinds, operands and
expressions; a base address the input named by its .debug_addr index may be named by its
value). Ranges are resolved through
the input's .debug_addr as llvm-dwarfdump-22 prints it; functions come from pyelftools."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

from ...conftest import ROOT, facts

_BLOCK = re.compile(r"^0x[0-9a-f]+: \n((?:[ \t]+.*\n)+)", re.M)


def _dump(path: Path, *what: str) -> str:
    return subprocess.run(["llvm-dwarfdump-22", *what, str(path)], capture_output=True,
                          text=True, check=True, timeout=120).stdout


def _lists(path: Path) -> list[list[str]]:
    """Each list of .debug_loclists, in the order of the (one) offsets array: its entries as
    `KIND (OPERANDS): EXPRESSION` (llvm-dwarfdump-22 -v puts the expression of an entry it
    resolves on a line of its own), the end entry left out."""
    text = _dump(path, "--debug-loclists", "-v")
    assert text.count("locations list header") == 1, "one unit's contribution expected"
    offsets = [int(v, 16) for v in re.findall(r"^(0x[0-9a-f]+)(?: => .*)?$",
                                              text.split("]", 1)[0], re.M)]
    blocks: dict[int, list[str]] = {}
    for m in _BLOCK.finditer(text):
        entries: list[str] = []
        for line in m.group(1).splitlines():
            line = line.strip()
            if line.startswith("=>"):
                entries[-1] += line.split(")", 1)[1]
            elif "end_of_list" not in line:
                entries.append(re.sub(r"\s+\(", " (", line))
        blocks[int(m.group(0).split(":")[0], 16)] = entries
    return [blocks[12 + o] for o in offsets]  # relative to the offsets array, after the
    #                                            32-bit header


def _ranges(entries: list[str], addresses: list[int]) -> list[tuple[int, int]] | None:
    """The input list's [begin, end), base addresses through `addresses`; None for a list with
    another kind of entry."""
    out, base = [], None
    for kind, a, b in _entries(entries):
        if kind == "DW_LLE_base_addressx":
            base = addresses[a]
        elif kind == "DW_LLE_offset_pair" and base is not None:
            out.append((base + a, base + b))
        else:
            return None
    return out


def _entries(entries: list[str]) -> list[tuple[str, int, int]]:
    found = [re.match(r"(DW_LLE_\w+) \((0x[0-9a-f]+)(?:, (0x[0-9a-f]+))?\)", e)
             for e in entries]
    return [(m[1], int(m[2], 16), int(m[3] or "0", 16)) if m else (e, 0, 0)
            for m, e in zip(found, entries, strict=True)]


def _based(entries: list[str], addresses: list[int]) -> list[str]:
    """A list's entries with each base address entry as the address it names (a copy may name
    the base itself where the input named it by index)."""
    return [f"base {addresses[a] if kind.endswith('x') else a:#x}" if "base_address" in kind
            else line for line, (kind, a, _) in zip(entries, _entries(entries), strict=True)]


def _functions(path: Path) -> set[tuple[int, int]]:
    with path.open("rb") as f:
        return {(s["st_value"], s["st_size"]) for s in ELFFile(f).get_section_by_name(
            ".symtab").iter_symbols() if s["st_info"]["type"] == "STT_FUNC" and s["st_size"]}


@pytest.mark.parametrize(("variant", "program"), [("bolt-cdsplit", "crash"),
                                                  ("bolt-cdsplit", "loop"),
                                                  ("bolt-dlopen", "libwork")])
def test_lists_of_code_left_in_place_are_the_inputs(zoo: dict[str, Any], variant: str,
                                                    program: str, tmp_path: Path) -> None:
    f = facts(zoo, variant, program)
    binary, inp = ROOT / f["binary"], ROOT / f["input"]
    out = tmp_path / "out.debug"
    run = subprocess.run([sys.executable, "-m", "unsplit", "debuginfo", str(binary), "--input",
                          str(inp), "-o", str(out), "--json"], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "plugin")}, timeout=600)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["units"] == 1
    addresses, moved = (
        [int(v, 16) for v in re.findall(r"^(0x[0-9a-f]{16})$", _dump(path, "--debug-addr"),
                                        re.M)] for path in (inp, out))
    kept = sorted(_functions(inp) & _functions(binary))
    before, after = _lists(inp), _lists(out)
    assert len(before) == len(after)
    in_place = 0
    for i, (old, new) in enumerate(zip(before, after, strict=True)):
        ranges = _ranges(old, addresses)
        if ranges and any(all(lo <= b and e <= lo + size for b, e in ranges)
                          for lo, size in kept):
            in_place += 1
            assert _based(new, moved) == _based(old, addresses), f"list {i}"
    assert in_place, "no list of code left in place: the test checks nothing"
