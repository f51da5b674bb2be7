"""An input with a name index (.debug_names: clang's -gpubnames): `unsplit debuginfo`'s file
leaves it out, since its DIE offsets would be stale once a unit is left out, and a debugger
trusts an index over the DWARF (LLDB finds no function an index lacks). Without it GDB and LLDB
index the file's DWARF themselves: `break NAME` resolves to the same function, line and column
as on the pre-BOLT input with its index."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("lldb-22") is None, reason="lldb-22 is not installed"),
]

FUNCTIONS = ["transfer", "audit", "run", "main"]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """o/crash, BOLTed from o/input/crash built with .debug_names."""
    work = tmp_path_factory.mktemp("names") / "o"
    (work / "input").mkdir(parents=True)
    given = work / "input" / "crash"
    subprocess.run(["clang-22", "-O2", "-g", "-gpubnames", "-fno-pie", "-no-pie",
                    "-Wl,--emit-relocs", str(ROOT / "fixtures" / "src" / "crash.c"), "-o",
                    str(given)], check=True)
    subprocess.run(["llvm-bolt-22", str(given), "-o", str(work / "crash"), "--split-functions",
                    "--split-strategy=all", "--enable-bat"], check=True, capture_output=True)
    return work


def _sections(path: Path) -> str:
    return subprocess.run(["llvm-readelf-22", "-S", str(path)], capture_output=True, text=True,
                          timeout=60, check=True).stdout


def test_the_file_has_no_stale_index_and_verifies(indexed: Path, tmp_path: Path) -> None:
    assert ".debug_names" in _sections(indexed / "input" / "crash")
    debug = tmp_path / "crash.debug"
    subprocess.run([sys.executable, "-m", "unsplit", "debuginfo", str(indexed / "crash"), "-o",
                    str(debug)], check=True, capture_output=True, timeout=300,
                   env={"PYTHONPATH": str(ROOT / "plugin")})
    assert ".debug_info" in _sections(debug) and ".debug_names" not in _sections(debug)
    verify = subprocess.run(["llvm-dwarfdump-22", "--verify", str(debug)], capture_output=True,
                            text=True, timeout=120)
    assert "No errors." in verify.stdout, verify.stdout[-2000:]


def _lldb(binary: Path, plugin: bool, cache: Path) -> list[str]:
    argv = ["lldb-22", "--no-lldbinit", "-b", "-O", "settings set use-color false"]
    if plugin:
        argv += ["-O", f"command script import {ROOT / 'lldb' / 'unsplit_lldb.py'}"]
    argv += ["-o", f"target create {binary}"]
    if plugin:
        argv += ["-o", "bb debuginfo status"]
    for name in FUNCTIONS:
        argv += ["-o", f"breakpoint set -n {name}"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, env={
        **os.environ, "UNSPLIT_CACHE": str(cache), "UNSPLIT_LLDB_DEBUGINFO": "1"}).stdout
    return [re.sub(r", address = 0x[0-9a-f]+", "", line)
            for line in re.findall(r"^Breakpoint \d+: .*$", out, flags=re.M)]


def _gdb(binary: Path, plugin: bool, cache: Path) -> list[str]:
    argv = ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off"]
    if plugin:
        argv += ["-iex", f"source {ROOT / 'gdb' / 'unsplit_gdb.py'}"]
    for name in FUNCTIONS:
        argv += ["-ex", f"break {name}"]
    out = subprocess.run([*argv, str(binary)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "UNSPLIT_CACHE": str(cache)}).stdout
    return [re.sub(r" at 0x[0-9a-f]+", "", line)
            for line in re.findall(r"^Breakpoint \d+ at .*$", out, flags=re.M)]


def test_names_resolve_as_on_the_indexed_input(indexed: Path, tmp_path: Path) -> None:
    for debugger in (_lldb, _gdb):
        ours = debugger(indexed / "crash", True, tmp_path / "cache")
        theirs = debugger(indexed / "input" / "crash", False, tmp_path / "cache")
        assert len(theirs) == len(FUNCTIONS) and all(":" in t for t in theirs), theirs
        assert ours == theirs
