"""GDB's own frames made exact where FDEs compete (`bb exact-frames`, gdb/unsplit_gdb_impl/
unwinder.py): the zoo's bolt-random2 crash core read with a copy of the binary whose `.eh_frame`
holds, first in the section, a duplicate of `run.cold.0`'s FDE with another length and a CFA
16 bytes off (tests/cfi_damage.py); `.eh_frame_hdr` lists the true one. Plain GDB takes the
duplicate and loses the stack at frame 2; with the plugin GDB's `bt`, `frame N` and `info frame`
show the true stack (an IDE's MI stack too, and GDB 18's DAP `stackTrace`); and live, on
bolt-random2's recurse damaged the same way in walk.cold.0, `finish` out of walk's frame stops
where walk returns, with its value. The same binaries with a cold fragment's FDE gone
(cfi_damage.drop_fde): the unwinder takes the pre-BOLT input's rules there.

Oracles, never unsplit: the undamaged binary's frames (fixtures: GDB's unwind of the live
crash), LLDB 22's own unwind of the damaged core, and every caller frame's pc being a return
address (llvm-objdump-22: the instruction before it is a call ending there).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .. import cfi_damage
from ..cfi_oracle import dwarfdump_fdes
from ..conftest import ROOT, facts
from .conftest import gdb_at_least
from .driver_dap import DapSession
from .driver_gdb import PLUGIN as GDB_PLUGIN
from .driver_mi import MiSession

pytestmark = pytest.mark.e2e

_FRAME = re.compile(r"^#(\d+)\s+(?:0x([0-9a-f]+) in )?")


def _pcs(session: Any, count: int) -> list[int]:
    """The pcs of the first `count` frames, each read with `frame N` (exact even where bt
    leaves frame 0's address out)."""
    out = []
    for n in range(count):
        out.append(session.register("pc", n))
    return out


def _bt_pcs(text: str) -> list[int]:
    pcs = []
    for line in text.splitlines():
        m = _FRAME.match(line)
        if m and m[2]:
            pcs.append(int(m[2], 16))
    return pcs


def call_ends_at(binary: Path, start: int, pc: int) -> bool:
    """Whether the instruction of [start, pc) that ends at `pc` is a call (llvm-objdump-22)."""
    out = subprocess.run(["llvm-objdump-22", "-d", f"--start-address={start:#x}",
                          f"--stop-address={pc:#x}", str(binary)], capture_output=True,
                         text=True, check=True).stdout
    last = None
    for line in out.splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\s+((?:[0-9a-f]{2} )+)\s*(\S+)", line)
        if m:
            last = (int(m[1], 16), len(m[2].split()), m[3])
    return last is not None and last[0] + last[1] == pc and last[2].startswith("call")


def _functions(binary: Path) -> list[tuple[int, int]]:
    """The binary's sized code symbols, (start, end), by llvm-nm-22."""
    out = subprocess.run(["llvm-nm-22", "--defined-only", "--print-size", str(binary)],
                         capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            start = int(parts[0], 16)
            found.append((start, start + int(parts[1], 16)))
    return found


def _bt_callers(text: str) -> list[int]:
    """The pcs of frames 1 and up of a `bt`."""
    return [int(m[2], 16) for m in map(_FRAME.match, text.splitlines())
            if m and m[2] and int(m[1]) > 0]


def assert_callers_return(binary: Path, pcs: list[int]) -> int:
    """The oracle over a whole stack: every caller frame's pc (`pcs`: frames 1 and up) that
    lies in `binary`'s code is a return address (the call before it ends there; a call last
    in its function returns to the function's end). Frames in other modules (libc) are not
    checked. Returns how many were."""
    functions = _functions(binary)
    checked = 0
    for pc in pcs:
        start = next((lo for lo, hi in functions if lo < pc <= hi), None)
        if start is not None:
            assert call_ends_at(binary, start, pc), f"{pc:#x} is not a return address"
            checked += 1
    return checked


def lldb_pcs(binary: Path, core: Path) -> list[int]:
    out = subprocess.run(["lldb-22", "--no-lldbinit", "-b", "-o", "bt", str(binary), "-c",
                          str(core)], capture_output=True, text=True, timeout=120).stdout
    return [int(m[1], 16) for m in re.finditer(r"frame #\d+: 0x([0-9a-f]+)", out)]


@pytest.fixture(scope="module")
def case(zoo: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    f = facts(zoo, "bolt-random2", "crash")
    frags = f["split_functions"]["run"]["fragments"]
    cold = next(x for x in frags if x["fragment"] != "hot")
    damaged = tmp_path_factory.mktemp("exact-unwind") / "crash"
    cfi_damage.duplicate_fde(ROOT / f["binary"], damaged, int(cold["start"], 16),
                             spare_below=0x800000)
    truth = [int(x["pc"], 16) for x in f["crash"]["frames"]]
    starts = {x["symbol"]: int(x["start"], 16) for fn in f["split_functions"].values()
              for x in fn["fragments"]}
    return {"binary": damaged, "original": ROOT / f["binary"], "core": ROOT / f["crash"]["core"],
            "truth": truth, "symbols": [x["symbol"] for x in f["crash"]["frames"]],
            "starts": starts}


def test_oracles_agree_on_the_damaged_core(case: dict[str, Any]) -> None:
    """LLDB unwinds the damaged core right, and the true callers' pcs are return addresses."""
    assert lldb_pcs(case["binary"], case["core"])[:3] == case["truth"][:3]
    for pc, symbol in zip(case["truth"][1:3], case["symbols"][1:3], strict=True):
        assert call_ends_at(case["binary"], case["starts"][symbol], pc), hex(pc)


def test_plain_gdb_loses_the_stack(gdb: Callable[..., Any], case: dict[str, Any]) -> None:
    s = gdb(case["binary"], core=str(case["core"]), plugin=False)
    pcs = _bt_pcs(s.backtrace())
    assert pcs[:2] == case["truth"][:2]
    assert pcs[2] != case["truth"][2]  # the duplicate's CFA sends GDB elsewhere


def _assert_true_stack(s: Any, case: dict[str, Any], binary: Path) -> None:
    """`s`'s backtrace has the true first three frames, callers at return addresses, and `info
    frame` of frame 1 (run.cold.0) its CFA by the true rules (llvm-dwarfdump-22's row of the
    undamaged FDE at the call: CFA=RSP+N) and its caller, frame 2 at main.cold.0's pc."""
    truth = case["truth"]
    shown = s.backtrace()
    assert _bt_pcs(shown)[:3] == truth[:3], shown
    assert _pcs(s, 3) == truth[:3]
    assert assert_callers_return(binary, _bt_callers(shown)) >= 2
    rsp = s.register("rsp", 1)
    true_fde = next(f for f in dwarfdump_fdes(case["original"])
                    if f["start"] <= truth[1] - 1 < f["end"])
    row = true_fde["rows"][max(a for a in true_fde["rows"] if a <= truth[1] - 1)]
    offset = int(re.match(r"CFA=RSP\+(\d+):", row)[1])  # type: ignore[index]
    info = s.command("info frame")
    assert f"frame at {rsp + offset:#x}:" in info, info
    assert re.search(f"saved rip = 0x0*{truth[2]:x}", info), info


def test_gdb_with_the_plugin_shows_the_true_stack(gdb: Callable[..., Any],
                                                  case: dict[str, Any]) -> None:
    """The unwinder alone: without the debug file, whose `.debug_frame` (which GDB reads before
    `.eh_frame`) makes the same choice of FDE (test_the_debug_files_cfi_also_wins below)."""
    s = gdb(case["binary"], core=str(case["core"]), env={"UNSPLIT_DEBUGINFO": "0"})
    truth = case["truth"]
    _assert_true_stack(s, case, case["binary"])
    status = s.command("bb exact-frames")
    assert "exact frames on" in status
    assert re.search(r"crash: 3 moved fragments, 1 address range where FDEs compete: "
                     r"[1-9]\d* frames? unwound by unsplit", status), status
    # Off: GDB's own unwinding again (the duplicate wins); on: exact again.
    assert "exact frames off" in s.command("bb exact-frames off")
    assert _bt_pcs(s.backtrace())[2] != truth[2]
    s.command("bb exact-frames on")
    assert _bt_pcs(s.backtrace())[:3] == truth[:3]


def test_the_debug_files_cfi_also_wins(gdb: Callable[..., Any], case: dict[str, Any]) -> None:
    """With the debug file (the default), GDB's own unwinding follows its `.debug_frame`: the
    true stack even with the unwinder off."""
    s = gdb(case["binary"], core=str(case["core"]))
    assert "exact frames off" in s.command("bb exact-frames off")
    assert _bt_pcs(s.backtrace())[:3] == case["truth"][:3]


def test_the_unwinder_stays_out_of_clean_modules(gdb: Callable[..., Any], zoo: dict[str, Any],
                                                 ) -> None:
    f = facts(zoo, "bolt-random2", "crash")
    s = gdb(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))
    assert _pcs(s, 3) == [int(x["pc"], 16) for x in f["crash"]["frames"][:3]]
    status = s.command("bb exact-frames")
    assert "crash: 3 moved fragments, one FDE for each address: GDB's own unwinding is exact" \
        in status, status
    assert "unwound by unsplit" not in status


@pytest.fixture(scope="module")
def recurse(zoo: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """bolt-random2's recurse, whose walk.cold.0 calls note_limit and returns to main.cold.0,
    with a wrong duplicate of walk.cold.0's FDE first in the section."""
    f = facts(zoo, "bolt-random2", "recurse")
    frags = {x["symbol"]: int(x["start"], 16) for fn in f["split_functions"].values()
             for x in fn["fragments"]}
    damaged = tmp_path_factory.mktemp("exact-finish") / "recurse"
    cfi_damage.duplicate_fde(ROOT / f["binary"], damaged, frags["walk.cold.0"],
                             spare_below=0x800000)
    return {"binary": damaged, "original": ROOT / f["binary"], "starts": frags}


def _stopped_in_note_limit(gdb: Callable[..., Any], binary: Path, plugin: bool,
                           exact: bool = True) -> Any:
    """Live at note_limit's first call; with the plugin, without the debug file (whose
    `.debug_frame` would correct GDB's own unwinding): the unwinder alone."""
    s = gdb(binary, args=["deep"], plugin=plugin, env={"UNSPLIT_DEBUGINFO": "0"})
    if not exact:
        s.command("bb exact-frames off")
    s.break_function("note_limit")
    s.run()
    return s


def _walk(depth: int, limit: int, acc: int) -> int:
    """recurse.c's walk, in Python: what it returns (a C long, as in %rax)."""
    if depth == 0:
        return acc + 1
    if depth == limit:
        acc = acc * 31 + depth
    return (_walk(depth - 1, limit, acc + depth) ^ (acc << 1)) & ((1 << 64) - 1)


def _finish_from_walk(s: Any) -> str:
    s.command("frame 1")
    return str(s.command("finish"))


def test_finish_out_of_a_frame_gdb_unwinds_wrong(gdb: Callable[..., Any],
                                                 recurse: dict[str, Any]) -> None:
    """Live: stopped in note_limit, called from walk's cold fragment in `deep`'s first
    walk(8, 5, 0), main's call (the compiler made walk's recursion a loop: frame 2 is main);
    `finish` out of walk's frame must stop where walk returns (frame 2's pc in the undamaged
    binary, a return address) with walk(8, 5, 0) in %rax, as recurse.c computes it and as GDB
    finds it on the undamaged binary. Plain GDB, and the plugin with `bb exact-frames off`,
    take the damaged FDE: frame 2 is lost, and `finish` does not stop where walk returns."""
    returned = _walk(8, 5, 0)
    original = _stopped_in_note_limit(gdb, recurse["original"], False)
    truth = _pcs(original, 3)
    assert call_ends_at(recurse["original"], recurse["starts"]["main.cold.0"], truth[2])
    assert "Run till exit from #1" in _finish_from_walk(original)
    assert original.register("pc", 0) == truth[2]
    assert original.register("rax", 0) == returned
    plain = _stopped_in_note_limit(gdb, recurse["binary"], False)
    assert _pcs(plain, 3)[:2] == truth[:2] and _pcs(plain, 3)[2] != truth[2]
    off = _stopped_in_note_limit(gdb, recurse["binary"], True, exact=False)
    assert _pcs(off, 3)[:2] == truth[:2] and _pcs(off, 3)[2] != truth[2]
    _finish_from_walk(off)  # its breakpoint at the wrong caller: runs on (to note_limit's next)
    assert off.register("pc", 0) != truth[2]
    s = _stopped_in_note_limit(gdb, recurse["binary"], True)
    assert _pcs(s, 3) == truth
    assert assert_callers_return(recurse["binary"], _bt_callers(s.backtrace())) >= 2
    out = _finish_from_walk(s)
    assert "Run till exit from #1" in out, out
    assert s.register("pc", 0) == truth[2]
    assert s.register("rax", 0) == returned
    assert "unwound by unsplit" in s.command("bb exact-frames")


def _mi_addresses(binary: Path, plugin: bool, cache: Path) -> list[int]:
    """-stack-list-frames of the damaged crash, live, at its SIGSEGV, as an IDE asks."""
    session = MiSession([str(binary), "crash"], plugin=plugin, env={"UNSPLIT_CACHE": str(cache)})
    try:
        session.command("-exec-run")
        assert session.wait_stopped()["reason"] == "signal-received"
        frames = [next(iter(item.values()))
                  for item in session.command("-stack-list-frames")["stack"]]
        return [int(f["addr"], 16) for f in frames]
    finally:
        session.close()


def test_mi_stack_of_an_ide(case: dict[str, Any], tmp_path: Path) -> None:
    truth = case["truth"][:3]
    assert _mi_addresses(case["binary"], False, tmp_path)[2] != truth[2]
    exact = _mi_addresses(case["binary"], True, tmp_path)
    assert exact[:3] == truth
    assert assert_callers_return(case["binary"], exact[1:]) >= 2


def _dap_addresses(binary: Path, argv: list[str], cache: Path, plugin: bool,
                   exact: bool = True) -> list[int]:
    """`stackTrace` of GDB 18's DAP interpreter (`gdb -i dap`, what VS Code and other IDEs
    start) at the damaged crash's SIGSEGV, live: each frame's instructionPointerReference.
    Without the debug file, whose `.debug_frame` would correct GDB's own unwinding."""
    command = [gdb_at_least(14), "-i", "dap", "-nx", "-iex", "set debuginfod enabled off"]
    if plugin:
        command += ["-iex", f"source {GDB_PLUGIN}"]
        if not exact:
            command += ["-iex", "bb exact-frames off"]
    session = DapSession(command, env={"UNSPLIT_CACHE": str(cache), "UNSPLIT_DEBUGINFO": "0"})
    try:
        session.request("initialize", adapterID="unsplit-test", clientID="unsplit-test",
                        linesStartAt1=True, columnsStartAt1=True, pathFormat="path")
        session.send("launch", program=str(binary), args=argv)
        session.wait("event", "initialized")
        session.request("configurationDone")
        stopped = session.wait("event", "stopped")
        thread = stopped["body"].get("threadId") or \
            session.request("threads")["threads"][0]["id"]
        frames = session.request("stackTrace", threadId=thread, startFrame=0,
                                 levels=20)["stackFrames"]
        return [int(f["instructionPointerReference"], 16) for f in frames]
    finally:
        session.close()


def test_dap_stack_of_an_ide(case: dict[str, Any], zoo: dict[str, Any], tmp_path: Path) -> None:
    """An IDE's stack over DAP is GDB's own unwinding: with the plugin, the true callers (each
    one's pc a return address); GDB alone, or the plugin with `bb exact-frames off`, loses
    the stack at frame 2."""
    truth = case["truth"][:3]
    argv = facts(zoo, "bolt-random2", "crash")["crash"]["argv"][1:]
    plain = _dap_addresses(case["binary"], argv, tmp_path, plugin=False)
    assert plain[:2] == truth[:2] and plain[2] != truth[2], plain
    off = _dap_addresses(case["binary"], argv, tmp_path, plugin=True, exact=False)
    assert off[:2] == truth[:2] and off[2] != truth[2], off
    exact = _dap_addresses(case["binary"], argv, tmp_path, plugin=True)
    assert exact[:3] == truth
    assert assert_callers_return(case["binary"], exact[1:]) >= 2


@pytest.fixture(scope="module")
def bare(zoo: dict[str, Any], case: dict[str, Any],
         tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The crash binary with run.cold.0's FDE gone (tests/cfi_damage.drop_fde), its pre-BOLT
    input beside it in input/ as a user keeps it; and a copy with no input at hand."""
    f = facts(zoo, "bolt-random2", "crash")
    work = tmp_path_factory.mktemp("moved-without-fde")
    (work / "with").mkdir()
    (work / "without").mkdir()
    (work / "with" / "input").symlink_to((ROOT / f["binary"]).parent / "input")
    cold = case["starts"]["run.cold.0"]
    for where in ("with", "without"):
        cfi_damage.drop_fde(ROOT / f["binary"], work / where / "crash", cold)
    return {"binary": work / "with" / "crash", "no_input": work / "without" / "crash",
            "cold": cold}


def test_moved_code_without_an_fde(gdb: Callable[..., Any], case: dict[str, Any],
                                   bare: dict[str, Any]) -> None:
    """No FDE describes run.cold.0 (frame 1 of the crash core): GDB guesses its frame from
    the fragment's first instructions, as if it were a function's start, and loses the stack
    at frame 2 (so does LLDB, which stops after frame 1). With the plugin the unwinder gives
    GDB the caller's registers by the pre-BOLT input's rules where BAT maps frame 1's pc: the
    true stack, frame 1's CFA the undamaged FDE's (llvm-dwarfdump-22)."""
    truth = case["truth"]
    plain = gdb(bare["binary"], core=str(case["core"]), plugin=False)
    pcs = _bt_pcs(plain.backtrace())
    assert pcs[:2] == truth[:2] and pcs[2:3] != truth[2:3], pcs
    assert lldb_pcs(bare["binary"], case["core"])[2:3] != truth[2:3]
    s = gdb(bare["binary"], core=str(case["core"]), env={"UNSPLIT_DEBUGINFO": "0"})
    _assert_true_stack(s, case, bare["binary"])
    status = s.command("bb exact-frames")
    assert re.search(r"crash: 3 moved fragments, 1 without an FDE: [1-9]\d* frames? unwound "
                     r"by unsplit", status), status
    assert "exact frames off" in s.command("bb exact-frames off")
    assert _bt_pcs(s.backtrace())[2:3] != truth[2:3]


def test_moved_code_without_an_fde_nor_the_input(gdb: Callable[..., Any],
                                                 case: dict[str, Any],
                                                 bare: dict[str, Any]) -> None:
    """Without the pre-BOLT input there are no rules to give: GDB's own guess stands (the
    unwinder gives no frame), and `bb bt` says where its CFI walk stops."""
    s = gdb(bare["no_input"], core=str(case["core"]), env={"UNSPLIT_DEBUGINFO": "0"})
    assert _bt_pcs(s.backtrace())[2:3] != case["truth"][2:3]
    assert "0 frames unwound by unsplit" in s.command("bb exact-frames")
    assert f"no CFI covers {case['truth'][1]:#x} in crash" in s.command("bb bt")


def test_finish_out_of_moved_code_without_an_fde(gdb: Callable[..., Any], zoo: dict[str, Any],
                                                 recurse: dict[str, Any],
                                                 tmp_path: Path) -> None:
    """Live, bolt-random2's recurse with walk.cold.0's FDE gone and its input beside it:
    stopped in note_limit, `finish` out of walk's frame stops where walk returns (the undamaged
    binary's frame 2) with walk(8, 5, 0) in %rax; without the plugin's unwinder it does not."""
    f = facts(zoo, "bolt-random2", "recurse")
    (tmp_path / "input").symlink_to((ROOT / f["binary"]).parent / "input")
    binary = tmp_path / "recurse"
    cfi_damage.drop_fde(ROOT / f["binary"], binary, recurse["starts"]["walk.cold.0"])
    truth = _pcs(_stopped_in_note_limit(gdb, recurse["original"], False), 3)
    off = _stopped_in_note_limit(gdb, binary, True, exact=False)
    assert _pcs(off, 3)[:2] == truth[:2] and _pcs(off, 3)[2] != truth[2]
    s = _stopped_in_note_limit(gdb, binary, True)
    assert _pcs(s, 3) == truth
    assert assert_callers_return(binary, _bt_callers(s.backtrace())) >= 2
    assert "Run till exit from #1" in _finish_from_walk(s)
    assert s.register("pc", 0) == truth[2]
    assert s.register("rax", 0) == _walk(8, 5, 0)
    moved = sum(x["fragment"] != "hot" for fn in f["split_functions"].values()
                for x in fn["fragments"])
    assert re.search(rf"recurse: {moved} moved fragments, 1 without an FDE: [1-9]\d* frames? "
                     r"unwound by unsplit", s.command("bb exact-frames"))
