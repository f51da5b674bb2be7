"""GDB names a caller without debug information by the function that made the call.

A call to a function that does not return can be the last instruction of its caller, so the
caller's return address is the first byte of whatever follows: the next function (here GCC's
`main.cold`) or padding. GDB's own `bt` looks the name up at pc - 1; once any Python frame filter
is active GDB looks it up at the pc itself and names the frame after the next function. The
`unsplit` filter names such frames as GDB's own `bt` does. Oracle: nm, the symbol that holds
the return address - 1.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..builders import gcc_pgo_build
from ..conftest import ROOT, facts
from .driver_gdb import GdbDriver

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("gdb") is None or shutil.which("gcc") is None,
                       reason="needs gdb and gcc"),
]

SOURCE = """\
volatile int sink;
__attribute__((noreturn, noinline)) static void die(void) { __builtin_trap(); }
__attribute__((noinline)) void fail(void) { sink++; die(); }
__attribute__((noinline)) void after_fail(void) { sink += 2; }
int main(int argc, char **argv) { (void)argv; if (argc > 1) fail(); after_fail(); return 0; }
"""


def _symbols(binary: Path) -> list[tuple[int, int, str]]:
    out = subprocess.run(["nm", "-S", "--defined-only", str(binary)], capture_output=True,
                         text=True, check=True).stdout
    return [(int(p[0], 16), int(p[1], 16), p[3]) for p in map(str.split, out.splitlines())
            if len(p) == 4 and p[2] in "tTwW"]


def _holding(symbols: list[tuple[int, int, str]], address: int) -> str | None:
    return next((name for start, size, name in symbols if start <= address < start + size),
                None)


def test_caller_of_a_noreturn_call_keeps_its_name(tmp_path: Path) -> None:
    (tmp_path / "nr.c").write_text(SOURCE)
    binary = tmp_path / "nr"
    subprocess.run(["gcc", "-O2", "-falign-functions=1", "-fno-toplevel-reorder", "-no-pie",
                    "-o", str(binary), str(tmp_path / "nr.c")], check=True, cwd=tmp_path)
    symbols = _symbols(binary)
    log = (tmp_path / "gdb.log").open("w")
    with GdbDriver(str(binary), args=["crash"], log=log) as gdb:
        assert "SIGILL" in gdb.run()
        bt = gdb.backtrace()
    m = re.search(r"^#1\s+(0x[0-9a-f]+) in (\S+) \(", bt, re.M)
    assert m, bt
    pc = int(m.group(1), 16)
    caller = _holding(symbols, pc - 1)
    # The case this test is about: the return address is past the caller's last byte.
    assert caller == "fail" and _holding(symbols, pc) != caller, (hex(pc), symbols)
    assert m.group(2) == caller, bt


def test_a_cold_entry_without_a_line_keeps_its_arguments(gdb: Callable[..., Any],
                                                         zoo: dict[str, Any]) -> None:
    """clang's machine function splitting gives a cold fragment's first instruction line 0
    (llvm-symbolizer-22 says so: the test's premise). GDB still has the function's DWARF there
    and its own `bt` prints the arguments; the plugin's frame names the procedure and prints
    the same arguments (FrameDecorator alone would print `transfer [cold] ()`)."""
    f = facts(zoo, "clang-mfs", "crash")
    binary = ROOT / f["binary"]
    start = next(int(fr["start"], 16) for fr in f["split_functions"]["transfer"]["fragments"]
                 if fr["fragment"] == "cold")
    line = subprocess.run(["llvm-symbolizer-22", "--obj", str(binary), hex(start)],
                          capture_output=True, text=True, check=True).stdout.splitlines()[1]
    assert re.search(r":0:\d+$", line), line  # line 0
    frames = []
    for plugin in (False, True):
        session = gdb(binary, args=["crash"], plugin=plugin)
        session.break_entry("transfer.cold")
        session.run()
        frames.append(session.command("bt 1").splitlines()[0])
    theirs = re.match(r"^#0\s+0x[0-9a-f]+ in transfer (\(.+\))", frames[0])
    ours = re.match(r"^#0\s+0x[0-9a-f]+ in transfer \[cold\] (\(.+\))", frames[1])
    assert theirs and ours and theirs.group(1) != "()", frames
    assert ours.group(1) == theirs.group(1), frames


OPTIMIZED_OUT_CPP = """\
#include <cstdio>
#include <string_view>
__attribute__((noinline, cold)) static void report(long n) { fprintf(stderr, "%ld\\n", n); }
__attribute__((noinline)) long load(std::string_view name, long n)
{
    if (n > 100) {
        report(n); // GCC moves this branch into load.cold: name is dead there
        *(volatile long *)0 = n;
    }
    return (long)name.size() + n;
}
int main(int argc, char **argv)
{
    long t = 0;
    for (int i = 0; i < 10; i++)
        t += load(argv[0], i);
    if (argc > 1)
        t += load(argv[1], 1000);
    return (int)(t & 1);
}
"""


def test_an_optimized_out_argument_reads_as_gdbs_own_bt(gdb: Callable[..., Any],
                                                        tmp_path: Path) -> None:
    """A std::string_view argument optimized out in a cold fragment (GCC's load.cold): GDB's
    own `bt` prints `name=...`; its Python frame printer handed the value to libstdc++'s
    pretty-printer, whose exception broke the frame line (`name=Python Exception <class
    'gdb.error'>: value has been optimized out`, then a newline). With the plugin's filter the
    line reads as GDB's own, arguments and all, whichever way the arguments are asked for:
    `name=<optimized out>` under `bt -frame-arguments all` or `set print frame-arguments all`.
    Oracle: the same `bt` without the plugin."""
    (tmp_path / "oo.cpp").write_text(OPTIMIZED_OUT_CPP)
    binary = tmp_path / "oo"
    # --no-as-needed: libstdc++ (whose pretty-printers GDB loads with it) is linked although
    # nothing here needs it, as in any program that uses std::string.
    subprocess.run(["g++", "-O2", "-g", "-Wl,--no-as-needed", "-o", str(binary), "oo.cpp"],
                   check=True, cwd=tmp_path)
    assert "load(std::basic_string_view<char, std::char_traits<char> >, long) [clone .cold]" \
        in subprocess.run(["nm", "-C", str(binary)], capture_output=True, text=True,
                          check=True).stdout  # the premise: GCC split load
    asked = ["bt", "bt -frame-arguments all", "set print frame-arguments all", "bt",
             "bt -frame-arguments scalars", "bt -frame-arg presence", "bt -frame-a n"]
    said: list[list[list[str]]] = []
    for plugin in (False, True):
        session = gdb(binary, args=["crash"], plugin=plugin)
        session.run()
        assert "optimized out" in session.command("info args")  # the premise
        outputs = [(c, session.command(c).splitlines()) for c in asked]
        said.append([out for c, out in outputs if c.startswith("bt")])
    assert "name=<optimized out>" in said[0][1][0] and "name=..." in said[0][0][0]
    for theirs_said, ours_said in zip(*said, strict=True):
        theirs = re.match(r"^#0\s+0x[0-9a-f]+ in load (\(.+)$", theirs_said[0])
        ours = re.match(r"^#0\s+0x[0-9a-f]+ in load \[cold\] (\(.+)$", ours_said[0])
        assert theirs and ours, said
        assert ours.group(1) == theirs.group(1), said
        assert len(ours_said) == len(theirs_said), said


def test_frame_commands_read_as_bt_does(gdb: Callable[..., Any], zoo: dict[str, Any],
                                        tmp_path: Path) -> None:
    """bolt-dlopen's library copied away from its input (no lines): after `up` (and `frame N`)
    the plugin's line for the selected frame is `bt`'s line for it, word for word: `work
    [cold] ()`, not `work [cold]+0xb1 from libwork.so` (nm: the caller is in work.cold)."""
    f = facts(zoo, "bolt-dlopen", "libwork")
    app = tmp_path / "app"
    app.mkdir()
    for name in ("executable", "binary"):
        shutil.copy2(ROOT / f[name], app)
    crashed = next(t for t in f["crash"]["threads"] if t["num"] == f["crash"]["thread"])
    assert crashed["frames"][1]["symbol"] == "work.cold"  # the premise
    s = gdb(app / "workers", args=["crash"])
    s.run()
    bt = {int(m[1]): m[0] for m in re.finditer(r"^#(\d+)\s.*$", s.backtrace(), re.M)}
    assert re.fullmatch(r"#1\s+0x[0-9a-f]+ in work \[cold\] \(\)", bt[1]), bt
    for command in ("up", "frame 1"):
        lines = s.command(command).splitlines()
        assert lines[-1] == bt[1], (command, lines, bt[1])


def test_procedure_names_lose_their_symbol_versions(gdb: Callable[..., Any],
                                                    zoo: dict[str, Any]) -> None:
    """A worker parked in the library calls pthread_cond_wait (the source's line at the `park
    wait` marker); glibc's own symbol table spells it `pthread_cond_wait@@GLIBC_2.3.2`: `bb
    frames` names the frame above park `pthread_cond_wait`, and no frame with a version."""
    f = facts(zoo, "bolt-dlopen", "libwork")
    parked = next(t for t in f["crash"]["threads"] if t["num"] != f["crash"]["thread"]
                  and any(x["symbol"] == "park" for x in t["frames"]))
    s = gdb(ROOT / f["executable"], core=str(ROOT / f["crash"]["core"]))
    s.command(f"thread {parked['num']}")
    rows = s.command_json("bb frames --json")
    names = [r["procedure"] for r in rows]
    assert not [n for n in names if n and "@" in n], names
    assert names[names.index("park") - 1] == "pthread_cond_wait", names


@pytest.mark.usefixtures("debug_file_at_start")
@pytest.mark.parametrize("info", ["source-and-location", "source-line"])
def test_source_lines_in_bt_do_not_crash_gdb(gdb: Callable[..., Any], zoo: dict[str, Any],
                                             info: str) -> None:
    """GDB's frame-filter printer prints each frame's source line under `print frame-info
    source-line` or `source-and-location` without checking that it has one, and segfaults on
    a frame without debug information (GDB's own bug, any frame filter). The plugin leaves
    such a backtrace to GDB's own printer and says why once: `bt` reads as `bt -no-filters`
    (GDB's printer, no filter) in the same session, which goes on."""
    f = facts(zoo, "gcc-pgo-nodebug", "crash")
    s = gdb(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))
    s.command(f"set print frame-info {info}")
    said = [s.backtrace(), s.backtrace()]
    theirs = s.command("bt -no-filters")
    assert "transfer" in theirs and s.alive()
    assert "frame-filter printer crashes" in said[0].splitlines()[0]
    assert said[0].splitlines()[1:] == theirs.splitlines() == said[1].splitlines(), said


RECURSION = """\
#include <stdlib.h>
#include <string.h>
static volatile long sink;
__attribute__((noinline)) void bottom(int depth) { sink = depth; }
__attribute__((noinline)) long descend(int depth, int rare)
{
    if (depth == 0) {
        bottom(depth);
        return 1;
    }
    if (__builtin_expect(rare, 0)) {
        long r = descend(depth - 1, rare); /* never trained: in descend.cold */
        sink = r;
        return r * 3 + depth;
    }
    long r = descend(depth - 1, rare);
    sink = r;
    return r + depth;
}
__attribute__((noinline)) long outer(int depth, int rare)
{
    long r = descend(depth, rare);
    sink = r;
    return r + 1;
}
int main(int argc, char **argv)
{
    int rare = argc > 1 && strcmp(argv[1], "deep") == 0;
    long total = 0;
    for (int i = 0; i < (rare ? 1 : 2000); i++)
        total += outer(8, rare);
    return (int)(total & 1);
}
"""
_AT = re.compile(r"^#(\d+)\s.* at (\S+:\d+)$", re.M)


def test_a_recursions_callers_keep_gdbs_own_lines(tmp_path: Path) -> None:
    """Every caller's `at file:line` in a backtrace through moved code is plain GDB's: the
    filter reuses GDB's line of a caller's pc for the later callers at that pc (a recursion's),
    never for a caller at another pc (here the hot call to bottom, outer's and main's)."""
    gcc_pgo_build(tmp_path, {"deep.c": RECURSION},
                  [["gcc", "-O2", "-g", "deep.c", "-o", "deep"]], train=["./deep", "train"])
    lines = {}
    for plugin in (False, True):
        with GdbDriver(str(tmp_path / "deep"), args=["deep"], plugin=plugin) as gdb:
            gdb.break_function("bottom")
            gdb.run()
            bt = gdb.backtrace()
        lines[plugin] = _AT.findall(bt)
        assert plugin is False or bt.count("descend [cold]") >= 6, bt  # the filter is on
    assert len(lines[False]) == 12 and len({at for _, at in lines[False]}) >= 5, lines[False]
    assert lines[True] == lines[False]
