"""GCC's DW_AT_GNU_locviews (the view numbers of a location list's entries, a ULEB128 pair per
entry, at an offset of .debug_loclists or .debug_loc) in `unsplit debuginfo`'s file: each
points at as many pairs as llvm-dwarfdump-22 lists entries in the DIE's moved location list,
each (0, 0), and at no list; the input's own offsets would point into the moved lists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

from ...conftest import ROOT, facts

_DIE = re.compile(r"\n(?=0x[0-9a-f]+: )")
_LOCATION = re.compile(r"DW_AT_location\t\((0x[0-9a-f]+): \n?((?:\s+\[0x.*\n?)*)")
_VIEWS = re.compile(r"DW_AT_GNU_locviews\t\((0x[0-9a-f]+)\)")


def _lists_and_views(path: Path) -> list[tuple[int, int, int]]:
    """(location list offset, its entries, DW_AT_GNU_locviews offset) of each DIE with both."""
    dump = subprocess.run(["llvm-dwarfdump-22", "--debug-info", str(path)], capture_output=True,
                          text=True, timeout=120, check=True).stdout
    out = []
    for die in _DIE.split(dump):
        location, views = _LOCATION.search(die), _VIEWS.search(die)
        if location and views:
            entries = len(re.findall(r"^\s+\[0x", location.group(2), flags=re.M))
            out.append((int(location.group(1), 16), entries, int(views.group(1), 16)))
    return out


def _section(path: Path, name: str) -> bytes:
    with path.open("rb") as f:
        sec = ELFFile(f).get_section_by_name(name)
        assert sec is not None
        return bytes(sec.data())


def _uleb_pairs(data: bytes, at: int, count: int) -> list[tuple[int, int]]:
    values = []
    for _ in range(2 * count):
        value = shift = 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        values.append(value)
    return list(zip(values[::2], values[1::2], strict=True))


@pytest.mark.parametrize("variant,section", [("bolt-gcc", ".debug_loclists"),
                                             ("bolt-gcc-dwarf4", ".debug_loc")])
@pytest.mark.parametrize("program", ["loop", "crash", "except"])
def test_views_name_each_entry_of_the_moved_list(zoo: dict[str, Any], variant: str,
                                                 section: str, program: str,
                                                 tmp_path: Path) -> None:
    f = facts(zoo, variant, program)
    given = _lists_and_views(ROOT / f["input"])
    assert given  # GCC wrote views: the input's pairs are one per entry of its lists
    debug = tmp_path / "out.debug"
    subprocess.run([sys.executable, "-m", "unsplit", "debuginfo", str(ROOT / f["binary"]),
                    "-o", str(debug)], capture_output=True, text=True, timeout=300, check=True,
                   env={"PYTHONPATH": str(ROOT / "plugin")}, cwd=ROOT)
    ours = _lists_and_views(debug)
    assert len(ours) == len(given)
    data = _section(debug, section)
    lists = {offset for offset, _, _ in ours}
    for offset, entries, views in ours:
        assert views not in lists or not entries, (offset, views)  # no pairs: no bytes
        assert _uleb_pairs(data, views, entries) == [(0, 0)] * entries, (offset, views)
