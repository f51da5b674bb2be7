"""A file without a bb address map or a MIP map never imports their decoders (a debugger
session's start: formats/section_ids.py), and one with a map decodes it as before (the
decoders' own tests compare it with llvm-readobj-22)."""

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
