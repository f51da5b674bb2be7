"""Post-mortem in both debuggers: cores of a multi-threaded program, of a PIE whose shared
library's cold fragment is on the stack, and of zoo variants (GCC PGO; BOLT without DWARF, its
pre-BOLT binary found by build-id or given by `bb input`). `bt`, every thread's backtrace,
`frame N` + `bb where` and `bb frames` name every frame by procedure [fragment] with its true
line; bad input (another binary's core, a truncated core, a missing binary) costs one line.

Expectations: gdb's own unwinding of the live crash and its lines, nm's fragment symbols and
the sources' markers (tests/postmortem.py; the zoo's facts), never unsplit.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts

pytestmark = pytest.mark.e2e


def _where(session: Any) -> dict[str, Any]:
    lines = [x for x in session.command("bb where --json").splitlines() if x.startswith("{")]
    assert len(lines) == 1, lines
    loc: dict[str, Any] = json.loads(lines[0])
    return loc


def _frame_line(text: str, pc: int, innermost: bool = False) -> str:
    found = [x for x in text.splitlines() if f"{pc:#018x}" in x]
    if not found and innermost:  # GDB leaves out frame 0's pc when a line starts there
        found = [x for x in text.splitlines() if x.startswith("#0 ")]
    assert found, f"no frame at {pc:#x} in:\n{text}"
    return found[0]


def _label(frame: dict[str, Any]) -> str:
    proc, frag = frame["procedure"], frame["fragment"]
    return proc if frag == "hot" else f"{proc} [{frag}]"


def _own_frames(thread: dict[str, Any]) -> list[dict[str, Any]]:
    """The frames in the fixture's own modules (libc's are the system's business)."""
    return [f for f in thread["frames"] if f["module"] is not None]


def _check_rows(rows: list[dict[str, Any]], thread: dict[str, Any]) -> None:
    """`bb frames --json` rows of one thread against gdb's live frames, nm and the lines."""
    by_pc = {int(r["pc"], 16): r for r in rows}
    for want in _own_frames(thread):
        row = by_pc.get(want["pc"])
        assert row is not None, (hex(want["pc"]), rows)
        assert (row["procedure"], row["fragment"], row["fragment_symbol"]) == \
            (want["procedure"], want["fragment"], want["symbol"])
        assert row["module"] == want["module"] and row["line"] == want["gdb_line"]
        assert row["source"] is not None and row["source"] == \
            Path(row["path"]).read_text().splitlines()[row["line"] - 1]


# --- a multi-threaded core --------------------------------------------------------------------


def test_threads_core(debugger: Callable[..., Any], mt: dict[str, Any]) -> None:
    marks = mt["markers"]
    waiter, worker = (next(t for t in mt["threads"] if any(f["procedure"] == proc
                                                          for f in t["frames"][:1]))
                      for proc in ("await_work", "apply"))
    main = next(t for t in mt["threads"] if t not in (waiter, worker))
    # The truth the lines are checked against: the markers, where a marker says it.
    assert [f["gdb_line"] for f in _own_frames(worker)] == \
        [marks["mt crash site"], marks["worker call"]]
    assert _own_frames(waiter)[1]["gdb_line"] == marks["waiter call"]
    assert _own_frames(main)[-1]["gdb_line"] == marks["main cold join"]
    assert {"apply.cold", "await_work.cold", "main.cold"} <= set(mt["fragments"])

    session = debugger(mt["binary"], core=mt["core"])
    threads = session.command_json("bb frames --all-threads --json")
    assert len(threads) == 3
    numbers = {}
    for want in (waiter, worker, main):
        got = next(t for t in threads
                   if want["frames"][0]["pc"] in [int(r["pc"], 16) for r in t["frames"]])
        numbers[id(want)] = got["thread"]
        _check_rows(got["frames"], want)

    # Every thread's backtrace names its frames by procedure [fragment], with the true line.
    blocks = session.thread_backtraces()
    assert len(blocks) == 3, blocks
    for want in (waiter, worker, main):
        block = next(b for b in blocks if f"{_own_frames(want)[-1]['pc']:#018x}" in b)
        for f in _own_frames(want):
            line = _frame_line(block, f["pc"], f is want["frames"][0])
            assert _label(f) in line and f"mt.c:{f['gdb_line']}" in line, line
    if session.name == "lldb":
        assert session.command("thread backtrace all").count(" [cold]") == 3

    # The crashed thread is selected: its table, with the source text of each line.
    table = session.command("bb frames")
    crash_row = next(x for x in table.splitlines() if x.startswith("0 "))
    assert re.search(r"\bapply\s+cold\b", crash_row) and f"mt.c:{marks['mt crash site']}" \
        in crash_row, table
    assert "*j->log = j->value; /* BB: mt crash site */" in table

    # Another thread, one of its callers: `bb where` names the call, as bt does.
    session.select_thread(numbers[id(waiter)])
    assert (_where(session)["procedure"], _where(session)["fragment"]) == ("await_work", "cold")
    session.select_frame(1)
    loc = _where(session)
    assert (loc["procedure"], loc["fragment"], loc["line"]) == \
        ("waiter", "hot", marks["waiter call"])
    assert int(loc["address"], 16) == waiter["frames"][1]["pc"]
    rows = session.command_json("bb frames --json")
    assert rows[0]["procedure"] == "await_work" and rows[0]["fragment"] == "cold"


# --- a PIE and its shared library ------------------------------------------------------------


def test_pie_and_library_core(debugger: Callable[..., Any], pie: dict[str, Any]) -> None:
    marks = pie["markers"]
    [thread] = pie["threads"]
    chain = _own_frames(thread)
    assert [(f["procedure"], f["fragment"]) for f in chain] == \
        [("check", "cold"), ("visit", "cold"), ("main", "cold")]
    assert chain[1]["module"] == pie["library"]
    assert [f["gdb_line"] for f in chain] == \
        [marks["pie crash site"], marks["visit cold call"], marks["pie main cold call"]]

    session = debugger(pie["binary"], core=pie["core"])
    bt = session.backtrace()
    for f, file in zip(chain, ("pie.c", "libvisit.c", "pie.c"), strict=True):
        line = _frame_line(bt, f["pc"], f is chain[0])
        assert _label(f) in line and f"{file}:{f['gdb_line']}" in line, line
    _check_rows(session.command_json("bb frames --json"), thread)

    session.select_frame(1)
    loc = _where(session)
    assert (loc["procedure"], loc["fragment"], loc["fragment_symbol"], loc["line"]) == \
        ("visit", "cold", "visit.cold", marks["visit cold call"])
    assert loc["module"] == pie["library"]
    table = session.command("bb frames")
    assert "libvisit.so" in table and "/* BB: visit cold call */" in table


# --- zoo cores -------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["gcc-pgo", "bolt-all", "bolt-all-copied"])
def test_zoo_core(debugger: Callable[..., Any], zoo: dict[str, Any], tmp_path: Path,
                  case: str) -> None:
    """gcc-pgo (DWARF); bolt-all (no DWARF: lines from the pre-BOLT input/ binary, found by
    build-id); the same binary copied away from input/, given the input by `bb input`."""
    f = facts(zoo, case.removesuffix("-copied"), "crash")
    crash, marks = f["crash"], f["markers"]["crash.c"]
    lines = [marks["crash site"], marks["run cold call"], marks["main cold call"]]
    chain = crash["frames"][:3]
    binary = ROOT / f["binary"]
    if case.endswith("-copied"):
        binary = Path(shutil.copy2(binary, tmp_path / "crash"))
    session = debugger(binary, core=str(ROOT / crash["core"]))
    if case.endswith("-copied"):
        # The missing input is said once: by GDB as the module loads, by LLDB's command line
        # with the first bb command after that.
        said = session.command("bb frames --json").splitlines()
        told = said if session.name == "lldb" else session.startup.splitlines()
        assert sum("pre-BOLT input" in ln and "was not found" in ln for ln in told) == 1, told
        rows = json.loads(next(ln for ln in said if ln.startswith("[")))
        assert [r["line"] for r in rows[:3]] == [None, None, None]  # nothing to read them from
        said = session.command(f"bb input {ROOT / f['input']}")
        assert "pre-BOLT input" in said and f["input"].rsplit("/", 1)[-1] in said

    for command in ["bt"] + (["bt full"] if session.name == "gdb" else []):
        bt = session.command(command)
        for n, (frame, line) in enumerate(zip(chain, lines, strict=True)):
            text = next(x for x in bt.splitlines() if x.startswith(f"#{n} ")) \
                if session.name == "gdb" else _frame_line(bt, int(frame["pc"], 16))
            assert _label(frame) in text, (command, text)
            # GDB keeps its own line where DWARF gives one: at the crash pc the is_stmt row
            # (crash.c:31, `sink = amount`) rather than the faulting store's row (32).
            if n or session.name == "lldb" or not f["has_debug_info"]:
                assert f"crash.c:{line}" in text, (command, text)
    [block] = session.thread_backtraces()
    for frame in chain:
        assert _label(frame) in _frame_line(block, int(frame["pc"], 16), frame is chain[0])

    rows = session.command_json("bb frames --json")
    assert [(r["procedure"], r["fragment"], r["fragment_symbol"], r["line"]) for r in rows[:3]] \
        == [(c["procedure"], c["fragment"], c["symbol"], n) for c, n in zip(chain, lines,
                                                                           strict=True)]
    assert [int(r["pc"], 16) for r in rows[:3]] == [int(c["pc"], 16) for c in chain]
    assert all("/* BB: " in (r["source"] or "") for r in rows[:3]), rows
    if f["has_bat"]:
        assert all(r["block"] is not None for r in rows[:3])  # BAT's input blocks

    session.select_frame(2)
    loc = _where(session)
    assert (loc["procedure"], loc["fragment"], loc["line"]) == \
        (chain[2]["procedure"], chain[2]["fragment"], marks["main cold call"])
    session.select_frame(1)
    assert "run [" in session.command("bb where")


# --- bad input -------------------------------------------------------------------------------


def _one_line(out: str) -> str:
    assert "Traceback" not in out and "internal error" not in out, out
    lines = [x for x in out.splitlines() if x.strip()]
    assert len(lines) == 1, out
    return lines[0]


def test_core_of_another_binary(debugger: Callable[..., Any], zoo: dict[str, Any]) -> None:
    """`gdb loop crash.core` / `lldb loop -c crash.core`: the debugger maps loop where the core
    has crash's code. `bb frames` shows the frames unnamed, and says why in one line."""
    f, other = facts(zoo, "gcc-pgo", "crash"), facts(zoo, "gcc-pgo", "loop")
    session = debugger(ROOT / other["binary"], core=str(ROOT / f["crash"]["core"]))
    out = session.command("bb frames")
    assert "Traceback" not in out and "loop.c" not in out and "transfer" not in out, out
    warnings = [x for x in out.splitlines() if x.startswith("warning: ")]
    assert len(warnings) == 1, out
    assert "build-id" in warnings[0] or "no frame is in a loaded module" in warnings[0]
    assert f["crash"]["pc"].removeprefix("0x") in out  # the pc is still shown
    # `bb where` there never names the code by the wrong file either.
    where = session.command(f"bb where {f['crash']['pc']}")
    assert "Traceback" not in where and "loop.c" not in where, where
    assert "build-id" in where or "not in the code of any loaded module" in where, where
    answer = session.command(f"bb where --json {f['crash']['pc']}").strip().splitlines()
    loc = json.loads(answer[-1])
    assert loc["procedure"] is None and loc.get("line") is None, loc
    assert session.alive()


@pytest.mark.usefixtures("debug_file_at_start")
def test_core_of_another_binary_after_a_plain_bt(debugger: Callable[..., Any],
                                                zoo: dict[str, Any]) -> None:
    """`gdb bolt-all/loop` + `core bolt-all/crash.core`: the first `bt` names frames through
    the frame filter, whose host reads only one module; neither it nor a later `bb frames`
    names crash's code by loop's file (the cold fragment symbols nm gives loop), and both say
    why."""
    f, other = facts(zoo, "bolt-all", "crash"), facts(zoo, "bolt-all", "loop")
    session = debugger(ROOT / other["binary"], core=str(ROOT / f["crash"]["core"]))
    bt = session.command("bt")
    labels = [f"{proc} [{fr['fragment']}]" for proc, info in other["split_functions"].items()
              for fr in info["fragments"] if fr["fragment"] != "hot"]
    assert not [x for x in labels if x in bt], bt
    assert "build-id" in session.startup + bt, (session.startup, bt)  # said once, on loading
    out = session.command("bb frames")
    assert not [x for x in labels if x in out] and "cold" not in out, out
    warnings = [x for x in out.splitlines() if x.startswith("warning: ")]
    assert len(warnings) == 1 and "build-id" in warnings[0], out
    assert session.alive()


def test_truncated_core(debugger: Callable[..., Any], zoo: dict[str, Any],
                        tmp_path: Path) -> None:
    """GDB writes the notes last: a truncated core has no threads. One line each; the binary's
    own code can still be explained."""
    f = facts(zoo, "gcc-pgo", "crash")
    core = tmp_path / "crash.core"
    core.write_bytes((ROOT / f["crash"]["core"]).read_bytes()[:300_000])
    session = debugger(ROOT / f["binary"], core=str(core))
    for command in ("bb frames", "bb frames --all-threads", "bb where", "bb bt"):
        _one_line(session.command(command))
    assert "transfer [cold]" in session.command("bb where transfer.cold")
    assert session.alive()


def test_missing_binary(debugger: Callable[..., Any], zoo: dict[str, Any],
                        tmp_path: Path) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    core, missing = str(ROOT / f["crash"]["core"]), tmp_path / "crash"
    if debugger.name == "gdb":  # type: ignore[attr-defined]
        session = debugger(missing, core=core)  # GDB says so, and loads the core alone
        assert "No such file" in session.startup
        if str(ROOT / f["binary"]) in session.command("info inferiors"):
            # GDB 18 finds the executable through the core itself, as LLDB does
            rows = session.command_json("bb frames --json")
            assert (rows[0]["procedure"], rows[0]["fragment"]) == ("transfer", "cold")
            return
        out = session.command("bb frames")
        assert out.splitlines()[-1].startswith("warning: no frame is in a loaded module")
        assert len([x for x in out.splitlines() if x.startswith("warning")]) == 1
        assert "??" in out and "Traceback" not in out
        assert session.alive()
        return
    session = debugger(ROOT / f["binary"])
    session.command("target delete")
    assert "does not exist" in _one_line(
        session.command(f'target create --core "{core}" "{missing}"'))
    _one_line(session.command("bb frames"))
    # LLDB finds the executable through the core itself: everything can be shown again.
    session.command(f'target create --core "{core}"')
    rows = session.command_json("bb frames --json")
    assert (rows[0]["procedure"], rows[0]["fragment"]) == ("transfer", "cold")
