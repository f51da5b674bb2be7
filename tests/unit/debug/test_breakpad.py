"""unsplit.debug.breakpad: the STACK CFI records LLDB gets for moved fragments say what
llvm-dwarfdump-22 --eh-frame says of the same addresses; the MODULE id; rules Breakpad cannot
say leave a function out; `unsplit lldb-cfi`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from unsplit.debug import breakpad
from unsplit.elf.binary import Binary
from unsplit.errors import Inexpressible
from unsplit.formats.eh_frame import CfaRule, FrameDescription, Row, Rule
from unsplit.index.module_index import ModuleIndex

from ...conftest import ROOT, facts
from ..formats.test_eh_frame import dwarfdump_fdes

NO_DWARF = ["clang-mfs-nodebug", "gcc-pgo-nodebug", "bolt-all", "bolt-random2", "bolt-cdsplit"]
PROGRAMS = ["loop", "recurse", "switch", "except", "crash"]

_TERM = {f"${n}": n.upper() for n in ("rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
                                      *(f"r{i}" for i in range(8, 16)))}


def _as_dwarfdump(rules: str) -> tuple[str, dict[str, str]]:
    """A record's rules in llvm-dwarfdump's words: `.cfa: $rsp 16 + .ra: .cfa -8 + ^` ->
    ("RSP+16", {"RIP": "[CFA-8]"}). Only the shapes x86-64 compilers emit."""
    pairs = re.findall(r"(\S+): ((?:(?!\S+:).)+)", rules)
    cfa, regs = "", {}
    for lhs, rhs in pairs:
        words = rhs.split()
        if lhs == ".cfa":
            assert len(words) == 3 and words[2] == "+", rules
            cfa = f"{_TERM[words[0]]}{int(words[1]):+d}"
            continue
        name = "RIP" if lhs == ".ra" else _TERM[lhs]
        if words == [lhs]:
            continue  # `$rbx: $rbx`: same value, which dwarfdump leaves unsaid
        if words[:1] == [".cfa"] and words[2:] == ["+", "^"]:
            regs[name] = f"[CFA{int(words[1]):+d}]"
        elif words[:1] == [".cfa"] and words[2:] == ["+"]:
            regs[name] = f"CFA{int(words[1]):+d}"
        else:
            regs[name] = _TERM.get(words[0], words[0]) if len(words) == 1 else rhs
    return cfa, regs


def _records(text: str, base: int) -> dict[int, tuple[int, dict[int, tuple[str, dict[str, str]]]]]:
    """start -> (size, {row address: rules}) of the STACK CFI records, file addresses."""
    out: dict[int, tuple[int, dict[int, tuple[str, dict[str, str]]]]] = {}
    current: dict[int, tuple[str, dict[str, str]]] = {}
    for line in text.splitlines():
        m = re.match(r"STACK CFI INIT ([0-9a-f]+) ([0-9a-f]+) (.*)$", line)
        if m:
            start = int(m.group(1), 16) + base
            current = {start: _as_dwarfdump(m.group(3))}
            out[start] = (int(m.group(2), 16), current)
            continue
        m = re.match(r"STACK CFI ([0-9a-f]+) (.*)$", line)
        if m:
            current[int(m.group(1), 16) + base] = _as_dwarfdump(m.group(2))
    return out


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("variant", NO_DWARF)
def test_records_say_what_dwarfdump_says(zoo: dict[str, Any], variant: str,
                                         program: str) -> None:
    """Every record covers one moved fragment's function symbol, and at every row address its
    rules are dwarfdump's rules in effect there (the oracle knows nothing of unsplit)."""
    f = facts(zoo, variant, program)
    path = str(ROOT / f["binary"])
    index = ModuleIndex.open(path)
    with closing(index.binary):
        text = breakpad.for_index(index)
        moved = index.moved_fragments()
        if text is None:
            assert not moved
            return
        head = text.splitlines()[:2]
        build_id = index.binary.build_id
        assert build_id is not None
        assert head[0] == f"MODULE Linux x86_64 {breakpad.module_id(build_id)} {program}"
        assert head[1] == f"INFO CODE_ID {build_id.hex().upper()}"
        records = _records(text, breakpad.base_address(index.binary))
    fdes = dwarfdump_fdes(path)
    assert records
    starts = {fr.start for fr in moved}
    for start, (size, rows) in records.items():
        assert any(start <= s < start + size for s in starts), hex(start)
        covering = [(lo, hi) for lo, hi in fdes if lo <= start < hi]
        assert covering, hex(start)
        for address, rules in rows.items():
            fde = next(((lo, hi) for lo, hi in fdes if lo <= address < hi), None)
            assert fde is not None, hex(address)
            table = fdes[fde]
            in_effect = table[max(a for a in table if a <= address)]
            assert rules == in_effect, (hex(address), rules, in_effect)


def test_module_id_is_the_guid_of_the_build_id() -> None:
    build_id = bytes.fromhex("665ba2f41004e2ac38d5c3cdf9c45a656758a88b")
    assert breakpad.module_id(build_id) == "F4A25B660410ACE238D5C3CDF9C45A650"
    assert breakpad.module_id(bytes.fromhex("0102030405060708")) == \
        "040302010605080700000000000000000"


def _fd(rows: list[Row]) -> FrameDescription:
    return FrameDescription(".eh_frame", 0, 0x1000, 0x1040, 16, False, tuple(rows))


def test_expressions_and_dropped_rules() -> None:
    """A CFA from an expression (stack realignment: *(rbp-8)), a register saved at an
    expression, and a rule dropped by a later row (`same` spelled out, since LLDB copies the
    previous row)."""
    realigned = CfaRule(None, 0, bytes([0x76, 0x78, 0x06]))  # DW_OP_breg6 -8; DW_OP_deref
    ra = Rule("offset", -8)
    rows = [Row(0x1000, CfaRule(7, 16), {3: Rule("offset", -16), 16: ra}),
            Row(0x1010, realigned, {6: Rule("expression", expr=b"\x70\x08"), 16: ra}),
            Row(0x1020, CfaRule(7, 8), {16: ra})]
    lines = breakpad.stack_cfi([_fd(rows)], 0x1000, 0x1040, 0)
    assert lines == [
        "STACK CFI INIT 1000 40 .cfa: $rsp 16 + $rbx: .cfa -16 + ^ .ra: .cfa -8 + ^",
        "STACK CFI 1010 .cfa: $rbp -8 + ^ $rbp: $rax 8 + ^ .ra: .cfa -8 + ^ $rbx: $rbx",
        "STACK CFI 1020 .cfa: $rsp 8 + .ra: .cfa -8 + ^ $rbp: $rbp",
    ]


@pytest.mark.parametrize("rules", [
    {16: Rule("undefined")},                         # the outermost frame
    {16: Rule("offset", -8), 17: Rule("offset", -24)},  # an xmm register
    {16: Rule("val_expression", expr=bytes([0x1A]))},     # DW_OP_and: not in Breakpad's language
    {16: Rule("val_expression", expr=bytes([0x22]))},     # DW_OP_plus on the CFA alone: underflow
])
def test_what_breakpad_cannot_say_is_left_out(rules: dict[int, Rule]) -> None:
    with pytest.raises(Inexpressible):
        breakpad.stack_cfi([_fd([Row(0x1000, CfaRule(7, 8), rules)])], 0x1000, 0x1040, 0)


def test_cli_writes_where_lldb_looks(zoo: dict[str, Any], tmp_path: Path) -> None:
    moved = str(ROOT / facts(zoo, "clang-mfs-nodebug", "switch")["binary"])
    dwarf = str(ROOT / facts(zoo, "clang-mfs", "switch")["binary"])

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "unsplit", "lldb-cfi", *args],
                              capture_output=True, text=True,
                              env=dict(os.environ, UNSPLIT_CACHE=str(tmp_path)))

    first = run("--json", moved, dwarf)
    assert first.returncode == 0, first.stderr
    made, skipped = json.loads(first.stdout)
    with closing(Binary(moved)) as b:
        assert b.build_id is not None
        assert made["path"] == breakpad.cache_path(
            b.build_id, str(tmp_path / f"lldb-cfi-v{breakpad.FORMAT_VERSION}"))
    assert made["written"] and made["functions"] >= 1
    assert "DWARF" in skipped["skipped"] and skipped["path"] is None
    assert json.loads(run("--json", moved).stdout)[0]["written"] is False  # already there
    printed = run("--print", moved)
    assert printed.stdout == Path(made["path"]).read_text() == Path(made["kept"]).read_text()
    bad = run(moved, str(tmp_path / "nothing"))
    assert bad.returncode == 1 and "nothing: " in bad.stderr and "Traceback" not in bad.stderr
    assert made["path"] in bad.stdout or "already in" in bad.stdout


def test_a_file_says_which_binary_it_was_made_from(zoo: dict[str, Any], tmp_path: Path) -> None:
    """Two BOLT outputs of one input share a build-id, so a cache entry by build-id may hold
    the other's text: its INFO GENERATOR record (a digest of the file) tells them apart."""
    all_fragments = ModuleIndex.open(str(ROOT / facts(zoo, "bolt-all", "switch")["binary"]))
    random2 = ModuleIndex.open(str(ROOT / facts(zoo, "bolt-random2", "switch")["binary"]))
    assert all_fragments.binary.build_id == random2.binary.build_id
    text = breakpad.for_index(all_fragments)
    assert text is not None and text.splitlines()[2].startswith(breakpad.GENERATOR)
    path = tmp_path / "x.debug"
    path.write_text(text)
    assert breakpad.made_from(str(path), all_fragments.binary)
    assert not breakpad.made_from(str(path), random2.binary)
    assert not breakpad.made_from(str(tmp_path / "missing"), random2.binary)


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("variant", NO_DWARF)
def test_moved_starts_are_the_fragments_after_the_first(zoo: dict[str, Any], variant: str,
                                                         program: str) -> None:
    """The starts the symbol file is made for (ModuleIndex.moved_starts, which makes no
    fragment) are the fixture facts' fragments that are not their function's first."""
    f = facts(zoo, variant, program)
    expected = sorted({int(fr["start"], 16) for fn in f["split_functions"].values()
                       for fr in fn["fragments"][1:]})
    index = ModuleIndex.open(str(ROOT / f["binary"]))
    with closing(index.binary):
        assert expected and index.moved_starts() == expected



@pytest.mark.parametrize("variant", NO_DWARF)
def test_a_module_is_split_when_a_fragment_moved(zoo: dict[str, Any], variant: str) -> None:
    """ModuleIndex.has_moved_fragments (what decides whether a module gets a debug file,
    without listing its moved fragments) is whether the fixture facts have a fragment that is
    not its function's first; BOLT's input, in one piece, has none."""
    f = facts(zoo, variant, "crash")
    moved = [fr for fn in f["split_functions"].values() for fr in fn["fragments"][1:]]
    paths = [(ROOT / f["binary"], bool(moved))]
    if "input" in f:
        paths.append((ROOT / f["input"], False))
    for path, split in paths:
        index = ModuleIndex.open(str(path))
        with closing(index.binary):
            assert index.has_moved_fragments() is split, path

# Every call frame instruction the direct translation (breakpad._direct) takes, in two
# functions: remember/restore state, def_cfa_register, advance_loc2/4, GNU_args_size, register,
# offset_extended_sf, restore to the CIE's rule and to none.
CFI_SHAPES = """    .text
    .globl f_state
    .type f_state,@function
f_state:
    .cfi_startproc
    pushq %rbp
    .cfi_def_cfa_offset 16
    .cfi_offset %rbp, -16
    movq %rsp, %rbp
    .cfi_def_cfa_register %rbp
    pushq %rbx
    .cfi_offset %rbx, -24
    testq %rdi, %rdi
    je 1f
    .cfi_remember_state
    popq %rbx
    .cfi_restore %rbx
    popq %rbp
    .cfi_def_cfa %rsp, 8
    .cfi_restore %rbp
    ret
1:
    .cfi_restore_state
    .skip 300, 0x90
    .cfi_escape 0x2e, 0x10
    popq %rbx
    popq %rbp
    .cfi_def_cfa %rsp, 8
    ret
    .cfi_endproc
    .size f_state, .-f_state

    .globl f_regs
    .type f_regs,@function
f_regs:
    .cfi_startproc
    movq %rbx, %rax
    .cfi_register %rbx, %rax
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    .cfi_offset %r12, 8
    .skip 70000, 0x90
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    .cfi_restore %r12
    movq %rax, %rbx
    .cfi_restore %rbx
    ret
    .cfi_endproc
    .size f_regs, .-f_regs
"""


@pytest.mark.parametrize("path", ["direct", "general"])
def test_every_instruction_shape_says_what_dwarfdump_says(tmp_path: Path, path: str,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """Both ways an FDE becomes records (straight from its bytes, or decoded rows) give, at
    every row address llvm-dwarfdump-22 prints, the rules it prints there."""
    source = tmp_path / "shapes.s"
    source.write_text(CFI_SHAPES)
    lib = tmp_path / "shapes.so"
    subprocess.run(["clang-22", "-nostdlib", "-shared", "-fuse-ld=lld", "-Wl,--build-id",
                    str(source), "-o", str(lib)], check=True, capture_output=True)

    def refuse(*args: Any) -> None:
        raise AssertionError(f"the {path} path was not taken")

    if path == "direct":
        monkeypatch.setattr(breakpad, "_general", refuse)
    else:
        def unusual(*args: Any) -> None:
            raise breakpad._Unusual
        monkeypatch.setattr(breakpad, "_direct", unusual)
    fdes = dwarfdump_fdes(str(lib))
    with closing(Binary(str(lib))) as binary:
        starts = [f.value for f in binary.functions if f.name in ("f_state", "f_regs")]
        text = breakpad.symbol_file(binary, starts)
        assert text is not None
        records = _records(text, breakpad.base_address(binary))
    assert len(starts) == 2 and sorted(records) == sorted(starts)
    for start, (size, rows) in records.items():
        table = fdes[(start, start + size)]
        assert sorted(rows) == sorted(table), (hex(start), rows, table)
        for address, rules in rows.items():
            assert rules == table[address], (hex(address), rules, table[address])


def test_save_over_a_debug_file_at_the_build_id_path(zoo: dict[str, Any], tmp_path: Path
                                                      ) -> None:
    """The plugin's debug file (binary DWARF, not UTF-8) kept at a module's build-id path, then
    the module's CFI text saved there (an LLDB that takes split functions as one span, or `bb
    debuginfo off`): the text replaces it. (UnicodeDecodeError before, at LLDB 19's first
    `process launch` on gcc-pgo-nodebug.)"""
    f = facts(zoo, "gcc-pgo-nodebug", "crash")
    index = ModuleIndex.open(str(ROOT / f["binary"]))
    text = breakpad.for_index(index)
    assert text is not None and index.binary.build_id
    path = Path(breakpad.cache_path(index.binary.build_id, str(tmp_path)))
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x7fELF\x02\x01\x01\xd8\xff" * 20)
    assert breakpad.save(index, text, root=str(tmp_path)) == (str(path), True)
    assert path.read_text() == text
    assert breakpad.save(index, text, root=str(tmp_path)) == (str(path), False)
