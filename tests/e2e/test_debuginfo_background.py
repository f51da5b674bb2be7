"""GDB's first session on a core of a BOLT output without DWARF, on an empty cache: the debug
file is written by another process while the session goes on. `bt` names and lines every frame
in moved code before the file exists (the procedures and marker lines the fixture's facts say),
`info args` waits for the file, loads it and shows the arguments plain GDB shows on the pre-BOLT
input stopped at the same crash, and a `gdb -batch` that exits first leaves the file to be
finished for the next session. The test holds the file's lock (what a second writer on the same
cache waits on) to keep it unwritten while it looks."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest

from ..conftest import ROOT, facts
from .driver_gdb import GdbDriver

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed"),
]

VARIANTS = ["bolt-gcc", "bolt-all"]  # GCC's DWARF 5 (DW_FORM_addr) and clang's (addrx)
PLUGIN = ROOT / "gdb" / "unsplit_gdb.py"


def _cache_path(binary: Path) -> Path:
    """Where the session's debug file goes ($UNSPLIT_CACHE set by the test)."""
    from unsplit.debuginfo.cache import path_for
    from unsplit.elf.binary import Binary

    path = path_for(Binary(str(binary)))
    assert path is not None
    return Path(path)


def _locked(path: Path) -> IO[bytes]:
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = open(f"{path}.lock", "ab")
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def _input_args(f: dict[str, Any]) -> str:
    """`info args` of plain GDB on the pre-BOLT input, run to the same crash."""
    out = subprocess.run(
        ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-ex", "run",
         "-ex", "echo <<args>>\\n", "-ex", "info args", "--args", str(ROOT / f["input"]),
         *f["crash"]["argv"][1:]], capture_output=True, text=True, timeout=120, cwd=ROOT).stdout
    return out.split("<<args>>\n", 1)[1]


def _values(text: str) -> list[tuple[str, str]]:
    """(name, value) of each `name = value` line, pointers as `<pointer>` (the stack of a run
    under GDB is not the core's)."""
    return [(m[1], re.sub(r"0x[0-9a-f]+", "<pointer>", m[2]))
            for m in re.finditer(r"^(\w+) = (.*)$", text, re.M)]


@pytest.mark.parametrize("variant", VARIANTS)
def test_first_bt_before_the_file_then_arguments_once_loaded(
        gdb: Callable[..., GdbDriver], zoo: dict[str, Any], variant: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    f = facts(zoo, variant, "crash")
    assert not f["has_debug_info"]
    marks = f["markers"]["crash.c"]
    binary = ROOT / f["binary"]
    path = _cache_path(binary)
    lock = _locked(path)
    session = gdb(binary, core=str(ROOT / f["crash"]["core"]))
    assert "debug info for split module" not in session.startup, session.startup
    bt = session.command("bt")
    for level, (procedure, marker) in enumerate([("transfer", "crash site"),
                                                 ("run", "run cold call"),
                                                 ("main", "main cold call")]):
        # named and lined from the index, without arguments: GDB has no DWARF here yet
        assert re.search(rf"^#{level}\s+0x[0-9a-f]+ in {procedure} \[cold[.\d]*\] \(\) at "
                         rf"crash\.c:{marks[marker]}$", bt, re.M), bt
    assert not path.exists()
    status = session.command("bb debuginfo status")
    assert re.search(r"^  crash: being written since", status, re.M), status
    lock.close()
    args = session.command("info args", timeout=120)
    assert re.search(r"^unsplit: debug info for split module crash \(.*\.debug\)$", args,
                     re.M), args
    expected = _values(_input_args(f))
    assert [n for n, _ in expected] == ["a", "amount", "mode"], expected
    assert _values(args) == expected, args
    assert path.is_file()
    again = session.command("bt 1")
    site = marks["crash site"]
    assert re.search(r"^#0\s+(0x[0-9a-f]+ in )?transfer \[cold[.\d]*\] \(a=.*amount=amount@"
                     rf"entry=1000, mode=mode@entry=1\) at .*crash\.c:{site}$", again, re.M), again


def test_batch_session_leaves_the_file_to_be_finished(zoo: dict[str, Any],
                                                      tmp_path: Path) -> None:
    """`gdb -batch -ex bt` exits while the file is written (it is held back by its lock): GDB
    exits at once and cleanly, the writer finishes after it, and the next session loads the
    kept file as the core loads, its `bt` with the input's arguments."""
    env = {**os.environ, "UNSPLIT_CACHE": str(tmp_path / "cache")}
    f = facts(zoo, "bolt-gcc", "crash")
    binary, core = ROOT / f["binary"], ROOT / f["crash"]["core"]
    os.environ["UNSPLIT_CACHE"], saved = env["UNSPLIT_CACHE"], os.environ.get("UNSPLIT_CACHE")
    try:
        path = _cache_path(binary)
    finally:
        if saved is not None:
            os.environ["UNSPLIT_CACHE"] = saved
    lock = _locked(path)
    argv = ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-iex",
            f"source {PLUGIN}", str(binary), "-c", str(core), "-ex", "bt"]
    first = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert first.returncode == 0, first.stderr
    assert re.search(r"^#0\s+0x[0-9a-f]+ in transfer \[cold[.\d]*\] \(\) at crash\.c:"
                     rf"{f['markers']['crash.c']['crash site']}$", first.stdout, re.M), first.stdout
    assert not path.exists()
    lock.close()
    deadline = time.monotonic() + 120
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert path.is_file()
    later = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    said = later.stdout + later.stderr
    assert re.search(r"^unsplit: debug info for split module crash \(.*\.debug\)$", said,
                     re.M), said
    assert re.search(r"^#0\s+0x[0-9a-f]+ in transfer \[cold[.\d]*\] \(a=.*amount=amount@entry="
                     r"1000, mode=mode@entry=1\)", later.stdout, re.M), later.stdout


def test_writer_that_cannot_write_says_one_line(
        gdb: Callable[..., GdbDriver], zoo: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache cannot take the file (a directory has its name): one line says why there is
    no file, no traceback, and the session goes on naming frames."""
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    f = facts(zoo, "bolt-gcc", "crash")
    path = _cache_path(ROOT / f["binary"])
    (path / "taken").mkdir(parents=True)
    session = gdb(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))
    args = session.command("info args", timeout=120)
    # The writer may fail before any command: the line comes at whichever prompt follows.
    lines = [ln for ln in session.transcript.splitlines() if ln.startswith("unsplit:") and
             not ln.startswith("unsplit: waiting for the debug file of crash")]
    assert len(lines) == 1 and re.match(r"unsplit: no debug file for crash: cannot make one: "
                                        r".*Is a directory", lines[0]), session.transcript
    assert "Traceback" not in args and "No symbol table info available." in args, args
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no lock, nothing half
    bt = session.command("bt 1")
    assert re.search(r"^#0\s+0x[0-9a-f]+ in transfer \[cold[.\d]*\] \(\) at crash\.c:"
                     rf"{f['markers']['crash.c']['crash site']}$", bt, re.M), bt


def test_background_off_writes_the_file_at_load(gdb: Callable[..., GdbDriver],
                                                zoo: dict[str, Any], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """UNSPLIT_DEBUGINFO_BACKGROUND=0: the file is written as the module loads, so the first
    `bt` already has the input's arguments."""
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UNSPLIT_DEBUGINFO_BACKGROUND", "0")
    f = facts(zoo, "bolt-gcc", "crash")
    session = gdb(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))
    assert "unsplit: debug info for split module crash" in session.startup, session.startup
    bt = session.command("bt 1")
    assert re.search(r"^#0\s+(0x[0-9a-f]+ in )?transfer \[cold[.\d]*\] \(a=.*amount=amount@"
                     r"entry=1000, mode=mode@entry=1\)", bt, re.M), bt


def test_core_loaded_before_its_file_gets_the_frame_line_again(
        gdb: Callable[..., GdbDriver], zoo: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is finished after GDB printed the core's frame 0 (naming the fragment symbol,
    without the file) and loaded at the next prompt: the user still sees a right frame 0 last,
    GDB's own line with the file (procedure, line of the fixture's facts)."""
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    f = facts(zoo, "bolt-all", "crash")
    binary = ROOT / f["binary"]
    lock = _locked(_cache_path(binary))  # no file before the core is loaded
    session = gdb(binary)
    lock.close()
    # One command: the writer finishes, then the core loads, and no prompt comes between.
    out = session.command(
        "python import unsplit_gdb_impl as u; [w.wait() for _, w in "
        "u.plugin().debuginfo.pending.values()]; "
        f"gdb.execute('core-file {ROOT / f['crash']['core']}')", timeout=120)
    frame0 = re.findall(r"^#0\s+.*$|^(?:0x[0-9a-f]+ in )?transfer\b.*$", out, re.M)
    assert re.search(r"^#0\s+0x[0-9a-f]+ in transfer\.cold", frame0[0]), out  # GDB's, no file
    assert re.search(r"^unsplit: debug info for split module crash \(.*\.debug\)$", out,
                     re.M), out
    site = f["markers"]["crash.c"]["crash site"]
    assert re.match(r"(#0\s+)?(0x[0-9a-f]+ in )?transfer( \[cold[.\d]*\])? \(.*\) at "
                    rf".*crash\.c:{site}$", frame0[-1]), out
