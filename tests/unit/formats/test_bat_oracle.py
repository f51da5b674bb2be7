"""BAT decoding and translation against LLVM's own tools (shared/specs/bolt-bat.md §4, §5).

llvm-bat-dump is not shipped by Debian (spec §2.6), so the oracle is perf2bolt-22 fed
pre-aggregated branch records (§4.5, §5.2): ``B 0 X`` translates X as a branch target, ``B X T``
translates X as a branch source, each through BOLT's own ``translate``. (``bat.dump``'s text is
compared with llvm-bat-dump's recorded output in test_bat.py.) Binaries are built once per
session in a temporary directory.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from unsplit.elf.binary import Binary
from unsplit.errors import BinaryError, DecodeError
from unsplit.formats import bat
from unsplit.index.bolt import bat_translate, prebolt
from unsplit.index.sources import bat as bat_source

CLANG, BOLT, PERF2BOLT = "clang-22", "llvm-bolt-22", "perf2bolt-22"
OBJDUMP, SYMBOLIZER = "llvm-objdump-22", "llvm-symbolizer-22"

pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in (CLANG, BOLT, PERF2BOLT, OBJDUMP)),
    reason="needs clang-22, llvm-bolt-22, perf2bolt-22 and llvm-objdump-22",
)

# BOLT's fragment symbols as perf2bolt recognizes them (spec §5.2, §6.1): the oracle's own.
_BOLT_FRAGMENT = re.compile(r"^(?P<base>.*)\.(?P<tag>(?:cold|warm)(?:\.[0-9]+)?)$")

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) int foo(int x) {
  int s = 0;
  for (int i = 0; i < x; i++) {
    if (i % 7 == 3) s += i * 3; else if (i % 5 == 1) s -= i; else s ^= i;
    if (s > 100000) { printf("big %d\n", s); s = 0; }
  }
  return s;
}
static __attribute__((noinline)) int bar(int a, int b) {
  switch (a & 3) {
  case 0: return a + b;
  case 1: return a * b;
  case 2: return a - b;
  default: return b ? a / b : 0;
  }
}
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10;
  int r = foo(n);
  for (int i = 0; i < n; i++) r += bar(i, n);
  if (r == 42) puts("answer");
  printf("%d\n", r);
  return 0;
}
"""

OTHER = "int foo(int x) { return x + 1; }\nint main(void) { return foo(1); }\n"

# No-LBR samples at the entries: every other block is cold, so profile2 splits (§4.2).
FDATA = "no_lbr\n1 foo 0 1000\n1 main 0 1000\n1 bar 0 500\n"

VARIANTS: dict[str, list[str]] = {
    "all": ["--split-functions", "--split-strategy=all"],
    "profile2": ["--data", "{fdata}", "--split-functions", "--split-all-cold",
                 "--reorder-blocks=reverse"],
    "cdsplit": ["--data", "{fdata}", "--split-functions", "--split-strategy=cdsplit",
                "--reorder-blocks=ext-tsp", "--lite=0"],
    "nonreloc": ["--relocs=0", "--split-functions", "--split-strategy=random2", "--bolt-seed=3"],
}  # fmt: skip


@dataclass
class Built:
    root: Path
    input: Path
    other: Path
    outputs: dict[str, Path]
    twins: dict[str, Path]  # the same command plus --update-debug-sections


def run(*args: str | Path) -> str:
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{args}: {proc.stderr[-2000:]}"
    return proc.stdout


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("bat")
    (root / "t.c").write_text(PROGRAM)
    (root / "o.c").write_text(OTHER)
    (root / "t.fdata").write_text(FDATA)
    flags = ["-O2", "-g", "-fno-pie", "-no-pie", "-Wl,--emit-relocs", "-Wl,--build-id"]
    run(CLANG, *flags, root / "t.c", "-o", root / "t")
    run(CLANG, *flags, root / "o.c", "-o", root / "o")
    outputs, twins = {}, {}
    for name, opts in VARIANTS.items():
        args = [o.replace("{fdata}", str(root / "t.fdata")) for o in opts]
        for suffix, extra, into in (
            ("", [], outputs),
            (".dbg", ["--update-debug-sections"], twins),
        ):
            out = root / f"t.{name}{suffix}"
            run(BOLT, root / "t", "-o", out, "--enable-bat", *args, *extra)
            into[name] = out
    return Built(root, root / "t", root / "o", outputs, twins)


def instructions(path: Path) -> Iterator[tuple[int, str]]:
    """(address, mnemonic) of every instruction llvm-objdump disassembles."""
    for line in run(OBJDUMP, "-d", "--no-show-raw-insn", path).splitlines():
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)", line)
        if m:
            yield int(m.group(1), 16), m.group(2)


def probes(
    binary: Binary, path: Path, skip_returns: bool = False
) -> list[bat_translate.Translation]:
    """Our translation of every instruction in a BOLTed fragment. perf2bolt records a branch
    *from* a return as a return, not as a branch, so source probes skip them."""
    index = bat_translate.load(binary)
    assert index is not None
    out = [
        index.translate(a)
        for a, mnemonic in instructions(path)
        if not (skip_returns and mnemonic.startswith("ret"))
    ]
    return [t for t in out if t is not None]


def perf2bolt(path: Path, lines: list[str], workdir: Path) -> Counter[tuple[str, int, str, int]]:
    agg, fdata = workdir / f"{path.name}.agg", workdir / f"{path.name}.fdata"
    agg.write_text("".join(lines))
    run(PERF2BOLT, path, "--pa", "-p", agg, "-o", fdata)
    got: Counter[tuple[str, int, str, int]] = Counter()
    for line in fdata.read_text().splitlines()[1:]:  # first line: boltedcollection
        f = line.split()
        # Local functions are written name/file/1 (spec §5.2).
        got[(f[1].split("/")[0], int(f[2], 16), f[4].split("/")[0], int(f[5], 16))] += int(f[7])
    return got


@pytest.fixture(scope="session", params=sorted(VARIANTS))
def variant(request: pytest.FixtureRequest, built: Built) -> tuple[str, Path]:
    return request.param, built.outputs[request.param]


def test_note_roundtrips_byte_for_byte(variant: tuple[str, Path]) -> None:
    data = Binary(str(variant[1])).section_data(bat.SECTION)
    assert data is not None
    desc, at = bat.note_descriptor(data)
    assert at == 20 and bat.encode_payload(bat.decode_note(data)) == desc


def test_targets_agree_with_perf2bolt(variant: tuple[str, Path], built: Built) -> None:
    """``B 0 X`` for every instruction X of every BOLTed fragment: perf2bolt's translated
    target (parent name + input offset, §3.2 non-branch mode) must equal ours."""
    binary = Binary(str(variant[1]))
    trs = probes(binary, variant[1])
    assert len(trs) > 20
    want: Counter[tuple[str, int, str, int]] = Counter()
    lines = []
    for i, tr in enumerate(trs, 1):
        lines.append(f"B 0 {tr.address:x} {i} 0\n")
        want[("[unknown]", 0, tr.procedure, tr.input_offset)] += i
    assert perf2bolt(variant[1], lines, built.root) == want


def test_sources_agree_with_perf2bolt(variant: tuple[str, Path], built: Built) -> None:
    """``B X T``: X is translated as a branch source, snapped to its anchor entry (§3.2)."""
    binary = Binary(str(variant[1]))
    index = bat_translate.load(binary)
    assert index is not None
    main = index.translate(index.procedures["main"])
    assert main is not None
    want: Counter[tuple[str, int, str, int]] = Counter()
    lines = []
    for i, tr in enumerate(probes(binary, variant[1], skip_returns=True), 1):
        m = index.table.maps[tr.fragment_start]
        snapped = m.translate(tr.address - tr.fragment_start, is_branch_src=True)
        lines.append(f"B {tr.address:x} {main.address:x} {i} 0\n")
        want[(tr.procedure, snapped, "main", 0)] += i
    assert perf2bolt(variant[1], lines, built.root) == want


def test_placements_invert_translation(variant: tuple[str, Path]) -> None:
    """Every entry's input offset maps back to the entry's output address, and every site
    placements() gives translates forward to the input offset asked for."""
    index = bat_translate.load(Binary(str(variant[1])))
    assert index is not None
    checked = 0
    for name in index.procedures:
        for frag in index.fragments_of(name):
            m = index.table.maps[frag.start]
            for i, e in enumerate(m.entries()):
                last = i + 1 == len(m) or m.output_offsets[i + 1] != e.output_offset
                if not last or frag.start + e.output_offset >= frag.end:
                    continue
                placed = index.placements(name, e.input_offset)
                assert placed is not None
                assert frag.start + e.output_offset in [s.address for s in placed.sites]
                for site in placed.sites:
                    tr = index.translate(site.address)
                    assert tr is not None and tr.procedure == name
                    assert tr.input_offset == e.input_offset
                checked += 1
    assert checked > 5


def test_procedures_cover_fragment_symbols(variant: tuple[str, Path]) -> None:
    """Every BOLT fragment symbol (foo.cold.N, foo.warm, foo.cold) is a fragment of its
    procedure, named without the prefix, with the symbol's extent (§6.1)."""
    binary = Binary(str(variant[1]))
    procs = {p.name: p for p in bat_source.BatSource(binary).procedures()}
    assert {"foo", "main"} <= set(procs)
    seen = 0
    # pyelftools' own symbol reader: independent of Binary.symbol_entries.
    for sym in binary.elf.get_section_by_name(".symtab").iter_symbols():
        m = _BOLT_FRAGMENT.match(sym.name)
        if sym["st_info"]["type"] != "STT_FUNC" or m is None or m["base"] not in procs:
            continue
        frag = procs[m["base"]].fragment_named(m["tag"])
        assert frag is not None and frag.symbol == sym.name and frag.source == "bat"
        assert (frag.start, frag.size) == (sym["st_value"], sym["st_size"])
        seen += 1
    assert seen >= 1
    for p in procs.values():
        assert p.fragments[0].name == "hot" and p.fragments[0].logical_start == 0
        for a, b in zip(p.fragments, p.fragments[1:], strict=False):
            assert b.logical_start == a.logical_start + a.size


def test_input_offset_and_lines_match_the_debug_twin(
    variant: tuple[str, Path], built: Built
) -> None:
    """Input binary line of (input function + BAT offset) vs the line BOLT itself wrote for the
    same output address in the --update-debug-sections twin (same code bytes), where neither
    line is 0 (issue 4's oracle). Measured here: 90/96, 88/89, 89/90, 74/78. The rest are
    instructions BOLT inserted (jumps between fragments after a translated branch, which no
    input line describes) and inlined atoi, where the twin names the caller's line: so at entry
    addresses (block and branch starts) in the same file we require agreement, elsewhere 90%."""
    if not shutil.which(SYMBOLIZER):
        pytest.skip("needs llvm-symbolizer-22")
    name, path = variant
    binary, twin = Binary(str(path)), built.twins[name]
    inp = prebolt.find_input(binary)
    assert inp is not None
    pairs, exact = [], []
    for tr in probes(binary, path):
        got = bat_source.input_offset(binary, tr.address, inp)
        assert got is not None and got[:2] == (tr.procedure, tr.input_offset)
        assert got[2] is not None
        pairs.append((tr.address, got[2] + got[1]))
        exact.append(tr.exact)
    ours = symbolize(built.input, [a for _, a in pairs])
    theirs = symbolize(twin, [a for a, _ in pairs])
    compared = agree = 0
    wrong = []
    for (a, _), o, t, at_entry in zip(pairs, ours, theirs, exact, strict=True):
        if not (o[1] and t[1]):
            continue
        compared += 1
        agree += o == t
        if o != t and at_entry and o[0] == t[0]:
            wrong.append((hex(a), o, t))
    print(f"{name}: {agree}/{compared} lines agree with the --update-debug-sections twin")
    assert compared > 10 and agree >= 0.9 * compared
    assert not wrong, wrong[:10]


def symbolize(path: Path, addresses: list[int]) -> list[tuple[str, int]]:
    stdin = "".join(f"{a:#x}\n" for a in addresses)
    proc = subprocess.run(
        [SYMBOLIZER, "--obj", str(path), "--no-inlines", "--basenames", "--output-style=GNU",
         "--functions=none"],
        input=stdin, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    out = []
    for line in proc.stdout.splitlines():
        file, _, rest = line.rpartition(":")
        out.append((file, int(rest.split()[0]) if rest.split()[0].isdigit() else 0))
    return out


# -- the pre-BOLT binary ----------------------------------------------------------------------


def test_input_found_next_to_the_output(built: Built) -> None:
    for path in built.outputs.values():
        binary = Binary(str(path))
        found = prebolt.find_input(binary)
        assert found is not None and Path(found.path) == built.input
        assert binary.build_id is not None and found.build_id is not None
        assert found.build_id == prebolt.input_build_id(binary.build_id)


def test_input_found_through_the_search_path(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = tmp_path / "out"
    alone.mkdir()
    shutil.copy(built.outputs["all"], alone / "t.all")
    monkeypatch.setenv(prebolt.ENV_PATH, f"/nonexistent:{built.root}")
    monkeypatch.setenv("DEBUGINFOD_CACHE_PATH", str(tmp_path / "cache"))
    found = prebolt.find_input(Binary(str(alone / "t.all")))
    assert found is not None and Path(found.path) == built.input
    monkeypatch.setenv(prebolt.ENV_PATH, "")
    assert prebolt.find_input(Binary(str(alone / "t.all"))) is None
    # The debuginfod cache layout: <cache>/<build-id hex>/debuginfo.
    bid = prebolt.input_build_id(Binary(str(alone / "t.all")).build_id or b"").hex()
    (tmp_path / "cache" / bid).mkdir(parents=True)
    shutil.copy(built.input, tmp_path / "cache" / bid / "debuginfo")
    found = prebolt.find_input(Binary(str(alone / "t.all")))
    assert found is not None and found.path.endswith("debuginfo")


def test_explicit_input_is_verified(built: Built) -> None:
    binary = Binary(str(built.outputs["all"]))
    ok = prebolt.find_input(binary, str(built.input))
    assert ok is not None and Path(ok.path) == built.input
    with pytest.raises(BinaryError, match="not the input of") as info:
        prebolt.find_input(binary, str(built.other))
    assert "\n" not in str(info.value)


def test_symbol_check_without_build_ids(built: Built, tmp_path: Path) -> None:
    """Without the build-id check, the symbol check alone refuses a wrong input."""
    binary = Binary(str(built.outputs["all"]))
    assert prebolt.mismatch(binary, Binary(str(built.input))) is None
    why = prebolt.mismatch(binary, Binary(str(built.other)))
    assert why is not None and "missing from its symbols" in why


def test_corrupt_note_falls_back_to_symbols(built: Built, tmp_path: Path) -> None:
    """A malformed note: the bat source gives no procedures and keeps a one-line DecodeError
    naming the section offset; translation reports the same error, nothing else."""
    data = bytearray(built.outputs["all"].read_bytes())
    binary = Binary(str(built.outputs["all"]))
    sec = binary.section(bat.SECTION)
    assert sec is not None
    at = sec["sh_offset"] + 20  # the hot function count, first byte of the descriptor
    data[at : at + 3] = b"\xff\xff\x7f"
    bad = tmp_path / "t.bad"
    bad.write_bytes(bytes(data))
    broken = Binary(str(bad))
    source = bat_source.BatSource(broken)
    [problem] = source.problems()  # asked before procedures(): the note is read for it
    assert problem.startswith("BOLT address translation ignored: .note.bolt_bat: at offset "
                              "0x14: hot function count") and "\n" not in problem
    assert source.procedures() == [] and source.problems() == [problem]
    assert bat_source.input_offset(broken, 0x800000) is None
    with pytest.raises(DecodeError, match="hot function count"):
        bat_translate.translate(broken, 0x800000)
