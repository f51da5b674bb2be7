"""What an IDE on GDB/MI sees of a crash in moved code (issue 16 item 3): GDB in MI mode with
the plugin sourced and no other command (no ``-enable-frame-filters``). The ``*stopped`` record's
frame and ``-stack-list-frames`` name each split frame by its procedure with the file (and a
``fullname`` that exists, so the IDE opens the source) and the true line.

Oracles: the procedure chain gdb_probe.py recorded when the zoo was built (facts ``crash``), and
the lines of the source's ``BB:`` markers; never unsplit's output."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.toolbox import markers, markers_in

from .. import builders
from ..conftest import ROOT, facts
from .conftest import gdb_at_least
from .driver_mi import GDB, MiSession

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which(GDB) is None, reason=f"{GDB} is not installed"),
]

# The crash chain of crash.c and the marker of the line each frame is on.
CHAIN = [("transfer", "crash site"), ("run", "run cold call"), ("main", "main cold call")]


@pytest.fixture
def mi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    sessions: list[MiSession] = []

    def start(argv: list[str], gdb: str = GDB) -> MiSession:
        sessions.append(MiSession(argv, gdb=gdb))
        return sessions[-1]
    yield start
    for s in sessions:
        s.close()


def _check_frame(frame: dict[str, Any], procedure: str, line: int) -> None:
    assert frame["func"] == procedure, frame
    assert frame.get("file", "").endswith("crash.c"), frame
    assert os.path.isfile(frame["fullname"]), frame
    assert Path(frame["fullname"]).name == "crash.c", frame
    assert int(frame["line"]) == line, frame


@pytest.mark.parametrize("variant", ["bolt-all", "bolt-random2", "bolt-cdsplit"])
def test_mi_crash_in_bolt_moved_code(mi: Any, zoo: dict[str, Any], variant: str) -> None:
    f = facts(zoo, variant, "crash")
    assert not f["has_debug_info"]
    assert f["crash"]["expected_chain"] == [p for p, _ in CHAIN]
    markers = f["markers"]["crash.c"]
    session = mi([str(ROOT / f["binary"]), *f["crash"]["argv"][1:]])
    session.command("-exec-run")
    stopped = session.wait_stopped()
    assert stopped["reason"] == "signal-received", stopped
    _check_frame(stopped["frame"], "transfer", markers["crash site"])
    frames = [next(iter(item.values())) for item in session.command("-stack-list-frames")["stack"]]
    for level, (procedure, marker) in enumerate(CHAIN):
        assert int(frames[level]["level"]) == level
        _check_frame(frames[level], procedure, markers[marker])


@pytest.mark.parametrize("variant", ["gcc-pgo-nodebug", "clang-mfs-nodebug"])
def test_mi_crash_in_compiler_split_without_dwarf(mi: Any, zoo: dict[str, Any],
                                                  variant: str) -> None:
    """A compiler split without DWARF: the frames are named by procedure (never `transfer.cold`),
    at the pcs gdb_probe.py saw."""
    f = facts(zoo, variant, "crash")
    assert not f["has_debug_info"]
    session = mi([str(ROOT / f["binary"]), *f["crash"]["argv"][1:]])
    session.command("-exec-run")
    stopped = session.wait_stopped()
    assert stopped["frame"]["func"] == "transfer", stopped
    frames = [next(iter(item.values())) for item in session.command("-stack-list-frames")["stack"]]
    for level, probed in enumerate(f["crash"]["frames"][:3]):
        assert int(frames[level]["addr"], 16) == int(probed["pc"], 16)
        assert frames[level]["func"] == probed["procedure"], frames[level]


@pytest.fixture(scope="module")
def split_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """libw.so with `work` split by GCC, and `m`, built with relative source names (`lib.c`,
    `main.c`): GDB's `file` is then not a path an IDE can open, its `fullname` is."""
    return builders.split_library(tmp_path_factory.mktemp("milib"), pie=True)


@pytest.mark.parametrize("which", ["gdb", "newer"])
def test_mi_frame_filters_keep_full_paths(mi: Any, split_library: Path, which: str) -> None:
    """After `-enable-frame-filters` the frames are named by procedure (`work [cold]`) and
    every frame with a source file has its full path: GDB's printer of filtered frames gives no
    `fullname` (GDB 13 and 18), so `file` carries it, which IDEs open when `fullname` is missing.
    GDB 18 also returns a captured command's output as MI records under MI: the filter must
    still see the modules. Oracles: the sources this test wrote and their markers."""
    gdb = GDB if which == "gdb" else gdb_at_least(14)
    lines = {"lib.c": markers(split_library / "lib.c")["lib crash"],
             "main.c": markers_in(builders.SPLIT_MAIN_C["linked"])["main crash call"]}
    session = mi([str(split_library / "m"), "crash"], gdb=gdb)
    session.command("-enable-frame-filters")
    session.command("-exec-run")
    assert session.wait_stopped()["reason"] == "signal-received"
    frames = [next(iter(item.values())) for item in session.command("-stack-list-frames")["stack"]]
    assert [f["func"] for f in frames] == ["work [cold]", "main"], frames
    for frame, source in zip(frames, ("lib.c", "main.c"), strict=True):
        path = frame.get("fullname") or frame["file"]
        assert os.path.isabs(path) and os.path.samefile(path, split_library / source), frame
        assert int(frame["line"]) == lines[source], frame


SKIPPED_ARG_C = """\
#include <stdio.h>
#include <string.h>
static volatile long sink;
__attribute__((cold, noinline)) static void note(long x) { fprintf(stderr, "note %ld\\n", x); }
__attribute__((noinline)) long work(long *p, int mode)
{
    if (__builtin_expect(mode != 0, 0)) {
        note(mode);
        sink = mode;
        *(volatile long *)0 = mode;
    }
    return *p + 1;
}
__attribute__((noinline)) static long pass(long *p, int mode, int fixed)
{
    long t = work(p, mode);
    return t + sink;
}
int main(int argc, char **argv)
{
    long v = 1;
    return (int)pass(&v, argc > 1 && strcmp(argv[1], "crash") == 0, 7);
}
"""


@pytest.fixture(scope="module")
def skipped_arg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`s`: `work` split by GCC (`work.cold`), called by `pass`, whose argument `fixed` GCC
    made a constant (`pass.constprop.0`, `DW_AT_const_value`): an argument GDB/MI leaves out."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    work = tmp_path_factory.mktemp("miskip")
    (work / "s.c").write_text(SKIPPED_ARG_C)
    builders.run(["gcc", "-O2", "-g", "s.c", "-o", "s"], work)
    if "work.cold" not in builders.run(["nm", "s"], work):
        pytest.fail("gcc did not split work() (no work.cold)")
    return work / "s"


def _variables(session: MiSession, level: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = session.command(
        f"-stack-list-variables --thread 1 --frame {level} --all-values", 30)["variables"]
    return out


@pytest.mark.parametrize("which", ["gdb", "newer"])
def test_mi_variables_with_frame_filters_skip_what_gdb_skips(mi: Any, skipped_arg: Path,
                                                             which: str) -> None:
    """After `-enable-frame-filters`, `-stack-list-variables` and `-stack-list-arguments` in
    a frame with an argument GDB/MI leaves out answer at once, as GDB without the plugin does:
    GDB's filtered-frame printer spins forever on such an argument (py-framefilter.c).
    Oracle: the same commands in GDB without the plugin (no frame filter)."""
    gdb = GDB if which == "gdb" else gdb_at_least(14)
    plain = MiSession([str(skipped_arg), "crash"], plugin=False, gdb=gdb)
    try:
        plain.command("-exec-run")
        assert plain.wait_stopped()["reason"] == "signal-received"
        truth = [_variables(plain, level) for level in range(3)]
        plain.command("-stack-select-frame 1")
        plain.command("-interpreter-exec console \"info args\"", 30)
        assert '~"fixed = 7\\n"' in plain.lines  # GDB has it...
        assert "fixed" not in str(truth[1])  # ...and GDB/MI leaves it out
        truth_bt = _console_frame_line(plain, 1)
        assert "fixed=7" in truth_bt, truth_bt  # a frame line prints it
    finally:
        plain.close()
    session = mi([str(skipped_arg), "crash"], gdb=gdb)
    session.command("-enable-frame-filters")
    session.command("-exec-run")
    assert session.wait_stopped()["reason"] == "signal-received"
    frames = [next(iter(item.values())) for item in session.command("-stack-list-frames")["stack"]]
    assert [f["func"] for f in frames[:2]] == ["work [cold]", "pass"], frames
    assert [_variables(session, level) for level in range(3)] == truth
    listed = session.command("-stack-list-arguments --all-values 1 1", 30)["stack-args"]
    assert next(iter(listed[0].values()))["args"] == [v for v in truth[1] if v.pop("arg", None)]
    shown = _console_frame_line(session, 1)  # `bt` in an IDE's debug console
    assert shown.split(" at ")[0] == truth_bt.split(" at ")[0], shown


def _console_frame_line(session: MiSession, level: int) -> str:
    """Frame `level`'s line of `bt` run through `-interpreter-exec console`."""
    start = len(session.lines)
    session.command('-interpreter-exec console "bt"', 30)
    found = [line for line in session.lines[start:] if line.startswith(f'~"#{level} ')]
    assert len(found) == 1, session.lines[start:]
    return found[0]
