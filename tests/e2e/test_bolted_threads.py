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
