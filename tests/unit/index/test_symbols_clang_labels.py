"""clang's moved pieces are sized STT_NOTYPE labels (``foo.cold``), not STT_FUNC symbols.

A clang split built without ``-fbasic-block-address-map`` has only those labels to name its
cold code; they must make fragments like GCC's STT_FUNC ``foo.cold`` does. Expectations come
from llvm-symbolizer-22 (the function DWARF names and its line) and readelf's symbol types.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.index.module_index import ModuleIndex

from ...conftest import ROOT, facts

pytestmark = pytest.mark.skipif(
    shutil.which("llvm-objcopy-22") is None or shutil.which("llvm-symbolizer-22") is None,
    reason="needs llvm-objcopy-22 and llvm-symbolizer-22")


def _notype_pieces(path: Path) -> list[tuple[str, int, int]]:
    """(name, start, size) of every sized NOTYPE ``*.cold`` symbol, from readelf."""
    out = subprocess.run(["readelf", "-sW", str(path)], check=True, capture_output=True,
                         text=True).stdout
    pieces = []
    for line in out.splitlines():
        cols = line.split()
        if len(cols) == 8 and cols[3] == "NOTYPE" and cols[7].endswith(".cold") and cols[2] != "0":
            pieces.append((cols[7], int(cols[1], 16), int(cols[2], 0)))
    return pieces


def _symbolize(path: Path, addresses: list[int]) -> list[tuple[str, int]]:
    """(function, line) of each address, as llvm-symbolizer-22 reads the DWARF."""
    text = "\n".join(f"{a:#x}" for a in addresses) + "\n"
    out = subprocess.run(["llvm-symbolizer-22", f"--obj={path}", "--functions=short",
                          "--no-inlines"], input=text, check=True, capture_output=True,
                         text=True).stdout
    blocks = [b.splitlines() for b in out.strip().split("\n\n")]
    return [(b[0], int(b[1].split(":")[1])) for b in blocks]


@pytest.mark.parametrize("program", ["crash", "loop", "switch"])
def test_clang_cold_labels_make_fragments(zoo: dict[str, Any], tmp_path: Path,
                                          program: str) -> None:
    f = facts(zoo, "clang-mfs", program)
    nomap = tmp_path / program
    subprocess.run(["llvm-objcopy-22", "--remove-section=.llvm_bb_addr_map",
                    str(ROOT / f["binary"]), str(nomap)], check=True)
    pieces = _notype_pieces(nomap)
    assert pieces, f"clang-22 -fsplit-machine-functions moved nothing out of {program}"
    index = ModuleIndex(Binary(str(nomap)))
    for name, start, size in pieces:
        addresses = list(range(start, start + size))
        truth = _symbolize(nomap, addresses)
        for address, (function, line) in zip(addresses, truth, strict=True):
            loc = index.locate(address)
            assert (loc.procedure, loc.fragment, loc.fragment_symbol) == \
                (function, "cold", name), hex(address)
            if line:
                assert loc.line == line, hex(address)
