"""`.split_info` (shared/specs/split-info-and-esl.md §1): worked example, errors, round trips,
and a real ELF (gcc's `work.cold`) annotated here and read through Binary and the source."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from unsplit.errors import DecodeError, UnsupportedVersion
from unsplit.formats import esl
from unsplit.formats import split_info as si
from unsplit.formats.split_info import SplitRecord

EXAMPLE = SplitRecord(0x401006, 0x405000, 0x10, 2)
EXAMPLE_BYTES = bytes.fromhex(
    "534c4954"
    "0100"
    "0000"
    "01000000"
    "00000000"  # SLIT, version 1, count 1
    "0610400000000000"
    "0050400000000000"
    "10000000"
    "02000000"
)


def test_worked_example_bytes() -> None:
    assert si.encode([EXAMPLE]) == EXAMPLE_BYTES
    assert si.decode(EXAMPLE_BYTES) == (EXAMPLE,)


def test_worked_example_layout() -> None:
    [proc] = si.sp_init(si.decode(EXAMPLE_BYTES), [("foo", 0x401000, 0x10)])
    assert [(r.start, r.end) for r in si.sp_ranges(proc)] == [
        (0x401000, 0x401006),
        (0x405000, 0x405010),
        (0x401008, 0x401010),
    ]
    assert si.sp_size(proc) == 30
    assert [proc.address_of(o) for o in (0, 4, 13)] == [0x401000, 0x401004, 0x405007]
    assert proc.address_of(30) is None and proc.address_of(-1) is None
    # The branch stands for the moved code: its bytes have the moved range's first offset.
    assert proc.logical_offset(0x401006) == proc.logical_offset(0x401007) == 6
    assert proc.logical_offset(0x401008) == 22
    assert proc.logical_offset(0x401010) is None


def test_nested_move_is_expanded_in_place() -> None:
    outer = SplitRecord(0x1004, 0x9000, 0x20, 2)  # foo [0x1000, 0x1010) -> 0x9000
    inner = SplitRecord(0x9008, 0xA000, 0x8, 5)  # inside the moved code -> 0xa000
    other = SplitRecord(0x2002, 0xB000, 4, 0)  # bar, branch_size 0
    procs = si.sp_init(
        si.decode(si.encode([inner, other, outer])),
        [("foo", 0x1000, 0x10), ("bar", 0x2000, 4), ("foo.cold", 0x9000, 0x20)],
    )
    assert [p.name for p in procs] == ["foo", "bar"]
    foo, bar = procs
    assert [(r.start, r.end, r.logical_start) for r in foo.ranges] == [
        (0x1000, 0x1004, 0),
        (0x9000, 0x9008, 4),
        (0xA000, 0xA008, 12),
        (0x900D, 0x9020, 20),
        (0x1006, 0x1010, 39),
    ]
    assert foo.size == 49 and foo.logical_offset(0x900A) == 12
    assert [(r.start, r.end) for r in bar.ranges] == [
        (0x2000, 0x2002),
        (0xB000, 0xB004),
        (0x2002, 0x2004),
    ]


@pytest.mark.parametrize(
    ("data", "offset", "words"),
    [
        (b"SLIT\x01\x00", 0, "truncated header"),
        (b"TILS" + EXAMPLE_BYTES[4:], 0, "bad magic"),
        (EXAMPLE_BYTES[:8] + b"\x02" + EXAMPLE_BYTES[9:], 8, "count 2 larger"),
        (EXAMPLE_BYTES[:-1], 8, "count 1 larger"),
    ],
)
def test_malformed_section(data: bytes, offset: int, words: str) -> None:
    with pytest.raises(DecodeError) as e:
        si.decode(data)
    assert e.value.section == ".split_info" and e.value.offset == offset
    assert words in str(e.value)


def test_unknown_version() -> None:
    with pytest.raises(UnsupportedVersion, match="version 2"):
        si.decode(EXAMPLE_BYTES[:4] + b"\x02" + EXAMPLE_BYTES[5:])


def _init_error(records: list[SplitRecord], funcs: list[tuple[str, int, int]]) -> DecodeError:
    with pytest.raises(DecodeError) as e:
        si.sp_init(si.decode(si.encode(records)), funcs)
    assert e.value.section == ".split_info"
    return e.value


def test_orphan_branch() -> None:
    e = _init_error([EXAMPLE], [("bar", 0x400000, 0x10)])
    assert e.offset == 16 and "no procedure" in e.message


def test_overlapping_moved_ranges() -> None:
    e = _init_error([EXAMPLE, SplitRecord(0x40100A, 0x40500F, 4, 2)], [("foo", 0x401000, 0x10)])
    assert e.offset == 40 and "overlaps" in e.message


def test_overlapping_branches() -> None:
    e = _init_error([EXAMPLE, SplitRecord(0x401007, 0x406000, 4, 2)], [("foo", 0x401000, 0x10)])
    assert "branch" in e.message and "overlaps" in e.message


def test_moved_into_own_body() -> None:
    e = _init_error([SplitRecord(0x401002, 0x401008, 4, 2)], [("foo", 0x401000, 0x10)])
    assert "its own procedure" in e.message


def test_cycle_of_moved_ranges() -> None:
    a = SplitRecord(0x5004, 0x6000, 0x10, 2)  # branch inside b's moved range
    b = SplitRecord(0x6004, 0x5000, 0x10, 2)  # branch inside a's moved range
    e = _init_error([a, b], [("foo", 0x5000, 0x10), ("bar", 0x6000, 0x10)])
    assert "cycle" in e.message


# --- round trips ------------------------------------------------------------------------------


@dataclass
class Built:
    records: list[SplitRecord]
    start: int
    end: int
    expected: list[tuple[int, int]]  # logical layout, (start, end) in original order
    branch_logical: dict[int, int]  # branch_addr -> logical offset the moved code starts at


Tree = list  # items: int (code bytes) or (branch_size, Tree)

_tree = st.recursive(
    st.lists(st.integers(1, 40), min_size=1, max_size=3),
    lambda children: st.lists(
        st.one_of(st.integers(1, 40), st.tuples(st.integers(1, 6), children)),
        min_size=1,
        max_size=4,
    ),
    max_leaves=12,
)


def _build(tree: Tree, start: int = 0x10000) -> Built:
    """Place a procedure tree: moved children go to fresh far-away addresses, in order."""
    records: list[SplitRecord] = []
    expected: list[tuple[int, int]] = []
    free = [0x800000]
    after_branch = [False]  # code right after a branch (or a move's start) opens a range
    logical = [0]
    branch_logical: dict[int, int] = {}

    def place(items: Tree, at: int) -> int:
        cur = at
        for item in items:
            if isinstance(item, int):
                if expected and expected[-1][1] == cur and not after_branch[0]:
                    expected[-1] = (expected[-1][0], cur + item)  # consecutive code: one range
                else:
                    expected.append((cur, cur + item))
                after_branch[0] = False
                cur += item
                logical[0] += item
            else:
                branch_size, child = item
                vaddr = free[0]
                free[0] += 0x10000
                after_branch[0] = True
                branch_logical[cur] = logical[0]
                size = place(child, vaddr) - vaddr
                after_branch[0] = True
                records.append(SplitRecord(cur, vaddr, size, branch_size))
                cur += branch_size
        return cur

    end = place(tree, start)
    return Built(records, start, end, expected, branch_logical)


@settings(max_examples=150, deadline=None)
@given(_tree)
def test_round_trip_random_splits(tree: Tree) -> None:
    built = _build(tree)
    if not built.records:
        return  # not split: sp_init reports only split procedures
    records = si.decode(si.encode(built.records))
    assert sorted(records, key=lambda r: (r.branch_addr, r.vaddr)) == list(records)
    assert set(records) == set(built.records)
    [proc] = si.sp_init(records, [("f", built.start, built.end - built.start)])
    assert [(r.start, r.end) for r in proc.ranges] == built.expected
    assert proc.size == sum(e - s for s, e in built.expected)
    offset = 0
    for s, e in built.expected:
        for a in range(s, e):
            assert proc.address_of(offset) == a
            assert proc.logical_offset(a) == offset
            offset += 1
    for r in records:  # every branch byte stands for its moved code
        for a in range(r.branch_addr, r.branch_end):
            assert proc.logical_offset(a) == built.branch_logical[r.branch_addr]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120))
def test_random_bytes_only_raise_decode_error(data: bytes) -> None:
    try:
        si.decode(data)
    except DecodeError:
        pass
    try:
        si.decode(si.encode([])[:8] + data)
    except DecodeError:
        pass


_addr = st.integers(0x1000, 0x1100)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.builds(SplitRecord, _addr, _addr, st.integers(0, 0x40), st.integers(0, 8)), max_size=6
    ),
    st.lists(st.tuples(st.sampled_from("abc"), _addr, st.integers(0, 0x80)), max_size=4),
)
def test_random_records_only_raise_decode_error(
    records: list[SplitRecord], funcs: list[tuple[str, int, int]]
) -> None:
    try:
        procs = si.sp_init(si.decode(si.encode(records)), funcs)
    except DecodeError:
        return
    for p in procs:  # whatever was accepted is a bijection between offsets and addresses
        for o in range(p.size):
            a = p.address_of(o)
            assert a is not None and p.logical_offset(a) == o


# --- a real ELF, annotated here ----------------------------------------------------------------

PROG = r"""
#include <stdio.h>
__attribute__((cold, noinline)) void report(const char *m, int i) {
    fprintf(stderr, "%s %d\n", m, i);
}
__attribute__((noinline)) int work(int n) {
    int s = 0;
    for (int i = 0; i < n; i++) {
        if (i == 1000003) {
            report("odd", i);
            s -= 7;
        }
        s += i * i;
    }
    return s;
}
int main(int argc, char **argv) { (void)argv; return work(argc * 10) & 0x7f; }
"""


@dataclass
class Annotated:
    path: Path
    work: tuple[int, int]  # [start, end)
    cold: tuple[int, int]
    branch: tuple[int, int]  # the jump in work to work.cold: address, size


def _need(*tools: str) -> None:
    for t in tools:
        if shutil.which(t) is None:
            pytest.skip(f"{t} not installed")


@pytest.fixture(scope="module")
def annotated(tmp_path_factory: pytest.TempPathFactory) -> Annotated:
    _need("gcc", "objdump", "llvm-objcopy-22")
    d = tmp_path_factory.mktemp("split_info")
    (d / "prog.c").write_text(PROG)
    exe = d / "prog"
    subprocess.run(["gcc", "-O2", "-o", exe, d / "prog.c"], check=True)
    syms = subprocess.run(["nm", "-S", exe], check=True, capture_output=True, text=True).stdout
    sizes: dict[str, tuple[int, int]] = {}
    for line in syms.splitlines():
        parts = line.split()
        if len(parts) == 4:
            sizes[parts[3]] = (int(parts[0], 16), int(parts[0], 16) + int(parts[1], 16))
    if "work.cold" not in sizes:
        pytest.fail("gcc made no work.cold (its cold attribute no longer splits work)")
    dis = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", exe], check=True, capture_output=True, text=True
    ).stdout
    insns = [(int(m[1], 16), m[2]) for m in re.finditer(r"^\s+([0-9a-f]+):\t(.*)$", dis, re.M)]
    addrs = [a for a, _ in insns]
    work = sizes["work"]
    branch = next(
        (a, addrs[i + 1] - a)
        for i, (a, text) in enumerate(insns)
        if work[0] <= a < work[1] and "<work.cold>" in text
    )
    cold = sizes["work.cold"]
    rec = SplitRecord(branch[0], cold[0], cold[1] - cold[0], branch[1])
    # Three rows (line numbers made up): the entry, the cold block, the code after the branch
    # back in work; pcs are logical offsets (§1, §3).
    before = branch[0] - work[0]
    rows = [
        esl.EslRow(0, 1, 5),
        esl.EslRow(before, 1, 7, 13),
        esl.EslRow(before + cold[1] - cold[0], 1, 11),
    ]
    table = esl.encode_opt_table(
        [esl.OptProc(work[0], 1, 4, 1, ("prog.c",), esl.encode_rows(rows, 4, 1))]
    )
    (d / "split_info.bin").write_bytes(si.encode([rec]))
    (d / "opt_table.bin").write_bytes(table)
    out = d / "prog.annotated"
    add = [f".split_info={d / 'split_info.bin'}", f".opt_table={d / 'opt_table.bin'}"]
    subprocess.run(["llvm-objcopy-22", "--add-section", add[0], "--add-section", add[1], exe, out],
                   check=True)  # fmt: skip
    # Alignments are set before sections are added: a second pass (§1 asks for 8).
    subprocess.run(["llvm-objcopy-22", "--set-section-alignment", ".split_info=8", out], check=True)
    return Annotated(out, work, cold, branch)


def test_elf_procedures(annotated: Annotated) -> None:
    from unsplit.elf.binary import Binary
    from unsplit.index.sources import split_info as source

    src = source.SplitInfoSource(Binary(str(annotated.path)))
    [proc] = src.procedures()
    work, cold, (baddr, bsize) = annotated.work, annotated.cold, annotated.branch
    assert proc.name == "work"
    # Fragments are the code as it lies: the body with its branch, and the moved piece.
    assert [(f.name, f.start, f.end, f.symbol, f.source) for f in proc.fragments] == [
        ("hot", work[0], work[1], "work", "split_info"),
        ("cold", cold[0], cold[1], "work.cold", "split_info"),
    ]
    before = baddr - work[0]
    assert [f.logical_start for f in proc.fragments] == [0, before]
    assert proc.logical_offset(cold[0] + 3) == before + 3
    [sp] = src.split_procedures()
    assert sp.logical_offset(baddr) == before
    # The exact §1 mapping, past the branch too, is the source's.
    after = before + cold[1] - cold[0]
    assert src.logical_offset(baddr + bsize) == after
    assert src.logical_offset(baddr + 1) == before
    assert src.address_of(work[0], after) == baddr + bsize
    assert src.address_of(work[0], before + 3) == cold[0] + 3
    assert src.logical_offset(work[1]) is None


def test_elf_line_rows(annotated: Annotated) -> None:
    from unsplit.elf.binary import Binary
    from unsplit.index.sources import split_info as source

    src = source.SplitInfoSource(Binary(str(annotated.path)))
    rows = src.line_rows()
    assert rows == sorted(rows, key=lambda r: r.address)
    assert {r.source for r in rows} == {"esl"}
    got = {(r.address, r.line, r.column) for r in rows}
    work, cold, (baddr, bsize) = annotated.work, annotated.cold, annotated.branch
    assert {(work[0], 5, 0), (cold[0], 7, 13), (baddr, 7, 13), (baddr + bsize, 11, 0)} <= got
    lines = source.EslLines(src.line_info())
    assert lines.lookup(cold[0] + 5).line == 7  # type: ignore[union-attr]
    assert lines.lookup(baddr + 1).line == 7  # type: ignore[union-attr]
    assert lines.lookup(work[1] - 1).line == 11  # type: ignore[union-attr]
    assert lines.lookup(work[1]) is None and lines.lookup(cold[1]) is None
    assert src.line_info().partial == {}


def _files_entry(table: bytes) -> list[str]:
    """The paths of the first FILES entry of an `.opt_table`, read with no unsplit code (§2: tag
    1, ULEB length, then a ULEB count and NUL-terminated paths; these values are all < 128)."""
    at = 0
    while table[at] != 1:
        at += 2 + table[at + 1]
    names = table[at + 3:at + 2 + table[at + 1]].split(b"\0")
    assert len(names) == table[at + 2] + 1 and names[-1] == b""
    return [n.decode() for n in names[:-1]]


def test_esl_files_keep_their_directories(annotated: Annotated, tmp_path: Path) -> None:
    """Two `ledger.h` in different directories: `lines --json` and `where --json` report each
    row's file as the table gives it (as DWARF consumers name a file entry), with its path."""
    import json
    import os
    import sys

    work, cold, (baddr, _) = annotated.work, annotated.cold, annotated.branch
    before = baddr - work[0]
    rows = [esl.EslRow(0, 1, 5), esl.EslRow(before, 2, 7), esl.EslRow(before + 4, 3, 9)]
    files = ("src/prog.c", "include/ledger.h", "lib/./ledger.h")
    table = esl.encode_opt_table(
        [esl.OptProc(work[0], 1, 4, 1, files, esl.encode_rows(rows, 4, 1))])
    new = tmp_path / "opt_table.bin"
    new.write_bytes(table)
    out = tmp_path / "prog.dirs"
    subprocess.run(["llvm-objcopy-22", "--update-section", f".opt_table={new}",
                    annotated.path, out], check=True)  # fmt: skip
    dumped = tmp_path / "dumped.bin"
    subprocess.run(["llvm-objcopy-22", "--dump-section", f".opt_table={dumped}", out, os.devnull],
                   check=True)  # fmt: skip
    table_files = _files_entry(dumped.read_bytes())
    assert table_files == list(files)

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[3] / "plugin")}

    def cli(*args: str) -> str:
        return subprocess.run([sys.executable, "-m", "unsplit", *args], check=True, env=env,
                              capture_output=True, text=True).stdout

    got = json.loads(cli("lines", str(out), "work", "--json"))
    by_address = {int(r["address"], 16): r for r in got}
    for address, number in ((work[0], 1), (cold[0], 2), (cold[0] + 4, 3)):
        want = table_files[number - 1]
        assert (by_address[address]["file"], by_address[address]["path"]) == \
            (want, os.path.normpath(want)), hex(address)
    where = [json.loads(line) for line in
             cli("where", "--exe", str(out), "--json", hex(cold[0] + 1), hex(cold[0] + 5))
             .splitlines()]
    assert [(w["file"], w["path"], w["line"]) for w in where] == [
        ("include/ledger.h", "include/ledger.h", 7), ("lib/./ledger.h", "lib/ledger.h", 9)]


# --- unsplit annotate / ranges / lines on the same program --------------------------------------


@pytest.fixture(scope="module")
def gcc_g(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _need("gcc", "llvm-objdump-22", "llvm-objcopy-22")
    d = tmp_path_factory.mktemp("annotate")
    (d / "prog.c").write_text(PROG)
    subprocess.run(["gcc", "-O2", "-g", "-o", d / "prog", d / "prog.c"], check=True)
    return d / "prog"


def test_annotate_reproduces_dwarf_lines(gcc_g: Path) -> None:
    import argparse

    from unsplit.elf.binary import Binary
    from unsplit.elf.dwarf_lines import DwarfLines
    from unsplit.index.sources import split_info as source
    from unsplit.tools import annotate

    out = gcc_g.with_name("prog.annotated")
    text = annotate.annotate(str(gcc_g), str(out))
    assert "1 split procedures" in text
    with pytest.raises(Exception, match="OUT must not be IN"):
        annotate.annotate(str(gcc_g), str(gcc_g))

    binary = Binary(str(out))
    section = binary.section(".split_info")
    assert section is not None and section["sh_addralign"] == 8 and section["sh_flags"] == 0
    src = source.SplitInfoSource(binary)
    [sp] = src.split_procedures()
    assert sp.name == "work" and len(sp.records) == 1
    esl_lines, dwarf = source.EslLines(src.line_info()), DwarfLines(Binary(str(gcc_g)))
    branch = range(sp.records[0].branch_addr, sp.records[0].branch_end)
    for r in sp.ranges:  # every address outside the branch: the same line as DWARF says
        for a in range(r.start, r.end):
            if a in branch:
                continue
            want, got = dwarf.lookup(a), esl_lines.lookup(a)
            assert want is not None and got is not None
            # annotate's file table holds DWARF's full paths: ESL's `file` is that path
            assert (got.file, got.path, got.line, got.column) == \
                (want.path, want.path, want.line, want.column), a

    [ranges] = annotate.ranges_json(str(out), "work")
    assert ranges["procedure"] == "work" and ranges["entry"] == hex(sp.start)
    assert ranges["logical_size"] == sp.size
    assert [{"start": r["start"], "end": r["end"]} for r in ranges["ranges"]] == \
        [{"start": hex(r.start), "end": hex(r.end)} for r in sp.ranges]
    assert [r["offset"] for r in ranges["ranges"]] == [sp.logical_offset(r.start)
                                                       for r in sp.ranges]
    rows = annotate.lines_json(str(out), "work")
    assert rows and {r["source"] for r in rows} == {"esl"}
    assert set(rows[0]) == {"procedure", "linkage_name", "address", "file", "path", "line",
                            "column", "source"}
    assert [int(r["address"], 16) for r in rows] == sorted(int(r["address"], 16) for r in rows)

    parser = argparse.ArgumentParser()
    annotate.add_cli(parser.add_subparsers())
    args = parser.parse_args(["ranges", str(out), "--json"])
    assert args.handler(args).startswith("[")


def test_deep_nesting_is_neither_recursive_nor_quadratic() -> None:
    chain = [SplitRecord(0x1000, 0x100000, 0x10, 1)] + [
        SplitRecord(0x100000 + i * 0x100, 0x100000 + (i + 1) * 0x100, 0x10, 1) for i in range(5000)
    ]
    [proc] = si.sp_init(si.decode(si.encode(chain)), [("f", 0x1000, 4)])
    assert len(proc.ranges) == 5002 and proc.address_of(proc.size - 1) == 0x1003
