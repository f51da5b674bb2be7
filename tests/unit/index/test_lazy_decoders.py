"""A file without a bb address map or a MIP map never imports their decoders (a debugger
session's start: formats/section_ids.py), and one with a map decodes it as before (the
decoders' own tests compare it with llvm-readobj-22). The CFI decoder does not import
pyelftools (a later GDB session on a BOLTed core imports none)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from ...conftest import ROOT, facts

_PROBE = """
import sys
from unsplit.index.module_index import ModuleIndex
index = ModuleIndex.open(sys.argv[1])
index.locate(index.moved_starts()[0])
print(sorted(m for m in sys.modules if m in (
    "unsplit.formats.bb_addr_map", "unsplit.formats.mip")))
print(sorted(index.sources_used))
"""


def _imported(binary: str) -> tuple[str, str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, binary], capture_output=True,
                         text=True, check=True, env={"PYTHONPATH": str(ROOT / "plugin")})
    imported, used = out.stdout.splitlines()
    return imported, used


def test_decoders_are_imported_only_for_files_with_their_maps(zoo: dict[str, Any]) -> None:
    bolt = facts(zoo, "bolt-random2", "crash")
    assert not bolt["has_bb_addr_map"]
    assert _imported(str(ROOT / bolt["binary"]))[0] == "[]"
    mapped = facts(zoo, "clang-mfs-pgomap", "crash")
    assert mapped["has_bb_addr_map"]
    imported, used = _imported(str(ROOT / mapped["binary"]))
    assert "unsplit.formats.bb_addr_map" in imported and "bb_addr_map" in used
    mip = facts(zoo, "clang-mip", "crash")
    imported, used = _imported(str(ROOT / mip["binary"]))
    assert "unsplit.formats.mip" in imported and "mip" in used


def test_cfi_decoder_does_not_import_pyelftools() -> None:
    probe = "import sys, unsplit.formats.eh_frame; print(sorted(m for m in sys.modules if " \
        "m.startswith('elftools')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(ROOT / "plugin")})
    assert out.stdout.strip() == "[]"


def test_cfi_opcodes_are_pyelftools_ones() -> None:
    from elftools.dwarf.constants import DW_CFA as theirs
    from unsplit.formats.eh_frame import DW_CFA as ours

    names = [n for n in vars(ours) if not n.startswith("_")]
    assert len(names) == 27
    assert {n: getattr(ours, n) for n in names} == {n: int(getattr(theirs, n)) for n in names}


_FRAME_PROBE = """
import sys
from unsplit.index.module_index import ModuleIndex
index = ModuleIndex.open(sys.argv[1])
loc = index.locate(int(sys.argv[2], 16), lines=None)
print(loc.procedure, loc.fragment, loc.file, loc.line, len(loc.inline_chain))
print(sorted(m for m in sys.modules if m.startswith("elftools.") and m != "elftools.common"))
"""


def test_a_frame_in_moved_code_without_inlined_calls_reads_no_die(zoo: dict[str, Any]) -> None:
    """A frame's name and line in a cold fragment (the crash fixture's, GCC and BOLT): the
    line table header and the absence of an inlined call there (for the BOLT outputs, in the
    pre-BOLT input's DWARF 5 and 4) are read from the bytes, so a debugger session's first
    `bt` imports neither pyelftools' ELF nor its DWARF reader."""
    for variant in ("gcc-pgo", "bolt-all", "bolt-gcc-dwarf4", "bolt-clang-dwarf4"):
        f = facts(zoo, variant, "crash")
        crash = f["crash"]["frames"][0]
        out = subprocess.run([sys.executable, "-c", _FRAME_PROBE, str(ROOT / f["binary"]),
                              crash["link_pc"]], capture_output=True, text=True, check=True,
                             env={"PYTHONPATH": str(ROOT / "plugin")})
        where, imported = out.stdout.splitlines()
        line = f["markers"]["crash.c"]["crash site"]  # the source's marker at the NULL write
        assert where == f"{crash['procedure']} {crash['fragment']} crash.c {line} 0", \
            (variant, out.stdout)
        assert imported == "[]", (variant, imported)
