"""`unsplit symbolize` against llvm-symbolizer-22 (the oracle) and the zoo's facts.

Mode compared: llvm-symbolizer's default function names (``--functions=linkage``, demangled),
whose names in unsplit code are the ELF symbols, as ours are. Our default (inlined frames) is
compared with llvm-symbolizer's default, our ``--no-inlines`` with its ``--no-inlines`` where no
code is inlined; where code is inlined it prints the procedure at its own line, llvm-symbolizer's
last inlined frame (llvm-symbolizer --no-inlines pairs the procedure's name with the callee's
line there). In moved code the function line differs by design (``transfer`` where llvm says
``transfer.cold``): there the answer is checked against the facts instead.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from unsplit.tools.symbolize import Symbolizer, stream

from ... import bolt_truth
from ...conftest import ROOT, facts

LLVM = "llvm-symbolizer-22"
PROGRAMS = ["loop", "recurse", "switch", "except", "crash"]
ORACLE_VARIANTS = ["gcc-pgo", "gcc-pgo-nodebug", "clang-mfs", "clang-bbsections",
                   "bolt-all-dbg", "bolt-cdsplit-dbg"]
TRUTH_VARIANTS = ["gcc-pgo", "clang-mfs", "clang-bbsections", "bolt-all-dbg",
                  "bolt-random2-dbg", "bolt-profile2-dbg", "bolt-cdsplit-dbg"]

pytestmark = pytest.mark.skipif(shutil.which(LLVM) is None, reason=f"{LLVM} not installed")


def _ours(exe: str, lines: list[str], **opts: Any) -> str:
    out = io.StringIO()
    sym = Symbolizer(exe, opts.pop("input_path", None), opts.pop("fragments", False),
                     opts.pop("demangle", True))
    stream(sym, io.StringIO("".join(x + "\n" for x in lines)), out,
           relative=opts.get("relative", False), inlines=opts.get("inlines", False),
           as_json=opts.get("as_json", False))
    return out.getvalue()


def _llvm(exe: str, lines: list[str], *flags: str) -> str:
    return subprocess.run([LLVM, f"--obj={exe}", *flags], input="".join(x + "\n" for x in lines),
                          capture_output=True, text=True, check=True).stdout


def _split(text: str) -> list[str]:
    return text.split("\n\n")[:-1]


def _programs(zoo: dict[str, Any], variant: str) -> Iterator[tuple[str, dict[str, Any], str]]:
    """Each program of `variant`: its name, its facts and its binary's path."""
    for program in PROGRAMS:
        f = facts(zoo, variant, program)
        yield program, f, str(ROOT / f["binary"])


@pytest.mark.parametrize("variant", ORACLE_VARIANTS)
def test_unsplit_code_is_byte_identical_to_llvm_symbolizer(
        zoo: dict[str, Any], variant: str) -> None:
    compared = 0
    for program, _, exe in _programs(zoo, variant):
        index = Symbolizer(exe).index
        addresses = [a for p in index.procedures.values() for fr in p.fragments
                     if fr.name == "hot" for a in range(fr.start, fr.end)]
        lines = [hex(a) for a in addresses]
        for ours, theirs in ((_ours(exe, lines), _llvm(exe, lines, "--no-inlines")),
                             (_ours(exe, lines, inlines=True), _llvm(exe, lines, "--inlines"))):
            mine, oracle = _split(ours), _split(theirs)
            assert len(mine) == len(oracle) == len(lines)
            diffs = [(lines[i], oracle[i], mine[i]) for i in range(len(lines))
                     if mine[i] != oracle[i]]
            assert diffs == [], f"{variant}/{program}: {len(diffs)} differ, first {diffs[:3]}"
            compared += len(lines)
    assert compared > 1000


def test_a_sequence_starting_where_another_ends(zoo: dict[str, Any]) -> None:
    f = facts(zoo, "gcc-pgo", "loop")
    exe = str(ROOT / f["binary"])
    entry = f["split_functions"]["main"]["fragments"][0]["start"]
    assert _ours(exe, [entry]) == _llvm(exe, [entry], "--no-inlines")


@pytest.mark.parametrize("variant", TRUTH_VARIANTS)
def test_moved_code_names_the_procedure_and_its_true_line(
        zoo: dict[str, Any], variant: str) -> None:
    checked = 0
    for program, f, exe in _programs(zoo, variant):
        samples = [(proc, info["demangled"], frag) for proc, info in f["split_functions"].items()
                   for frag in info["fragments"] if frag.get("sample", {}).get("line")]
        if not samples:
            continue
        lines = [frag["sample"]["address"] for _, _, frag in samples]
        text = _split(_ours(exe, lines))
        records = [json.loads(x) for x in _ours(exe, lines, as_json=True).splitlines()]
        for (proc, demangled, frag), block, rec in zip(samples, text, records, strict=True):
            name, where = block.split("\n")
            assert name == demangled
            file, line, _ = where.rsplit(":", 2)
            assert (file.rsplit("/", 1)[-1], int(line)) == \
                (frag["sample"]["file"], frag["sample"]["line"]), (program, frag)
            assert (rec["procedure"], rec["linkage_name"], rec["fragment"],
                    rec["fragment_symbol"]) == (demangled, proc, frag["fragment"], frag["symbol"])
            checked += 1
    assert checked


@pytest.mark.parametrize("variant", ["gcc-pgo", "clang-mfs", "bolt-all-dbg"])
def test_no_demangle_is_byte_identical_to_llvm_symbolizer(
        zoo: dict[str, Any], variant: str) -> None:
    """`--no-demangle` prints linkage names as llvm-symbolizer's own option does, for DWARF
    names (DW_AT_linkage_name) and symbol names alike, inlined frames included."""
    f = facts(zoo, variant, "except")
    exe = str(ROOT / f["binary"])
    index = Symbolizer(exe).index
    lines = [hex(a) for p in index.procedures.values() for fr in p.fragments
             if fr.name == "hot" for a in range(fr.start, fr.end)]
    ours = _split(_ours(exe, lines, inlines=True, demangle=False))
    oracle = _split(_llvm(exe, lines, "--inlines", "--no-demangle"))
    assert any("_Z7processPKii" in o for o in oracle)
    assert ours == oracle


def test_moved_cpp_code_reads_demangled_in_both_wordings(zoo: dict[str, Any]) -> None:
    """`_Z7processPKii [cold.2]` (bolt-all except) reads `process(int const*, int) [cold.2]`
    as llvm-cxxfilt-22 demangles it; `--no-demangle` keeps the linkage name."""
    f = facts(zoo, "bolt-all", "except")
    exe = str(ROOT / f["binary"])
    frag = next(fr for fr in f["split_functions"]["_Z7processPKii"]["fragments"]
                if fr["fragment"] == "cold.2")
    oracle = subprocess.run(["llvm-cxxfilt-22", "_Z7processPKii"], capture_output=True,
                            text=True, check=True).stdout.strip()
    shown = _ours(exe, [frag["start"]], fragments=True).splitlines()[0]
    assert shown == f"{oracle} [cold.2]"
    mangled = _ours(exe, [frag["start"]], fragments=True, demangle=False).splitlines()[0]
    assert mangled == "_Z7processPKii [cold.2]"


def test_bolt_without_dwarf_takes_lines_from_the_prebolt_input(zoo: dict[str, Any]) -> None:
    """bolt-all has no DWARF: its crash site gets the line of the input binary (found in
    input/ by build-id, or named with --input), as its -dbg twin's facts say."""
    f = facts(zoo, "bolt-all", "crash")
    exe = str(ROOT / f["binary"])
    pc = f["crash"]["link_pc"]
    site = f["markers"]["crash.c"]["crash site"]
    for out in (_ours(exe, [pc]), _ours(exe, [pc], input_path=str(ROOT / f["input"]))):
        assert out.splitlines()[:2] == ["transfer", f"{ROOT}/fixtures/src/crash.c:{site}:10"]
    name, where = _llvm(exe, [pc], "--no-inlines").splitlines()[:2]
    assert name == "transfer.cold.1" and where.endswith(":0:0")  # no line without the input


@pytest.mark.parametrize("program", PROGRAMS)
def test_bolt_patched_originals_have_their_functions_entry_line(zoo: dict[str, Any],
                                                               program: str) -> None:
    """bolt-patched: BOLT's patched original `foo.org.0` (a jump at foo's input address to
    foo's new code) is named as llvm-symbolizer-22 names it, at the line llvm-symbolizer-22
    gives foo's entry in the pre-BOLT input; BOLT's own STT_FILE, bolt-pseudo.o, is never
    given as a file."""
    f = facts(zoo, "bolt-patched", program)
    exe, inp = str(ROOT / f["binary"]), str(ROOT / f["input"])
    originals = f["bolt_originals"]
    lines = list(originals.values())
    ours = _split(_ours(exe, lines))
    assert all("bolt-pseudo.o" not in x for x in ours), ours
    assert "bolt-pseudo.o" in _llvm(exe, lines, "--no-inlines")  # what is not copied
    for name, proc in ((f"{p}.org.0", p) for p in f["split_functions"]):
        at = originals[name]
        start = f["split_functions"][proc]["fragments"][0]["start"]
        mine = _split(_ours(exe, [at, hex(int(at, 16) + 1)]))
        llvm_name = _llvm(exe, [at], "--no-inlines").splitlines()[0]
        where = _llvm(inp, [at], "--no-inlines").splitlines()[1]  # the input's, at its entry
        assert mine == [f"{llvm_name}\n{where}"] * 2, (name, mine)
        assert where != "??:0:0" and int(start, 16) != int(at, 16)


def test_bolt_output_without_input_says_no_file(zoo: dict[str, Any], tmp_path: Any) -> None:
    """bolt-all copied away from its pre-BOLT input: moved code has no line (`??:0:0`), where
    llvm-symbolizer-22 names the STT_FILE BOLT puts its fragment symbols under."""
    f = facts(zoo, "bolt-all", "crash")
    exe = str(shutil.copy2(ROOT / f["binary"], tmp_path / "crash"))
    pc = f["crash"]["link_pc"]
    assert _ours(exe, [pc]).splitlines()[:2] == ["transfer", "??:0:0"]
    assert _llvm(exe, [pc], "--no-inlines").splitlines()[1] == "bolt-pseudo.o:0:0"


def test_fragments_option_and_json_keys(zoo: dict[str, Any]) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    exe = str(ROOT / f["binary"])
    pc = f["crash"]["link_pc"]
    assert _ours(exe, [pc], fragments=True).splitlines()[0] == "transfer [cold]"
    rec = json.loads(_ours(exe, [pc], as_json=True))
    oracle = json.loads(_llvm(exe, [pc], "--no-inlines", "--output-style=JSON"))
    assert list(rec)[:3] == list(oracle) == ["Address", "ModuleName", "Symbol"]
    assert set(rec["Symbol"][0]) == set(oracle["Symbol"][0])
    for key in ("Column", "FileName", "Line"):
        assert rec["Symbol"][0][key] == oracle["Symbol"][0][key]
    assert oracle["Symbol"][0]["FunctionName"] == "transfer.cold"
    assert rec["Symbol"][0]["FunctionName"] == "transfer"
    cold = f["split_functions"]["transfer"]["fragments"][1]
    assert rec["procedure"] == "transfer" and rec["fragment"] == "cold"
    assert rec["fragment_symbol"] == "transfer.cold"
    assert rec["offset"] == (int(f["split_functions"]["transfer"]["fragments"][0]["end"], 16)
                             - int(f["split_functions"]["transfer"]["fragments"][0]["start"], 16)
                             + int(pc, 16) - int(cold["start"], 16))


def test_tokens_in_log_lines(zoo: dict[str, Any]) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    exe = str(ROOT / f["binary"])
    frames = f["crash"]["frames"]
    pc0, pc1 = int(frames[0]["link_pc"], 16), int(frames[1]["link_pc"], 16) - 1
    cold = int(f["split_functions"]["transfer"]["fragments"][1]["start"], 16)
    log = [
        f"./crash(+{pc0:#x}) [0x7f0000001119]",                       # glibc backtrace_symbols
        f"    #1 0x55555555{pc1:04x} in run ({exe}+{pc1:#x})",          # sanitizer
        f"  #0  {pc0:#018x} in transfer.cold ()",                       # gdb, file address
        f"crash: transfer.cold+{pc0 - cold:#x}",                         # symbol + offset
        f"CODE {pc0:#x}",
        "nothing to see here",
    ]
    wanted = [hex(pc0), hex(pc1), hex(pc0), hex(pc0), hex(pc0)]
    got = _split(_ours(exe, log))
    assert got[:5] == _split(_ours(exe, wanted))
    assert got[5] == "??\n??:0:0"
    assert got[0].startswith("transfer\n") and got[1].startswith("run\n")


def test_relative_addresses(zoo: dict[str, Any]) -> None:
    pie = facts(zoo, "gcc-pgo", "crash")
    exe = str(ROOT / pie["binary"])
    pcs = [fr["link_pc"] for fr in pie["crash"]["frames"]] + ["0x1150"]
    ours = _ours(exe, pcs, relative=True)
    assert ours == _ours(exe, pcs)
    assert _split(ours)[-1] == _split(_llvm(exe, pcs, "--no-inlines", "--relative-address"))[-1]
    # A non-PIE counts from its lowest PT_LOAD page (0x400000), as `+0x` trace offsets do.
    bolt = facts(zoo, "bolt-all-dbg", "crash")
    exe = str(ROOT / bolt["binary"])
    pc = int(bolt["crash"]["link_pc"], 16)
    assert _ours(exe, [hex(pc - 0x400000)], relative=True) == _ours(exe, [hex(pc)])
    rec = json.loads(_ours(exe, [hex(pc - 0x400000)], relative=True, as_json=True))
    assert rec["Address"] == hex(pc - 0x400000) and rec["procedure"] == "transfer"


def test_streams_one_answer_per_line_as_a_coprocess(zoo: dict[str, Any]) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    proc = subprocess.Popen(
        [sys.executable, "-m", "unsplit", "symbolize", "--exe", str(ROOT / f["binary"])],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        env={"PYTHONPATH": str(ROOT / "plugin")})
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for fr in f["crash"]["frames"][:2]:
            proc.stdin.write(fr["link_pc"] + "\n")
            proc.stdin.flush()  # stdin stays open: the answer must come anyway
            answer = [proc.stdout.readline() for _ in range(3)]
            assert answer[0] == fr["procedure"] + "\n" and answer[2] == "\n"
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0


def test_wrong_input_binary_is_one_line(zoo: dict[str, Any]) -> None:
    f = facts(zoo, "bolt-all", "crash")
    other = facts(zoo, "bolt-all", "loop")
    r = subprocess.run([sys.executable, "-m", "unsplit", "symbolize", "--exe",
                        str(ROOT / f["binary"]), "--input", str(ROOT / other["input"])],
                       input="0x800227\n", capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT / "plugin")})
    assert r.returncode == 1 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and "not the input of" in r.stderr


def test_inlined_code_in_moved_code_against_the_prebolt_input(
        bolted_threads: dict[str, Any], tmp_path: Path) -> None:
    """Every instruction of verify_record's moved fragments (quarantine_record is inlined in one)
    against llvm-symbolizer-22 on the pre-BOLT input at perf2bolt-22's translation: the default
    is its default, the inlined chain; --no-inlines is the procedure at its own line, the last
    frame of that chain, never the procedure's name with the callee's line."""
    exe, inp = Path(bolted_threads["binary"]), Path(bolted_threads["input"])
    index = Symbolizer(str(exe)).index
    moved = [f for f in index.procedures["verify_record"].fragments if f.name != "hot"]
    ours_insns = bolt_truth.instructions(exe)
    addresses = [a for f in moved for a in sorted(ours_insns) if f.start <= a < f.end]
    truth = bolt_truth.perf2bolt_targets(exe, addresses, tmp_path)
    inputs, lines = bolt_truth.input_lines(exe, inp, truth, addresses)
    pairs = [(a, i) for a, i, ln in zip(addresses, inputs, lines, strict=True) if ln is not None]
    assert len(pairs) > 5
    chains = _split(_llvm(str(inp), [hex(i) for _, i in pairs]))
    mixed = _split(_llvm(str(inp), [hex(i) for _, i in pairs], "--no-inlines"))
    ours = _split(_ours(str(exe), [hex(a) for a, _ in pairs], inlines=True))
    alone = _split(_ours(str(exe), [hex(a) for a, _ in pairs]))
    inlined = 0
    for k, (a, _) in enumerate(pairs):
        assert ours[k] == chains[k], hex(a)
        frames = chains[k].split("\n")
        assert alone[k] == "\n".join(frames[-2:]), hex(a)  # the procedure, its own line
        if len(frames) > 2:  # quarantine_record inlined in verify_record
            inlined += 1
            assert frames[0] == "quarantine_record" and frames[-2] == "verify_record"
            assert alone[k] != mixed[k]  # llvm's --no-inlines: verify_record, the callee's line
    assert inlined >= 3
    # The command line's default is llvm-symbolizer's: the inlined frames.
    k = next(k for k, c in enumerate(chains) if len(c.split("\n")) > 2)
    cli = subprocess.run([sys.executable, "-m", "unsplit", "symbolize", "--exe", str(exe)],
                         input=hex(pairs[k][0]) + "\n", capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "plugin")}, check=True)
    assert _split(cli.stdout) == [chains[k]]
