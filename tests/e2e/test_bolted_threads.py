"""A BOLTed multi-threaded program (tests/bolted_threads.py) in both debuggers: several threads
stopped at once (an attach, a core), and a crash in an inlined callee in moved code.

Expectations come from plain LLDB and GDB (without the plugin) on the same binary or on BOLT's
``--update-debug-sections`` twin (DWARF), from the source's markers, and from llvm-symbolizer-22
on the pre-BOLT input at perf2bolt-22's translation of the address; never from unsplit.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .. import bolt_truth
from .driver_lldb import LLDB

pytestmark = pytest.mark.e2e


@pytest.fixture
def waiting(bolted_threads: dict[str, Any]) -> Iterator[subprocess.Popen[bytes]]:
    """The program started with `wait`: six threads asleep, to attach to."""
    proc = subprocess.Popen([str(bolted_threads["binary"]), "wait"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # the workers started
    yield proc
    proc.kill()
    proc.wait()


def _lines_beyond_plain(with_plugin: str, plain: str) -> list[str]:
    """The lines only the plugin's session printed, numbers set aside, and the line the
    plugin gives a frame LLDB has none for (its debug file, /usr/lib/debug for libc, is a
    lookup this session's LLDB does not make)."""
    def shape(line: str) -> str:
        return re.sub(r"0x[0-9a-f]+|\b\d+\b", "N", re.sub(r" at \S+:\d+(:\d+)?$", "",
                                                         line.strip()))

    theirs = {shape(line) for line in plain.splitlines()}
    return [line for line in with_plugin.splitlines() if shape(line) not in theirs]


# -- several threads stopped at once: nothing printed that nobody asked for --------------------


def test_lldb_attach_prints_what_lldb_prints(lldb: Callable[..., Any],
                                             bolted_threads: dict[str, Any],
                                             waiting: subprocess.Popen[bytes]) -> None:
    outputs = []
    for plugin in (False, True):
        session = lldb(bolted_threads["binary"], plugin=plugin)
        outputs.append(session.until_stop(f"process attach --pid {waiting.pid}"))
        assert outputs[-1].count("stop reason = signal SIGSTOP") == 6, outputs[-1]
        session.command("process detach")
    plain, mine = outputs
    assert _lines_beyond_plain(mine, plain) == [], mine


def test_lldb_core_load_prints_what_lldb_prints(lldb: Callable[..., Any],
                                                bolted_threads: dict[str, Any]) -> None:
    create = f'target create --core "{bolted_threads["core"]}" "{bolted_threads["binary"]}"'
    plain = lldb(bolted_threads["binary"], plugin=False).command(create)
    session = lldb(bolted_threads["binary"])
    mine = session.command(create)
    assert "was loaded" in mine and _lines_beyond_plain(mine, plain) == [], mine
    # The CFI LLDB's unwinder needs in the moved code still comes before the backtrace: the
    # crashed thread's caller is the worker, as in the -dbg twin's own DWARF.
    frames = [ln for ln in session.command("bt").splitlines() if "frame #" in ln]
    if "[inlined]" in frames[0]:  # LLDB's frame of the call inlined there
        frames = frames[1:]
    assert "verify_record" in frames[0] and "worker" in frames[1], frames
    assert "pthread_create.c" in frames[2], frames


# -- one offset style in LLDB's frame lines ------------------------------------------------------


def test_lldb_frame_lines_write_offsets_as_lldb_does(lldb: Callable[..., Any],
                                                     bolted_threads: dict[str, Any],
                                                     tmp_path: Path) -> None:
    """LLDB writes a frame's offset ` + 22` (decimal, only without a line of its own); a frame
    in moved code says its offset the same way, and it is BAT's input offset (perf2bolt-22)."""
    session = lldb(bolted_threads["binary"], core=str(bolted_threads["core"]))
    frames = [ln for ln in session.command("bt").splitlines() if "frame #" in ln]
    assert not any(re.search(r"\+0x|\+\d", ln) for ln in frames), frames
    moved = [(ln, int(m[1], 16), m[2]) for ln in frames
             if (m := re.search(r"frame #\d+: (0x[0-9a-f]+) verify`\w+ \[cold\.\d\]( \+ \d+)?",
                                ln))]
    assert [ln.split("`")[1].split(" [")[0] for ln, _, _ in moved] == ["verify_record", "worker"]
    pcs = [moved[0][1], moved[1][1] - 1]  # a caller's pc is a return address: its call's
    truth = bolt_truth.perf2bolt_targets(Path(bolted_threads["binary"]), pcs, tmp_path)
    for (line, _, shown), pc, extra in zip(moved, pcs, (0, 1), strict=True):
        if shown is not None:  # LLDB has no line there: the offset follows the name
            assert shown == f" + {truth[pc][2] + extra}", line


# -- an inlined callee's line never under the outer procedure's name -----------------------------


def _chain(bolted_threads: dict[str, Any], pc: int, tmp_path: Path) -> list[tuple[str, int]]:
    """(function, line) of each frame llvm-symbolizer-22 gives the pre-BOLT input at
    perf2bolt-22's translation of `pc`, innermost first (the procedure's own last)."""
    exe, inp = Path(bolted_threads["binary"]), Path(bolted_threads["input"])
    name, unit, offset = bolt_truth.perf2bolt_targets(exe, [pc], tmp_path)[pc]
    at = bolt_truth.input_address(bolt_truth.functions(inp), name, unit, offset)
    text = bolt_truth.run("llvm-symbolizer-22", "--obj", inp, "--functions=short", hex(at))
    lines = [ln for ln in text.splitlines() if ln]
    return [(lines[k], int(lines[k + 1].rsplit(":", 2)[1])) for k in range(0, len(lines), 2)]


@pytest.fixture(scope="module")
def crash_chain(bolted_threads: dict[str, Any],
                tmp_path_factory: pytest.TempPathFactory) -> tuple[int, list[tuple[str, int]]]:
    """The crash pc (plain GDB on the core) and its inline chain by the oracle."""
    out = bolt_truth.run("gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off",
                         "-ex", "p/x $pc", bolted_threads["binary"], bolted_threads["core"])
    pc = int(re.findall(r"= (0x[0-9a-f]+)", out)[-1], 16)
    chain = _chain(bolted_threads, pc, tmp_path_factory.mktemp("truth"))
    marks = bolted_threads["markers"]
    assert chain == [("quarantine_record", marks["inlined crash site"]),
                     ("verify_record", marks["verify inlined call"])], chain
    return pc, chain


def test_where_and_frames_name_the_inlined_call(debugger: Callable[..., Any],
                                                bolted_threads: dict[str, Any],
                                                crash_chain: tuple[int, list[Any]]) -> None:
    pc, [(callee, callee_line), (proc, own_line)] = crash_chain
    session = debugger(bolted_threads["binary"], core=str(bolted_threads["core"]))
    where = session.command("bb where")
    assert f"is in {proc} [cold" in where, where
    assert re.search(rf"^  inlined   {callee} at verify\.c:{callee_line}\b", where, re.M), where
    assert re.search(rf"^  line      verify\.c:{own_line}\b", where, re.M), where
    loc = session.command_json("bb where --json")
    assert (loc["procedure"], loc["line"]) == (proc, own_line), loc
    assert [(f["function"], f["line"]) for f in loc["inlined"]] == [(callee, callee_line)], loc
    rows = session.command_json("bb frames --json")
    at_pc = [r for r in rows if int(r["pc"], 16) == pc]
    row = at_pc[-1]  # the procedure's own frame; the debugger's inlined frames come first
    assert (row["procedure"], row["line"]) == (proc, own_line), row
    calls = [(r["procedure"], r["line"], r["source"].strip()) for r in at_pc[:-1]] or \
        [(f["function"], f["line"], f["source"].strip()) for f in row["inlined"]]
    assert calls == [(callee, callee_line, _source(bolted_threads, callee_line))], at_pc
    table = session.command("bb frames")
    assert re.search(rf"\b{callee}\b.*verify\.c:{callee_line}\b", table), table
    row_line = [ln for ln in table.splitlines() if f"{pc:#018x}" in ln][-1]
    assert f"verify.c:{own_line}" in row_line and proc in row_line, table


def _source(bolted_threads: dict[str, Any], line: int) -> str:
    return str(Path(bolted_threads["source"]).read_text().splitlines()[line - 1].strip())


def _pairs_of(frames: list[str]) -> list[tuple[str, int | None]]:
    """(function, line) of each frame line of a `bt` (either debugger's)."""
    out: list[tuple[str, int | None]] = []
    for ln in frames:
        m = re.search(r"^\s*(?:\*\s*)?(?:#\d+\s+(?:0x[0-9a-f]+ in )?|frame #\d+: 0x[0-9a-f]+ "
                      r"[\w.]+`(?:[\w.]+ \[inlined\] )?)(\w+).*?(?: at \S*?verify\.c:(\d+))?"
                      r"(?::\d+)?(?: \[inlined\])?$", ln)
        assert m, ln
        out.append((m[1], None if m[2] is None else int(m[2])))
    return out


@pytest.mark.parametrize("debuginfo", ["on", "off"])
def test_bt_never_pairs_the_procedure_with_the_callees_line(
        debugger: Callable[..., Any], bolted_threads: dict[str, Any],
        crash_chain: tuple[int, list[Any]], debuginfo: str) -> None:
    """The debugger's own bt with the plugin: LLDB's and GDB's inlined frames where they have
    them (as on the -dbg twin), else the procedure at its own line; never verify_record with
    quarantine_record's line. `off`: GDB without unsplit's debug file (UNSPLIT_DEBUGINFO=0)."""
    _, [(callee, callee_line), (proc, own_line)] = crash_chain
    env = {"UNSPLIT_DEBUGINFO": "0"} if debuginfo == "off" else {}
    session = debugger(bolted_threads["binary"], core=str(bolted_threads["core"]), env=env)
    frames = [ln for ln in session.backtrace().splitlines()
              if re.match(r"^\s*(\*\s*)?(#\d|frame #\d)", ln)]
    pairs = _pairs_of(frames)
    assert (proc, callee_line) not in pairs, frames
    if pairs[0][0] == callee:  # the debugger's own frame for the inlined call
        assert pairs[:2] == [(callee, callee_line), (proc, own_line)], frames
    else:
        assert pairs[0] == (proc, own_line), frames
    assert pairs[len(pairs) - 3][0] == "worker" or ("worker", 49) in pairs, frames


def test_gdb_plugin_loaded_after_the_core(gdb: Callable[..., Any],
                                          bolted_threads: dict[str, Any],
                                          crash_chain: tuple[int, list[Any]]) -> None:
    """The debug file reaches GDB after it made the core's frames: GDB makes them again, with
    the inlined call's frame (it named the procedure with the callee's line)."""
    _, [(callee, callee_line), (proc, own_line)] = crash_chain
    session = gdb(bolted_threads["binary"], core=str(bolted_threads["core"]), plugin=False)
    session.load_plugin()
    frames = [ln for ln in session.backtrace().splitlines() if re.match(r"^#\d", ln)]
    assert _pairs_of(frames)[:2] == [(callee, callee_line), (proc, own_line)], frames


# -- LLDB's frame select of a frame in moved code shows its source --------------------------------


def _source_block(text: str) -> list[str]:
    """The numbered source lines LLDB prints after a frame line (`-> 49  \t…`)."""
    return [re.sub(r"\s+", " ", ln).strip() for ln in text.splitlines()
            if re.match(r"^(->)?\s+\d+\s", ln)]


def test_lldb_frame_select_shows_the_source(lldb: Callable[..., Any],
                                            bolted_threads: dict[str, Any]) -> None:
    """As LLDB shows a frame it has DWARF for (plain LLDB on BOLT's --update-debug-sections
    twin, where this LLDB unwinds it): the frame's line marked `->` with the lines around it,
    read from the source; the frames are the inlined call's (0), the procedure's (1) and its
    caller's (2), at the source's markers."""
    session = lldb(bolted_threads["binary"], core=str(bolted_threads["core"]))
    marks = bolted_threads["markers"]
    text = Path(bolted_threads["source"]).read_text().splitlines()
    for number, marker in ((0, "inlined crash site"), (1, "verify inlined call"),
                           (2, "worker call")):
        mine = session.command(f"frame select {number}")
        line = marks[marker]
        want = [re.sub(r"\s+", " ", f"{'->' if n == line else ''} {n} {text[n - 1]}").strip()
                for n in range(line - 3, line + 4)]
        assert _source_block(mine) == want, mine
        assert "->  0x" not in mine, mine  # no disassembly
    if LLDB == "lldb-22":  # LLDB 19 unwinds the twin's split functions as one span
        twin = lldb(bolted_threads["dbg"], core=str(bolted_threads["core"]), plugin=False)
        for number in (0, 1, 2):  # and as LLDB 22 itself shows the twin's
            assert _source_block(session.command(f"frame select {number}")) == \
                _source_block(twin.command(f"frame select {number}"))
