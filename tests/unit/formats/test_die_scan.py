"""unsplit.formats.die_scan against llvm-dwarfdump-22: the DW_TAG_subprogram DIEs with
DW_AT_low_pc or DW_AT_ranges of every unit, GCC's and clang's, DWARF 2 to 5, C and C++; and a
damaged .debug_info is one DecodeError naming the section and offset."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile
from unsplit.errors import DecodeError
from unsplit.formats import die_scan
from unsplit.formats.leb128 import encode_uleb128 as uleb

from ...conftest import ROOT, facts

SOURCE = """\
struct Box { int v; __attribute__((noinline)) int get() const { return v * 3; } };
__attribute__((noinline)) static int twice(int x) { return 2 * x; }
template <typename T> __attribute__((noinline)) T pick(T a, T b) { return a < b ? b : a; }
int main(int argc, char **) { Box b{argc}; return pick(twice(b.get()), argc); }
"""


def _theirs(path: Path) -> set[int]:
    """llvm-dwarfdump-22's subprograms that say where their code is."""
    text = subprocess.run(["llvm-dwarfdump-22", "--debug-info", str(path)], capture_output=True,
                          text=True, check=True).stdout
    out: set[int] = set()
    current: int | None = None
    for line in text.splitlines():
        m = re.match(r"^(0x[0-9a-f]+):\s+(DW_TAG_\w+)", line)
        if m:
            current = int(m[1], 16) if m[2] == "DW_TAG_subprogram" else None
        elif current is not None and re.match(r"^\s+DW_AT_(low_pc|ranges)\b", line):
            out.add(current)
    return out


def _ours(path: Path) -> set[int]:
    with path.open("rb") as f:
        dwarf = ELFFile(f).get_dwarf_info()
        info = dwarf.debug_info_sec.stream.getvalue()
        abbrev = dwarf.debug_abbrev_sec.stream.getvalue()
        out: set[int] = set()
        for cu in dwarf.iter_CUs():
            out |= set(die_scan.offsets_with(
                info, _unit(cu), die_scan.abbreviations(abbrev, cu["debug_abbrev_offset"]),
                die_scan.DW_TAG_subprogram,
                frozenset((die_scan.DW_AT_low_pc, die_scan.DW_AT_ranges))))
    return out


def _unit(cu: Any) -> die_scan.Unit:
    return die_scan.Unit(cu.cu_die_offset, cu.cu_offset + cu.size, cu["version"],
                         cu["address_size"], 8 if cu.dwarf_format() == 64 else 4)


@pytest.mark.parametrize("compiler", ["g++", "clang++-22"])
@pytest.mark.parametrize("version", [2, 4, 5])
def test_subprograms_with_code_are_llvm_dwarfdumps(tmp_path: Path, compiler: str,
                                                   version: int) -> None:
    (tmp_path / "p.cpp").write_text(SOURCE)
    binary = tmp_path / "p"
    subprocess.run([compiler, "-O1", f"-gdwarf-{version}", "p.cpp", "-o", str(binary)],
                   check=True, cwd=tmp_path, timeout=120)
    theirs = _theirs(binary)
    assert len(theirs) >= 4  # main, twice, Box::get, pick<int>
    assert _ours(binary) == theirs


@pytest.mark.parametrize(("variant", "program"), [("gcc-pgo", "crash"), ("clang-mfs", "except"),
                                                  ("bolt-statics-dbg", "statics")])
def test_zoo_binaries(zoo: dict[str, Any], variant: str, program: str) -> None:
    binary = ROOT / facts(zoo, variant, program)["binary"]
    assert _ours(binary) == _theirs(binary)


def test_damaged_info_is_one_decode_error(zoo: dict[str, Any]) -> None:
    binary = ROOT / facts(zoo, "clang-mfs", "except")["binary"]
    with binary.open("rb") as f:
        dwarf = ELFFile(f).get_dwarf_info()
        info = dwarf.debug_info_sec.stream.getvalue()
        abbrev = dwarf.debug_abbrev_sec.stream.getvalue()
        cu = next(dwarf.iter_CUs())
        unit, abbrevs = _unit(cu), die_scan.abbreviations(abbrev, cu["debug_abbrev_offset"])
    wanted = (die_scan.DW_TAG_subprogram, frozenset((die_scan.DW_AT_low_pc,)))
    with pytest.raises(DecodeError, match=r"^\.debug_info: at offset 0x[0-9a-f]+: "):
        die_scan.offsets_with(info[:unit.die_start + 40], unit, abbrevs, *wanted)
    unknown = bytearray(info)
    unknown[unit.die_start] = 0x7F  # an abbreviation code the table does not have
    with pytest.raises(DecodeError, match="no abbreviation 127"):
        die_scan.offsets_with(bytes(unknown), unit, abbrevs, *wanted)
    with pytest.raises(DecodeError, match=r"^\.debug_abbrev: "):
        die_scan.abbreviations(abbrev[:5], 0)


def _first_unit(zoo: dict[str, Any]) -> tuple[bytes, die_scan.Unit, dict[int, die_scan.Abbrev]]:
    binary = ROOT / facts(zoo, "clang-mfs", "except")["binary"]
    with binary.open("rb") as f:
        dwarf = ELFFile(f).get_dwarf_info()
        info = dwarf.debug_info_sec.stream.getvalue()
        abbrev = dwarf.debug_abbrev_sec.stream.getvalue()
        cu = next(dwarf.iter_CUs())
        return info, _unit(cu), die_scan.abbreviations(abbrev, cu["debug_abbrev_offset"])


@pytest.mark.parametrize("keep", range(1, 200, 7))
def test_every_cut_is_a_decode_error_at_the_unit(zoo: dict[str, Any], keep: int) -> None:
    """A unit and its section cut anywhere inside its DIEs: one DecodeError (every read is
    checked against the unit's end), or the DIEs before the cut when it falls between two."""
    info, unit, abbrevs = _first_unit(zoo)
    end = unit.die_start + keep
    cut = unit._replace(end=end)
    try:
        found = die_scan.offsets_with(info[:end], cut, abbrevs, die_scan.DW_TAG_subprogram,
                                      frozenset((die_scan.DW_AT_low_pc,)))
    except DecodeError as e:
        assert str(e).startswith(".debug_info: at offset 0x"), e
    else:
        assert all(unit.die_start <= d < end for d in found)


def test_a_bug_skipping_an_attribute_surfaces(zoo: dict[str, Any],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An IndexError of ours is a bug, not 'a DIE runs past the end of the section' (the scan
    once caught every IndexError as that)."""
    info, unit, abbrevs = _first_unit(zoo)

    def bug(*_args: object) -> int:
        raise IndexError("list index out of range")

    monkeypatch.setattr(die_scan, "_skip", bug)
    with pytest.raises(IndexError):
        die_scan.offsets_with(info, unit, abbrevs, die_scan.DW_TAG_subprogram,
                              frozenset((die_scan.DW_AT_low_pc,)))


def test_sites_of_an_abbreviation_code_past_any_list() -> None:
    """A code as large as a ULEB128 can say (a damaged table makes them): its DIEs are
    scanned as any others, not a list as long as the code made (the fuzz campaign's
    OverflowError)."""
    for code in (3, 1 << 64):
        # DW_TAG_variable, no children: DW_AT_name string, DW_AT_location exprloc
        abbrev = uleb(code) + b"\x34\x00" + b"\x03\x08" + b"\x02\x18" + b"\x00\x00" + b"\x00"
        decls = die_scan.declarations(abbrev, 0)
        info = uleb(code) + b"x\x00" + b"\x01\x50" + b"\x00"
        unit = die_scan.Unit(0, len(info), 5, 8, 4)
        found = die_scan.sites(info, unit, decls, lambda d: [0, 7])
        location = len(uleb(code)) + 2
        assert (list(found.positions), list(found.kinds), list(found.dies)) == \
            ([location], [7], [0])
