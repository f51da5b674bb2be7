"""`unsplit annotate` on the zoo's BOLTed binaries (BAT + pre-BOLT DWARF -> .split_info, ESL)
and `unsplit lines`/`ranges` output, checked against oracles unsplit does not compute:
the facts (nm, llvm-objdump-22) and llvm-symbolizer-22 on the same binary built with
--update-debug-sections (the `-dbg` twin, identical code)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.errors import UnsplitError, UsageError
from unsplit.formats import esl
from unsplit.formats import split_info as si
from unsplit.index.bolt import prebolt
from unsplit.index.model.records import HOT, Fragment, Procedure
from unsplit.index.module_index import ModuleIndex
from unsplit.index.sources import split_info as source
from unsplit.tools import annotate

from ...conftest import ROOT, facts

VARIANTS = ["bolt-all", "bolt-cdsplit"]  # cold.N fragments; warm + cold


def _need(*tools: str) -> None:
    for t in tools:
        if shutil.which(t) is None:
            pytest.skip(f"{t} not installed")


@pytest.fixture(scope="module")
def alone(zoo: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each variant's crash, annotated, alone in a directory (no input/, no pre-BOLT binary)."""
    _need("llvm-objdump-22", "llvm-objcopy-22", "llvm-symbolizer-22")
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(prebolt.ENV_PATH, raising=False)
        mp.setenv("DEBUGINFOD_CACHE_PATH", str(tmp_path_factory.mktemp("no-debuginfod")))
        for variant in VARIANTS:
            f = facts(zoo, variant, "crash")
            d = tmp_path_factory.mktemp(variant)
            annotate.annotate(str(ROOT / f["binary"]), str(d / "crash"))
            copy = Binary(str(d / "crash"))
            assert not copy.has_dwarf and prebolt.find_input(copy) is None
            copy.close()
            out[variant] = d / "crash"
    return out


def _pieces(path: Path) -> dict[str, list[tuple[int, int]]]:
    src = source.SplitInfoSource(Binary(str(path)))
    return {sp.name: source.pieces(sp) for sp in src.split_procedures()}


@pytest.mark.parametrize("variant", VARIANTS)
def test_ranges_are_the_fragments(zoo: dict[str, Any], alone: dict[str, Path],
                                  variant: str) -> None:
    """Ranges and branches together cover exactly the fragments nm names, each once."""
    f = facts(zoo, variant, "crash")
    got = _pieces(alone[variant])
    for name, proc in f["split_functions"].items():
        want = sorted((int(fr["start"], 16), int(fr["end"], 16)) for fr in proc["fragments"])
        assert got[name] == want, name
    data = annotate.ranges_json(str(alone[variant]))
    assert {p["linkage_name"] for p in data} == set(f["split_functions"])
    for p in data:
        assert set(p) == {"procedure", "linkage_name", "entry", "logical_size", "ranges"}
        assert all(set(r) == {"start", "end", "offset", "position"} for r in p["ranges"])
        sizes = sum(int(r["end"], 16) - int(r["start"], 16) for r in p["ranges"])
        assert p["logical_size"] == sizes


def _symbolize(binary: str, addresses: list[int]) -> list[int | None]:
    query = "\n".join(hex(a) for a in addresses)
    text = subprocess.run(
        ["llvm-symbolizer-22", "--obj", binary, "--no-inlines", "--functions=none"],
        input=query, capture_output=True, text=True, check=True,
    ).stdout
    out: list[int | None] = []
    for answer in text.strip().split("\n\n"):
        m = re.search(r":(\d+):\d+$", answer.strip())
        out.append(int(m[1]) if m and m[1] != "0" else None)
    return out


@pytest.mark.parametrize("variant", VARIANTS)
def test_esl_lines_equal_update_debug_sections(zoo: dict[str, Any], alone: dict[str, Path],
                                               variant: str) -> None:
    """Every instruction of a split procedure but the jumps (BOLT makes and rewrites those and
    picks their lines its own way; a branch's bytes stand for the moved code, §1) has the line
    BOLT's own --update-debug-sections gives it."""
    twin = str(ROOT / facts(zoo, variant + "-dbg", "crash")["binary"])
    binary = Binary(str(alone[variant]))
    lines = source.EslLines(source.SplitInfoSource(binary).line_info())
    code = [a for spans in _pieces(alone[variant]).values() for a in spans]
    insns = [(a, m) for a, m, _ in annotate._instructions(str(alone[variant]))
             if any(lo <= a < hi for lo, hi in code) and not m.startswith("j")]
    want = _symbolize(twin, [a for a, _ in insns])
    compared = 0
    for (a, _), line in zip(insns, want, strict=True):
        if line is None:
            continue
        row = lines.lookup(a)
        assert row is not None and row.line == line, hex(a)
        compared += 1
    assert compared > 60


@pytest.mark.parametrize("variant", VARIANTS)
def test_crash_frames_without_prebolt_binary(zoo: dict[str, Any], alone: dict[str, Path],
                                             variant: str) -> None:
    """The crash chain's procedures, fragments and lines with neither DWARF nor the input."""
    f, dbg = facts(zoo, variant, "crash"), facts(zoo, variant + "-dbg", "crash")
    markers = f["markers"]["crash.c"]
    index = ModuleIndex(Binary(str(alone[variant])))
    lines = [markers["crash site"], markers["run cold call"], markers["main cold call"]]
    for i, (frame, line) in enumerate(zip(f["crash"]["frames"], lines, strict=False)):
        pc = int(frame["link_pc"], 16) - (1 if i else 0)  # a caller: the call, not the return
        loc = index.locate(pc)
        assert (loc.procedure, loc.fragment, loc.line) == \
            (frame["procedure"], frame["fragment"], line), frame
        assert loc.sources[-1] == "esl" and os.path.basename(loc.file or "") == "crash.c"
    assert dbg["crash"]["line"] == markers["crash site"]  # the twin agrees on the oracle


def test_lines_source_field(zoo: dict[str, Any], alone: dict[str, Path]) -> None:
    """esl from the annotated copy, bat from BAT + the pre-BOLT binary, dwarf from the twin."""
    keys = {"procedure", "linkage_name", "address", "file", "path", "line", "column", "source"}
    seen = {}
    for path in (alone["bolt-all"], ROOT / facts(zoo, "bolt-all", "crash")["binary"],
                 ROOT / facts(zoo, "bolt-all-dbg", "crash")["binary"]):
        rows = annotate.lines_json(str(path), "transfer")
        assert rows and all(set(r) == keys for r in rows)
        addresses = [int(r["address"], 16) for r in rows]
        assert addresses == sorted(addresses)
        sources = {r["source"] for r in rows}
        assert len(sources) == 1
        seen[sources.pop()] = {(r["line"]) for r in rows}
    assert set(seen) == {"esl", "bat", "dwarf"}
    assert seen["esl"] == seen["bat"]  # the annotation carries what BAT + input said


def _cli(*argv: str) -> str:
    parser = argparse.ArgumentParser()
    annotate.add_cli(parser.add_subparsers())
    args = parser.parse_args(list(argv))
    text: str = args.handler(args)
    return text


def test_lines_and_ranges_take_names_as_bb_break_does(zoo: dict[str, Any]) -> None:
    """bolt-all except: `process`, `process(int const*, int)` and `_Z7processPKii` name the
    same procedure; rows name it as llvm-cxxfilt-22 demangles it (its linkage name with
    --no-demangle), its fragments are nm's."""
    f = facts(zoo, "bolt-all", "except")
    exe = str(ROOT / f["binary"])
    linkage = "_Z7processPKii"
    name = subprocess.run(["llvm-cxxfilt-22", linkage], capture_output=True, text=True,
                          check=True).stdout.strip()
    fragments = {(int(fr["start"], 16), int(fr["end"], 16))
                 for fr in f["split_functions"][linkage]["fragments"]}
    answers = []
    for form in ("process", name, linkage):
        rows = json.loads(_cli("lines", exe, form, "--json"))
        assert rows and {(r["procedure"], r["linkage_name"]) for r in rows} == {(name, linkage)}
        assert all(any(lo <= int(r["address"], 16) < hi for lo, hi in fragments) for r in rows)
        answers.append(rows)
        [ranges] = json.loads(_cli("ranges", exe, form, "--json"))
        assert (ranges["procedure"], ranges["linkage_name"]) == (name, linkage)
        assert {(int(r["start"], 16), int(r["end"], 16)) for r in ranges["ranges"]} == fragments
    assert answers[0] == answers[1] == answers[2]
    text = _cli("lines", exe, "process").splitlines()
    assert text and all(x.startswith(name + " ") for x in text)
    assert all(x.startswith(linkage + " ")
               for x in _cli("lines", exe, "process", "--no-demangle").splitlines())
    assert _cli("ranges", exe, "process").startswith(f"{name}: entry ")
    with pytest.raises(UnsplitError, match="no procedure named 'nosuch'"):
        _cli("lines", exe, "nosuch")


def test_lines_of_same_named_statics_and_without_bolt_originals(zoo: dict[str, Any]) -> None:
    """bolt-statics: `helper` names each unit's static helper (`bb break helper` sets one
    location in each); bolt-patched: `process` leaves BOLT's patched original out."""
    f = facts(zoo, "bolt-statics", "statics")
    helpers = {int(info["fragments"][0]["start"], 16) for key, info in f["split_functions"].items()
               if key.startswith("_ZL6helperii@")}
    ranges = json.loads(_cli("ranges", str(ROOT / f["binary"]), "helper", "--json"))
    assert {int(r["entry"], 16) for r in ranges} == helpers and len(helpers) == 4
    p = facts(zoo, "bolt-patched", "except")
    rows = json.loads(_cli("lines", str(ROOT / p["binary"]), "process", "--json"))
    assert rows and {r["linkage_name"] for r in rows} == {"_Z7processPKii"}


def test_annotate_reports_sizes(zoo: dict[str, Any], tmp_path: Path) -> None:
    _need("llvm-objdump-22", "llvm-objcopy-22")
    src = ROOT / facts(zoo, "bolt-all", "crash")["binary"]
    twin = ROOT / facts(zoo, "bolt-all-dbg", "crash")["binary"]
    out = tmp_path / "crash"
    text = annotate.annotate(str(src), str(out))
    m = re.search(r"added (\d+) bytes \(\.split_info (\d+), \.opt_table (\d+)\); the "
                  r"--update-debug-sections build \((.+)\) is (-?\d+) bytes larger", text)
    assert m, text
    binary = Binary(str(out))
    assert int(m[1]) == out.stat().st_size - src.stat().st_size
    assert int(m[2]) == len(binary.section_data(si.SECTION) or b"")
    assert int(m[3]) == len(binary.section_data(esl.SECTION) or b"")
    assert os.path.samefile(m[4], twin)
    assert int(m[5]) == twin.stat().st_size - src.stat().st_size
    assert int(m[1]) < int(m[5])  # the point of the exercise
    # Loaded code is untouched: a core of the original fits the copy.
    orig = Binary(str(src))
    for sec in orig.elf.iter_sections():
        if sec["sh_flags"] & 2 and sec["sh_type"] != "SHT_NOBITS":
            assert binary.section_data(sec.name) == sec.data(), sec.name


def test_compiler_split_takes_dwarf_from_debug(zoo: dict[str, Any], tmp_path: Path) -> None:
    _need("llvm-objdump-22", "llvm-objcopy-22")
    nodebug = str(ROOT / facts(zoo, "gcc-pgo-nodebug", "crash")["binary"])
    full = str(ROOT / facts(zoo, "gcc-pgo", "crash")["binary"])
    with pytest.raises(UsageError, match="--debug PATH"):
        annotate.annotate(nodebug, str(tmp_path / "a"))
    with pytest.raises(UsageError, match="build-id differs"):
        annotate.annotate(nodebug, str(tmp_path / "a"),
                          debug_path=str(ROOT / facts(zoo, "bolt-all", "crash")["binary"]))
    text = annotate.annotate(nodebug, str(tmp_path / "a"), debug_path=full)
    assert "the build with DWARF" in text and "3 split procedures" in text
    rows = annotate.lines_json(str(tmp_path / "a"), "transfer")
    assert {r["source"] for r in rows} == {"esl"}


def test_lines_warns_about_partial_programs(zoo: dict[str, Any], alone: dict[str, Path],
                                            tmp_path: Path) -> None:
    """A program cut short keeps its rows and says so; a PROC without ESL is named."""
    binary = Binary(str(alone["bolt-all"]))
    table = esl.decode_opt_table(binary.section_data(esl.SECTION) or b"")
    by_name = {f.value: f.name for f in binary.functions}
    victim = next(p for p in table if by_name.get(p.entry) == "transfer")
    silent = next(p for p in table if by_name.get(p.entry) == "audit")
    changed = [
        p if p is not victim and p is not silent else
        esl.OptProc(p.entry, p.file, p.start_line, p.min_insn_length, p.files,
                    None if p is silent else (p.esl or b"") + b"\x80\x00")  # opcode 0
        for p in table
    ]
    data = tmp_path / "opt_table"
    data.write_bytes(esl.encode_opt_table(changed))
    out = tmp_path / "crash"
    subprocess.run(["llvm-objcopy-22", "--update-section", f"{esl.SECTION}={data}",
                    str(alone["bolt-all"]), str(out)], check=True)
    info = source.SplitInfoSource(Binary(str(out))).line_info()
    assert victim.entry in info.partial and info.rows_by_procedure[victim.entry]
    parser = argparse.ArgumentParser()
    annotate.add_cli(parser.add_subparsers())
    args = parser.parse_args(["lines", str(out)])
    text = args.handler(args).splitlines()
    assert re.match(r"warning: transfer: ESL lines partial \(.*byte \d+", text[0]), text[0]
    assert text[1] == f"warning: audit: PROC {silent.entry:#x} has no ESL program"
    assert not any(line.startswith("warning") for line in text[2:])
    args = parser.parse_args(["lines", str(out), "--json"])
    assert json.loads(args.handler(args))  # warnings do not spoil the JSON


# --- placement of moved fragments, on made-up code ------------------------------------------


def _proc(name: str, *spans: tuple[str, int, int]) -> Procedure:
    return Procedure(name, [Fragment(name, n, lo, hi, None, 0) for n, lo, hi in spans])


def test_nested_and_unreached_fragments() -> None:
    insns = [
        (0x100, "testl", "%edx, %edx"),
        (0x102, "jne", "0x200 <f.cold.0>"),
        (0x108, "jmpq", "*0x10(,%rax,8)  # 0x300 <f.cold.2>"),  # indirect: no target
        (0x10f, "retq", ""),
        (0x110, "nop", ""),
        (0x200, "je", "0x30a <f.cold.1+0x2>"),  # into the middle of cold.1: still its branch
        (0x202, "retq", ""),
        (0x203, "nop", ""),
        (0x300, "nop", ""),
        (0x308, "nop", ""),
        (0x30a, "retq", ""),
        (0x30b, "nop", ""),
    ]
    p = _proc("f", (HOT, 0x100, 0x110), ("cold.0", 0x200, 0x203), ("cold.1", 0x308, 0x30b),
              ("cold.2", 0x300, 0x308))
    records, notes = annotate.derive_records([p], insns, lambda proc, frag: 0x10f)
    assert set(records) == set([
        si.SplitRecord(0x102, 0x200, 3, 6),
        si.SplitRecord(0x200, 0x308, 3, 2),  # nested: its branch lies in moved code
        si.SplitRecord(0x10f, 0x300, 8, 0),  # no jump reaches it: an insertion point
    ])
    assert notes == ["f: no jump to 0x300: inserted at 0x10f (input order)"]
    [sp] = si.sp_init(records, [("f", 0x100, 0x10)])
    assert [(r.start, r.end) for r in sp.ranges] == [
        (0x100, 0x102), (0x308, 0x30B), (0x202, 0x203), (0x108, 0x10F), (0x300, 0x308),
        (0x10F, 0x110),
    ]
    _, notes = annotate.derive_records([p], insns, None)
    assert notes == ["f: no jump to 0x300: left out"]
    assert annotate.branch_target("b.ne", "0x400560 <foo+0x20>") == 0x400560
    assert annotate.branch_target("cbz", "w0, 0x400560 <foo+0x20>") == 0x400560
    assert annotate.branch_target("callq", "0x400560 <foo>") is None
