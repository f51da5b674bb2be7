"""`bb step`, `bb next` and `bb finish` print what the debugger prints for its own steps.

The oracle is the debugger itself: the same source (crash.c) built without splitting (plain
`gcc -O2 -g`: no profile, no cold fragment), stepped with the debugger's own `step`, `next`
and `finish` from the same line, gives the shape every `bb` step must have in a split build of
it (the zoo's GCC PGO build): GDB's `LINE\\tTEXT` after a step in the same frame, the frame line
first after a step into another one, `Run till exit from …` for finish; LLDB's
`Process N stopped`, `* thread #1, … stop reason = step in|step over|step out`, `frame #0: …`
and the source lines with `->` on the current one. The line printed is one that
llvm-dwarfdump-22's line table gives the pc, and its text is that line of the source file. In BOLTed
code without DWARF (LLDB shows disassembly there), the lines come from the pre-BOLT binary.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts
from .driver_base import after_debug_file

pytestmark = pytest.mark.e2e

SOURCE = ROOT / "fixtures" / "src" / "crash.c"
TEXT = SOURCE.read_text().splitlines()
SLOW = 300

# One kind per output line; a step's shape is the list of its lines' kinds.
_GDB_KINDS = [
    ("run till", re.compile(r"^Run till exit from #\d+\s+.+$")),
    ("source", re.compile(r"^(?:0x[0-9a-f]{16}\t)?(?P<line>\d+)\t(?P<text>.*)$")),
    ("frame", re.compile(r"^(?:0x[0-9a-f]{16} in )?(?P<name>[\w.]+)(?P<tag> \[[\w.]+\])? \(.*\)"
                         r"(?: at (?P<file>\S+):(?P<line>\d+))?$")),
    ("value", re.compile(r"^Value returned is \$\d+ = .+$")),
]
_LLDB_KINDS = [
    ("resuming", re.compile(r"^Process \d+ resuming$")),
    ("process", re.compile(r"^Process \d+ stopped$")),
    ("thread", re.compile(r"^\* thread #1, name = '\S+', stop reason = (?P<reason>.+)$")),
    ("return", re.compile(r"^Return value: \(.+\) \$\d+ = .+$")),
    ("blank", re.compile(r"^$")),
    ("frame", re.compile(r"^    frame #0: 0x[0-9a-f]{16} \S+`(?P<name>[\w.]+)(?: \[[\w.]+\])?"
                         r"(?:\+0x[0-9a-f]+| \+ \d+)?(?:\(.*\))? at (?P<file>[\w.]+):"
                         r"(?P<line>\d+)(?::\d+)?$")),
    ("current", re.compile(r"^-> (?P<line>\d+)(?:\s*\t(?P<text>.*))?$")),
    ("source", re.compile(r"^   (?P<line>\d+)(?:\s*\t(?P<text>.*))?$")),  # (blank: no tab)
    ("caret", re.compile(r"^    \t *\^$")),
]


def _shape(out: str, gdb: bool) -> list[tuple[str, dict[str, str]]]:
    """Each line of a step's output: its kind and named parts (a program's own output, such
    as `crash: audit …`, left out)."""
    shape = []
    for line in out.splitlines():
        if line.startswith("crash: "):
            continue
        for kind, pattern in _GDB_KINDS if gdb else _LLDB_KINDS:
            m = pattern.match(line)
            if m:
                shape.append((kind, {k: v for k, v in m.groupdict().items() if v is not None}))
                break
        else:
            raise AssertionError(f"a line no step of this debugger prints: {line!r}\n{out}")
    return shape


def _kinds(shape: list[tuple[str, dict[str, str]]]) -> list[str]:
    return [k for k, _ in shape]


def _text_is_the_source(shape: list[tuple[str, dict[str, str]]]) -> None:
    for kind, parts in shape:
        if "text" in parts:
            assert TEXT[int(parts["line"]) - 1] == parts["text"], (kind, parts)


def _stop_line(shape: list[tuple[str, dict[str, str]]], gdb: bool) -> int:
    """The line the step reports: GDB's source line, LLDB's `->` line (equal to its frame's)."""
    if gdb:
        return int(next(p for k, p in shape if k == "source")["line"])
    current = int(next(p for k, p in shape if k == "current")["line"])
    assert int(next(p for k, p in shape if k == "frame")["line"]) == current, shape
    return current


@pytest.fixture(scope="module")
def unsplit_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("unsplit") / "crash"
    subprocess.run(["gcc", "-O2", "-g", "-o", str(out), str(SOURCE)], check=True, timeout=120)
    nm = subprocess.run(["nm", str(out)], check=True, capture_output=True, text=True).stdout
    assert ".cold" not in nm  # the oracle is a build with nothing moved
    return out


def _pc(session: Any) -> int:
    return int(session.register("pc"))


def _row_lines(binary: Path, address: int) -> set[int]:
    """The lines llvm-dwarfdump-22's line table has for the row that covers `address`: every
    statement row at the row's address (several rows share one; GDB takes the last statement,
    llvm-symbolizer the last row), or every row there when none is a statement."""
    out = subprocess.run(["llvm-dwarfdump-22", "--debug-line", str(binary)], check=True,
                         capture_output=True, text=True).stdout
    rows = [(int(m[1], 16), int(m[2]), "is_stmt" in m[3]) for m in re.finditer(
        r"^(0x[0-9a-f]{16})\s+(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+(.*)$", out, re.M)]
    start = max(a for a, _, _ in rows if a <= address)
    here = [(line, stmt) for a, line, stmt in rows if a == start and line]
    return {line for line, stmt in here if stmt} or {line for line, _ in here}


def _break_at_line(session: Any, line: int, bb: bool) -> None:
    out = session.command(f"bb break crash.c:{line}") if bb else session.break_line("crash.c", line)
    assert out.startswith("Breakpoint"), out


# From the call of audit in run's cold fragment: one instruction, over the call to the next
# line (same frame); in a new run, into audit and back out to run's cold fragment; in a third,
# to the next line by number (GDB `advance`, LLDB `thread until`: the frame line is printed).
AFTER = "run cold call"
RUNS = [[("stepi", "instruction step into"), ("next", "step over")],
        [("step", "step in"), ("finish", "step out")],
        [("advance {after}", "step until")]]
NATIVE_LLDB = {"advance": "thread until"}


def test_steps_read_as_the_debuggers_own(debugger: Callable[..., Any], zoo: dict[str, Any],
                                         unsplit_build: Path) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    split = ROOT / f["binary"]
    bias = int(f["crash"]["load_bias"], 16) if f["pie"] else 0
    line = f["markers"]["crash.c"]["run cold path"]  # run's cold fragment, a call to audit
    native = debugger(unsplit_build, args=["crash"], startup_timeout=SLOW)
    mine = debugger(split, args=["crash"], startup_timeout=SLOW)
    gdb = native.name == "gdb"
    _break_at_line(native, line, bb=False)
    _break_at_line(mine, line, bb=True)
    for command, reason in [step for steps in RUNS for step in [("run", ""), *steps]]:
        if command == "run":
            native.run(SLOW)
            mine.run(SLOW)
            continue
        command = command.format(after=f["markers"]["crash.c"][AFTER])
        word, _, rest = command.partition(" ")
        # until_stop: LLDB's own steps print their stop asynchronously, at times after the
        # prompt (on a loaded machine `thread until` printed only `Process N resuming`).
        theirs = _shape(native.until_stop(
            f"{word if gdb else NATIVE_LLDB.get(word, word)} {rest}".strip(), SLOW), gdb)
        ours = _shape(mine.until_stop(f"bb {command}", SLOW), gdb)
        assert _kinds(ours) == _kinds(theirs), (command, ours, theirs)
        _text_is_the_source(theirs)
        _text_is_the_source(ours)
        if not gdb:
            assert dict(ours)["thread"]["reason"] == reason == dict(theirs)["thread"]["reason"]
        pc = _pc(mine)
        assert _stop_line(ours, gdb) in _row_lines(split, pc - bias), (command, ours)
        frame = dict(ours).get("frame")
        if frame is not None:  # the procedure's name, as the unsplit build's own frame line
            assert frame["name"] == dict(theirs)["frame"]["name"], (ours, theirs)


def test_lldb_stop_line_counts_are_honoured(lldb: Callable[..., Any], zoo: dict[str, Any],
                                            unsplit_build: Path) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    line = f["markers"]["crash.c"]["run cold path"]
    sessions = [lldb(unsplit_build, args=["crash"]), lldb(ROOT / f["binary"], args=["crash"])]
    outputs = []
    for s, bb in zip(sessions, (False, True), strict=True):
        _break_at_line(s, line, bb)
        s.run(SLOW)
        s.command("settings set stop-line-count-before 1")
        s.command("settings set stop-line-count-after 0")
        outputs.append(_shape(s.until_stop("bb step" if bb else "step", SLOW), gdb=False))
    assert _kinds(outputs[1]) == _kinds(outputs[0]) == \
        ["process", "thread", "frame", "source", "current", "caret"], outputs


@pytest.mark.parametrize("variant", ["bolt-all"])
def test_lines_of_bolted_code_without_dwarf(debugger: Callable[..., Any], zoo: dict[str, Any],
                                            variant: str) -> None:
    """The debugger knows no line in a BOLTed binary without DWARF (GDB prints `0x… in run ()`,
    LLDB disassembly); a `bb next` there prints the line as for code with DWARF."""
    f = facts(zoo, variant, "crash")
    s = debugger(ROOT / f["binary"], args=["crash"], startup_timeout=SLOW)
    gdb = s.name == "gdb"
    out = after_debug_file(s.break_entry("run"))
    assert out.startswith("Breakpoint"), out
    s.run(SLOW)
    shape = _shape(s.command("bb next", SLOW), gdb)
    assert _kinds(shape) == (["source"] if gdb else
                             ["process", "thread", "frame", "source", "source", "source",
                              "current", "caret", "source", "source", "source"]), shape
    _text_is_the_source(shape)
    procedure = range(f["markers"]["crash.c"]["transfer cold return"] + 2,
                      f["markers"]["crash.c"]["run hot call"] + 4)  # run's lines
    assert _stop_line(shape, gdb) in procedure, shape


def test_verbose_adds_the_extras(debugger: Callable[..., Any], zoo: dict[str, Any]) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    s = debugger(ROOT / f["binary"], args=["crash"], startup_timeout=SLOW)
    _break_at_line(s, f["markers"]["crash.c"]["run cold path"], bb=True)
    s.run(SLOW)
    assert s.command("bb set verbose on") == "verbose is on"
    out = s.command("bb step", SLOW)
    last = out.splitlines()[-1]
    assert re.match(r"#0  0x[0-9a-f]{16} in audit\+0x0 at crash\.c:\d+", last), out


def test_verbose_finish_at_a_signal_says_the_frame_once(debugger: Callable[..., Any],
                                                        zoo: dict[str, Any]) -> None:
    """`bb finish` out of transfer ends at its SIGSEGV (a stop the step did not make: the
    debugger reports it); with verbose on, the `#0 … transfer [cold]+0x…` line comes once."""
    f = facts(zoo, "gcc-pgo", "crash")
    s = debugger(ROOT / f["binary"], args=["crash"], startup_timeout=SLOW)
    s.break_entry("transfer")
    s.run(SLOW)
    assert s.command("bb set verbose on") == "verbose is on"
    out = s.command("bb finish", SLOW)
    assert "SIGSEGV" in out, out
    said = re.findall(r"^#0  0x[0-9a-f]{16} in transfer \[cold\]\+0x[0-9a-f]+ at crash\.c:"
                      rf"{f['markers']['crash.c']['crash site']}\b.*$", out, re.M)
    assert len(said) == 1, out


@pytest.mark.parametrize("frame_info", ["source-line", "location", "short-location"])
def test_gdb_print_frame_info_is_honoured(gdb: Callable[..., Any], zoo: dict[str, Any],
                                          unsplit_build: Path, frame_info: str) -> None:
    """`set print frame-info` decides what a step into another frame prints, for GDB's own
    `step` and for `bb step` alike (a GDB setting: LLDB has stop-line-count, above)."""
    f = facts(zoo, "gcc-pgo", "crash")
    line = f["markers"]["crash.c"]["run cold path"]
    shapes = []
    for binary, bb in ((unsplit_build, False), (ROOT / f["binary"], True)):
        s = gdb(binary, args=["crash"], startup_timeout=SLOW)
        _break_at_line(s, line, bb)
        s.run(SLOW)
        s.command(f"set print frame-info {frame_info}")
        shapes.append(_shape(s.command("bb step" if bb else "step", SLOW), gdb=True))
    assert _kinds(shapes[1]) == _kinds(shapes[0]), shapes
    assert _kinds(shapes[0]) == (["source"] if frame_info == "source-line" else ["frame"])
