"""The debug file's `.debug_frame`: one FDE per fragment of each split procedure (facts.json's
fragments, from nm), whose rules at every address are those llvm-dwarfdump-22 reads in the
module's own `.eh_frame` there (the zoo's outputs have one FDE per fragment); where two FDEs
start at a fragment, the unwinder's choice at each address. Read back with llvm-dwarfdump-22
--debug-frame; --verify finds nothing."""

from __future__ import annotations

import re
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

from ... import bolt_truth
from ...conftest import ROOT, facts
from .test_debuginfo import _unsplit, _write

pytestmark = pytest.mark.skipif(shutil.which("llvm-dwarfdump-22") is None,
                                reason="llvm-dwarfdump-22 is not installed")

CASES = [("bolt-all", "crash"), ("bolt-cdsplit", "crash"), ("bolt-reverse", "recurse"),
         ("bolt-randomN", "except"), ("gcc-pgo-nodebug", "crash"),
         ("clang-mfs-nodebug", "loop")]
_FDE = re.compile(r"^\S+ \S+ \S+ FDE cie=\S+ pc=([0-9a-f]+)\.\.\.([0-9a-f]+)$")
_ROW = re.compile(r"^  0x([0-9a-f]+): (.*)$")


def fdes(path: Path, section: str) -> dict[tuple[int, int], list[tuple[int, str]]]:
    """Each FDE's [start, end) and rows (address, rules) as llvm-dwarfdump-22 prints them.
    A register whose rule is `same` is left out: what GDB and LLDB do with a callee-saved
    register that has no rule (the file says `same` where the source dropped a rule)."""
    text = bolt_truth.run("llvm-dwarfdump-22", f"--{section}", path)
    out: dict[tuple[int, int], list[tuple[int, str]]] = {}
    rows: list[tuple[int, str]] = []
    for line in text.splitlines():
        if m := _FDE.match(line):
            rows = out.setdefault((int(m[1], 16), int(m[2], 16)), [])
        elif m := _ROW.match(line):
            rules = ", ".join(r for r in m[2].replace(": ", ", ").split(", ")
                              if not r.endswith("=same"))
            rows.append((int(m[1], 16), rules))
    return out


def _at(rows: list[tuple[int, str]], address: int) -> str | None:
    found = None
    for at, rules in rows:
        if at <= address:
            found = rules
    return found


@pytest.mark.parametrize(("variant", "program"), CASES)
def test_debug_frame_is_the_fragments_cfi(zoo: dict[str, Any], variant: str, program: str,
                                          tmp_path: Path) -> None:
    f = facts(zoo, variant, program)
    binary = ROOT / f["binary"]
    out = tmp_path / "x.debug"
    report = _write(binary, out)
    written = fdes(out, "debug-frame")
    module = fdes(binary, "eh-frame")
    fragments = {(int(g["start"], 16), int(g["end"], 16))
                 for info in f["split_functions"].values() for g in info["fragments"]}
    # every fragment with an FDE of its own in the module has exactly one in the file
    expected = {r for r in fragments if r in module}
    assert expected and expected <= set(written), sorted(expected - set(written))
    assert report["cfi_fdes"] == len(written)
    for (start, end), rows in written.items():
        assert (start, end) in fragments, hex(start)
        source = module[start, end]
        for address in range(start, end):
            assert _at(rows, address) == _at(source, address), hex(address)
    verify = bolt_truth.run("llvm-dwarfdump-22", "--verify", out)
    assert "No errors." in verify, verify
    said = _unsplit("debuginfo", str(binary), "-o", str(tmp_path / "y.debug")).stdout
    assert f"call frame information: {len(written)} FDEs (.debug_frame)" in said, said


def _duplicate(binary: Path, target: tuple[int, int], length: int, avoid: list[int],
               out: Path) -> None:
    """A copy of `binary` where another function's FDE is made a second, shorter FDE of the
    fragment `target` ([start, end)), listed after the fragment's own in `.eh_frame_hdr`:
    the shape of BOLT's duplicate FDEs (one start, two lengths)."""
    data = bytearray(binary.read_bytes())
    with open(binary, "rb") as f:
        elf = ELFFile(f)
        eh, hdr = elf.get_section_by_name(".eh_frame"), elf.get_section_by_name(".eh_frame_hdr")
        eh_addr, eh_off = eh["sh_addr"], eh["sh_offset"]
        hdr_addr, hdr_off = hdr["sh_addr"], hdr["sh_offset"]
    text = bolt_truth.run("llvm-dwarfdump-22", "--eh-frame", binary)
    victim = next(int(m[1], 16) for m in re.finditer(
        r"^([0-9a-f]+) \S+ \S+ FDE cie=\S+ pc=([0-9a-f]+)\.\.\.([0-9a-f]+)$", text, re.M)
        if not any(int(m[2], 16) <= a < int(m[3], 16) for a in [*avoid, *target]))
    field = eh_off + victim + 8  # pc_begin (pcrel sdata4), then pc_range
    struct.pack_into("<iI", data, field, target[0] - (eh_addr + victim + 8), length)
    count = struct.unpack_from("<I", data, hdr_off + 8)[0]
    pairs = list(struct.iter_unpack("<ii", bytes(data[hdr_off + 12:hdr_off + 12 + 8 * count])))
    pairs = [(target[0] - hdr_addr, fde) if fde == eh_addr + victim - hdr_addr else (loc, fde)
             for loc, fde in pairs]
    moved = eh_addr + victim - hdr_addr
    pairs.sort(key=lambda p: (p[0], p[1] == moved))  # the copy after the fragment's own
    for i, (loc, fde) in enumerate(pairs):
        struct.pack_into("<ii", data, hdr_off + 12 + 8 * i, loc, fde)
    out.write_bytes(bytes(data))


def test_debug_frame_takes_the_unwinders_choice_among_duplicates(zoo: dict[str, Any],
                                                                 tmp_path: Path) -> None:
    """Two FDEs start at a cold fragment: the file says, at each address, the rules of the last
    one `.eh_frame_hdr` lists that covers it (the plugin's CFI walk: unsplit.elf.cfi_table),
    not the first one found: the short copy's for its bytes, the fragment's own after them."""
    f = facts(zoo, "bolt-all", "crash")
    frag = next((int(g["start"], 16), int(g["end"], 16))
                for g in f["split_functions"]["transfer"]["fragments"] if g["fragment"] != "hot"
                and int(g["start"], 16) <= int(f["crash"]["link_pc"], 16) < int(g["end"], 16))
    binary = tmp_path / "crash"
    _duplicate(ROOT / f["binary"], frag, 0x10, [int(fr["pc"], 16) for fr in
                                                f["crash"]["frames"]], binary)
    module = fdes(binary, "eh-frame")
    own, copy = module[frag], module[frag[0], frag[0] + 0x10]
    out = tmp_path / "x.debug"
    _write(binary, out)
    written = fdes(out, "debug-frame")
    assert list(written.get(frag, [])) and frag in written, sorted(written)
    rows = written[frag]
    expected = {a: _at(copy if a < frag[0] + 0x10 else own, a) for a in range(*frag)}
    assert {a: _at(rows, a) for a in range(*frag)} == expected
    assert any(_at(own, a) != expected[a] for a in range(*frag))  # the choice shows


def _covered(fdes_of: dict[tuple[int, int], list[tuple[int, str]]], start: int, end: int) -> bool:
    """Whether FDEs with rows cover every byte of [start, end)."""
    at = start
    while at < end:
        reach = max((e for s, e in fdes_of if s <= at < e and fdes_of[s, e]), default=at)
        if reach == at:
            return False
        at = reach
    return True


@pytest.mark.parametrize(("variant", "program"), [("bolt-all", "crash"),
                                                  ("bolt-randomN", "except"),
                                                  ("bolt-cdsplit", "crash")])
def test_padding_after_an_fde_is_not_code_without_cfi(zoo: dict[str, Any], variant: str,
                                                      program: str, tmp_path: Path) -> None:
    """Stripped of its symbol table (BAT kept), a BOLT output's fragments have no size: the
    index takes each up to the next fragment's start, over the padding after its function.
    The count of fragments in part without an FDE is then the one their symbols' sizes
    (nm, facts.json) give with llvm-dwarfdump-22's FDEs: padding is not code without CFI."""
    f = facts(zoo, variant, program)
    binary = ROOT / f["binary"]
    module = fdes(binary, "eh-frame")
    expected = sum(not _covered(module, int(g["start"], 16), int(g["end"], 16))
                   for info in f["split_functions"].values() for g in info["fragments"]
                   if int(g["end"], 16) > int(g["start"], 16))
    stripped = tmp_path / program
    bolt_truth.run("llvm-strip-22", "--strip-all", "--keep-section=.note.bolt_bat", binary,
                   "-o", stripped)
    report = _write(stripped, tmp_path / "x.debug")
    assert report["cfi_fdes"] and report["cfi_fragments_not_whole"] == expected, report
