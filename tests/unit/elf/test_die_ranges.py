"""elf.dwarf_lines.die_ranges: a DIE's [low_pc, high_pc) as llvm-dwarfdump-22 reads it.

DWARF 5 §2.17.2: DW_AT_high_pc of class constant is an offset from DW_AT_low_pc, of class
address (DW_FORM_addr, DW_FORM_addrx*) the end address itself. clang-22 writes the constant
form; the address form is made here by rewriting one subprogram's abbreviation (data4 ->
addrx4, the same size) and its value (an index into .debug_addr), which llvm-dwarfdump-22
--verify accepts as valid DWARF.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from contextlib import closing
from pathlib import Path

import pytest
from unsplit.elf.binary import Binary
from unsplit.elf.dwarf_lines import die_ranges

pytestmark = pytest.mark.skipif(shutil.which("clang-22") is None or
                                shutil.which("llvm-dwarfdump-22") is None,
                                reason="needs clang-22 and llvm-dwarfdump-22")

# main first, so that .debug_addr holds main's entry then f's, which ends main.
SOURCE = "int f(int x);\nint main(void) { return f(1); }\nint f(int x) { return x + 1; }\n"
DW_FORM_DATA4, DW_FORM_ADDRX4, DW_TAG_SUBPROGRAM = 0x06, 0x2C, 0x2E
DW_AT_LOW_PC, DW_AT_HIGH_PC, DW_FORM_ADDRX = 0x11, 0x12, 0x1B


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("highpc")
    (work / "t.c").write_text(SOURCE)
    subprocess.run(["clang-22", "-gdwarf-5", "-O0", "t.c", "-o", "t"], cwd=work, check=True)
    return work / "t"


def _llvm_ranges(path: Path) -> dict[str, tuple[int, int]]:
    """Each subprogram's (low_pc, high_pc) as llvm-dwarfdump-22 resolves them (an address)."""
    out = subprocess.run(["llvm-dwarfdump-22", "--debug-info", str(path)], capture_output=True,
                         text=True, check=True).stdout
    found = {}
    for block in out.split("DW_TAG_subprogram")[1:]:
        low = re.search(r"DW_AT_low_pc\s+\((0x[0-9a-f]+)\)", block)
        high = re.search(r"DW_AT_high_pc\s+\((0x[0-9a-f]+)\)", block)
        name = re.search(r'DW_AT_name\s+\("(\w+)"\)', block)
        assert low and high and name, block
        found[name[1]] = (int(low[1], 16), int(high[1], 16))
    return found


def _ours(path: Path) -> dict[str, list[tuple[int, int]]]:
    with closing(Binary(str(path))) as b:
        dwarf = b.dwarf
        return {die.attributes["DW_AT_name"].value.decode(): die_ranges(dwarf, die, 0)
                for cu in dwarf.iter_CUs() for die in cu.iter_DIEs()
                if die.tag == "DW_TAG_subprogram"}


def test_constant_high_pc_is_an_offset(program: Path) -> None:
    theirs = _llvm_ranges(program)
    assert set(theirs) == {"main", "f"}
    assert _ours(program) == {name: [r] for name, r in theirs.items()}


def _with_address_high_pc(program: Path, out: Path) -> None:
    """`program` with main's DW_AT_high_pc rewritten as DW_FORM_addrx4 index 1 (f's entry)."""
    data = bytearray(program.read_bytes())
    with closing(Binary(str(program))) as b:
        abbrev = b.elf.get_section_by_name(".debug_abbrev")["sh_offset"]
        info = b.elf.get_section_by_name(".debug_info")["sh_offset"]
        dies = [die for cu in b.dwarf.iter_CUs() for die in cu.iter_DIEs()]
    main = next(d for d in dies if d.attributes.get("DW_AT_name") and
                d.attributes["DW_AT_name"].value == b"main")
    # The premise: main's abbreviation is its own, low_pc addrx then high_pc data4.
    assert [d.abbrev_code for d in dies].count(main.abbrev_code) == 1
    head = bytes([main.abbrev_code, DW_TAG_SUBPROGRAM, 0, DW_AT_LOW_PC, DW_FORM_ADDRX,
                  DW_AT_HIGH_PC, DW_FORM_DATA4])
    at = data.find(head, abbrev)
    assert at >= 0, "clang-22 wrote main's abbreviation otherwise"
    data[at + len(head) - 1] = DW_FORM_ADDRX4
    value = info + main.attributes["DW_AT_high_pc"].offset
    data[value:value + 4] = (1).to_bytes(4, "little")
    out.write_bytes(data)


def test_address_high_pc_is_the_end(program: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "t"
    _with_address_high_pc(program, damaged)
    verify = subprocess.run(["llvm-dwarfdump-22", "--verify", str(damaged)],
                            capture_output=True, text=True)
    assert verify.returncode == 0 and "No errors." in verify.stdout, verify.stdout
    theirs = _llvm_ranges(damaged)
    assert theirs["main"] == (theirs["main"][0], theirs["f"][0])  # the rewrite took
    assert _ours(damaged) == {name: [r] for name, r in theirs.items()}
