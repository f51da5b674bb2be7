"""Where a BAT fragment without a sized symbol ends (a stripped BOLT output, as a stripped
library is): at the end of the FDE that starts there and the padding after it, not over the
code of functions without a BAT entry that follow it. The oracle is the unstripped output's
own symbols (llvm-nm-22) and `.eh_frame` (llvm-dwarfdump-22): in bolt-nonreloc, `_start`'s FDE
ends before the functions BOLT left alone after it (crt1's `_dl_relocate_static_pie`;
crtbegin's `deregister_tm_clones` and `register_tm_clones`, which have no FDE either), up to
the next BAT fragment."""

from __future__ import annotations

import re
import shutil
import subprocess
from contextlib import closing
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.index.bolt import bat_translate

from ...conftest import ROOT, facts

NM, DWARFDUMP, STRIP = "llvm-nm-22", "llvm-dwarfdump-22", "llvm-strip-22"
pytestmark = pytest.mark.skipif(any(shutil.which(t) is None for t in (NM, DWARFDUMP, STRIP)),
                                reason="needs llvm-nm-22, llvm-dwarfdump-22, llvm-strip-22")


def _functions(path: Path) -> list[int]:
    """The addresses of the defined code symbols, ascending."""
    out = subprocess.run([NM, "-n", "--defined-only", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return sorted({int(m[1], 16) for m in re.finditer(r"^([0-9a-f]+) [tTwW] ", out, re.M)})


def _fde_ends(path: Path) -> dict[int, int]:
    out = subprocess.run([DWARFDUMP, "--eh-frame", str(path)], capture_output=True, text=True,
                         check=True).stdout
    return {int(m[1], 16): int(m[2], 16)
            for m in re.finditer(r" FDE cie=\w+ pc=([0-9a-f]+)\.\.\.([0-9a-f]+)$", out, re.M)}


@pytest.fixture(scope="module")
def stripped(zoo: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Path, Path]:
    original = ROOT / facts(zoo, "bolt-nonreloc", "crash")["binary"]
    copy = tmp_path_factory.mktemp("stripped") / "crash"
    subprocess.run([STRIP, "--keep-section=.note.bolt_bat", "-o", str(copy), str(original)],
                   check=True)
    return original, copy


def test_a_stripped_fragment_ends_with_its_fde(stripped: tuple[Path, Path]) -> None:
    original, copy = stripped
    functions, fde_ends = _functions(original), _fde_ends(original)
    with closing(Binary(str(copy))) as binary:
        index = bat_translate.load(binary)
        assert index is not None
        columns = index.all_fragments()
        # a fragment with an FDE, then a function BOLT left alone (no BAT entry): _start, then
        # crt1's _dl_relocate_static_pie and crtbegin's helpers, which have no FDE
        start, helper = next((a, b) for a, b in pairwise(functions)
                             if a in fde_ends and a in columns.starts
                             and b not in columns.starts)
        assert fde_ends[start] <= helper
        k = list(columns.starts).index(start)
        assert columns.symbols[k] is None  # stripped: no sized symbol says where it ends
        # its FDE's end and the alignment after it, not the next BAT fragment's start
        assert fde_ends[start] <= columns.ends[k] <= helper
        one = index.fragment(start, keep=False)
        assert one is not None and one.end == columns.ends[k]
        at = index.fragment_at(fde_ends[start] - 1)
        assert at is not None and at.start == start
        assert index.fragment_at(helper) is None  # crt1's code is no fragment's


def test_no_stripped_fragment_runs_into_another_function(stripped: tuple[Path, Path]) -> None:
    """Every fragment of the stripped copy ends by the next function the unstripped one
    names (what perf2bolt and the symbolizers would take as the next function)."""
    original, copy = stripped
    functions = _functions(original)
    with closing(Binary(str(copy))) as binary:
        index = bat_translate.load(binary)
        assert index is not None
        columns = index.all_fragments()
        for start, end in zip(columns.starts, columns.ends, strict=True):
            after = [a for a in functions if a > start]
            assert not after or end <= after[0], f"{start:#x}..{end:#x} runs past {after[0]:#x}"


@pytest.mark.parametrize("variant", ["bolt-nonreloc", "bolt-random2", "bolt-cdsplit"])
def test_columns_describe_fragments_as_one_lookup_does(
        zoo: dict[str, Any], stripped: tuple[Path, Path], variant: str) -> None:
    """The whole-module columns (debug file, moved_fragments) and the one-fragment look-up (a
    frame) give each fragment the same name, symbol and extent: with symbols and stripped."""
    for path in (ROOT / facts(zoo, variant, "crash")["binary"], stripped[1]):
        with closing(Binary(str(path))) as binary:
            index = bat_translate.load(binary)
            assert index is not None
            whole = dict(index.split_procedures())
            assert whole
            for parent, infos in whole.items():
                assert sorted(infos, key=lambda f: f.start) == sorted(
                    index.fragments_at(parent, keep=False), key=lambda f: f.start)
