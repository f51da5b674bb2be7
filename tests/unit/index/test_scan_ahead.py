"""BAT scanned in a second process (unsplit.index.bolt.scan_ahead), as the debug file's writer
does while it reads the module's CFI and symbols: the index made from the child's scan is the
one made from a scan in this process, an unusual descriptor is left to this process (the same
table, or the same error), and the CFI's FDE ends worked out ahead are llvm-dwarfdump-22's.

Oracles: the in-process scan and full decoder (themselves checked against BOLT's own tables
in tests/unit/formats), llvm-dwarfdump-22 --eh-frame."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from contextlib import closing
from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.elf.cfi_table import CfiTable
from unsplit.errors import DecodeError
from unsplit.formats import bat, bat_scan
from unsplit.index.bolt import bat_translate, scan_ahead

from ...conftest import ROOT, facts

_COLUMNS = ("addresses", "offsets", "cursors", "hot_indices", "parents", "hot_count")


def _binary(zoo: dict[str, Any], variant: str = "bolt-random2") -> str:
    return str(ROOT / facts(zoo, variant, "crash")["binary"])


def _descriptor(path: str) -> bytes:
    with closing(Binary(path)) as binary:
        data = binary.section_data(bat.SECTION)
        assert data is not None
        return bat.note_descriptor(data)[0]


def test_the_childs_scan_is_this_process_scan(zoo: dict[str, Any]) -> None:
    desc = _descriptor(_binary(zoo))
    pending = scan_ahead.Pending(desc)
    assert pending._pid != os.getpid()
    got, want = pending.result(), bat_scan.scan_only(desc)
    assert got is not None and want is not None and len(want) > 1
    for column in _COLUMNS:
        assert getattr(got, column) == getattr(want, column), column


def test_the_index_takes_the_childs_scan(zoo: dict[str, Any]) -> None:
    """Started ahead, the scan is taken by the index (no child left behind), and the index
    describes every fragment as one made without it."""
    path = _binary(zoo)
    with closing(Binary(path)) as ahead, closing(Binary(path)) as here:
        scan_ahead.start(ahead)
        assert len(scan_ahead._PENDING(ahead)) == 1
        got, want = bat_translate.load(ahead), bat_translate.load(here)
        assert scan_ahead._PENDING(ahead) == []
        assert got is not None and want is not None
        got_columns, want_columns = got.all_fragments(), want.all_fragments()
        for field in ("starts", "ends", "parents", "kinds", "symbols", "procedures"):
            assert list(getattr(got_columns, field)) == list(getattr(want_columns, field))
        assert got_columns.procedures == want_columns.procedures


@pytest.mark.parametrize("damage", ["truncated", "duplicated"])
def test_an_unusual_descriptor_is_read_here(zoo: dict[str, Any], damage: str) -> None:
    """The child says nothing of a descriptor its fast pass does not take; this process
    reads it whole and says the same as without a child."""
    desc = _descriptor(_binary(zoo))
    if damage == "truncated":
        desc = desc[: len(desc) // 2]
    else:  # the hot table's count doubled: its maps again, at addresses already seen
        assert desc[0] < 0x40
        desc = bytes([desc[0] * 2]) + desc[1:]
    assert scan_ahead.Pending(desc).result() is None

    def read(scanned: bat_scan.BatScan | None) -> object:
        try:
            found = bat_scan.scan(desc, scanned=scanned)
        except DecodeError as e:
            return e.offset, e.message
        assert isinstance(found, bat.BatTable)
        return sorted(found.maps)

    assert read(scan_ahead.Pending(desc).result()) == read(None)


DWARFDUMP = "llvm-dwarfdump-22"


@pytest.mark.skipif(shutil.which(DWARFDUMP) is None, reason="needs llvm-dwarfdump-22")
def test_fde_ends_worked_out_ahead_are_the_cfis(zoo: dict[str, Any]) -> None:
    """Every FDE start and every BAT fragment start: the FDE end worked out ahead is the one
    asked for one at a time, and, where one FDE alone starts there, llvm-dwarfdump-22's."""
    path = _binary(zoo)
    out = subprocess.run([DWARFDUMP, "--eh-frame", path], capture_output=True, text=True,
                         check=True).stdout
    fdes: dict[int, list[int]] = {}
    for m in re.finditer(r" FDE cie=\w+ pc=([0-9a-f]+)\.\.\.([0-9a-f]+)$", out, re.M):
        fdes.setdefault(int(m[1], 16), []).append(int(m[2], 16))
    assert fdes
    with closing(Binary(path)) as binary:
        index = bat_translate.load(binary)
        assert index is not None
        asked = sorted({*fdes, *index.table.starts()})
        one_at_a_time = CfiTable(binary).fde_ends_at(asked)
        ahead = CfiTable(binary)
        ahead.work_out_fde_ends()
        assert ahead.fde_ends_at(asked) == one_at_a_time
    ends = dict(zip(asked, one_at_a_time, strict=True))
    for start, listed in fdes.items():
        if len(listed) == 1:
            assert ends[start] == listed[0], hex(start)
