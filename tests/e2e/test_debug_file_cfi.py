"""The debug file's CFI is what GDB and LLDB unwind moved code with: a copy of a BOLT output
whose `.eh_frame` says a wrong CFA in the crashing cold fragment (16 bytes off, as GDB's
choice among BOLT's duplicate FDEs was on a BOLTed libLLVM) unwinds wrong in plain GDB and
LLDB, and right once they read the file `unsplit debuginfo` made from the intact output: the
frames' pcs are those a gdb run on the intact binary recorded (facts.json), and each caller's
pc is a return address (llvm-objdump-22: the instruction before it is a call ending there).
The same file without its `.debug_frame` leaves both debuggers wrong."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts
from .driver_gdb import GDB
from .driver_lldb import LLDB

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("llvm-objdump-22") is None, reason="no llvm-objdump-22"),
]
VARIANTS = ["bolt-all", "bolt-cdsplit"]


def _damaged(binary: Path, pc: int, out: Path) -> Path:
    """A copy of `binary` whose FDE covering `pc` has every DW_CFA_def_cfa_offset 16 more."""
    from elftools.elf.elffile import ELFFile

    data = bytearray(binary.read_bytes())
    with open(binary, "rb") as f:
        eh = ELFFile(f).get_section_by_name(".eh_frame")
        base = eh["sh_offset"]
    text = subprocess.run(["llvm-dwarfdump-22", "--eh-frame", str(binary)], capture_output=True,
                          text=True, check=True, timeout=60).stdout
    (offset, length), = [(int(m[1], 16), int(m[2], 16)) for m in re.finditer(
        r"^([0-9a-f]+) ([0-9a-f]+) \S+ FDE cie=\S+ pc=([0-9a-f]+)\.\.\.([0-9a-f]+)$", text,
        re.M) if int(m[3], 16) <= pc < int(m[4], 16)]
    changed = 0
    # the FDE's instructions: past length, CIE pointer, pc_begin, pc_range (pcrel sdata4) and
    # an empty augmentation data length, which BOLT's and the compilers' CIEs ("zR") have
    i, end = base + offset + 4 + 4 + 4 + 4 + 1, base + offset + 4 + length
    while i < end:
        if data[i] == 0x0E and data[i + 1] + 16 < 0x80:  # def_cfa_offset, one-byte ULEB
            data[i + 1] += 16
            changed += 1
            i += 2
        else:
            i += 1
    assert changed, "no DW_CFA_def_cfa_offset to damage"
    out.write_bytes(bytes(data))
    out.chmod(0o755)
    return out


def _gdb_pcs(binary: Path, core: Path, debug_dir: Path) -> list[int]:
    run = subprocess.run([GDB, "-nx", "-batch", "-iex", "set debuginfod enabled off", "-iex",
                          f"set debug-file-directory {debug_dir}", "-ex", "set width 0",
                          "-ex", "bt", "-ex", "frame 0", "-ex", "info frame", str(binary),
                          str(core)], capture_output=True, text=True, timeout=120)
    pcs = [int(m, 16) for m in re.findall(r"^#\d+\s+(0x[0-9a-f]+) in ", run.stdout, re.M)]
    frame0 = re.search(r"rip = (0x[0-9a-f]+)", run.stdout)
    assert frame0, run.stdout + run.stderr
    return [int(frame0[1], 16), *pcs]


def _lldb_pcs(binary: Path, core: Path, debug_file: Path | None) -> list[int]:
    argv = [LLDB, "--no-lldbinit", "-b", "-O", "settings set use-color false", "-o",
            f"target create {binary} --core {core}"]
    if debug_file is not None:
        argv += ["-o", f"target symbols add {debug_file}"]
    run = subprocess.run([*argv, "-o", "bt"], capture_output=True, text=True, timeout=120)
    return [int(m, 16) for m in re.findall(r"frame #\d+: (0x[0-9a-f]+)", run.stdout)]


def _called_from(binary: Path, pc: int) -> bool:
    """Whether the instruction just before `pc` is a call that ends at `pc`."""
    for size in (2, 3, 5, 6, 7):
        out = subprocess.run(["llvm-objdump-22", "-d", "--no-show-raw-insn",
                              f"--start-address={pc - size}", f"--stop-address={pc}",
                              str(binary)], capture_output=True, text=True, timeout=60).stdout
        insns = re.findall(r"^\s*([0-9a-f]+):\s+(\S+)", out, re.M)
        if len(insns) == 1 and int(insns[0][0], 16) == pc - size and "call" in insns[0][1]:
            return True
    return False


def _debug_file(binary: Path, out: Path, with_frames: bool) -> Path:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "plugin")}
    made = subprocess.run([sys.executable, "-m", "unsplit", "debuginfo", str(binary), "-o",
                           str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert made.returncode == 0, made.stderr
    if not with_frames:  # the same file as the plugin wrote it before it had CFI: the
        # section renamed in place (llvm-objcopy-22 refuses debug files' empty segments)
        data = out.read_bytes()
        assert data.count(b".debug_frame\0") == 1
        out.write_bytes(data.replace(b".debug_frame\0", b".xdebug_fram\0"))
    return out


@pytest.mark.parametrize("variant", VARIANTS)
def test_debuggers_unwind_with_the_files_cfi(zoo: dict[str, Any], variant: str,
                                             tmp_path: Path) -> None:
    f = facts(zoo, variant, "crash")
    binary, core = ROOT / f["binary"], ROOT / f["crash"]["core"]
    truth = [int(fr["pc"], 16) for fr in f["crash"]["frames"]]
    damaged = _damaged(binary, int(f["crash"]["link_pc"], 16), tmp_path / "crash")
    build_id = f["build_id"]
    for with_frames in (True, False):
        debug_dir = tmp_path / f"debug-{with_frames}"
        where = debug_dir / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
        where.parent.mkdir(parents=True)
        _debug_file(binary, where, with_frames)
        gdb, lldb = _gdb_pcs(damaged, core, debug_dir), _lldb_pcs(damaged, core, where)
        if not with_frames:  # the damage shows: neither debugger reaches main's frame
            assert gdb[:3] != truth[:3] and lldb[:3] != truth[:3], (gdb, lldb)
            continue
        main = 1 + f["crash"]["expected_chain"].index("main")  # GDB's bt ends at main
        assert gdb == truth[:main], [hex(p) for p in gdb]
        assert lldb[:len(truth)] == truth, [hex(p) for p in lldb]
        callers = [pc for pc in truth[1:] if pc < 0x7F0000000000]  # the module's own frames
        assert callers and all(_called_from(binary, pc) for pc in callers), callers
