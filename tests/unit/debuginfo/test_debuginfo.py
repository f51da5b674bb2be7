"""`unsplit debuginfo`: the separate debug file it writes passes llvm-dwarfdump-22 --verify,
llvm-symbolizer-22 reading it alone agrees with `unsplit where` on every instruction of every
moved fragment, its lines are the pre-BOLT input's (perf2bolt-22 + llvm-symbolizer-22, not
unsplit), and pyelftools reads it back."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

from fixtures.toolbox import fragment_name

from ... import bolt_truth
from ...conftest import ROOT, facts

BOLT = ["bolt-all", "bolt-random2", "bolt-profile2", "bolt-cdsplit", "bolt-randomN",
        "bolt-reverse", "bolt-nonreloc", "bolt-nolite"]
SYMBOLS_ONLY = ["gcc-pgo-nodebug", "clang-mfs-nodebug"]
PROGRAMS = ["loop", "recurse", "switch", "except", "crash"]
CASES = [(v, p) for v in BOLT + SYMBOLS_ONLY for p in PROGRAMS] + [("bolt-statics", "statics")]


def _unsplit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "unsplit", *args], capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT / "plugin")}, timeout=600)


def _write(binary: Path, out: Path) -> dict[str, Any]:
    run = _unsplit("debuginfo", str(binary), "-o", str(out), "--json")
    assert run.returncode == 0, run.stderr
    report: dict[str, Any] = json.loads(run.stdout)
    assert report["written"] == str(out)
    return report


def _moved_instructions(f: dict[str, Any]) -> list[int]:
    out: list[int] = []
    for info in f["split_functions"].values():
        for frag in info["fragments"]:
            if frag["fragment"] != "hot":
                out += sorted(bolt_truth.instructions(ROOT / f["binary"], int(frag["start"], 16),
                                                      int(frag["end"], 16)))
    return out


def _symbolize(debug: Path, addresses: list[int]) -> list[tuple[str, str, int]]:
    """(outermost function's linkage name, innermost file, innermost line) by llvm-symbolizer-22
    on the debug file alone; line 0 ("no source", DWARF 5 §6.2.2) is ("??", 0). The file
    carries the module's symbol table, whose name llvm-symbolizer prefers: a fragment's
    symbol (`transfer.cold.1`), as on BOLT's own twin with DWARF, stands for its procedure
    (the fixtures' grammar, fixtures/toolbox.fragment_name)."""
    text = bolt_truth.run("llvm-symbolizer-22", "--obj", debug, "--inlines", "--no-demangle",
                          stdin="".join(f"{a:#x}\n" for a in addresses))
    out = []
    for block in text.strip("\n").split("\n\n"):
        lines = block.split("\n")
        file, line, _ = lines[1].rsplit(":", 2)
        number = int(line) if line.isdigit() else 0
        out.append((fragment_name(lines[-2])[0], file if number else "??", number))
    return out


@pytest.mark.parametrize(("variant", "program"), CASES)
def test_symbolizer_on_the_debug_file_agrees_with_where(zoo: dict[str, Any], variant: str,
                                                         program: str, tmp_path: Path) -> None:
    f = facts(zoo, variant, program)
    assert not f["has_debug_info"]
    debug = tmp_path / "out.debug"
    _write(ROOT / f["binary"], debug)
    verify = subprocess.run(["llvm-dwarfdump-22", "--verify", str(debug)], capture_output=True,
                            text=True, timeout=120)
    assert verify.returncode == 0 and "No errors." in verify.stdout, verify.stdout[-3000:]
    addresses = _moved_instructions(f)
    assert addresses
    where = [json.loads(line) for line in _unsplit(
        "where", "--json", "--exe", str(ROOT / f["binary"]),
        *map(hex, addresses)).stdout.splitlines()]
    # The instruction's own line: the innermost inlined call's where code is inlined (`line`
    # is then the procedure's own, the call's).
    rows = [w["inlined"][0] if w.get("inlined") else w for w in where]
    expected = [(w["linkage_name"], (r["path"] or r["file"]) if r["line"] else "??",
                 r["line"] or 0) for w, r in zip(where, rows, strict=True)]
    assert all(e[0] for e in expected)
    assert _symbolize(debug, addresses) == expected
    if variant in BOLT:  # BAT and the input's DWARF: most moved code has a line
        assert sum(1 for e in expected if e[2]) > len(expected) // 2


def _debug_file_and_truth(f: dict[str, Any], tmp_path: Path
                          ) -> tuple[Path, Path, list[int], dict[int, Any]]:
    """(binary, its debug file written in `tmp_path`, the moved instructions perf2bolt-22
    translates, what it translates them to)."""
    binary = ROOT / f["binary"]
    debug = tmp_path / "out.debug"
    _write(binary, debug)
    addresses = _moved_instructions(f)
    truth = bolt_truth.perf2bolt_targets(binary, addresses, tmp_path)
    return binary, debug, [a for a in addresses if a in truth], truth


@pytest.mark.parametrize("variant", [*BOLT, "bolt-statics"])
def test_lines_are_the_inputs_by_perf2bolt(zoo: dict[str, Any], variant: str,
                                           tmp_path: Path) -> None:
    """Independent truth: perf2bolt-22 translates each moved instruction through BAT to the
    input, llvm-symbolizer-22 gives the input's line there; the debug file must say the same
    (instructions BOLT made itself, which have no input line, are left out) on >= 99% of them
    over the zoo, and where it does not (a jump BOLT rebuilt at the end of a block, measured:
    2 of 127 per program at most), it says what BOLT's own --update-debug-sections twin says."""
    program = "statics" if variant == "bolt-statics" else "crash"
    f = facts(zoo, variant, program)
    binary, debug, addresses, truth = _debug_file_and_truth(f, tmp_path)
    assert addresses
    _, lines = bolt_truth.input_lines(binary, ROOT / f["input"], truth, addresses)
    got = _symbolize(debug, addresses)
    compared_all = [((g[1].rsplit("/", 1)[-1], g[2]), want)
                    for g, want in zip(got, lines, strict=True)]
    compared = [(have, want) for have, want in compared_all if want is not None and want[1]]
    assert len(compared) > len(addresses) // 2
    wrong = [a for a, (have, want) in zip(addresses, compared_all, strict=True)
             if want is not None and want[1] and have != want]
    assert len(wrong) <= max(1, len(compared) // 50), wrong
    twin = ROOT / f"fixtures/build/{variant}-dbg/{program}"
    if wrong:
        theirs = bolt_truth.symbolize(twin, wrong)
        ours = [(g[1].rsplit("/", 1)[-1], g[2]) for g in _symbolize(debug, wrong)]
        assert ours == theirs


def test_pyelftools_reads_it_back(zoo: dict[str, Any], tmp_path: Path) -> None:
    """The file is an ELF whose sections keep the module's addresses (loaded ones SHT_NOBITS),
    whose build-id is the module's, and whose DWARF pyelftools decodes: a subprogram per split
    procedure with every fragment in its ranges, the entry fragment's first, and line rows
    inside them (the input's DWARF moved through BAT; a unit of names for what the input's
    DWARF does not describe)."""
    f = facts(zoo, "bolt-random2", "crash")
    binary = ROOT / f["binary"]
    debug = tmp_path / "out.debug"
    _write(binary, debug)
    with open(binary, "rb") as a, open(debug, "rb") as b:
        module, ours = ELFFile(a), ELFFile(b)
        loaded = {s.name: (s["sh_addr"], s["sh_size"]) for s in module.iter_sections()
                  if s["sh_flags"] & 2}
        kept = {s.name: (s["sh_addr"], s["sh_size"]) for s in ours.iter_sections()
                if s["sh_flags"] & 2}
        assert kept == loaded
        assert all(s["sh_type"] in ("SHT_NOBITS", "SHT_NOTE") for s in ours.iter_sections()
                   if s["sh_flags"] & 2)
        assert ours.get_section_by_name(".text") is not None
        notes = [elf.get_section_by_name(".note.gnu.build-id") for elf in (module, ours)]
        assert notes[0] is not None and notes[1] is not None
        assert bytes(notes[0].data()) == bytes(notes[1].data())
        dwarf = ours.get_dwarf_info(relocate_dwarf_sections=False)
        subprograms: dict[str, list[tuple[int, int]]] = {}
        rows = []
        rnglists = dwarf.range_lists()
        for cu in dwarf.iter_CUs():
            assert cu.header["version"] == 5
            top = cu.get_top_DIE()
            for die in top.iter_children():
                if die.tag != "DW_TAG_subprogram" or "DW_AT_name" not in die.attributes or not (
                        {"DW_AT_ranges", "DW_AT_low_pc"} & set(die.attributes)):
                    continue  # no code: a declaration, an abstract instance
                name = die.attributes.get("DW_AT_linkage_name",
                                          die.attributes["DW_AT_name"]).value.decode()
                if "DW_AT_ranges" in die.attributes:
                    ranges = die.attributes["DW_AT_ranges"]
                    at = ranges.value
                    if ranges.form == "DW_FORM_rnglistx":  # DWARF 5 §7.28: base + offsets[i]
                        base = top.attributes["DW_AT_rnglists_base"].value
                        rnglists.stream.seek(base + 4 * at)
                        at = base + int.from_bytes(rnglists.stream.read(4), "little")
                    spans = [(r.begin_offset, r.end_offset) for r in
                             rnglists.get_range_list_at_offset(at, cu=cu)]
                else:
                    low = die.attributes["DW_AT_low_pc"].value
                    spans = [(low, low + die.attributes["DW_AT_high_pc"].value)]
                subprograms[name] = spans
            program = dwarf.line_program_for_CU(cu)
            if program is not None:
                rows += [e.state.address for e in program.get_entries() if e.state is not None]
    for proc, info in f["split_functions"].items():
        fragments = [(int(fr["start"], 16), int(fr["end"], 16)) for fr in info["fragments"]]
        assert sorted(subprograms[proc]) == sorted(fragments), proc
        assert subprograms[proc][0] == fragments[0]  # the entry fragment first
    moved = [fr for info in f["split_functions"].values() for fr in info["fragments"][1:]]
    assert all(any(int(fr["start"], 16) <= r < int(fr["end"], 16) for r in rows)
               for fr in moved if fr["symbol"].split(".")[0] != "__do_global_dtors_aux")


def test_symbols_only_split_names_procedures_like_its_dwarf_twin(zoo: dict[str, Any],
                                                                 tmp_path: Path) -> None:
    """gcc-pgo-nodebug is gcc-pgo after strip -g: llvm-symbolizer-22 on our file names each
    moved instruction's function as llvm-symbolizer-22 on the twin's own DWARF does."""
    f, twin = facts(zoo, "gcc-pgo-nodebug", "crash"), facts(zoo, "gcc-pgo", "crash")
    debug = tmp_path / "out.debug"
    report = _write(ROOT / f["binary"], debug)
    assert report["split_without_lines"]  # listed, not guessed
    addresses = _moved_instructions(f)
    theirs = bolt_truth.run("llvm-symbolizer-22", "--obj", ROOT / twin["binary"], "--inlines",
                            "--functions=short", stdin="".join(f"{a:#x}\n" for a in addresses))
    outermost = [b.split("\n")[-2] for b in theirs.strip("\n").split("\n\n")]
    assert [g[0] for g in _symbolize(debug, addresses)] == outermost
    assert {g[2] for g in _symbolize(debug, addresses)} == {0}


def test_a_module_with_its_own_dwarf_is_left_alone(zoo: dict[str, Any], tmp_path: Path) -> None:
    f = facts(zoo, "bolt-all-dbg", "crash")
    out = tmp_path / "x.debug"
    run = _unsplit("debuginfo", str(ROOT / f["binary"]), "-o", str(out))
    assert run.returncode == 0 and "own DWARF" in run.stdout and not out.exists()


def test_build_id_dir_layout(zoo: dict[str, Any], tmp_path: Path) -> None:
    f = facts(zoo, "bolt-cdsplit", "crash")
    run = _unsplit("debuginfo", str(ROOT / f["binary"]), "--build-id-dir", str(tmp_path))
    assert run.returncode == 0, run.stderr
    h = f["build_id"]
    assert (tmp_path / ".build-id" / h[:2] / f"{h[2:]}.debug").is_file()


def test_not_an_elf_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "junk"
    bad.write_bytes(b"not an elf")
    run = _unsplit("debuginfo", str(bad), "-o", str(tmp_path / "x"))
    assert run.returncode == 1 and run.stderr.count("\n") == 1 and "junk" in run.stderr


def _frames(path: Path, addresses: list[int]) -> list[list[tuple[str, str, int]]]:
    """llvm-symbolizer-22 --inlines: per address, (function, file base name, line) per frame,
    innermost first. A fragment symbol's name (demangled: `helper(int, int) (.cold)`), which
    llvm-symbolizer prefers for the outermost frame, stands for its procedure."""
    text = bolt_truth.run("llvm-symbolizer-22", "--obj", path, "--inlines", "--basenames",
                          stdin="".join(f"{a:#x}\n" for a in addresses))
    out = []
    for block in text.strip("\n").split("\n\n"):
        lines = block.split("\n")
        frames = []
        for name, where in zip(lines[::2], lines[1::2], strict=True):
            file, line, _ = where.rsplit(":", 2)
            name = fragment_name(re.sub(r" \(\.(cold|warm)(\.\d+)?\)$", "", name))[0]
            frames.append((name, file, int(line) if line.isdigit() else 0))
        out.append(frames)
    return out


def test_inlined_frames_are_the_inputs(zoo: dict[str, Any], tmp_path: Path) -> None:
    """bolt-statics inlines C++ helpers into split functions: llvm-symbolizer-22 --inlines on the
    debug file gives, frame for frame, what it gives on the pre-BOLT input at the input address
    perf2bolt-22 translates each moved instruction to (instructions BOLT made are left out)."""
    f = facts(zoo, "bolt-statics", "statics")
    binary, debug, addresses, truth = _debug_file_and_truth(f, tmp_path)
    inputs, lines = bolt_truth.input_lines(binary, ROOT / f["input"], truth, addresses)
    kept = [(a, i) for a, i, ln in zip(addresses, inputs, lines, strict=True)
            if ln is not None and ln[1]]
    ours = _frames(debug, [a for a, _ in kept])
    theirs = _frames(ROOT / f["input"], [i for _, i in kept])
    inlined = [t for t in theirs if len(t) > 1]
    assert len(inlined) >= 10
    agree = sum(o == t for o, t in zip(ours, theirs, strict=True))
    assert agree >= 0.99 * len(kept), [(hex(a), o, t) for (a, _), o, t in
                                       zip(kept, ours, theirs, strict=True) if o != t][:5]


def test_cache_tells_apart_bolt_outputs_of_one_input(zoo: dict[str, Any], tmp_path: Path) -> None:
    """BOLT gives every output of one input the same build-id (llvm-readelf-22 says so through
    facts.json): the cache keeps one file per output, and reuses it."""
    from unsplit.debuginfo.cache import debug_file_for

    a, b = facts(zoo, "bolt-all", "crash"), facts(zoo, "bolt-cdsplit", "crash")
    assert a["build_id"] == b["build_id"]
    first = [debug_file_for(str(ROOT / f["binary"]), root=str(tmp_path)) for f in (a, b)]
    assert [o.reason for o in first] == ["made", "made"]
    assert first[0].path != first[1].path
    again = debug_file_for(str(ROOT / a["binary"]), root=str(tmp_path))
    assert (again.reason, again.path) == ("cached", first[0].path)
    dwarf = debug_file_for(str(ROOT / facts(zoo, "bolt-all-dbg", "crash")["binary"]),
                           root=str(tmp_path))
    assert (dwarf.path, dwarf.reason) == (None, "has DWARF")


def test_cache_key_covers_the_pre_bolt_input(zoo: dict[str, Any], tmp_path: Path) -> None:
    """A BOLT output's file made before its pre-BOLT input was found (a copy of the library
    alone) has no line; once the input is beside it (input/), a new file is made with the
    crash's inline chain (the pre-BOLT crash's, by llvm-symbolizer-22 on the debug file alone),
    then reused; the one made without the input is still the answer when it is gone again."""
    from unsplit.debuginfo.cache import debug_file_for

    f = facts(zoo, "bolt-dlopen", "libwork")
    lib, root = tmp_path / "libwork.so", str(tmp_path / "cache")
    shutil.copy2(ROOT / f["binary"], lib)
    crash = [int(f["crash"]["link_pc"], 16)]
    expected = [(c["function"], c["file"], c["line"]) for c in f["crash"]["input_crash"]["chain"]]
    without = debug_file_for(str(lib), root=root)
    assert without.reason == "made" and without.path is not None
    assert [fr[1:] for fr in _frames(Path(without.path), crash)[0]] == [("??", 0)]
    (tmp_path / "input").mkdir()
    shutil.copy2(ROOT / f["input"], tmp_path / "input" / lib.name)
    found = debug_file_for(str(lib), root=root)
    assert found.reason == "made" and found.path not in (None, without.path)
    assert _frames(Path(str(found.path)), crash)[0] == expected
    again = debug_file_for(str(lib), root=root)
    assert (again.reason, again.path) == ("cached", found.path)
    shutil.rmtree(tmp_path / "input")
    assert debug_file_for(str(lib), root=root).path == without.path


def _code_bytes(binary: str) -> int:
    """Bytes of the binary's executable sections, as pyelftools reads its section headers."""
    with open(binary, "rb") as f:
        return sum(s["sh_size"] for s in ELFFile(f).iter_sections()
                   if s["sh_flags"] & 0x6 == 0x6 and s["sh_type"] != "SHT_NOBITS")


def test_a_session_leaves_big_modules_to_the_command_line(zoo: dict[str, Any],
                                                          tmp_path: Path) -> None:
    """At load a debugger describes from the index at most `max_code` bytes of code (readelf's
    executable sections) when it writes lines from the index: more is said, not written; under
    the limit, or cached already, it is given. The module here is a BOLT output annotated with
    .split_info and an ESL line table, alone in its directory: its lines come from the index
    (a translated file, or one of names alone, has no limit: the tests below and
    test_names_only)."""
    from unsplit.debuginfo.cache import debug_file_for
    from unsplit.tools import annotate

    (tmp_path / "alone").mkdir()
    binary = str(tmp_path / "alone" / "crash")
    annotate.annotate(str(ROOT / facts(zoo, "bolt-all", "crash")["binary"]), binary)
    code = _code_bytes(binary)
    root = tmp_path / "cache"
    small = debug_file_for(binary, root=str(root), max_code=code - 1)
    assert small.path is None and f"{(code + 1023) >> 10} KB of code" in small.reason
    assert "unsplit debuginfo" in small.reason
    assert not list(root.rglob("*.debug"))
    made = debug_file_for(binary, root=str(root), max_code=code)
    assert made.path is not None and made.reason == "made"
    cached = debug_file_for(binary, root=str(root), max_code=1)
    assert (cached.path, cached.reason) == (made.path, "cached")


def test_a_module_translated_from_its_input_has_no_size_limit(zoo: dict[str, Any],
                                                              tmp_path: Path) -> None:
    """A BOLT output whose input (with DWARF) is found gets its file at load however much code
    it has: translating the input's DWARF takes about BOLT's own time. The file holds the
    input's variables (llvm-dwarfdump-22), which a file written from the index never has."""
    from unsplit.debuginfo.cache import debug_file_for

    f = facts(zoo, "bolt-all", "crash")
    binary = str(ROOT / f["binary"])
    made = debug_file_for(binary, root=str(tmp_path), max_code=1)
    assert made.path is not None and made.reason == "made", made.reason
    dump = bolt_truth.run("llvm-dwarfdump-22", "--debug-info", made.path)
    assert "DW_TAG_formal_parameter" in dump or "DW_TAG_variable" in dump


def _units(path: Path) -> list[tuple[str, str, set[str]]]:
    """(DW_AT_name, DW_AT_language, linkage names of its DW_TAG_subprograms) of each unit, as
    llvm-dwarfdump-22 reads them ("" for an attribute a unit lacks)."""
    text = bolt_truth.run("llvm-dwarfdump-22", "--debug-info", path)
    units: list[tuple[str, str, set[str]]] = []
    tag = ""
    for line in text.splitlines():
        if "DW_TAG_" in line:
            tag = line.split(":", 1)[-1].strip()
            if tag == "DW_TAG_compile_unit":
                units.append(("", "", set()))
        elif units and tag == "DW_TAG_compile_unit" and "DW_AT_language" in line:
            units[-1] = (units[-1][0], line.split("(")[-1].rstrip(")"), units[-1][2])
        elif units and tag == "DW_TAG_compile_unit" and "DW_AT_name" in line:
            units[-1] = (line.split('("')[-1].rstrip('")'), units[-1][1], units[-1][2])
        elif units and tag == "DW_TAG_subprogram" and "DW_AT_linkage_name" in line:
            units[-1][2].add(line.split('("')[-1].rstrip('")'))
    return units


def _gdb_names(binary: Path, debug: Path, addresses: list[int]) -> list[str]:
    """The names GDB 13 (no plugin) gives the functions at `addresses` from the debug file."""
    script = debug.with_suffix(".py")
    script.write_text("import gdb\n"
                      f"for a in {addresses!r}:\n"
                      "    b = gdb.block_for_pc(a)\n"
                      "    print('NAME', b.function.print_name if b and b.function else None)\n")
    out = bolt_truth.run("gdb", "-nx", "-batch", "-ex", f"file {binary}",
                         "-ex", f"symbol-file {debug}", "-x", script)
    return [line[5:] for line in out.splitlines() if line.startswith("NAME ")]


@pytest.mark.parametrize(("variant", "twin"), [("bolt-statics", None),
                                               ("gcc-pgo-nodebug", "gcc-pgo")])
def test_units_have_the_inputs_language(zoo: dict[str, Any], tmp_path: Path, variant: str,
                                        twin: str | None) -> None:
    """Each unit says the language its procedures were compiled in, as the input's (or the
    DWARF twin's) units do, a unit named after a header (statics.h) and one with no DWARF
    behind it (a symbols-only C++ build) too: else GDB shows their linkage names in `bt`."""
    program = "statics" if variant == "bolt-statics" else "except"
    f = facts(zoo, variant, program)
    debug = tmp_path / "out.debug"
    _write(ROOT / f["binary"], debug)
    theirs = _units(ROOT / (f["input"] if twin is None else facts(zoo, twin, program)["binary"]))
    ours = _units(debug)
    if twin is not None:  # no DWARF behind the build: C++ is all that can be known
        theirs = [(n, lang.removesuffix("_14"), names) for n, lang, names in theirs]
        ours = [(n, lang.removesuffix("_14"), names) for n, lang, names in ours]
    by_name = {name: lang for _, lang, names in theirs for name in names}
    # A unit named after a source file (a header among them) says its language; each
    # procedure's is the input's own unit's where the input names it.
    assert [name for name, lang, _ in ours if name and not lang] == [], ours
    wrong = {n: (lang, by_name[n]) for _, lang, names in ours for n in names
             if n in by_name and lang != by_name[n]}
    assert not wrong, wrong
    mangled = {n for _, _, names in ours for n in names if n.startswith("_Z")}
    assert mangled
    functions = [s for s in bolt_truth.functions(ROOT / f["binary"]) if s.name in mangled]
    assert functions
    names = _gdb_names(ROOT / f["binary"], debug, [s.address for s in functions])
    assert len(names) == len(functions) and not [n for n in names if n.startswith("_Z")], names
