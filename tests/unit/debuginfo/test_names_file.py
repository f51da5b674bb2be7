"""The names file (unsplit.debuginfo.names_file): what an lldb-dap session on a core gets at once
while the debug file of a big module is written: every instruction of every fragment of a split
procedure named after its procedure by the file's symbol table alone, the module's own symbols
kept, no DWARF; and the writer that makes it first (unsplit.debuginfo.background --names).

Oracles: the fixtures' facts (each split function's fragments by llvm-readobj-22 on the
unstripped binary), llvm-objdump-22's instructions, llvm-readelf-22's symbols and
llvm-symbolizer-22 on the file; never unsplit's own output."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Any

import pytest
from unsplit.debuginfo import background, names_file
from unsplit.debuginfo.cache import MADE, TO_WRITE, debug_file_for, names_path
from unsplit.index.module_index import ModuleIndex

from ... import bolt_truth
from ...conftest import ROOT, facts


def _named(file: Path, f: dict[str, Any], exported: set[str] | None = None
           ) -> tuple[list[str], list[str]]:
    """(the function llvm-symbolizer-22 names each fragment instruction by `file` alone, what
    the facts say)."""
    blocks, expected = bolt_truth.fragments_symbolized(file, ROOT / f["binary"],
                                                       f["split_functions"], exported)
    return [b[0] for b in blocks], expected


def test_every_fragment_is_named_by_its_procedure(zoo: dict[str, Any], tmp_path: Path) -> None:
    """A BOLT output with a .symtab: the moved fragments' own symbols (`transfer.cold.1`) give
    way to their procedure's name, every other symbol of the module stays, and no DWARF."""
    f = facts(zoo, "bolt-all", "crash")
    out = tmp_path / "crash.names"
    out.write_bytes(names_file.make(ModuleIndex.open(str(ROOT / f["binary"]))))
    named, expected = _named(out, f)
    assert named == expected
    sections = bolt_truth.run("llvm-readelf-22", "-SW", out)
    assert ".symtab" in sections and ".debug_" not in sections
    mine = {s.name for s in bolt_truth.functions(out)}
    theirs = {s.name for s in bolt_truth.functions(ROOT / f["binary"])}
    assert not any(".cold" in n for n in mine), sorted(mine)
    assert {n for n in theirs if ".cold" not in n} <= mine


def test_a_stripped_library_keeps_its_dynamic_symbols(zoo: dict[str, Any],
                                                      tmp_path: Path) -> None:
    """A BOLTed library stripped to .dynsym (as Debian's libLLVM): LLDB reads a file's .dynsym
    only where it has no .symtab, so the file's .symtab has the exported functions too; a
    procedure the library does not export is named by its entry's address, as BAT alone can
    say."""
    f = facts(zoo, "bolt-dlopen", "libwork")
    where = tmp_path / "alone"
    where.mkdir()
    lib = where / Path(f["binary"]).name
    bolt_truth.run("llvm-objcopy-22", "--strip-all", "--keep-section=.note.bolt_bat",
                   ROOT / f["binary"], lib)
    out = tmp_path / "libwork.names"
    out.write_bytes(names_file.make(ModuleIndex(ModuleIndex.open(str(lib)).binary)))
    exported = {line.split()[-1].split("@")[0] for line in bolt_truth.run(
        "llvm-readelf-22", "--dyn-syms", "-W", lib).splitlines()
        if " FUNC " in line and " UND " not in line}
    named, expected = _named(out, {**f, "binary": str(lib)}, exported)
    assert named == expected
    assert exported <= {s.name.split("@")[0] for s in bolt_truth.functions(out)}


def test_the_writer_makes_the_names_file_before_the_debug_file(
        zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the debug file held back (its lock taken, as another writer would), the writer's
    names file is there, and the debug file follows once the lock is free."""
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path))
    binary = str(ROOT / facts(zoo, "bolt-all", "crash")["binary"])
    planned = debug_file_for(binary, write=False, index=False)
    assert planned.reason == TO_WRITE and planned.path is not None
    path = Path(planned.path)
    path.parent.mkdir(parents=True)
    with open(f"{path}.lock", "ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        writer = background.start(binary, names=True)
        assert writer.wait_for(names_path(str(path)))
        assert not path.exists() and not writer.done()
    outcome = writer.wait()
    assert (outcome.path, outcome.reason) == (str(path), MADE)
    assert Path(names_path(str(path))).read_bytes()[:4] == b"\x7fELF"


def _nice(pid: int) -> int:
    """The niceness of process `pid` (proc(5): /proc/PID/stat, field 19)."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def test_the_writer_goes_behind_the_session_once_the_names_file_is_written(
        zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer starts at the session's priority and, its names file written, goes on with
    the debug file at a lower one (the session reads the names file meanwhile)."""
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path))
    binary = str(ROOT / facts(zoo, "bolt-all", "crash")["binary"])
    planned = debug_file_for(binary, write=False, index=False)
    assert planned.path is not None
    path = Path(planned.path)
    path.parent.mkdir(parents=True)
    ours = os.nice(0)
    with open(f"{path}.lock", "ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        writer = background.start(binary, names=True)
        assert _nice(writer.pid) == ours
        assert writer.wait_for(names_path(str(path)))
        deadline = time.monotonic() + 60
        while _nice(writer.pid) == ours and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _nice(writer.pid) == min(ours + background.NICE_AFTER_NAMES, 19)
        assert not writer.done()
    assert writer.wait().reason == MADE
