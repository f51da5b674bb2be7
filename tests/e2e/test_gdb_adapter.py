"""The GDB adapter in a real gdb 13 session: `bb` commands, frame naming in `bt` and the stop
line, errors, cores, shared libraries, idempotent loading.

Binaries come from the fixture zoo (fixtures/build/index.json) when it is built; otherwise the
gcc-pgo crash program is compiled here. Lines are found by marker text, never by number. The
scenarios both debuggers share belong in the lead's scenario table and in test_adapters.py
(help, one-line errors, loading twice); these are GDB-specific.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fixtures.toolbox import markers

from .. import builders
from ..variants import GDB_CORES
from .conftest import stop_names
from .driver_gdb import REPO, GdbDriver

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed"),
]

SRC = Path(REPO) / "fixtures" / "src"
ZOO_INDEX = Path(REPO) / "fixtures" / "build" / "index.json"
UNIT_BT_FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(.+?) \(", re.M)


CRASH_MARKERS = markers(SRC / "crash.c")
# Lines the crashing code in transfer's cold fragment may be attributed to.
COLD_TRANSFER_LINES = range(CRASH_MARKERS["transfer cold path"],
                            CRASH_MARKERS["transfer cold return"] + 1)


@dataclass
class Crash:
    """The crash program of one variant: what the tests may assume about it."""

    variant: str
    binary: str
    core: str | None
    args: list[str]
    has_debug_info: bool
    frames: list[dict[str, Any]] = field(default_factory=list)  # innermost first
    line: int | None = None


def _from_zoo(variant: str) -> Crash | None:
    if not ZOO_INDEX.exists():
        return None
    entry = json.loads(ZOO_INDEX.read_text())["variants"].get(variant, {}).get(
        "programs", {}).get("crash")
    if not entry:
        return None
    facts = json.loads((Path(REPO) / entry["facts"]).read_text())
    crash = facts["crash"]
    core = entry.get("core")
    return Crash(variant, str(Path(REPO) / entry["binary"]),
                 str(Path(REPO) / core) if core else None, list(crash["argv"][1:]),
                 bool(facts.get("has_debug_info")), crash["frames"][:3], crash.get("line"))


def _build_gcc_pgo(work: Path) -> Crash:
    """The zoo's gcc-pgo crash, made here when the zoo is not built."""
    if shutil.which("gcc") is None:
        pytest.skip("no fixture zoo and no gcc")
    src = work / "crash.c"
    exe = work / "crash"
    builders.gcc_pgo_build(work, {"crash.c": (SRC / "crash.c").read_text()},
                           [["gcc", "-O2", "-g", str(src), "-o", str(exe)]],
                           train=[str(exe), "train"],
                           use=("-fprofile-use", "-Wno-missing-profile"))
    core = work / "crash.core"
    subprocess.run(["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off",
                    "-ex", "run", "-ex", f"generate-core-file {core}", "--args", str(exe),
                    "crash"], check=True, cwd=work, capture_output=True, timeout=120)
    frames = [{"procedure": p, "fragment": "cold"} for p in ("transfer", "run", "main")]
    return Crash("gcc-pgo (local)", str(exe), str(core), ["crash"], True, frames,
                 CRASH_MARKERS["crash site"])


@pytest.fixture(scope="module")
def gcc_pgo(tmp_path_factory: pytest.TempPathFactory) -> Crash:
    return _from_zoo("gcc-pgo") or _build_gcc_pgo(tmp_path_factory.mktemp("gcc-pgo"))


@pytest.fixture
def gdb_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """The session transcript, printed when the test fails (pytest shows captured output)."""
    path = tmp_path / "gdb.log"
    with path.open("w") as log:
        yield log
    print(f"--- gdb session log ({path}) ---\n{path.read_text()}")


def label(procedure: str, fragment: str) -> str:
    return procedure if fragment == "hot" else f"{procedure} [{fragment}]"


def bt_names(bt: str) -> list[str]:
    return [m.group(2) for m in UNIT_BT_FRAME.finditer(bt)]


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got:\n{text}"
    return lines[0]


def line_of(text: str) -> int | None:
    m = re.search(r"crash\.c:(\d+)", text)
    return int(m.group(1)) if m else None


# -- live session ---------------------------------------------------------------------------

@pytest.fixture
def crashed(gcc_pgo: Crash, gdb_log: Any) -> Iterator[tuple[GdbDriver, str]]:
    with GdbDriver(gcc_pgo.binary, args=gcc_pgo.args, log=gdb_log) as gdb:
        yield gdb, gdb.run()


def test_stop_line_names_the_procedure_and_fragment(crashed: tuple[GdbDriver, str]) -> None:
    _, stop = crashed
    assert "SIGSEGV" in stop
    # GDB's own location, then the same as GDB prints it, with the procedure as written.
    corrected = [line for line in stop.splitlines() if "transfer [cold] (" in line]
    assert len(corrected) == 1, stop
    assert re.match(r"(0x[0-9a-f]{16} in )?transfer \[cold\] \(.*\) at \S+crash\.c:\d+$",
                    corrected[0]), stop
    assert line_of(corrected[0]) in COLD_TRANSFER_LINES
    after = stop.splitlines()[stop.splitlines().index(corrected[0]) + 1]
    assert after.startswith(f"{line_of(corrected[0])}\t"), stop  # its source line


def test_bb_where_at_the_crash(crashed: tuple[GdbDriver, str], gcc_pgo: Crash) -> None:
    gdb, _ = crashed
    out = gdb.command("bb where")
    assert re.search(r"^0x[0-9a-f]+ is in transfer \[cold\] \(crash\)$", out, re.M), out
    assert re.search(r"^  procedure transfer\+0x[0-9a-f]+ ", out, re.M), out
    assert re.search(r"^  fragment  cold  \(transfer\.cold\+0x", out, re.M), out
    assert line_of(out) in COLD_TRANSFER_LINES
    if gcc_pgo.line is not None:
        assert line_of(out) == gcc_pgo.line
    pc = int(gdb.command("output/x $pc"), 16)
    assert out.startswith(f"{pc:#x} is in")


def test_bt_names_every_split_frame(crashed: tuple[GdbDriver, str], gcc_pgo: Crash) -> None:
    gdb, _ = crashed
    names = bt_names(gdb.backtrace())
    assert names[:3] == [label(f["procedure"], f["fragment"]) for f in gcc_pgo.frames]


def test_bb_frame_and_json(crashed: tuple[GdbDriver, str]) -> None:
    gdb, _ = crashed
    frame = one_line(gdb.command("bb frame"))
    assert re.match(r"#0\s+0x[0-9a-f]+ in transfer \[cold\]\+0x[0-9a-f]+ at crash\.c:\d+", frame)
    record = json.loads(one_line(gdb.command("bb where --json $pc")))
    assert (record["procedure"], record["fragment"]) == ("transfer", "cold")
    assert record["fragment_symbol"] == "transfer.cold"
    assert int(record["address"], 16) != int(record["file_address"], 16)  # PIE: biased


def test_bb_where_of_expressions(crashed: tuple[GdbDriver, str]) -> None:
    gdb, _ = crashed
    assert gdb.command("bb where main").startswith(
        f"{int(gdb.command('output/x &main'), 16):#x} is in main (crash)")
    assert "is in transfer [cold]" in gdb.command("bb where $pc + 1")
    assert "(libc.so.6)" in gdb.command("bb where printf").splitlines()[0]
    # a fragment symbol needs GDB's quotes, which the command line strips: retried quoted
    assert "fragment  cold  (transfer.cold+0x0," in gdb.command("bb where transfer.cold")


def test_disable_and_enable(crashed: tuple[GdbDriver, str]) -> None:
    gdb, _ = crashed
    assert "disabled" in gdb.command("bb disable")
    assert bt_names(gdb.backtrace())[:3] == ["transfer", "run", "main"]
    assert re.search(r"unsplit\s*$", gdb.command("info frame-filter"), re.M)
    assert re.search(r"No\s+unsplit", gdb.command("info frame-filter"))
    assert "enabled" in gdb.command("bb enable")
    assert bt_names(gdb.backtrace())[0] == "transfer [cold]"
    gdb.command("disable frame-filter global unsplit")
    assert bt_names(gdb.backtrace())[0] == "transfer"
    gdb.command("enable frame-filter global unsplit")
    assert bt_names(gdb.backtrace())[0] == "transfer [cold]"


def test_stop_line_follows_disable(gcc_pgo: Crash, gdb_log: Any) -> None:
    with GdbDriver(gcc_pgo.binary, args=gcc_pgo.args, log=gdb_log) as gdb:
        gdb.command("bb disable")
        assert "[cold]" not in gdb.run()


def test_bb_alone_and_completion(gcc_pgo: Crash, gdb_log: Any) -> None:
    """(`help bb`, `help bb where`, `bb where --help`: test_adapters.py.)"""
    with GdbDriver(gcc_pgo.binary, log=gdb_log) as gdb:
        assert "Subcommands:" in gdb.command("bb")
        assert gdb.command("complete bb w") == "bb where"
        assert gdb.command("complete bb where --j") == "bb where --json"


def test_an_unknown_subcommand_is_one_line(gcc_pgo: Crash, gdb_log: Any) -> None:
    """GDB's own words for it are the plugin's (the other errors: test_adapters.py)."""
    with GdbDriver(gcc_pgo.binary, args=gcc_pgo.args, log=gdb_log) as gdb:
        gdb.run()
        assert "unknown bb command 'nope'" in one_line(gdb.command("bb nope"))
        assert gdb.alive()
        assert "is in transfer [cold]" in gdb.command("bb where")


@pytest.mark.expect_internal_error  # the bugs it puts into `bb where` and the filter
def test_internal_errors_are_one_line(gcc_pgo: Crash, gdb_log: Any) -> None:
    with GdbDriver(gcc_pgo.binary, args=gcc_pgo.args, log=gdb_log) as gdb:
        gdb.run()
        gdb.command("python import unsplit_gdb_impl as p; "
                    "p.plugin().host.modules = lambda: 1 // 0")
        out = one_line(gdb.command("bb where"))
        assert out == ("unsplit: internal error: ZeroDivisionError: integer division or modulo "
                       "by zero (set UNSPLIT_DEBUG=1 for the traceback)")
        gdb.command("python p.plugin().session.namer.name = lambda frame: 1 // 0")
        bt = gdb.backtrace()  # the filter's bug costs the names, never the backtrace
        assert bt_names(bt)[:3] == ["transfer", "run", "main"]
        assert bt.count("unsplit: internal error") == 1
        assert gdb.alive()


def test_loading_twice_installs_one_frame_filter(gcc_pgo: Crash, gdb_log: Any) -> None:
    """Loaded thrice (-iex, then twice by hand): one frame filter, one corrected stop line
    (each command registered once: test_adapters.py)."""
    with GdbDriver(gcc_pgo.binary, args=gcc_pgo.args, log=gdb_log) as gdb:
        gdb.load_plugin()
        gdb.load_plugin()
        assert gdb.command("info frame-filter").count("unsplit") == 1
        stop = gdb.run()
        assert stop.count("transfer [cold] (") == 1
        assert bt_names(gdb.backtrace())[0] == "transfer [cold]"


def test_a_session_that_neither_breaks_nor_steps_never_imports_them(
        gcc_pgo: Crash, gdb_log: Any) -> None:
    """A session that reads a backtrace does not pay at start for the modules of `bb break`
    and `bb next`: the first command that needs one brings it, and it works."""
    modules = ("unsplit_gdb_impl.breakpoints", "unsplit.debug.breakpoints",
               "unsplit.debug.stepping")

    def loaded() -> list[bool]:
        out = gdb.command(f"python print(*[m in sys.modules for m in {modules!r}])")
        return [word == "True" for word in out.split()]

    with GdbDriver(gcc_pgo.binary, args=gcc_pgo.args, log=gdb_log) as gdb:
        gdb.command("python import sys")
        assert loaded() == [False, False, False]
        assert gdb.command("help bb break").startswith("Break in a procedure as written")
        assert gdb.command("help bb next").startswith("Step to the next line")
        assert loaded() == [False, False, False]
        assert "the program is not being run" in gdb.command("bb next")
        assert loaded() == [False, False, True]
        assert "Breakpoint" in gdb.command("bb break transfer")
        assert loaded() == [True, True, True]
        assert "transfer" in gdb.run()


def test_without_the_plugin(gcc_pgo: Crash, gdb_log: Any) -> None:
    with GdbDriver(gcc_pgo.binary, args=gcc_pgo.args, plugin=False, log=gdb_log) as gdb:
        assert "[cold]+" not in gdb.run()
        assert bt_names(gdb.backtrace())[:3] == ["transfer", "run", "main"]
        assert "Undefined command" in gdb.command("bb where")


# -- core files -----------------------------------------------------------------------------

@pytest.mark.parametrize("variant", GDB_CORES)
def test_core(variant: str, gcc_pgo: Crash, gdb_log: Any) -> None:
    crash = gcc_pgo if variant == "gcc-pgo" else _from_zoo(variant)
    if crash is None or crash.core is None or not os.path.exists(crash.core):
        pytest.skip(f"{variant}: not in the fixture zoo (make fixtures)")
    with GdbDriver(crash.binary, core=crash.core, log=gdb_log) as gdb:
        first = crash.frames[0]
        expected = label(first["procedure"], first["fragment"])
        # GDB's own frame line names the procedure where its debug info (DWARF or unsplit's
        # file) covers the moved code; where it names the fragment symbol (unsplit's file
        # still being written), the plugin's line or GDB's again with the file follows it.
        said = re.findall(rf"^(?:#0\s+)?(?:0x[0-9a-f]+ in )?{re.escape(first['procedure'])}\b.*$",
                          gdb.startup, re.M)
        assert said and re.match(rf"(#0\s+)?(0x[0-9a-f]{{16}} in )?"
                                 rf"{re.escape(first['procedure'])}"
                                 rf"( \[{re.escape(first['fragment'])}\])? \(", said[-1]), \
            gdb.startup
        names = bt_names(gdb.backtrace())
        assert names[:3] == [label(f["procedure"], f["fragment"]) for f in crash.frames]
        where = gdb.command("bb where")
        assert f" is in {expected} (crash)" in where.splitlines()[0]
        assert f"  fragment  {first['fragment']}" in where
        if crash.has_debug_info and crash.line is not None:
            assert line_of(where) == crash.line


# -- shared libraries -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def split_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A program whose crash is in the cold fragment of a function in a shared library."""
    return builders.split_library(tmp_path_factory.mktemp("solib"), pie=False)


def test_shared_library_bias(split_library: Path, gdb_log: Any) -> None:
    lines = markers(split_library / "lib.c")
    with GdbDriver(str(split_library / "m"), args=["crash"], log=gdb_log) as gdb:
        stop = gdb.run()
        assert stop_names(stop, "work", "cold", lines["lib crash"]), stop
        where = gdb.command("bb where")
        assert re.match(r"0x7f[0-9a-f]+ is in work \[cold\] \(libw\.so\)", where), where
        assert f"lib.c:{lines['lib crash']}" in where
        assert bt_names(gdb.backtrace())[:2] == ["work [cold]", "main"]
        assert "is in work (libw.so)" in gdb.command("bb where work")
