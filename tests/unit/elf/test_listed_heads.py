"""CfiSection.listed_heads, every listed FDE's head read at once: the FDE llvm-dwarfdump-22
prints at each listed offset (its pc range), and on damaged bytes what the reader answers
entry by entry (a head, or none where it does not decode), never an exception."""

from __future__ import annotations

import re
import shutil
from array import array
from contextlib import closing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unsplit.elf.binary import Binary
from unsplit.elf.cfi_table import CfiSection, ListedHeads, _listed_heads, table_for
from unsplit.errors import DecodeError
from unsplit.formats.eh_frame import EntryReader

from ... import bolt_truth
from ...conftest import ROOT, facts

_FDE = re.compile(r"^([0-9a-f]+) \S+ \S+ FDE cie=\S+ pc=([0-9a-f]+)\.\.\.([0-9a-f]+)$", re.M)


def _one_by_one(reader: EntryReader, starts: list[int], offsets: list[int]
                ) -> list[tuple[int, ...]]:
    """(size, CIE, instructions' start, entry's end) of each entry by the reader, zeros where
    it is no FDE, does not decode, starts elsewhere than listed or has a size over 32 bits."""
    out = []
    for start, offset in zip(starts, offsets, strict=True):
        try:
            head = reader.fde_head(offset)
        except DecodeError:
            head = None
        usable = head is not None and head[2] == start and head[3] <= 0xFFFFFFFF
        out.append((head[3], head[0], head[4], head[5]) if head is not None and usable
                   else (0,) * 4)
    return out


def _rows(heads: ListedHeads) -> list[tuple[int, ...]]:
    return list(zip(*heads, strict=True))


@pytest.mark.skipif(shutil.which("llvm-dwarfdump-22") is None,
                    reason="llvm-dwarfdump-22 is not installed")
@pytest.mark.parametrize(("variant", "program"), [
    ("bolt-all", "crash"), ("bolt-cdsplit", "crash"), ("bolt-randomN", "except"),
    ("gcc-pgo-nodebug", "crash"), ("clang-mfs-nodebug", "loop")])
def test_listed_heads_are_the_fdes_llvm_dwarfdump_reads(zoo: dict[str, Any], variant: str,
                                                        program: str) -> None:
    path = ROOT / facts(zoo, variant, program)["binary"]
    printed = {int(m[1], 16): (int(m[2], 16), int(m[3], 16)) for m in _FDE.finditer(
        bolt_truth.run("llvm-dwarfdump-22", "--eh-frame", path))}
    with closing(Binary(str(path))) as binary:
        section: CfiSection = table_for(binary).sections[0]
        assert section.name == ".eh_frame"
        heads = section.listed_heads()
        assert len(heads.sizes) == len(section.offsets) > 0
        for start, offset, size in zip(section.starts, section.offsets, heads.sizes,
                                       strict=True):
            low, high = printed[offset]
            assert size == (high - low if low == start else 0), hex(offset)
        assert _rows(heads) == _one_by_one(section.reader, list(section.starts),
                                           list(section.offsets))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_heads_are_the_readers_entry_by_entry(zoo: dict[str, Any],
                                                      data: st.DataObject) -> None:
    path = ROOT / facts(zoo, "bolt-all", "crash")["binary"]
    with closing(Binary(str(path))) as binary:
        section = table_for(binary).sections[0]
        raw, offsets = bytearray(section.data), list(section.offsets)
        address, starts = section.address, list(section.starts)
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.sampled_from(offsets)) + data.draw(st.integers(-4, 24))
        if 0 <= at < len(raw):
            raw[at] = data.draw(st.sampled_from([0, 1, 0x1B, 0x7F, 0x80, 0xFF,
                                                  data.draw(st.integers(0, 255))]))
    cut = data.draw(st.sampled_from([len(raw), len(raw) - 1, max(offsets) + 16]))
    damaged = bytes(raw[:cut])
    reader = EntryReader(".eh_frame", damaged, address, True, 8)
    got = _rows(_listed_heads(reader, array("Q", starts), array("Q", offsets)))
    assert got == _one_by_one(EntryReader(".eh_frame", damaged, address, True, 8), starts,
                              offsets)
