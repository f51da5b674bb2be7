"""A truncated ELF file (a core cut short: its section headers lie past the end) is a file that
cannot be read, said when it is opened; beside a BOLTed binary, the search for the pre-BOLT
input skips it. Before, pyelftools' ELFParseError came out of the first look at its sections,
in unsplit's frames: `unsplit where` and `unsplit lldb-cfi` on a BOLTed binary were internal
errors because of a file next to it (found by the CLI fuzz campaign, whose damaged copies sit in
one directory)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.errors import BinaryError

from ...conftest import ROOT, facts

ZOO = ROOT / "fixtures" / "build"


def _truncated_core(to: Path) -> Path:
    """The bolt-all crash core cut before its section header table (e_shoff)."""
    data = (ZOO / "bolt-all" / "crash.core").read_bytes()
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    assert 0 < shoff < len(data), "the core has no section headers to cut off"
    to.write_bytes(data[:shoff - 1])
    return to


def test_opening_it_says_it_cannot_be_read(zoo: dict[str, Any], tmp_path: Path) -> None:
    facts(zoo, "bolt-all", "crash")
    path = _truncated_core(tmp_path / "cut.core")
    with pytest.raises(BinaryError, match=r"cut\.core: cannot read its section headers"):
        Binary(str(path))


@pytest.mark.parametrize("command", [["where", "--exe", "{exe}", "{pc}"],
                                     ["lldb-cfi", "--print", "{exe}"]])
def test_a_bolted_binary_beside_it_is_read(zoo: dict[str, Any], tmp_path: Path,
                                           command: list[str]) -> None:
    crash = facts(zoo, "bolt-all", "crash")["crash"]["frames"][0]
    exe = tmp_path / "crash"
    shutil.copy(ZOO / "bolt-all" / "crash", exe)
    _truncated_core(tmp_path / "cut.core")
    argv = [a.format(exe=exe, pc=crash["pc"]) for a in command]
    env = {"PYTHONPATH": str(ROOT / "plugin"), "UNSPLIT_CACHE": str(tmp_path / "cache"),
           "PATH": "/usr/bin:/bin"}
    p = subprocess.run([sys.executable, "-m", "unsplit", *argv], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and "internal error" not in p.stderr, p.stderr
    if command[0] == "where":
        assert f"{crash['procedure']} [{crash['fragment']}]" in p.stdout, p.stdout
