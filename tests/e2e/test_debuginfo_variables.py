"""Variables, parameters and return values in moved code of BOLT outputs without DWARF, with
nothing done but loading the plugin: GDB's `info args`, `info locals`, `print`, the arguments
`bt` shows and `finish`'s value, and LLDB's `frame variable`, `bt` and `thread step-out`'s
value, are what plain GDB and LLDB show on the pre-BOLT input stopped at the same event (the
same line's first hit, or the crash). The plugin's debug file carries the input's DWARF
through BAT (unsplit.debuginfo.translate), in GDB and in LLDB's command line alike (by default:
nothing but the import)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts
from ..e2e.driver_mi import MiSession
from ..variants import DEBUG_FILE_OTHER_DWARF, DEBUG_FILE_VARIABLES

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed"),
]

# program -> (its argument, the marker of the line to stop at (None: run to the crash), the
# commands whose output must match, and the procedure whose moved code the stop is in: in a
# fragment other than its entry wherever BOLT split it, but for `except`, whose handler BOLT
# keeps with the code that throws to it: there C++ values in code BOLT moved)
SCENARIOS: dict[str, tuple[str, str | None, list[str], str | None]] = {
    "crash": ("crash", None, ["bt", "info args", "info locals", "print amount", "print *a",
                              "up", "info args", "info locals", "up", "info locals",
                              "bt full"],
              "transfer"),
    "loop": ("error", "cold error result", ["bt", "info args", "info locals", "print sum",
                                            "print i", "bt full", "finish"], "checksum"),
    "switch": ("rare", "case 7 rare", ["bt", "info args", "print acc", "finish"], "step"),
    "recurse": ("deep", "cold limit update", ["bt", "info args", "info locals", "up",
                                              "info args", "bt full", "finish"], "walk"),
    "except": ("throw", "cold catch update", ["bt", "info args", "info locals", "print i",
                                              "print e.what()", "print total", "bt full", "finish"],
                None),
}


def _gdb(binary: Path, argument: str | None, stop: tuple[str, int] | str | None,
         commands: list[str], plugin: bool, cache: Path,
         settings: Sequence[str] = ("set print frame-info source-and-location",),
         scripts: Sequence[Path] = ()) -> str:
    """What `gdb -batch` prints: `settings` before the binary loads, `scripts` after it, a
    run with `argument` (None: none) to `stop`, then each of `commands` after a mark
    (`<<COMMAND>>`, see _answers)."""
    argv = ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-iex", "set width 0"]
    for setting in settings:
        argv += ["-iex", setting]
    if plugin:
        argv += ["-iex", f"source {ROOT / 'gdb' / 'unsplit_gdb.py'}"]
    for script in scripts:
        argv += ["-x", str(script)]
    if stop is not None:
        argv += ["-ex", f"break {stop}" if isinstance(stop, str) else f"break {stop[0]}:{stop[1]}"]
    argv += ["-ex", "run"]
    for command in commands:
        argv += ["-ex", f"echo <<{command}>>\\n", "-ex", command]
    argv += ["--args", str(binary), *([] if argument is None else [argument])]
    # GDB's errors ("No symbol ...") are part of a command's answer
    run = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=120, env={**os.environ, "UNSPLIT_CACHE": str(cache)}, cwd=ROOT)
    return run.stdout


def _gdb_on_both(ours: Path, theirs: Path, argument: str | None, stop: tuple[str, int],
                 commands: list[str], cache: Path, **options: Any) -> tuple[str, str]:
    """_gdb on the BOLT output with the plugin and on its input without."""
    return (_gdb(ours, argument, stop, commands, True, cache, **options),
            _gdb(theirs, argument, stop, commands, False, cache, **options))


# program -> LLDB's commands at the same stops (no `thread step-out` at a crash).
LLDB_COMMANDS = {
    "crash": ["frame variable", "bt", "up", "frame variable", "up", "frame variable"],
    "loop": ["frame variable", "bt", "thread step-out", "frame variable"],
    "switch": ["frame variable", "bt", "thread step-out"],
    "recurse": ["frame variable", "bt", "up", "frame variable", "thread step-out"],
    "except": ["frame variable", "bt", "expression e.what()", "thread step-out"],
}


def _lldb(binary: Path, argument: str, stop: tuple[str, int] | str | None, commands: list[str],
          plugin: bool, cache: Path) -> str:
    argv = ["lldb-22", "--no-lldbinit", "-b", "-O", "settings set use-color false"]
    if plugin:
        argv += ["-O", f"command script import {ROOT / 'lldb' / 'unsplit_lldb.py'}"]
    argv += ["-o", f"target create {binary}"]
    if stop is not None:
        argv += ["-o", f"breakpoint set -n {stop}" if isinstance(stop, str) else
                 f"breakpoint set -f {stop[0]} -l {stop[1]}"]
    argv += ["-o", f"process launch -- {argument}"]
    for command in ["register read pc", *commands]:  # after a crash: -k (batch mode's rule)
        argv += ["-o" if stop is not None else "-k", command]
    env = {k: v for k, v in os.environ.items() if k != "UNSPLIT_LLDB_DEBUGINFO"}
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env={**env, "UNSPLIT_CACHE": str(cache)})
    return run.stdout


def _lldb_answers(text: str, commands: list[str]) -> dict[str, str]:
    """Each command's output (LLDB echoes each as `(lldb) COMMAND`), without code addresses,
    process ids and the plugin's fragment tags."""
    out: dict[str, str] = {}
    wanted = ["register read pc", *commands]
    parts = re.split(r"^\(lldb\) (.*)$", text, flags=re.M)
    n = 0
    for i in range(1, len(parts) - 1, 2):
        if n < len(wanted) and parts[i] == wanted[n]:
            body = re.sub(r"(frame #\d+: )0x[0-9a-f]+ ", r"\1", parts[i + 1])
            body = re.sub(r"^ *(->)? *0x[0-9a-f]+ <\+\d+>:.*$\n?", "", body, flags=re.M)
            body = re.sub(r"Process \d+", "Process", body)
            # an entry value LLDB cannot evaluate on either binary names the return address
            body = re.sub(r"retn-pc = 0x[0-9a-f]+", "retn-pc = <pc>", body)
            body = re.sub(r" \[(cold|warm|hot)[.\d]*\](?: ?\+ ?0x[0-9a-f]+)?", "", body)
            out[f"{n}: {wanted[n]}"] = body.strip()
            n += 1
    return out


def _answers(text: str) -> dict[str, str]:
    """Each command's output, without what differs between the two binaries whatever their
    debug info: code addresses in frame lines, and the plugin's fragment tag in `bt`."""
    out: dict[str, str] = {}
    parts = re.split(r"^<<(.*)>>$", text, flags=re.M)
    for i in range(1, len(parts) - 1, 2):
        # (`finish` to the middle of the caller's line shows its address too)
        body = re.sub(r"^(#\d+\s+)?0x[0-9a-f]+ in ", r"\1", parts[i + 1], flags=re.M)
        body = re.sub(r" \[(cold|warm|hot)[.\d]*\]", "", body)
        body = re.sub(r"^Run till exit from .*\n", "", body, flags=re.M)
        out[f"{i // 2}: {parts[i]}"] = body.strip()
    return out


def _same_stack(f: dict[str, Any], program: str, tmp_path: Path) -> tuple[Path, Path]:
    """The BOLT output and its input under paths of one length (`o/` holds the output and
    its `input/`, `i/` the input): the program's name on the stack is as long in both runs,
    so are the stack addresses the two print."""
    ours, theirs = tmp_path / "o" / program, tmp_path / "i" / program
    ours.parent.mkdir()
    theirs.parent.mkdir()
    ours.symlink_to(ROOT / f["binary"])
    (ours.parent / "input").symlink_to((ROOT / f["input"]).parent)
    theirs.symlink_to(ROOT / f["input"])
    return ours, theirs


def _bolted(tmp_path: Path, source: str, file: str,
            link: Sequence[str] = ()) -> tuple[Path, Path, int]:
    """`source` built as `file` with clang -O2 -g and linked with `link` (the pre-BOLT input,
    `i/t`) and BOLTed with every cold block split off and BAT, DWARF dropped (`o/t`, its input
    beside it): the two binaries and the line of `source` marked "the stop"."""
    (tmp_path / file).write_text(source)
    ours, theirs = tmp_path / "o" / "t", tmp_path / "i" / "t"
    theirs.parent.mkdir()
    compiler = "clang++-22" if file.endswith(".cpp") else "clang-22"
    subprocess.run([compiler, "-O2", "-g", "-fuse-ld=lld", "-Wl,--emit-relocs", file, *link,
                    "-o", str(theirs)], check=True, cwd=tmp_path, timeout=120)
    ours.parent.mkdir()
    (ours.parent / "input").symlink_to(theirs.parent)
    subprocess.run(["llvm-bolt-22", str(theirs), "-o", str(ours), "--split-functions",
                    "--split-strategy=all", "--enable-bat"], check=True, capture_output=True,
                   timeout=120)
    line = next(n for n, x in enumerate(source.splitlines(), 1) if "the stop" in x)
    return ours, theirs, line


def _stop(f: dict[str, Any], marker: str | None, program: str) -> tuple[str, int] | str | None:
    """Where to stop: a marker's line, a function (`@name`), or None (the crash)."""
    if marker is None or marker.startswith("@"):
        return marker and marker[1:]
    (source, lines), = ((s, m) for s, m in f["markers"].items() if marker in m)
    return source, lines[marker]


@pytest.mark.parametrize("program", sorted(SCENARIOS))
@pytest.mark.parametrize("variant", DEBUG_FILE_VARIABLES)
def test_gdb_shows_the_inputs_variables_in_moved_code(zoo: dict[str, Any], variant: str,
                                                      program: str, tmp_path: Path) -> None:
    _gdb_matches_the_input(zoo, variant, program, tmp_path)


# Inputs with GCC's DWARF (5 with DW_FORM_addr and no .debug_addr; 4) and clang's DWARF 4
# (.debug_loc, .debug_ranges): a C crash with its callers' frames, a `finish` out of a loop's
# cold path, and C++ values where an exception is caught: GCC puts the handler in `process`'s
# own cold part, where GDB 13 breaks at the function's entry line instead (the input too), so
# the stop is where the handler begins catching, one frame up from libstdc++ (no `bt` there:
# GDB 13 dies in it from a frame without symbols under `set print frame-info
# source-and-location` with the plugin's frame filter, whatever the DWARF).
OTHER_DWARF_SCENARIOS = {
    "crash": SCENARIOS["crash"], "loop": SCENARIOS["loop"],
    "except": ("throw", "@__cxa_begin_catch", ["up", "info args", "info locals",
                                               "print i", "print total", "print records[i]"],
               None)}


@pytest.mark.parametrize("program", sorted(OTHER_DWARF_SCENARIOS))
@pytest.mark.parametrize("variant", DEBUG_FILE_OTHER_DWARF)
def test_gdb_shows_gcc_and_dwarf4_inputs_variables(zoo: dict[str, Any], variant: str,
                                                   program: str, tmp_path: Path) -> None:
    _gdb_matches_the_input(zoo, variant, program, tmp_path, OTHER_DWARF_SCENARIOS[program])


def _gdb_matches_the_input(zoo: dict[str, Any], variant: str, program: str, tmp_path: Path,
                           scenario: tuple[str, str | None, list[str], str | None] | None = None
                           ) -> None:
    argument, marker, commands, procedure = scenario or SCENARIOS[program]
    f = facts(zoo, variant, program)
    assert not f["has_debug_info"]
    stop = _stop(f, marker, program)
    binary, original = _same_stack(f, program, tmp_path)
    ups = next(i for i, c in enumerate(commands) if c != "up")  # the pc of the frame looked at
    commands = [*commands[:ups], "print/x $pc", *commands[ups:]]
    ours = _gdb(binary, argument, stop, commands, True, tmp_path / "cache")
    theirs = _gdb(original, argument, stop, commands, False, tmp_path / "cache")
    assert "unsplit: debug info for split module" in ours, ours
    mine, expected = _answers(ours), _answers(theirs)
    # The stop is in moved code: not where the input had it, and where BOLT split the
    # procedure, not in its entry fragment (facts.json).
    pc = int(mine.pop(f"{ups}: print/x $pc").split("= ")[1], 16)
    assert pc != int(expected.pop(f"{ups}: print/x $pc").split("= ")[1], 16)
    if procedure is not None:
        (fragment,) = [g for g in f["split_functions"][procedure]["fragments"]
                       if int(g["start"], 16) <= pc < int(g["end"], 16)]
        assert fragment["fragment"] != "hot", fragment
    assert list(mine) == list(expected)
    for command in expected:
        assert mine[command] == expected[command], f"{command}\n--- ours\n{ours}\n--- plain " \
                                                   f"GDB on the input\n{theirs}"
    assert "No symbol" not in ours and "No arguments." not in ours, ours


@pytest.mark.skipif(shutil.which("lldb-22") is None, reason="lldb-22 is not installed")
@pytest.mark.parametrize("program", sorted(SCENARIOS))
@pytest.mark.parametrize("variant", DEBUG_FILE_VARIABLES[:2])
def test_lldb_shows_the_inputs_variables_in_moved_code(zoo: dict[str, Any], variant: str,
                                                       program: str, tmp_path: Path) -> None:
    _lldb_matches_the_input(zoo, variant, program, tmp_path)


@pytest.mark.skipif(shutil.which("lldb-22") is None, reason="lldb-22 is not installed")
@pytest.mark.parametrize("program", ["crash", "loop"])
@pytest.mark.parametrize("variant", DEBUG_FILE_OTHER_DWARF)
def test_lldb_shows_gcc_and_dwarf4_inputs_variables(zoo: dict[str, Any], variant: str,
                                                    program: str, tmp_path: Path) -> None:
    _lldb_matches_the_input(zoo, variant, program, tmp_path)


def _lldb_matches_the_input(zoo: dict[str, Any], variant: str, program: str,
                            tmp_path: Path) -> None:
    argument, marker, _, procedure = SCENARIOS[program]
    commands = LLDB_COMMANDS[program]
    f = facts(zoo, variant, program)
    stop = _stop(f, marker, program)
    binary, original = _same_stack(f, program, tmp_path)
    ours = _lldb(binary, argument, stop, commands, True, tmp_path / "cache")
    theirs = _lldb(original, argument, stop, commands, False, tmp_path / "cache")
    mine, expected = _lldb_answers(ours, commands), _lldb_answers(theirs, commands)
    pc = int(re.findall(r"= (0x[0-9a-f]+)", mine.pop("0: register read pc"))[0], 16)
    assert pc != int(re.findall(r"= (0x[0-9a-f]+)",
                                expected.pop("0: register read pc"))[0], 16)
    if procedure is not None:
        (fragment,) = [g for g in f["split_functions"][procedure]["fragments"]
                       if int(g["start"], 16) <= pc < int(g["end"], 16)]
        assert fragment["fragment"] != "hot", fragment
    assert list(mine) == list(expected), ours
    for command in expected:
        assert mine[command] == expected[command], f"{command}\n--- ours\n{ours}\n--- plain " \
                                                   f"LLDB on the input\n{theirs}"


TEMPLATE_SOURCE = """\
#include <cstdio>
namespace ns {
template <typename T> __attribute__((noinline)) T scale(T value, int times)
{
    T out = value;
    for (int i = 0; i < times; i++)
        out = out * 2 + (T)i;
    std::printf("%d\\n", (int)out); /* the stop */
    return out;
}
}
int main(int argc, char **) { return ns::scale<long>(argc, 3) > 0 ? 0 : 1; }
"""


@pytest.mark.skipif(shutil.which("lldb-22") is None, reason="lldb-22 is not installed")
def test_lldb_shows_a_template_functions_arguments_in_moved_code(tmp_path: Path) -> None:
    """A function template's name carries its return type (`long ns::scale<long>(...)`, the
    Itanium mangling of a template encodes it): in moved code, LLDB's `bt` with the plugin
    shows its arguments as plain LLDB does on the pre-BOLT input, not its parameter types."""
    ours, theirs, line = _bolted(tmp_path, TEMPLATE_SOURCE, "t.cpp")
    stop = ("t.cpp", line)
    commands = ["bt 1", "frame variable"]
    mine = _lldb_answers(_lldb(ours, "", stop, commands, True, tmp_path / "cache"), commands)
    expected = _lldb_answers(_lldb(theirs, "", stop, commands, False, tmp_path / "cache"),
                             commands)
    assert "long ns::scale<long>(value=" in expected["1: bt 1"], expected
    for command in ["1: bt 1", "2: frame variable"]:
        assert mine[command] == expected[command], (mine, expected)


def _line_0_offsets(original: Path, start: int, end: int) -> list[int]:
    """The offsets from `start` of the input's line table rows at line 0 in (start, end)."""
    table = subprocess.run(["llvm-dwarfdump-22", "--debug-line", str(original)],
                           capture_output=True, text=True, check=True).stdout
    offsets = [int(m, 16) - start for m in re.findall(r"^(0x[0-9a-f]{16})\s+0\s", table, re.M)
               if start < int(m, 16) < end]
    assert offsets, table
    return offsets


def _broken_at(binary: Path, function: str, offset: int, plugin: bool, argument: str,
               command: str, cache: Path) -> str:
    """What `gdb -batch` prints run with `argument` to `function`+`offset` (`bb break` with
    the plugin, `break *` without), then `command`."""
    argv = ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off"]
    if plugin:
        argv += ["-iex", f"source {ROOT / 'gdb' / 'unsplit_gdb.py'}"]
    where = f"{function}+{offset:#x}"
    argv += ["-ex", f"bb break {where}" if plugin else f"break *{where}", "-ex", "run",
             "-ex", command, "--args", str(binary), argument]
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120, cwd=ROOT, env={**os.environ, "UNSPLIT_CACHE": str(cache)}
                          ).stdout


def test_gdb_says_a_stop_at_an_input_line_0_row_once(zoo: dict[str, Any], tmp_path: Path) -> None:
    """A stop in moved code where the input's row is line 0 (the compiler's "no line"; GDB
    reads on with the row before): GDB's own report, the frame as plain GDB gives it on the
    input at the same place, and no second report from the plugin, which has no line to add."""
    f = facts(zoo, "bolt-all", "crash")
    binary, original = _same_stack(f, "crash", tmp_path)
    symbols = subprocess.run(["nm", str(original)], capture_output=True, text=True,
                             check=True).stdout
    starts = sorted(int(s.split()[0], 16) for s in symbols.splitlines()
                    if s.split()[-1] in ("transfer", "run"))
    offsets = _line_0_offsets(original, starts[0], starts[1])
    stopped = 0
    for offset in offsets:
        reports = []
        for plugin in (True, False):
            out = _broken_at(binary if plugin else original, "transfer", offset, plugin,
                             "crash", "echo <<end>>\\n", tmp_path / "c")
            at = out.find("\nBreakpoint 1, ")  # (code the crash run never reaches: none)
            stop = "" if at < 0 else out[at:out.index("<<end>>")]
            reports.append(re.sub(r"0x[0-9a-f]+ in ", "", stop).strip())
        ours, theirs = (r.splitlines() for r in reports)
        # One report, the frame as on the input. (Its line: the input's GDB reads on with the
        # row before the line 0 one, which in the output may be another fragment's: then GDB
        # gives none, docs/debug-info.md.)
        assert [x.split(" at ")[0] for x in ours[:1]] == \
            [x.split(" at ")[0] for x in theirs[:1]], (offset, reports)
        assert ours == theirs or len(ours) == 1, (offset, reports)
        stopped += bool(theirs)
    assert stopped >= 2, offsets


@pytest.mark.skipif(shutil.which("lldb-22") is None, reason="lldb-22 is not installed")
def test_lldb_says_an_input_line_0_row_once(zoo: dict[str, Any], tmp_path: Path) -> None:
    """A stop in moved code where the input's row is line 0: LLDB writes its own `at
    crash.c:0:1` with the plugin's debug file as on the input, and the plugin adds no second
    `at` after it (it read `at crash.c:0:1 at crash.c:35:1`; ninja's `real_main` as a caller)."""
    f = facts(zoo, "bolt-all", "crash")
    binary, original = _same_stack(f, "crash", tmp_path)
    symbols = subprocess.run(["nm", str(original)], capture_output=True, text=True,
                             check=True).stdout
    start, end = sorted(int(s.split()[0], 16) for s in symbols.splitlines()
                        if s.split()[-1] in ("transfer", "run"))
    table = subprocess.run(["llvm-dwarfdump-22", "--debug-line", str(original)],
                           capture_output=True, text=True, check=True).stdout
    offsets = [int(m, 16) - start for m in re.findall(r"^(0x[0-9a-f]{16})\s+0\s", table, re.M)
               if start < int(m, 16) < end]
    said_0 = 0
    for offset in offsets:
        frames = []
        for plugin, commands in ((True, [f"bb break transfer+{offset:#x}", "run crash"]),
                                 (False, ["process launch --stop-at-entry -- crash",
                                          f"breakpoint set -a {start + offset:#x}",
                                          "continue"])):
            argv = ["lldb-22", "--no-lldbinit", "-b", "-O", "settings set use-color false"]
            if plugin:
                argv += ["-O", f"command script import {ROOT / 'lldb' / 'unsplit_lldb.py'}"]
            argv += ["-o", f"target create {binary if plugin else original}"]
            for command in [*commands, "bt 1"]:
                argv += ["-o", command]
            out = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT,
                                 env={**os.environ, "UNSPLIT_CACHE": str(tmp_path / "c")}).stdout
            frame = re.findall(r"^ *(?:\* )?frame #0: 0x[0-9a-f]+ (.*)$", out, re.M)
            frames.append(re.sub(r" \[(cold|warm)[.\d]*\]", "", frame[-1]) if frame else out)
        ours, theirs = frames
        if re.search(r" at crash\.c:0(:\d+)?$", theirs):  # (the crash, where not reached)
            said_0 += 1
            assert ours == theirs, (offset, ours, theirs)
    assert said_0 >= 1, offsets


OPTIMIZED_OUT_SOURCE = """\
#include <stdio.h>
struct pair { long a; long b; };
static volatile long sink;
__attribute__((noinline)) long pick(struct pair in, struct pair used, int mode)
{
    struct pair gone = { in.a * 3, used.b + 7 };
    struct pair half = { in.b * 5, used.a + 9 };
    sink = gone.a + gone.b + used.a + used.b;
    sink = half.b;
    if (__builtin_expect(mode, 0)) {
        fprintf(stderr, "rare %d\\n", mode); /* the stop */
        return half.a + in.b;
    }
    return in.a;
}
int main(int argc, char **argv)
{
    struct pair in = { argc, argc + 1 }, used = { argc * 2, argc * 3 };
    return (int)pick(in, used, argc > 1);
}
"""


@pytest.mark.parametrize("arguments", ["all", "scalars"])
def test_gdb_bt_full_prints_optimized_out_structs_as_gdb_does(arguments: str,
                                                               tmp_path: Path) -> None:
    """A struct none of which is there at the stop is `gone = <optimized out>` in GDB's own
    `bt full` (and `used=<optimized out>` under `print frame-arguments all`), one partly there
    `in={a = <optimized out>, b = 3}`: so with the plugin's frame filter in moved code, where
    GDB's Python printer said `gone = {a = <optimized out>, b = <optimized out>}` (ninja's
    `real_main`; a `std::vector` there broke the line with a Python exception)."""
    ours, theirs, line = _bolted(tmp_path, OPTIMIZED_OUT_SOURCE, "t.c")
    said = _gdb_on_both(ours, theirs, "rare", ("t.c", line), ["bt full 1"], tmp_path / "c",
                        settings=[f"set print frame-arguments {arguments}"])
    mine, expected = (_answers(s)["0: bt full 1"] for s in said)
    assert "\n        gone = <optimized out>\n" in expected, expected
    if arguments == "all":
        assert "(in={a = <optimized out>, b = " in expected, expected
    assert re.search(r"^#0 +pick \[cold", said[0], re.M), said[0]  # the filter's frame
    assert mine == expected, f"--- ours\n{said[0]}\n--- plain GDB on the input\n{said[1]}"


NO_LOCALS_SOURCE = """\
#include <stdio.h>
long through(long (*f)(long, int), long y, int mode);
__attribute__((noinline)) long pick(long y, int mode)
{
    if (__builtin_expect(mode, 0)) {
        fprintf(stderr, "rare %d\\n", mode); /* the stop */
        return y * 3;
    }
    return y;
}
int main(int argc, char **argv)
{
    long got = through(pick, argc, argc > 1);
    return (int)got;
}
"""
NO_DWARF_LIBRARY = "long through(long (*f)(long, int), long y, int m) { return f(y, m) + 1; }\n"


def test_gdb_bt_full_says_why_a_frame_lists_no_locals(tmp_path: Path) -> None:
    """GDB's own `bt full` writes `No locals.` under a frame whose function has none and `No
    symbol table info available.` under one without debug information; its printer of
    filtered frames wrote neither, so with the plugin a backtrace with moved code lost both
    (GDB 13 and 18). Here a cold fragment called back from a library built without -g."""
    (tmp_path / "helper.c").write_text(NO_DWARF_LIBRARY)
    subprocess.run(["clang-22", "-O2", "-shared", "-fPIC", "helper.c", "-o", "libhelper.so"],
                   check=True, cwd=tmp_path, timeout=120)
    ours, theirs, line = _bolted(tmp_path, NO_LOCALS_SOURCE, "t.c",
                                 [f"-L{tmp_path}", "-lhelper", f"-Wl,-rpath,{tmp_path}"])
    said = _gdb_on_both(ours, theirs, "rare", ("t.c", line), ["bt full 2"], tmp_path / "c",
                        settings=[])
    # (a frame filter cannot say ` from LIBRARY`: docs/gdb.md)
    mine, expected = (re.sub(r" from /\S+$", "", _answers(s)["0: bt full 2"], flags=re.M)
                      for s in said)
    assert re.search(r"^#0 +pick \[cold", said[0], re.M), said[0]  # the filter's frame
    assert re.search(r"^#0 .*\nNo locals\.\n#1 .*through .*\nNo symbol table info available\.",
                     expected), expected
    assert mine == expected, f"--- ours\n{said[0]}\n--- plain GDB on the input\n{said[1]}"


# The edges of "optimized out whole" (a struct of no bits inside one, an empty class, a struct
# holding a reference to one) and a local with a pretty-printer that counts its runs.
EDGES_C = """\
#include <stdio.h>
struct pair { long a; long b; };
struct nest { struct pair p; long c; };
union u { long l; double d; };
struct arr { long v[2]; };
struct empty { };
struct withempty { struct empty e; long x; };
struct Count { long n; };
static volatile long sink;
__attribute__((noinline)) void observe(long v) { sink = v; }
__attribute__((noinline)) long pick(struct pair in, struct pair used, struct nest nin,
                                    union u uin, struct arr ain, long *ptr, int mode)
{
    struct pair gone = { in.a * 3, used.b + 7 };
    struct pair half = { in.b * 5, used.a + 9 };
    struct nest ngone = { { in.a + 1, in.b + 2 }, used.a + 3 };
    struct nest nhalf = { { in.a + 4, in.b + 5 }, used.a + 6 };
    long vals[2] = { in.a + 7, in.b + 8 };
    long *p = ptr + mode;
    union u un = { .l = in.a + 10 };
    struct arr agone = { { in.a * 11, in.b * 12 } };
    struct withempty we = { {}, in.a * 13 };
    struct Count count = { used.a * 14 };
    observe(gone.a ^ gone.b ^ ngone.p.a ^ ngone.p.b ^ ngone.c ^ vals[0] ^ vals[1] ^ *p ^ un.l ^
            agone.v[0] ^ agone.v[1] ^ we.x ^ nin.p.a ^ nin.p.b ^ nin.c ^ uin.l ^ ain.v[0] ^
            ain.v[1] ^ used.a ^ used.b);
    if (__builtin_expect(mode, 0)) {
        fprintf(stderr, "rare %d\\n", mode); /* the stop */
        return half.a + nhalf.p.b + in.b + count.n;
    }
    return in.a + half.b;
}
int main(int argc, char **argv)
{
    struct pair in = { argc, argc + 1 }, used = { argc * 2, argc * 3 };
    struct nest nin = { { argc, argc }, argc };
    union u uin = { .l = argc };
    struct arr ain = { { argc, argc + 1 } };
    long x = argc;
    return (int)pick(in, used, nin, uin, ain, &x, argc > 1);
}
"""
EDGES_CPP = """\
#include <cstdio>
struct Pair { long a; long b; };
struct Nest { Pair p; long c; };
union Either { long l; double d; };
struct Empty { };
struct Holds { [[no_unique_address]] Empty e; long x; };
struct Arr { long v[2]; };
struct Count { long n; };
struct RefP { Pair &r; };
static volatile long sink;
__attribute__((noinline)) void observe(long v) { sink = v; }
__attribute__((noinline)) long pick(Pair in, Nest nin, Either uin, Arr ain, Holds hin, long *ptr,
                                    Pair kept, Empty ein, RefP rin, int mode)
{
    Pair gone = { in.a * 3, kept.b + 7 };
    Pair half = { in.b * 5, kept.a + 9 };
    Nest ngone = { { in.a + 1, in.b + 2 }, kept.a + 3 };
    Nest nhalf = { { in.a + 4, in.b + 5 }, kept.a + 6 };
    long vals[2] = { in.a + 7, in.b + 8 };
    long *p = ptr + mode;
    Either un = { .l = in.a + 10 };
    Arr agone = { { in.a * 11, in.b * 12 } };
    Holds holds = { {}, in.a * 13 };
    Empty nothing;
    Empty egone;
    Count count = { kept.a * 14 };
    observe(gone.a ^ gone.b ^ ngone.p.a ^ ngone.p.b ^ ngone.c ^ vals[0] ^ vals[1] ^ *p ^ un.l ^
            agone.v[0] ^ agone.v[1] ^ holds.x ^ nin.p.a ^ nin.p.b ^ nin.c ^ uin.l ^ ain.v[0] ^
            ain.v[1] ^ hin.x ^ (long)&nothing ^ rin.r.a ^ (long)&egone);
    if (__builtin_expect(mode, 0)) {
        std::fprintf(stderr, "rare %d\\n", mode); /* the stop */
        return half.a + nhalf.p.b + kept.a + count.n;
    }
    return in.a + half.b;
}
int main(int argc, char **)
{
    Pair in = { argc, argc + 1 }, kept = { argc * 2, argc * 3 };
    Nest nin = { { argc, argc }, argc };
    Either uin = { .l = argc };
    Arr ain = { { argc, argc + 1 } };
    Holds hin = { {}, argc * 4 };
    long x = argc;
    Empty e; RefP rp = { in };
    return (int)pick(in, nin, uin, ain, hin, &x, kept, e, rp, argc > 1);
}
"""
COUNT_PRINTER = """\
import gdb
RUNS = [0]
class CountPrinter:
    def __init__(self, value): self.value = value
    def to_string(self):
        RUNS[0] += 1
        return "count"
    def children(self): yield "n", self.value["n"]
gdb.pretty_printers.append(
    lambda v: CountPrinter(v) if v.type.strip_typedefs().tag == "Count" else None)
class Runs(gdb.Command):
    def __init__(self): super().__init__("printer-runs", gdb.COMMAND_USER)
    def invoke(self, arg, tty): gdb.write("printer runs: %d\\n" % RUNS[0])
Runs()
"""


@pytest.mark.parametrize("file", ["t.c", "t.cpp"])
def test_gdb_bt_full_prints_values_optimized_out_whole_as_gdb_does(file: str,
                                                                     tmp_path: Path) -> None:
    """Whether a value is optimized out whole is GDB's own decision (all its bits), and `bt
    full` in moved code now says `<optimized out>` where GDB does: a C struct whose member has
    no bits (`we`: it read `{e = {<No data fields>}, x = <optimized out>}`), an empty class
    and a struct holding a reference (`ein={<No data fields>}`, `rin={r = <optimized out>}`
    under `print frame-arguments all`). A local's pretty-printer runs as often as in GDB's own
    `bt full` (it ran once more, to see whether a child could be read)."""
    (tmp_path / "count.py").write_text(COUNT_PRINTER)
    ours, theirs, line = _bolted(tmp_path, EDGES_CPP if file == "t.cpp" else EDGES_C, file)
    said = _gdb_on_both(ours, theirs, "rare", (file, line), ["bt full 1", "printer-runs"],
                        tmp_path / "c", settings=["set print frame-arguments all"],
                        scripts=[tmp_path / "count.py"])
    mine, expected = (_answers(s) for s in said)
    premise = ["ein=<optimized out>", "rin=<optimized out>", "egone = {<No data fields>}",
               "half = {a = <optimized out>, b = 13}"] if file == "t.cpp" else \
        ["we = <optimized out>", "gone = <optimized out>", "vals = <optimized out>"]
    for text in [*premise, "count = count = {n = 56}"]:
        assert text in expected["0: bt full 1"], expected
    assert expected["1: printer-runs"] == "printer runs: 1", expected  # the stop line prints none
    assert re.search(r"^#0 +pick \[cold", said[0], re.M), said[0]  # the filter's frame
    assert mine == expected, f"--- ours\n{said[0]}\n--- plain GDB on the input\n{said[1]}"


PARTS_SOURCE = """\
#include <cstdio>
struct Pair { long a; long b; };
struct Box { long *items; long n; };
struct Tag { volatile long v; };
volatile long g1 = 1, g2 = 2;
__attribute__((noinline)) long use(Pair p) { std::printf("%ld\\n", p.a); return p.a * 5 + p.b; }
__attribute__((noinline)) long work(long y)
{
    long r = 0;
    if (y > 2) {
        Pair gone = {g1, g2};
        r = use(gone);
        Box box = {(long *)16, y};
        Tag tag = {g1 + y};
        std::printf("%ld\\n", r); /* the stop */
        r += box.n + tag.v;
    }
    return r;
}
int main(int argc, char **) { return work(argc * 3) > 0 ? 0 : 1; }
"""

# Pretty-printers whose child cannot be read (a container's garbage pointer, at a stop before
# its constructor ran) or that raise a Python error of their own (GDB prints it and goes on)
BOX_PRINTER = """\
import gdb
class BoxPrinter:
    def __init__(self, value): self.value = value
    def to_string(self): return "box of %d" % int(self.value["n"])
    def children(self):
        yield "n", self.value["n"]
        yield "first", self.value["items"].dereference()
gdb.pretty_printers.append(
    lambda v: BoxPrinter(v) if v.type.strip_typedefs().tag == "Box" else None)
"""
TAG_PRINTER = """\
import gdb
class TagPrinter:
    def __init__(self, value): self.value = value
    def to_string(self): return "tag"
    def children(self):
        yield "v", self.value["v"]
        raise ValueError("no more tags")
gdb.pretty_printers.append(
    lambda v: TagPrinter(v) if v.type.strip_typedefs().tag == "Tag" else None)
"""


def test_gdb_bt_full_prints_every_local_whose_printer_fails(tmp_path: Path) -> None:
    """GDB's Python frame printer hands each local to its pretty-printer unguarded: a child
    that cannot be read ended the frame's locals ("Python Exception <class
    'gdb.MemoryError'>"), a struct optimized out whole read `{a = <optimized out>, ...}`. With
    the plugin, `bt full` and GDB/MI's `-stack-list-variables` in moved code print them as
    plain GDB does on the input (MI words it its own way), a printer's own error once."""
    (tmp_path / "box.py").write_text(BOX_PRINTER)
    (tmp_path / "tag.py").write_text(TAG_PRINTER)
    ours, theirs, line = _bolted(tmp_path, PARTS_SOURCE, "t.cpp")
    stop = ("t.cpp", line)
    answers = _gdb_on_both(ours, theirs, None, stop, ["bt full"], tmp_path / "cache",
                           settings=[], scripts=[tmp_path / "box.py", tmp_path / "tag.py"])
    assert "work [cold" in answers[0], answers[0]  # the frame the plugin prints: moved code
    # (GDB prints a printer's own error on stderr, as it goes: each one once)
    assert answers[0].count("Python Exception") == answers[1].count("Python Exception") == 1
    mine, expected = (re.sub(r"Python Exception <class 'ValueError'>: no more tags\n", "",
                             _answers(a)["0: bt full"]) for a in answers)
    assert "tag = tag = {v = 4" in expected, expected
    assert "box = box of 3 = {n = 3, first = <error reading variable box (Cannot access " \
           "memory at address 0x10)>" in expected and "gone = <optimized out>" in expected, \
        expected
    assert mine == expected, answers[0]
    listed = []
    for binary, plugin in ((ours, True), (theirs, False)):
        session = MiSession([str(binary)], plugin=plugin,
                            env={"UNSPLIT_CACHE": str(tmp_path / "cache")})
        try:
            session.command(f'-interpreter-exec console "source {tmp_path / "box.py"}"')
            session.command(f"-break-insert {stop[0]}:{stop[1]}")
            session.command("-exec-run")
            session.wait_stopped()
            session.command("-enable-frame-filters")
            listed.append(session.command("-stack-list-variables --all-values")["variables"])
        finally:
            session.close()
    assert {"name": "box", "value": "box of 3 = {n = 3, first = <error reading variable: "
            "Cannot access memory at address 0x10>"} in listed[1], listed[1]
    # (the frame printer lists the arguments first, GDB's own in the block's order)
    assert sorted(map(str, listed[0])) == sorted(map(str, listed[1]))


def test_gdb_names_a_cpp_frame_without_a_line_as_gdb_does(zoo: dict[str, Any],
                                                          tmp_path: Path) -> None:
    """A frame in moved code of a C++ function at a pc whose input row is line 0: GDB has the
    function's DWARF but no line there, names it without its parameter types (`process
    (records=…)`) and lists its locals in `bt full`; the plugin had taken the missing line
    for missing DWARF (`process(int const*, int) [cold.0] (records=…)`, no locals)."""
    f = facts(zoo, "bolt-all", "except")
    binary, original = _same_stack(f, "except", tmp_path)
    symbols = subprocess.run(["nm", "-S", str(original)], capture_output=True, text=True,
                             check=True).stdout
    start, size = next((int(p[0], 16), int(p[1], 16)) for p in map(str.split,
                       symbols.splitlines()) if p[-1] == "_Z7processPKii")
    offsets = _line_0_offsets(original, start, start + size)
    lineless = 0
    local_lists: list[list[str]] = []
    for offset in offsets:
        frames = []
        for plugin in (True, False):
            out = _broken_at(binary if plugin else original, "_Z7processPKii", offset, plugin,
                             "throw", "bt full 1", tmp_path / "c")
            frames.append((re.findall(r"^#0 .*", out, re.M) or [""])[0])  # bt's
            local_lists.append(re.findall(r"^#0 .*\n((?: {8}.*\n)*)", out, re.M)[:1])
        ours, theirs = (re.sub(r"0x[0-9a-f]+ in | \[(cold|warm)[.\d]*\]| at \S+$", "", x)
                        for x in frames)
        assert ours.split(" (")[0] == theirs.split(" (")[0], (offset, frames)
        assert local_lists[-2] == local_lists[-1], (offset, local_lists)
        lineless += bool(frames[0]) and " at " not in frames[0]
        if lineless:
            break
    assert lineless, offsets
