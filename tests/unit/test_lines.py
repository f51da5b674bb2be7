"""unsplit.lines: `.debug_aranges` read with struct says what pyelftools' reader says, and an
address outside them still finds its CU through the CUs' own ranges."""

from __future__ import annotations

import os
import struct
from contextlib import closing
from typing import Any

import pytest
from unsplit.binary import Binary
from unsplit.lines import DwarfLines, _parse_aranges

from ..conftest import ROOT, facts

LIBC_DEBUG = "/usr/lib/debug/.build-id"


def _pyelftools(binary: Binary) -> list[tuple[int, int, int]]:
    return sorted((e.begin_addr, e.begin_addr + e.length, e.info_offset)
                  for e in binary.dwarf.get_aranges().entries if e.length)


@pytest.mark.parametrize("variant", ["gcc-pgo", "bolt-all-dbg"])
def test_aranges_equal_pyelftools(zoo: dict[str, Any], variant: str) -> None:
    with closing(Binary(str(ROOT / facts(zoo, variant, "crash")["binary"]))) as b:
        data = b.section_data(".debug_aranges")
        if data is None:
            pytest.skip("no .debug_aranges")
        assert sorted(_parse_aranges(data, True)) == _pyelftools(b)


def test_aranges_of_libc_debug_file() -> None:
    """glibc's debug file (libc6-dbg): two thousand ranges, compressed section."""
    with closing(Binary("/lib/x86_64-linux-gnu/libc.so.6")) as libc:
        debug = libc.dwarf_binary
        if debug is None or not os.path.isdir(LIBC_DEBUG):
            pytest.skip("no libc6-dbg")
        data = debug.section_data(".debug_aranges")
        assert data is not None
        ours = sorted(_parse_aranges(data, True))
        assert len(ours) > 100 and ours == _pyelftools(debug)


def test_a_short_or_odd_section_stops_without_inventing_ranges() -> None:
    unit = struct.pack("<IHIBB", 44, 2, 0x10, 8, 0) + bytes(4) + struct.pack(
        "<QQQQ", 0x1000, 0x20, 0, 0)
    assert list(_parse_aranges(unit, True)) == [(0x1000, 0x1020, 0x10)]
    assert list(_parse_aranges(unit[:30], True)) == []  # the unit runs past the end
    assert list(_parse_aranges(b"", True)) == []


@pytest.mark.parametrize("variant", ["gcc-pgo", "clang-mfs"])
def test_every_marker_line_found_with_or_without_aranges(zoo: dict[str, Any],
                                                         variant: str) -> None:
    """GCC writes aranges, clang does not: lines are found either way (the CU of each
    marker's address); the marker table comes from the facts (llvm-symbolizer-22)."""
    f = facts(zoo, variant, "crash")
    with closing(Binary(str(ROOT / f["binary"]))) as b:
        lines = DwarfLines(b)
        frame = f["crash"]["frames"][0]
        row = lines.lookup(int(frame["link_pc"], 16))
        assert row is not None and row.file.endswith("crash.c"), row
