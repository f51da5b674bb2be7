"""Every frame in code BOLT rewrote has its line, in both debuggers (issue 13, item 2).

BOLT without `--update-debug-sections` leaves no DWARF: the debuggers know no line anywhere in
its output, not only in the moved fragments but in the hot part of every function it rewrote
and in the functions lite mode left in place. The plugin gives each such frame the line of the
pre-BOLT binary at the address BAT translates it to: in `bt`, the stop line, `frame`, `up`,
`down`, `info frame` (LLDB: `frame info`), and GDB/MI's `-stack-list-frames` with frame filters.

Expectations come from the fixture sources' markers (the line of a call a caller frame returns
to) and from llvm-symbolizer-22 on the pre-BOLT binary at a function's entry (where BAT puts the
entry of a BOLTed function, and where lite mode leaves an untouched one), never from unsplit.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts
from ..variants import BOLT_WITHOUT_DWARF
from .conftest import resume
from .driver_gdb import PLUGIN, GdbDriver

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True)
def _frames_without_dwarf(monkeypatch: pytest.MonkeyPatch) -> None:
    """These cases are the plugin's own frame names and lines where the module has no DWARF:
    GDB's automatic debug file (bb debuginfo, tests/e2e/test_debuginfo_gdb.py) would make GDB's
    own output right and leave the plugin nothing to add, so it is off here."""
    monkeypatch.setenv("UNSPLIT_DEBUGINFO", "0")

# Each debugger's way to show the selected frame after selecting it.
FRAME_COMMANDS = {  # (command, frame it selects)
    "gdb": [("up", 1), ("info frame", 1), ("frame 2", 2), ("down", 1), ("frame", 1),
            ("frame level 0", 0)],
    "lldb": [("up", 1), ("frame info", 1), ("frame select 2", 2), ("down", 1),
             ("frame info", 1), ("frame select 0", 0)],
}


def _crash(zoo: dict[str, Any], variant: str) -> dict[str, Any]:
    f = facts(zoo, variant, "crash")
    assert f["has_bat"] and not f["has_debug_info"], variant  # what this test is about
    return f


def _entry_line(binary: Path, function: str) -> int:
    """llvm-symbolizer-22's line for the first byte of `function` (its nm address) in `binary`."""
    nm = subprocess.run(["nm", "--defined-only", str(binary)], capture_output=True, text=True,
                        check=True).stdout
    [address] = [ln.split()[0] for ln in nm.splitlines() if ln.split()[-1:] == [function]]
    out = subprocess.run(["llvm-symbolizer-22", "--functions=short", "-e", str(binary),
                          f"0x{address}"], capture_output=True, text=True, check=True).stdout
    name, position = out.splitlines()[:2]
    assert name == function, out
    file, line = position.rsplit(":", 2)[:2]
    assert Path(file).name == "crash.c", out
    return int(line)


def _frame_lines(session: Any, text: str) -> dict[int, str]:
    head = re.compile(r"^\s*\*?\s*frame #(\d+):" if session.name == "lldb" else r"^#(\d+)\s")
    found = {}
    for line in text.splitlines():
        m = head.match(line)
        if m:
            found.setdefault(int(m.group(1)), line)
    return found


def _check_backtrace(session: Any, want: list[tuple[str, int]]) -> None:
    """Frames 0.. of `bt`: the procedure's name and crash.c:LINE on each frame's line."""
    bt = session.backtrace()
    lines = _frame_lines(session, bt)
    for number, (procedure, line) in enumerate(want):
        text = lines.get(number, "")
        assert re.search(rf"\b{procedure}\b", text), (number, procedure, bt)
        assert re.search(rf"\bcrash\.c:{line}\b", text), (number, procedure, line, bt)


def _check_frame_commands(session: Any, want: list[tuple[str, int]],
                          more: tuple[tuple[str, int], ...] = ()) -> None:
    """After each frame command, the selected frame's line is in what it printed."""
    for command, number in [*FRAME_COMMANDS[session.name], *more]:
        out = session.command(command)
        procedure, line = want[number]
        assert re.search(rf"#{number}\b.*\b{procedure}\b.*\bcrash\.c:{line}\b", out), \
            (command, procedure, line, out)
    session.select_frame(0)


def _has_line(session: Any, stop: str, line: int) -> None:
    """The stop report (GDB: its line plus the plugin's) names crash.c:LINE."""
    assert re.search(rf"\bcrash\.c:{line}\b", stop), (line, stop)


@pytest.mark.parametrize("variant", BOLT_WITHOUT_DWARF)
def test_hot_frames_have_lines(debugger: Callable[..., Any], zoo: dict[str, Any],
                               variant: str) -> None:
    """The training run stopped at `transfer`'s entry: transfer <- run <- main, all in the
    hot code of functions BOLT rewrote. (At its first byte, whose line llvm-symbolizer-22
    gives: past the prologue each debugger stops where the debug file's DWARF says, as on the
    input.)"""
    f = _crash(zoo, variant)
    marks = f["markers"]["crash.c"]
    want = [("transfer", _entry_line(ROOT / f["input"], "transfer")),
            ("run", marks["run hot call"]), ("main", marks["main hot call"])]
    session = debugger(ROOT / f["binary"], args=["train"])
    session.break_entry("transfer")
    _has_line(session, session.run(), want[0][1])
    _check_backtrace(session, want)
    # GDB names a frame by the symbol around its pc: `transfer` at its entry (a caller may have
    # called from a fragment, `main.cold.5`).
    by_name = (("frame 2", 2), ("frame function transfer", 0)) if session.name == "gdb" else ()
    _check_frame_commands(session, want, by_name)


@pytest.mark.parametrize("variant", BOLT_WITHOUT_DWARF)
def test_lite_and_cold_frames_have_lines(debugger: Callable[..., Any], zoo: dict[str, Any],
                                         variant: str) -> None:
    """The crash run: `audit` (which the training never called, so lite mode leaves it where
    it was) and `transfer`'s entry, called from cold fragments of run and main."""
    f = _crash(zoo, variant)
    marks = f["markers"]["crash.c"]
    audit = ("audit", _entry_line(ROOT / f["input"], "audit"))
    transfer = ("transfer", _entry_line(ROOT / f["input"], "transfer"))
    session = debugger(ROOT / f["binary"], args=["crash"])
    session.break_entry("audit")
    session.break_entry("transfer")
    stops = [
        [audit, ("main", marks["main cold path"])],
        [audit, ("run", marks["run cold path"]), ("main", marks["main cold call"])],
        [transfer, ("run", marks["run cold call"]), ("main", marks["main cold call"])],
    ]
    for n, want in enumerate(stops):
        _has_line(session, session.run() if n == 0 else resume(session), want[0][1])
        _check_backtrace(session, want)
    _check_frame_commands(session, stops[-1])


@pytest.mark.parametrize("variant", BOLT_WITHOUT_DWARF)
def test_core_frames_have_lines(debugger: Callable[..., Any], zoo: dict[str, Any],
                                variant: str) -> None:
    """The fixture's core: transfer, run and main in their cold fragments, by every command."""
    f = _crash(zoo, variant)
    marks = f["markers"]["crash.c"]
    want = [("transfer", marks["crash site"]), ("run", marks["run cold call"]),
            ("main", marks["main cold call"])]
    session = debugger(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))
    _check_backtrace(session, want)
    _check_frame_commands(session, want)


_MI_FRAME = re.compile(r'frame=\{level="(\d+)",addr="[^"]*",func="([^"]*)"'
                       r'(?:,file="([^"]*)")?(?:,fullname="[^"]*")?(?:,line="(\d+)")?')


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")
@pytest.mark.parametrize("variant", BOLT_WITHOUT_DWARF)
def test_gdb_mi_stack_list_frames(zoo: dict[str, Any], variant: str) -> None:
    """GDB/MI's `-stack-list-frames` after `-enable-frame-filters` (what IDEs ask for)."""
    f = _crash(zoo, variant)
    marks = f["markers"]["crash.c"]
    want = [("transfer", _entry_line(ROOT / f["input"], "transfer")),
            ("run", marks["run hot call"]), ("main", marks["main hot call"])]
    commands = ["-enable-frame-filters", "-break-insert transfer", "-exec-arguments train",
                "-exec-run", "-stack-list-frames 0 2", "-gdb-exit"]
    out = subprocess.run(
        ["gdb", "-nx", "-q", "-i=mi", "-iex", "set debuginfod enabled off",
         "-iex", f"source {PLUGIN}", str(ROOT / f["binary"])],
        input="\n".join(commands) + "\n", capture_output=True, text=True, timeout=120).stdout
    [stack] = [ln for ln in out.splitlines() if ln.startswith("^done,stack=")]
    frames = {int(m.group(1)): m for m in _MI_FRAME.finditer(stack)}
    for number, (procedure, line) in enumerate(want):
        frame = frames[number]
        assert frame.group(2).split(" ")[0] == procedure, stack
        # Under MI the file is the source's full path (GDB's filtered frames have no
        # `fullname`: docs/toolchain-notes.md), one an IDE can open.
        path = frame.group(3)
        assert Path(path).is_absolute() and Path(path).is_file(), stack
        assert (Path(path).name, frame.group(4)) == ("crash.c", str(line)), stack


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")
def test_gdb_leaves_the_users_own_hook_alone(zoo: dict[str, Any], tmp_path: Path) -> None:
    """A `hookpost-up` defined before the plugin loads stays the user's (the plugin says that
    `up` keeps GDB's line); `down` still gets the plugin's line; loading twice is harmless."""
    f = _crash(zoo, "bolt-cdsplit")
    marks = f["markers"]["crash.c"]
    log = (tmp_path / "gdb.log").open("w")
    with GdbDriver(str(ROOT / f["binary"]), args=["train"], plugin=False, log=log) as gdb:
        gdb.command(r'python gdb.execute("define hookpost-up\necho MINE\\n\nend")')
        said = gdb.command(f"source {PLUGIN}")
        assert "`hookpost-up` is yours, so `up` shows GDB's own line only" in said, said
        assert "yours" not in gdb.command(f"source {PLUGIN}")
        gdb.command("break transfer")
        gdb.run()
        up = gdb.command("up")
        assert "MINE" in up and "crash.c" not in up, up
        gdb.command("up")
        down = gdb.command("down")
        assert re.search(rf"#1\b.*\brun\b.*\bcrash\.c:{marks['run hot call']}\b", down), down
        assert "MINE" not in down, down


@pytest.mark.parametrize("program", ["crash", "loop"])
def test_where_gives_a_patched_originals_line(debugger: Callable[..., Any],
                                             zoo: dict[str, Any], program: str) -> None:
    """bolt-patched: BOLT's patched original of a function (`foo.org.0`, a jump at foo's input
    address to foo's new code, which BAT does not describe) has the line llvm-symbolizer-22
    gives that address in the pre-BOLT input (foo's entry); `bb where` said "line unknown".
    `unsplit symbolize` gives the same (tests/unit/tools/test_symbolize.py)."""
    f = facts(zoo, "bolt-patched", program)
    session = debugger(ROOT / f["binary"], args=[])
    session.run()  # runs to its end: the module stays loaded for `bb where`
    for name, at in f["bolt_originals"].items():
        if name[:-len(".org.0")] not in f["split_functions"]:
            continue
        where = subprocess.run(["llvm-symbolizer-22", "--obj", str(ROOT / f["input"]), at],
                               capture_output=True, text=True, check=True).stdout.split("\n")[1]
        file, line = where.split(":")[:2]
        assert line != "0", where  # the premise: the input has a line there
        out = session.command(f"bb where {at}")
        assert re.search(rf"^\s+line\s+{re.escape(Path(file).name)}:{line}\b", out, re.M), \
            (name, where, out)
