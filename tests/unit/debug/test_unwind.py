"""Offline CFI backtraces of every zoo variant's crash core (elf.core + debug.unwind):
the pcs GDB reported when the core was made (GDB unwinds with .eh_frame and is right, per
shared/NOTES.md), the names transfer → run → main in cold fragments, the pcs and CFAs of an
independent walk over llvm-dwarfdump-22's rows and the core's stack; bad cores fail in one line."""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile
from unsplit.debug.unwind import backtrace, compare
from unsplit.elf.core import NT_FILE, Core
from unsplit.errors import UnsplitError
from unsplit.formats.dwarf_expr import registers_from_names
from unsplit.index.model.frame import Frame
from unsplit.index.module_index import IndexCache
from unsplit.render.frames import bt_report

from ...conftest import ROOT, facts
from ..formats.test_eh_frame import dwarfdump_fdes

VARIANTS = [
    "gcc-pgo", "gcc-pgo-nodebug", "gcc-pgo-stripped", "clang-mfs", "clang-mfs-nodebug",
    "clang-mfs-pgomap", "clang-bbsections", "bolt-all", "bolt-all-dbg", "bolt-random2",
    "bolt-random2-dbg", "bolt-profile2", "bolt-profile2-dbg", "bolt-cdsplit", "bolt-cdsplit-dbg",
]
INDEXES = IndexCache()


def _crash(zoo: dict[str, Any], variant: str) -> tuple[dict[str, Any], str, str]:
    f = facts(zoo, variant, "crash")
    core = f["_entry"].get("core")
    assert core is not None, f"{variant}: the fixture build made no crash core"
    return f, str(ROOT / f["binary"]), str(ROOT / core)


def _frames(binary: str, core_path: str) -> list[Frame]:
    core = Core(core_path)
    return backtrace(core.modules(binary), core.threads[0].registers, core.read_memory,
                     INDEXES.get)


@pytest.mark.parametrize("variant", VARIANTS)
def test_backtrace_is_gdbs(zoo: dict[str, Any], variant: str) -> None:
    f, binary, core = _crash(zoo, variant)
    frames = _frames(binary, core)
    gdb = [int(x["pc"], 16) for x in f["crash"]["frames"]]
    pcs = [fr.pc for fr in frames]
    # GDB stops at main when DWARF names it (backtrace past-main off); else it goes to _start.
    assert pcs[: len(gdb)] == gdb
    assert len(pcs) == 6 and frames[-1].stop_reason and "outermost" in frames[-1].stop_reason
    if len(gdb) > 3:
        assert pcs == gdb
    assert compare(gdb, frames) == []
    if f["has_symtab"]:
        got = [(fr.location.procedure, fr.location.fragment) if fr.location else None
               for fr in frames[:3]]
        assert got == [(x["procedure"], x["fragment"]) for x in f["crash"]["frames"][:3]]
        assert all(fr.location and fr.location.fragment != "hot" for fr in frames[:3])
        assert [fr.label().split()[0] for fr in frames[:3]] == ["transfer", "run", "main"]


def _core_reader(core_path: str) -> Any:
    elf = ELFFile(io.BytesIO(Path(core_path).read_bytes()))
    segs = [(s["p_vaddr"], s["p_filesz"], s) for s in elf.iter_segments()
            if s["p_type"] == "PT_LOAD"]

    def read8(address: int) -> int:
        for vaddr, size, seg in segs:
            if vaddr <= address and address + 8 <= vaddr + size:
                data = seg.data()[address - vaddr:address - vaddr + 8]
                value: int = struct.unpack("<Q", data)[0]
                return value
        raise AssertionError(f"{address:#x} not in the core")

    return read8


@pytest.mark.parametrize("variant", ["gcc-pgo", "clang-mfs-nodebug", "clang-bbsections",
                                     "bolt-all", "bolt-cdsplit"])
def test_cfas_against_dwarfdump_rows(zoo: dict[str, Any], variant: str) -> None:
    """An independent walk: dwarfdump's rows (reg+offset CFAs, [CFA-n] rules only) over the
    core's stack, through the three frames in the executable."""
    _, binary, core_path = _crash(zoo, variant)
    core = Core(core_path)
    bias = core.modules(binary)[0].bias
    fdes = dwarfdump_fdes(binary)
    read8 = _core_reader(core_path)
    regs = dict(core.threads[0].registers)
    names = {"RSP": 7, "RBP": 6, "RBX": 3, "R12": 12, "R13": 13, "R14": 14, "R15": 15}
    expected = []
    for k in range(3):
        pc = regs[16]
        lookup = pc - bias - (k > 0)
        rows = next(rows for (lo, hi), rows in fdes.items() if lo <= lookup < hi)
        cfa_text, rules = rows[max(a for a in rows if a <= lookup)]
        reg, _, off = cfa_text.partition("+")
        cfa = regs[names[reg]] + int(off or 0)
        expected.append((pc, cfa))
        caller = {r: v for r, v in regs.items() if r in (3, 6, 12, 13, 14, 15)}
        for name, rule in rules.items():
            assert rule.startswith("[CFA"), rule
            value = read8(cfa + int(rule[4:-1] or 0))
            caller[16 if name == "RIP" else names[name]] = value
        caller[7] = cfa
        regs = caller
    frames = _frames(binary, core_path)
    assert [(fr.pc, fr.cfa) for fr in frames[:3]] == expected


def test_link_map_when_the_core_has_no_nt_file(zoo: dict[str, Any], tmp_path: Path) -> None:
    for variant in ("gcc-pgo", "bolt-all"):  # PIE and not
        _, binary, core_path = _crash(zoo, variant)
        with_files = Core(core_path).modules(binary)
        raw = bytearray(Path(core_path).read_bytes())
        at = Core(core_path)._notes  # (type, desc offset, desc)
        (_, desc_at, _) = next(n for n in at if n[0] == NT_FILE)
        # the note header's n_type sits 4 + name ("CORE\0" padded to 8) before the desc
        type_at = desc_at - 8 - 4
        assert struct.unpack_from("<I", raw, type_at)[0] == NT_FILE
        struct.pack_into("<I", raw, type_at, 0x4E4F4E45)
        stripped = tmp_path / f"{variant}.core"
        stripped.write_bytes(bytes(raw))
        core = Core(str(stripped))
        assert core.mappings == []
        without = core.modules(binary)
        assert [(os.path.realpath(m.path), m.bias) for m in without] == \
            [(os.path.realpath(m.path), m.bias) for m in with_files]
        frames = backtrace(without, core.threads[0].registers, core.read_memory, INDEXES.get)
        assert [fr.pc for fr in frames] == [fr.pc for fr in _frames(binary, core_path)]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "unsplit", *args], capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT / "plugin")}, cwd=ROOT)


def test_cli_bt(zoo: dict[str, Any]) -> None:
    f, binary, core = _crash(zoo, "clang-mfs-nodebug")
    out = _cli("bt", core, "--exe", binary)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # `unsplit bt` is `unsplit frames` (whose default unwinder is the CFI): its table.
    assert lines[0].startswith("Thread 1 (LWP ") and "SIGSEGV" in lines[0]
    assert "  transfer [cold]  +" in lines[1] and "  run [cold]  +" in lines[2]
    assert "  main [cold]  +" in lines[3] and "outermost" in lines[-1]
    assert _cli("frames", core, "--exe", binary).stdout == out.stdout
    js = json.loads(_cli("bt", core, "--exe", binary, "--json").stdout)
    got = [fr["pc"] for fr in js["threads"][0]["frames"]]
    assert [int(p, 16) for p in got] == [int(x["pc"], 16) for x in f["crash"]["frames"]]
    assert js["threads"][0]["frames"][0]["registers"]["rsp"]


def _one_line_error(out: subprocess.CompletedProcess[str], *words: str,
                    shown: bool = False) -> None:
    """One line on stderr; nothing on stdout, or (`shown`) the frames shown unnamed."""
    assert out.returncode == 1, out
    assert out.stderr.count("\n") == 1, out.stderr
    if shown:
        assert out.stdout.startswith("Thread 1 (LWP ") and "transfer" not in out.stdout
    else:
        assert out.stdout == "", out.stdout
    for w in words:
        assert w in out.stderr, out.stderr


def test_bad_cores(zoo: dict[str, Any], tmp_path: Path) -> None:
    _, binary, core = _crash(zoo, "bolt-all")
    raw = Path(core).read_bytes()
    truncated = tmp_path / "truncated.core"
    truncated.write_bytes(raw[:200])
    _one_line_error(_cli("bt", str(truncated), "--exe", binary), "truncated")
    notes = tmp_path / "notes.core"
    ph = struct.unpack_from("<Q", raw, 32)[0]
    note_off = struct.unpack_from("<Q", raw, ph + 8)[0]  # the first header is PT_NOTE
    notes.write_bytes(raw[: note_off + 100])
    _one_line_error(_cli("bt", str(notes), "--exe", binary), "truncated")
    garbage = tmp_path / "garbage.core"
    garbage.write_bytes(b"not a core at all")
    _one_line_error(_cli("bt", str(garbage), "--exe", binary), "not an ELF")
    _one_line_error(_cli("bt", binary, "--exe", binary), "not a core")
    # the same input through another BOLT strategy: same build-id, other code
    _, other, _ = _crash(zoo, "bolt-random2")
    # whatever can be shown is shown (the frames, unnamed), then the one line
    _one_line_error(_cli("bt", core, "--exe", other), "not a core of", "code differs",
                    shown=True)
    _, pie, _ = _crash(zoo, "gcc-pgo")
    _one_line_error(_cli("bt", core, "--exe", pie), "not a core of", shown=True)


def test_corrupt_stack_ends_the_walk(zoo: dict[str, Any]) -> None:
    _, binary, core_path = _crash(zoo, "gcc-pgo")
    core = Core(core_path)
    regs = dict(core.threads[0].registers)
    regs[7] = 0x10  # rsp nowhere near any memory
    frames = backtrace(core.modules(binary), regs, core.read_memory, INDEXES.get)
    assert len(frames) == 1 and "cannot read memory" in (frames[0].stop_reason or "")


def test_compare_finds_an_invented_frame(zoo: dict[str, Any]) -> None:
    _, binary, core = _crash(zoo, "clang-mfs-nodebug")
    frames = _frames(binary, core)
    pcs = [fr.pc for fr in frames]
    invented = pcs[0] - 25
    # LLDB 22 on this core (NOTES.md): an invented transfer.cold frame where run should be
    assert compare([pcs[0], invented, pcs[2]], frames) == [
        f"frame #1: the debugger has {invented:#x}, the CFI {pcs[1]:#x} (run [cold])"]
    assert compare([pcs[0], invented, *pcs[1:]], frames) == [
        f"debugger frame #1 ({invented:#x}) is not a real frame: the CFI goes from frame #0 "
        f"to {pcs[1]:#x}"]
    assert compare([pcs[0], *pcs[2:]], frames) == [
        f"the debugger skips frame #1 ({pcs[1]:#x}, run [cold])"]
    assert compare(pcs[:3], frames) == []
    # LLDB 19 ends its list in a cold part DWARF describes (test_scenarios): not where it meant to
    assert compare(pcs[:1], frames) == [
        f"the debugger's frames end at frame #0 (transfer [cold]); the CFI goes on to "
        f"{pcs[1]:#x} (run [cold])"]
    assert compare([*pcs, 0x1234], frames)[0].startswith("debugger frame #6 (0x1234) is past")


def test_core_errors_are_unsplit_errors(tmp_path: Path) -> None:
    path = tmp_path / "x.core"
    path.write_bytes(b"\x7fELF\x02\x01" + bytes(58))
    with pytest.raises(UnsplitError):
        Core(str(path))


def test_report_and_register_names(zoo: dict[str, Any]) -> None:
    _, binary, core = _crash(zoo, "gcc-pgo")
    frames = _frames(binary, core)
    pcs = [fr.pc for fr in frames]
    assert compare(pcs[:3], frames) == []
    assert bt_report(frames, compare(pcs[:3], frames)) == \
        bt_report(frames, None) + "\n(the debugger's own frames agree)"
    assert bt_report(frames, compare([pcs[0], pcs[2]], frames)).endswith(
        f"differs:\n  the debugger skips frame #1 ({pcs[1]:#x}, run [cold])")
    assert registers_from_names({"RIP": 1, "rsp": 2, "r12": 3, "eflags": 4}) == \
        {16: 1, 7: 2, 12: 3}
