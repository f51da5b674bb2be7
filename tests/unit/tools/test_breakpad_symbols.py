"""`unsplit breakpad`: the symbol file crash servers read, checked through Sentry's `symbolic`
(PyPI, its Breakpad reader) and field by field against the format's documentation
(breakpad docs/symbol_files.md).

Oracles, never unsplit: every instruction of every moved fragment (nm, llvm-objdump-22) must be
named by its procedure and line — for BOLT, the input function perf2bolt-22 translates it to and
llvm-symbolizer-22's line in the pre-BOLT input at that address (tests/bolt_truth.py); for GCC
`.cold` and clang MFS, the symbol table's parent and llvm-symbolizer-22's line in the binary. The
STACK CFI records say what llvm-dwarfdump-22 --eh-frame says at the same addresses.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import symbolic  # requirements-dev.txt: a missing oracle fails, never skips

from fixtures import toolbox

from ... import bolt_truth
from ...conftest import ROOT, facts
from ..debug.test_breakpad import _records
from ..formats.test_eh_frame import dwarfdump_fdes

VARIANTS = ["bolt-all", "bolt-cdsplit", "bolt-all-dbg", "bolt-patched", "gcc-pgo",
            "gcc-pgo-nodebug", "clang-mfs"]


def _unsplit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "unsplit", "breakpad", *args], text=True,
                          capture_output=True, timeout=300, cwd=ROOT)


def _guid(build_id: str) -> str:
    """Breakpad's module id of an ELF build-id: its first 16 bytes as a GUID whose first three
    fields are little-endian, then the age 0 (breakpad src/common/linux/file_id.cc)."""
    b = bytes.fromhex(build_id)[:16].ljust(16, b"\0")
    return (b[3::-1] + b[5:3:-1] + b[7:5:-1] + b[8:]).hex().upper() + "0"


def _base(binary: Path) -> int:
    out = subprocess.run(["llvm-readelf-22", "-lW", str(binary)], capture_output=True,
                         text=True, check=True).stdout
    return min(int(m[1], 16) for m in re.finditer(r"^\s+LOAD\s+\S+\s+(0x[0-9a-f]+)", out, re.M))


_RECORD = {
    "FILE": re.compile(r"^FILE (\d+) (\S.*)$"),
    "INLINE_ORIGIN": re.compile(r"^INLINE_ORIGIN (\d+) (\S.*)$"),
    "FUNC": re.compile(r"^FUNC (?:m )?([0-9a-f]+) ([0-9a-f]+) ([0-9a-f]+) (\S.*)$"),
    "INLINE": re.compile(r"^INLINE (\d+) (\d+) (\d+) (\d+)((?: [0-9a-f]+ [0-9a-f]+)+)$"),
    "PUBLIC": re.compile(r"^PUBLIC (?:m )?([0-9a-f]+) ([0-9a-f]+) (\S.*)$"),
    "STACK": re.compile(r"^STACK CFI (?:INIT [0-9a-f]+ [0-9a-f]+ |[0-9a-f]+ )\.cfa: .*$"),
    "line": re.compile(r"^([0-9a-f]+) ([0-9a-f]+) (\d+) (\d+)$"),
}
_ORDER = ["FILE", "INLINE_ORIGIN", "FUNC", "PUBLIC", "STACK"]


def check_format(text: str, program: str, build_id: str | None) -> list[str]:
    """Every record as the documentation has it, in its order; the FUNC and PUBLIC names."""
    lines = text.splitlines()
    assert re.fullmatch(rf"MODULE Linux x86_64 [0-9A-F]{{33}} {program}", lines[0]), lines[0]
    rest = lines[1:]
    if build_id is not None:
        assert rest[0] == f"INFO CODE_ID {build_id.upper()}"
        rest = rest[1:]
    files: set[int] = set()
    origins: set[int] = set()
    names = []
    stage = 0
    func: tuple[int, int] | None = None
    for line in rest:
        kind = next((k for k, r in _RECORD.items() if r.match(line)), None)
        assert kind is not None, f"not a Breakpad record: {line!r}"
        m = _RECORD[kind].match(line)
        assert m is not None
        if kind in ("INLINE", "line"):
            assert func is not None and stage == _ORDER.index("FUNC"), line
        else:
            assert _ORDER.index(kind) >= stage, f"{kind} after {_ORDER[stage]}"
            stage = _ORDER.index(kind)
        if kind == "FILE":
            assert int(m[1]) not in files
            files.add(int(m[1]))
        elif kind == "INLINE_ORIGIN":
            origins.add(int(m[1]))
        elif kind == "FUNC":
            func = (int(m[1], 16), int(m[1], 16) + int(m[2], 16))
            names.append(m[4])
        elif kind == "PUBLIC":
            names.append(m[3])
        elif kind == "line":
            assert func is not None and int(m[4]) in files
            assert func[0] <= int(m[1], 16) and int(m[1], 16) + int(m[2], 16) <= func[1], line
        elif kind == "INLINE":
            assert int(m[3]) in files and int(m[4]) in origins
    return names


@pytest.fixture(scope="module")
def written(zoo: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, tuple[dict[str, Any], Path]]:
    out = {}
    for variant in VARIANTS:
        # a store each: BOLT outputs of one input share its build-id, as a stripped file
        # shares its original's, so they share a place in one store
        store = tmp_path_factory.mktemp("store")
        f = facts(zoo, variant, "crash")
        args = [str(ROOT / f["binary"]), "--symbol-store", str(store), "--json"]
        if f.get("input"):
            args += ["--input", str(ROOT / f["input"])]
        r = _unsplit(*args)
        assert r.returncode == 0, r.stderr
        path = store / "crash" / _guid(f["build_id"]) / "crash.sym"
        assert path.is_file(), (variant, r.stdout)  # the symbol-store layout
        out[variant] = (f, path)
    return out


def _moved(binary: Path) -> list[tuple[int, str]]:
    """(instruction address, fragment symbol) of every instruction of a moved fragment."""
    out = []
    for s in toolbox.text_symbols(binary):
        if toolbox.fragment_name(s.name)[1] != "hot" and s.size:
            out += [(a, s.name) for a in toolbox.instructions(binary, s.start, s.end)]
    return out


@pytest.mark.parametrize("variant", VARIANTS)
def test_symbolic_names_moved_code_by_procedure_and_input_line(
        written: dict[str, tuple[dict[str, Any], Path]], variant: str, tmp_path: Path) -> None:
    f, path = written[variant]
    binary = ROOT / f["binary"]
    moved = _moved(binary)
    assert moved
    addresses = [a for a, _ in moved]
    if f["has_bat"]:
        truth = bolt_truth.perf2bolt_targets(binary, addresses, tmp_path)
        names = {a: truth[a][0] for a in addresses}
        _, found = bolt_truth.input_lines(binary, ROOT / f["input"], truth, addresses)
        lines = dict(zip(addresses, found, strict=True))
    else:
        names = {a: toolbox.fragment_name(sym)[0] for a, sym in moved}
        said = bolt_truth.symbolize(binary, addresses) if f["has_debug_info"] else \
            [None] * len(addresses)
        lines = dict(zip(addresses, said, strict=True))
    shown = toolbox.demangle(sorted(set(names.values())))
    cache = symbolic.Archive.open(str(path)).get_object(arch="x86_64").make_symcache()
    base = _base(binary)
    checked_lines = 0
    wrong: dict[int, tuple[str, int]] = {}
    for address in addresses:
        frames = cache.lookup(address - base)
        assert frames, hex(address)
        assert frames[-1].symbol == shown.get(names[address], names[address]), hex(address)
        line = lines[address]
        if line is not None and line[1] > 0:
            inner = frames[0]
            have = (os.path.basename(inner.full_path or ""), inner.line)
            if have != line:
                wrong[address] = have
            checked_lines += 1
    if f["has_bat"] or f["has_debug_info"]:
        assert checked_lines >= len(addresses) // 2, (checked_lines, len(addresses))
    # Where the line is not the input's, the code is a jump BOLT rebuilt at the end of a block
    # (the lines `unsplit where` gives, as test_debuginfo measures them): BOLT's own
    # --update-debug-sections twin says the same there, and that is rare.
    assert len(wrong) <= max(1, checked_lines // 50), sorted(map(hex, wrong))
    twin = ROOT / "fixtures" / "build" / f"{variant.removesuffix('-dbg')}-dbg" / "crash"
    if wrong and twin.exists():
        assert bolt_truth.symbolize(twin, list(wrong)) == list(wrong.values())
    elif wrong:  # no twin (bolt-patched): they are jumps
        code = bolt_truth.instructions(binary, min(wrong), max(wrong) + 1)
        assert all(code[a].startswith("jmp") for a in wrong), {hex(a): code[a] for a in wrong}


@pytest.mark.parametrize(("variant", "program"), [("bolt-statics", "statics"),
                                                  ("gcc-pgo", "crash"), ("clang-mfs", "crash")])
def test_symbolic_names_every_instruction_of_every_function(zoo: dict[str, Any], variant: str,
                                                           program: str, tmp_path: Path) -> None:
    """Hot fragments too, and instructions between line records (bolt-statics' C++ static
    destructors, whose line records leave bytes out where no source line describes them):
    symbolic names each by its procedure, the symbol table's parent of the symbol around it.
    (symbolic names nothing at such an address inside a FUNC unless a record covers it.)"""
    f = facts(zoo, variant, program)
    binary = ROOT / f["binary"]
    out = tmp_path / f"{program}.sym"
    args = [str(binary), "-o", str(out)] + (["--input", str(ROOT / f["input"])]
                                           if f.get("input") else [])
    r = _unsplit(*args)
    assert r.returncode == 0, r.stderr
    cache = symbolic.Archive.open(str(out)).get_object(arch="x86_64").make_symcache()
    base = _base(binary)
    code = bolt_truth.instructions(binary)
    symbols = [s for s in toolbox.text_symbols(binary) if s.size]
    shown = toolbox.demangle(sorted({toolbox.fragment_name(s.name)[0] for s in symbols}))
    unnamed = []
    checked = 0
    for s in symbols:
        parent = toolbox.fragment_name(s.name)[0]
        for address in (a for a in code if s.start <= a < s.end and code[a] != "nop"):
            frames = cache.lookup(address - base)
            checked += 1
            if not frames or frames[-1].symbol != shown.get(parent, parent):
                unnamed.append((hex(address), parent, frames[-1].symbol if frames else None))
    assert checked > 100 and not unnamed, unnamed[:10]


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_record_as_the_format_says(written: dict[str, tuple[dict[str, Any], Path]],
                                         variant: str) -> None:
    f, path = written[variant]
    binary = ROOT / f["binary"]
    text = path.read_text()
    names = check_format(text, "crash", f["build_id"])
    assert names
    assert not [n for n in names if re.search(r"\.(cold|warm)\b|\.__part\.|\.org\.\d", n)]
    obj = symbolic.Archive.open(str(path)).get_object(arch="x86_64")
    assert str(obj.code_id) == f["build_id"]
    _check_cfi(text, binary)


def _check_cfi(text: str, binary: Path) -> None:
    """The STACK CFI records: llvm-dwarfdump-22's rules at each row, an FDE's start each."""
    fdes = dwarfdump_fdes(str(binary))
    records = _records(text, _base(binary))
    assert len(records) >= len(fdes) // 2
    for address_rows in records.values():
        for address, rules in address_rows[1].items():
            fde = next(((lo, hi) for lo, hi in fdes if lo <= address < hi), None)
            assert fde is not None, hex(address)
            table = fdes[fde]
            assert rules == table[max(a for a in table if a <= address)], hex(address)


def test_a_stripped_binary_still_unwinds(zoo: dict[str, Any], tmp_path: Path) -> None:
    """gcc-pgo-stripped: no symbol names a function, but every FDE's code gets STACK CFI."""
    f = facts(zoo, "gcc-pgo-stripped", "crash")
    binary = ROOT / f["binary"]
    out = tmp_path / "crash.sym"
    r = _unsplit(str(binary), "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    check_format(text, "crash", f["build_id"])
    _check_cfi(text, binary)
    records = _records(text, _base(binary))
    # every FDE whose rules Breakpad can say (a register plus an offset for the CFA, a saved
    # return address: not _start's `undefined`, not the PLT's expression)
    sayable = [lo for (lo, _), rows in dwarfdump_fdes(str(binary)).items()
               if all(re.fullmatch(r"R\w+[+-]\d+", cfa) and regs.get("RIP") == "[CFA-8]"
                      for cfa, regs in rows.values())]
    assert sayable and all(lo in records for lo in sayable), (sayable, sorted(records))


def test_no_build_id_and_bad_input(zoo: dict[str, Any], tmp_path: Path) -> None:
    if shutil.which("llvm-objcopy-22") is None:
        pytest.skip("llvm-objcopy-22 not installed")
    f = facts(zoo, "gcc-pgo", "crash")
    plain = tmp_path / "crash"
    subprocess.run(["llvm-objcopy-22", "--remove-section=.note.gnu.build-id",
                    str(ROOT / f["binary"]), str(plain)], check=True)
    out = tmp_path / "crash.sym"
    r = _unsplit(str(plain), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("\n") == 1 and "no build-id" in r.stderr
    names = check_format(out.read_text(), "crash", None)
    assert "run" in names and "run.cold" not in names
    assert symbolic.Archive.open(str(out)).get_object(arch="x86_64").make_symcache()
    junk = tmp_path / "junk"
    junk.write_bytes(b"not an ELF file at all")
    for args in ([str(junk), "-o", str(out)], [str(plain)], [str(tmp_path / "nope"), "-o", "-"],
                 [str(plain), "-o", str(plain / "x.sym")]):
        r = _unsplit(*args)
        assert r.returncode != 0 and r.stderr.startswith("unsplit: "), (args, r.stderr)
        assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
        assert "warning" not in r.stderr  # the error alone


def _file_size_limit(limit: int) -> None:
    """In the child: writes past `limit` bytes fail with EFBIG (SIGXFSZ ignored, so the
    process lives to say so)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_failed_write_is_one_line_and_leaves_no_file(zoo: dict[str, Any], tmp_path: Path
                                                       ) -> None:
    """The records go out as they are made: a write that fails halfway (the file grows past
    the size limit, stdout is a full device) is the user's one-line error, and neither the
    file nor a half-written temporary one is left where a crash server would read it."""
    binary = ROOT / facts(zoo, "gcc-pgo", "crash")["binary"]
    out = tmp_path / "store" / "crash.sym"
    r = subprocess.run([sys.executable, "-m", "unsplit", "breakpad", str(binary), "-o", str(out)],
                       text=True, capture_output=True, timeout=300, cwd=ROOT,
                       preexec_fn=lambda: _file_size_limit(4096))
    assert r.returncode == 1, r.stderr
    assert r.stderr == f"unsplit: {out}: cannot write it (File too large)\n"
    assert list(out.parent.iterdir()) == []
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "unsplit", "breakpad", str(binary), "-o", "-"],
                           text=True, stdout=full, stderr=subprocess.PIPE, timeout=300, cwd=ROOT)
    assert r.returncode == 1, r.stderr
    assert r.stderr == "unsplit: stdout: cannot write it (No space left on device)\n"


def test_inlined_calls_of_moved_code_are_the_inputs(zoo: dict[str, Any], tmp_path: Path) -> None:
    """bolt-dlopen's libwork.so: `quarantine_record` exists only inlined in `verify_record`'s
    cold fragment. symbolic's frames there, innermost first, are llvm-symbolizer-22's on the
    pre-BOLT input at the address perf2bolt-22 translates to, the outermost named by the
    procedure."""
    f = facts(zoo, "bolt-dlopen", "libwork")
    binary, inp = ROOT / f["binary"], ROOT / f["input"]
    out = tmp_path / "libwork.sym"
    r = _unsplit(str(binary), "--input", str(inp), "-o", str(out))
    assert r.returncode == 0, r.stderr
    check_format(out.read_text(), "libwork.so", f["build_id"])
    cold = next(s for s in toolbox.text_symbols(binary) if s.name == "verify_record.cold")
    addresses = toolbox.instructions(binary, cold.start, cold.end)
    truth = bolt_truth.perf2bolt_targets(binary, addresses, tmp_path)
    # (a shared library lists its global functions in .symtab and .dynsym alike)
    starts = {s.name: s.start for s in toolbox.text_symbols(inp)}
    ours, theirs = bolt_truth.instructions(binary), bolt_truth.instructions(inp)
    cache = symbolic.Archive.open(str(out)).get_object(arch="x86_64").make_symcache()
    base = _base(binary)
    inlined = 0
    for address in addresses:
        at = starts[truth[address][0]] + truth[address][2]
        if ours.get(address) != theirs.get(at):
            continue  # an instruction BOLT made: no input line of its own
        want = toolbox.inline_chain(inp, at)
        frames = cache.lookup(address - base)
        assert frames[-1].symbol == "verify_record"
        if len(want) > 1:
            inlined += 1
            assert [(fr.symbol, os.path.basename(fr.full_path or ""), fr.line)
                    for fr in frames[:-1]] == \
                [(w["function"], w["file"], w["line"]) for w in want[:-1]], hex(address)
            assert frames[-1].line == want[-1]["line"]
    assert inlined >= 3
