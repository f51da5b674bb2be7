"""The index on real compiler output: fragments from symbols, lines from DWARF.

Lines are checked against llvm-symbolizer-22, the independent oracle, on every instruction
boundary llvm-objdump reports inside the split procedures' fragments.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from unsplit.index.model.records import HOT
from unsplit.index.module_index import ModuleIndex
from unsplit.index.sources.symbols import split_fragment_name

from ...conftest import ROOT, facts


@pytest.mark.parametrize(
    ("symbol", "expected"),
    [
        ("foo.cold", ("foo", "cold")),
        ("foo.cold.3", ("foo", "cold.3")),
        ("foo.warm", ("foo", "warm")),
        ("foo.__part.2", ("foo", "part.2")),
        ("foo.part.0.cold", ("foo.part.0", "cold")),
        ("foo.part.0", None),
        ("foo.isra.0", None),
        ("foo.constprop.1", None),
        ("cold", None),
    ],
)
def test_fragment_naming(symbol: str, expected: tuple[str, str] | None) -> None:
    assert split_fragment_name(symbol) == expected


def _nm(binary: Path) -> dict[str, tuple[int, int]]:
    out = subprocess.run(["nm", "-S", str(binary)], capture_output=True, text=True, check=True)
    syms = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT":
            syms[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
    return syms


def test_gcc_cold_fragments(gcc_pgo: Path) -> None:
    syms = _nm(gcc_pgo)
    colds = [s for s in syms if s.endswith(".cold")]
    assert "work.cold" in colds, colds
    index = ModuleIndex.open(str(gcc_pgo))
    for cold in colds:
        start, size = syms[cold]
        base = cold[: -len(".cold")]
        proc = index.procedure(base)
        assert [f.name for f in proc.fragments] == [HOT, "cold"]
        assert proc.entry == syms[base][0]
        loc = index.locate(start + size - 1)
        assert (loc.procedure, loc.fragment, loc.fragment_symbol) == (base, "cold", cold)
        # The offset is in the original layout: the hot part first, then the cold part.
        assert loc.offset == syms[base][1] + size - 1
        assert proc.addresses_of(loc.offset) == [start + size - 1]


def test_split_symbols_are_grouped_from_the_columns(gcc_pgo: Path) -> None:
    """Grouping a split binary's symbols makes no object per function symbol (libc's debug
    .symtab has 6,700 functions, 92 split: a GDB session's first `bt` builds its index); the
    groups themselves are checked against nm above."""
    index = ModuleIndex.open(str(gcc_pgo))
    assert index.procedure("work") is not None and "symbols" in index.sources_used
    assert "functions" not in vars(index.binary)


def test_hot_address_and_outside(gcc_pgo: Path) -> None:
    syms = _nm(gcc_pgo)
    index = ModuleIndex.open(str(gcc_pgo))
    start, _ = syms["main"]
    loc = index.locate(start + 1)
    assert (loc.procedure, loc.fragment, loc.offset) == ("main", HOT, 1)
    assert not loc.in_moved_code and loc.label() == "main"
    assert index.locate(0x10).procedure is None


def _instruction_addresses(binary: Path, symbol: str) -> list[int]:
    out = subprocess.run(["llvm-objdump-22", "-d", f"--disassemble-symbols={symbol}",
                          str(binary)], capture_output=True, text=True, check=True).stdout
    return [int(m[1], 16) for m in re.finditer(r"^\s*([0-9a-f]+):", out, re.M)]


def _symbolize(binary: Path, addresses: list[int]) -> list[tuple[str, int]]:
    text = "\n".join(hex(a) for a in addresses) + "\n"
    out = subprocess.run(["llvm-symbolizer-22", "--obj", str(binary), "--no-inlines",
                          "--output-style=JSON"], input=text, capture_output=True, text=True,
                         check=True).stdout
    import json

    rows = []
    for line in out.splitlines():
        frame = json.loads(line)["Symbol"][0]
        rows.append((frame["FileName"], frame["Line"]))
    return rows


@pytest.mark.parametrize("build", ["gcc_pgo", "clang_mfs"])
def test_lines_match_llvm_symbolizer(build: str, request: pytest.FixtureRequest) -> None:
    if shutil.which("llvm-symbolizer-22") is None:
        pytest.skip("llvm-symbolizer-22 not installed")
    binary: Path = request.getfixturevalue(build)
    syms = _nm(binary)
    names = [s for s in syms if s.startswith(("work", "helper", "main"))]
    assert any(n.endswith(".cold") for n in names), names
    index = ModuleIndex.open(str(binary))
    addresses = [a for n in names for a in _instruction_addresses(binary, n)]
    assert len(addresses) > 20
    expected = _symbolize(binary, addresses)
    # The DWARF rows themselves, line 0 included (`where` shows line 0 as unknown).
    rows = [index.dwarf_lines.lookup(a) for a in addresses]
    assert [(r.path, r.line) if r else ("", 0) for r in rows] == expected
    located = [index.locate(a) for a in addresses]
    assert [(loc.path, loc.line) for loc in located] == \
        [(p, n) if n else (None, None) for p, n in expected]


def test_stripped_binary_uses_its_debug_file(gcc_pgo: Path, tmp_path: Path) -> None:
    """objcopy --only-keep-debug + strip + --add-gnu-debuglink, as distributions ship."""
    binary, debug = tmp_path / "sample", tmp_path / "sample.debug"
    shutil.copy(gcc_pgo, binary)
    subprocess.run(["objcopy", "--only-keep-debug", str(binary), str(debug)], check=True)
    subprocess.run(["strip", str(binary)], check=True)
    subprocess.run(["objcopy", f"--add-gnu-debuglink={debug}", str(binary)], check=True,
                   cwd=tmp_path)
    assert "work.cold" not in _nm_or_empty(binary)
    start, _size = _nm(gcc_pgo)["work.cold"]
    loc = ModuleIndex.open(str(binary)).locate(start)
    expected = ModuleIndex.open(str(gcc_pgo)).locate(start)
    assert (loc.procedure, loc.fragment, loc.offset) == ("work", "cold", expected.offset)
    assert (loc.file, loc.line) == (expected.file, expected.line) and loc.line


def _nm_or_empty(binary: Path) -> str:
    return subprocess.run(["nm", str(binary)], capture_output=True, text=True).stdout


@pytest.mark.parametrize("variant", ["gcc-pgo", "clang-mfs", "bolt-all", "bolt-cdsplit-dbg"])
def test_locate_without_offsets_drops_only_them(zoo: dict[str, Any], variant: str) -> None:
    """`offsets=False` (what `unsplit symbolize` asks without --json) leaves the offset, the
    pre-BOLT input address and BAT's facts out, and says the same of everything else."""
    f = facts(zoo, variant, "crash")
    index = ModuleIndex.open(str(ROOT / f["binary"]))
    dropped = {"offset": None, "input_address": None, "bat": None}
    checked = 0
    for info in f["split_functions"].values():
        for frag in info["fragments"]:
            for address in range(int(frag["start"], 16), int(frag["end"], 16)):
                full = index.locate(address, blocks=False)
                assert full.offset is not None
                assert index.locate(address, blocks=False, offsets=False) == \
                    full._replace(**dropped)
                checked += 1
    assert checked > 50
