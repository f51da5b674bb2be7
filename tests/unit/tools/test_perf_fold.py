"""`unsplit fold` and `unsplit perf-script` on a real profile (perf record -e cpu-clock -g) of a
BOLTed program that spends its time in cold fragments (the zoo's bolt-all switch: split-strategy
all moves every block but the entry, so its hot loop runs in `step.cold.N` and `main.cold.N`),
and on perf script text written here for the zoo's GCC and clang splits.

Oracles, never unsplit: each frame's address is perf's symbol plus offset through nm; perf2bolt-22
translates it through BAT to the input function and offset (a caller's return address minus one);
llvm-symbolizer-22 gives the pre-BOLT input's line there (tests/bolt_truth.py); for GCC `.cold` and
clang MFS the symbol table's parent (`foo.cold` is `foo`).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fixtures import toolbox

from ... import bolt_truth
from ...builders import gcc_pgo_build
from ...conftest import ROOT, facts

_FRAME = re.compile(r"^\s+([0-9a-f]+) (\S+)\+0x([0-9a-f]+) \((.*)\)$")


def _unsplit(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "unsplit", *args], input=stdin, text=True,
                          capture_output=True, timeout=300, cwd=ROOT)


@pytest.fixture(scope="module")
def profile(zoo: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    f = facts(zoo, "bolt-all", "switch")
    binary = ROOT / f["binary"]
    work = tmp_path_factory.mktemp("perf")
    data = work / "perf.data"
    loop = f"for i in 1 2 3 4 5 6; do {binary} train; done >/dev/null"
    rec = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "20000", "-g", "-o",
                          str(data), "--", "sh", "-c", loop], capture_output=True, text=True,
                         timeout=120)
    if rec.returncode != 0:
        pytest.fail(f"perf record: {rec.stderr[-500:]}")
    text = subprocess.run(["perf", "script", "-i", str(data)], capture_output=True, text=True,
                          timeout=120, check=True).stdout
    return {"facts": f, "binary": binary, "input": ROOT / f["input"], "data": data,
            "text": text, "work": work}


def _own_samples(text: str, binary: Path, trim: bool = False
                 ) -> list[tuple[str, list[tuple[int, str, bool]], str]]:
    """(comm, [(frame address by nm, perf's symbol, is a caller)], its text) of each sample
    whose every frame is in `binary`, leaf first; `trim`: of each sample whose leaf is, its
    frames up to the first one elsewhere (and its text so cut)."""
    symbols = {s.name: s.start for s in toolbox.text_symbols(binary)}
    out = []
    for block in text.split("\n\n"):
        lines = block.strip("\n").splitlines()
        if len(lines) < 2:
            continue
        frames = []
        for k, line in enumerate(lines[1:]):
            m = _FRAME.match(line)
            if m is None or m[4] != str(binary) or m[2] not in symbols:
                break
            frames.append((symbols[m[2]] + int(m[3], 16), m[2], k > 0))
        if frames and (trim or len(frames) == len(lines) - 1):
            kept = "\n".join(lines[:len(frames) + 1])
            out.append((lines[0].split()[0], frames, kept + "\n\n"))
    return out


def test_callers_are_named_by_their_call(profile: dict[str, Any]) -> None:
    """A DWARF call graph has callers (main.cold.N calling step): each is named by its return
    address minus one, as perf2bolt-22 translates that address."""
    data = profile["work"] / "dwarf.data"
    rec = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "20000",
                          "--call-graph", "dwarf", "-o", str(data), "--", str(profile["binary"]),
                          "train"], capture_output=True, text=True, timeout=120)
    assert rec.returncode == 0, rec.stderr[-500:]
    text = subprocess.run(["perf", "script", "-i", str(data)], capture_output=True, text=True,
                          timeout=120, check=True).stdout
    own = _own_samples(text, profile["binary"], trim=True)
    callers = [frames for _, frames, _ in own if len(frames) > 1]
    assert len(callers) >= 20, "no call chains: the test tests nothing"
    asked = sorted({a - caller for _, frames, _ in own for a, _, caller in frames})
    truth = bolt_truth.perf2bolt_targets(profile["binary"], asked, profile["work"])
    expected: Counter[str] = Counter()
    for comm, frames, _ in own:
        names = [truth[a - caller][0] for a, _, caller in frames]
        expected[";".join([comm, *reversed(names)])] += 1
    r = _unsplit("fold", stdin="".join(block for _, _, block in own))
    assert r.returncode == 0, r.stderr
    assert bolt_truth.folded_counts(r.stdout) == expected


def _truth(profile: dict[str, Any]) -> tuple[list[Any], dict[int, tuple[str, str | None, int]]]:
    own = _own_samples(profile["text"], profile["binary"])
    asked = sorted({a - caller for _, frames, _ in own for a, _, caller in frames})
    return own, bolt_truth.perf2bolt_targets(profile["binary"], asked, profile["work"])


def test_every_sample_is_its_procedure_as_perf2bolt_says(profile: dict[str, Any]) -> None:
    own, truth = _truth(profile)
    moved = sum(1 for _, frames, _ in own if ".cold" in frames[0][1])
    assert moved >= 100, f"only {moved} samples in cold fragments: the profile tests nothing"
    expected: Counter[str] = Counter()
    for comm, frames, _ in own:
        names = [truth[a - caller][0] for a, _, caller in frames]
        expected[";".join([comm, *reversed(names)])] += 1
    r = _unsplit("fold", "-i", str(profile["data"]))
    assert r.returncode == 0, r.stderr
    ours = bolt_truth.folded_counts(r.stdout)
    assert {s: ours[s] for s in expected} == dict(expected)
    assert not any(".cold" in s for s in ours if s.startswith("switch;"))


def test_lines_are_the_inputs_at_the_bat_address(profile: dict[str, Any]) -> None:
    own, truth = _truth(profile)
    leaves = sorted({frames[0][0] for _, frames, _ in own if len(frames) == 1})
    _, lines = bolt_truth.input_lines(profile["binary"], profile["input"], truth, leaves)
    said = dict(zip(leaves, lines, strict=True))
    # the samples where the input has a line (not an instruction BOLT made, not line 0)
    expected: Counter[str] = Counter()
    text = []
    for comm, frames, block in own:
        line = said.get(frames[0][0])
        if len(frames) == 1 and line is not None and line[1] > 0:
            expected[f"{comm};{truth[frames[0][0]][0]} ({line[0]}:{line[1]})"] += 1
            text.append(block)
    assert sum(expected.values()) >= 100
    r = _unsplit("fold", "--lines", stdin="".join(text))
    assert r.returncode == 0, r.stderr
    assert bolt_truth.folded_counts(r.stdout) == expected


def test_perf_script_names_the_procedure_at_its_input_offset(profile: dict[str, Any]) -> None:
    own, truth = _truth(profile)
    r = _unsplit("perf-script", stdin=profile["text"])
    assert r.returncode == 0, r.stderr
    again = _own_samples(r.stdout, profile["binary"])
    # the same samples, one for one (every sample is written back, none merged)
    assert r.stdout.count("cpu-clock:") == profile["text"].count("cpu-clock:")
    theirs = [line for line in profile["text"].splitlines() if str(profile["binary"]) in line]
    mine = [line for line in r.stdout.splitlines() if str(profile["binary"]) in line]
    assert len(mine) == len(theirs)
    checked = 0
    leaves = {frames[0] for _, frames, _ in own}
    sym = {s.name: s.start for s in toolbox.text_symbols(profile["binary"])}
    for ours_line, theirs_line in zip(mine, theirs, strict=True):
        m, t = _FRAME.match(ours_line), _FRAME.match(theirs_line)
        if t is None or t[2] not in sym:  # no symbol, a PLT entry: perf's line, kept
            assert ours_line == theirs_line
            continue
        assert m is not None
        assert m[1] == t[1]  # perf's address is kept
        address = sym[t[2]] + int(t[3], 16)
        if address in truth and (address, t[2], False) in leaves:
            name, _, offset = truth[address]
            assert (m[2], int(m[3], 16)) == (name, offset), ours_line
            checked += 1
    assert checked >= 100
    assert again  # the rewritten text still reads as perf's


def _frames_and_srclines(block: str) -> list[tuple[str, str | None]]:
    """(frame line, the `  FILE:LINE` line after it or None) of one sample's text."""
    out: list[tuple[str, str | None]] = []
    for line in block.strip("\n").splitlines()[1:]:
        if line.startswith("  ") and out and out[-1][1] is None:
            out[-1] = (out[-1][0], line)
        else:
            out.append((line, None))
    return out


def test_perf_script_lines_are_the_inputs_and_fold_reads_srclines(profile: dict[str, Any]
                                                                   ) -> None:
    """`perf script -F +srcline` follows each frame with its line (`  FILE:LINE`; in BOLTed
    code without DWARF none, with BOLT's DWARF `bolt-pseudo.o:0`): `perf-script --lines` gives
    every frame of the BOLTed program the pre-BOLT input's line (llvm-symbolizer-22) at the
    address perf2bolt-22 translates it to, and keeps perf's lines where no file is split (the
    kernel's frames); `fold` reads that text as it reads perf's plain text."""
    text = subprocess.run(["perf", "script", "-F", "+srcline", "-i", str(profile["data"])],
                          capture_output=True, text=True, timeout=300, check=True).stdout
    r = _unsplit("perf-script", "--lines", stdin=text)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    theirs_blocks, ours_blocks = text.split("\n\n"), r.stdout.split("\n\n")
    assert len(ours_blocks) == len(theirs_blocks)
    binary = profile["binary"]
    sym = {s.name: s.start for s in toolbox.text_symbols(binary)}
    leaves: dict[int, list[str | None]] = {}  # a leaf's address: our srcline there, each time
    kernel = 0
    for theirs, ours in zip(theirs_blocks, ours_blocks, strict=True):
        t, o = _frames_and_srclines(theirs), _frames_and_srclines(ours)
        assert len(t) == len(o), (theirs, ours)
        m = _FRAME.match(t[0][0]) if t else None
        if m is not None and m[4] == str(binary) and m[2] in sym:
            leaves.setdefault(sym[m[2]] + int(m[3], 16), []).append(o[0][1])
        for (frame, line), mine in zip(t, o, strict=True):
            if frame.endswith("])"):  # [kernel.kallsyms], [unknown]: perf's, as it was
                assert mine == (frame, line)
                kernel += line is not None
    assert kernel
    _, truth = _truth(profile)
    moved = sorted(a for a in leaves if a in truth)
    _, lines = bolt_truth.input_lines(binary, profile["input"], truth, moved)
    checked = 0
    for address, line in zip(moved, lines, strict=True):
        if line is not None and line[1] > 0:
            checked += len(leaves[address])
            assert set(leaves[address]) == {f"  {line[0]}:{line[1]}"}, hex(address)
    assert checked >= 100
    r = _unsplit("fold", stdin=text)
    assert r.returncode == 0 and r.stderr == "", r.stderr[:500]
    assert r.stdout == _unsplit("fold", stdin=profile["text"]).stdout


def _cold_frames(binary: Path) -> list[tuple[str, int, str]]:
    """(fragment symbol, an offset inside it, its parent procedure) of each `.cold` symbol."""
    out = []
    for s in toolbox.text_symbols(binary):
        parent, tag = toolbox.fragment_name(s.name)
        if tag != "hot" and s.size > 1:
            out.append((s.name, s.size // 2, parent))
    return out


@pytest.mark.parametrize("variant", ["gcc-pgo", "clang-mfs"])
def test_compiler_splits_fold_to_the_parent(zoo: dict[str, Any], variant: str) -> None:
    f = facts(zoo, variant, "crash")
    binary = ROOT / f["binary"]
    cold = _cold_frames(binary)
    assert cold
    syms = {s.name: s.start for s in toolbox.text_symbols(binary)}
    # perf's text as it varies: pid/tid headers, a cpu column, [unknown] frames of other
    # modules, a symbol without offset, a C++-style symbol with parentheses
    blocks = []
    for k, (name, off, _) in enumerate(cold):
        blocks.append(
            f"crash {100 + k}/{200 + k} [00{k % 4}] 12.{k:06d}:     250000 cpu-clock:u: \n"
            f"\t{syms[name] + off:16x} {name}+{off:#x} ({binary})\n"
            f"\t    7f0012345678 [unknown] ([unknown])\n"
            f"\t    7f00abcdef12 operator()(int) const+0x1c (/nonexistent/libx.so)\n")
    text = "\n".join(blocks) + "\nthis line is not perf's\n"
    r = _unsplit("fold", stdin=text)
    assert r.returncode == 0, r.stderr
    expected = Counter(f"crash;operator()(int) const;[unknown];{parent}" for _, _, parent in cold)
    assert bolt_truth.folded_counts(r.stdout) == expected
    assert r.stderr.count("\n") == 1 and "line " in r.stderr and "not perf" in r.stderr


def test_no_callchain_recording_and_bad_input(zoo: dict[str, Any]) -> None:
    f = facts(zoo, "gcc-pgo", "loop")
    binary = ROOT / f["binary"]
    name, off, parent = _cold_frames(binary)[0]
    syms = {s.name: s.start for s in toolbox.text_symbols(binary)}
    line = (f"loop  4242 99.000001:     250000 cpu-clock:  {syms[name] + off:x} "
            f"{name}+{off:#x} ({binary})\n")
    r = _unsplit("perf-script", stdin=line * 2)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(f" {parent}+") == 2 and name not in r.stdout
    r = _unsplit("fold", stdin=line * 3)
    assert r.stdout == f"loop;{parent} 3\n"
    r = _unsplit("fold", "-i", "/nonexistent/perf.data")
    assert r.returncode == 1 and r.stderr.startswith("unsplit: ") and r.stderr.count("\n") == 1


def test_truncated_perf_data_is_one_line(profile: dict[str, Any]) -> None:
    """perf 6.1 prints nothing of a cut perf.data (it orders events before printing) and
    fails: what it printed is folded, and its failure is one line of ours after perf's own."""
    data = profile["data"].read_bytes()
    cut = profile["work"] / "cut.data"
    cut.write_bytes(data[:len(data) * 2 // 3])
    r = _unsplit("fold", "-i", str(cut))
    assert "Traceback" not in r.stderr
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1].startswith(f"unsplit: perf script -i {cut}: exit status")


def test_a_module_without_a_build_id_is_one_line(zoo: dict[str, Any], tmp_path: Path) -> None:
    """A split module without a build-id: one warning (nothing can tell whether it is the file
    profiled), and its frames are named from it, by the symbol table's parent."""
    f = facts(zoo, "gcc-pgo", "loop")
    plain = tmp_path / "loop"
    subprocess.run(["llvm-objcopy-22", "--remove-section=.note.gnu.build-id",
                    str(ROOT / f["binary"]), str(plain)], check=True)
    assert toolbox.build_id(plain) is None
    name, off, parent = _cold_frames(plain)[0]
    syms = {s.name: s.start for s in toolbox.text_symbols(plain)}
    line = (f"loop  4242 99.000001:     250000 cpu-clock:  {syms[name] + off:x} "
            f"{name}+{off:#x} ({plain})\n")
    r = _unsplit("fold", stdin=line * 3)
    assert r.returncode == 0 and r.stdout == f"loop;{parent} 3\n"
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"unsplit: warning: {plain}: no "
                                                             "build-id"), r.stderr


def test_a_file_that_is_not_the_one_profiled(zoo: dict[str, Any], tmp_path: Path) -> None:
    """The BOLTed program rebuilt after the profile (another build-id than the one perf
    recorded): one warning, its frames keep the names perf gives them (from its build-id
    cache, `step.cold.N`), and the rest of the profile is folded."""
    binary = tmp_path / "switch"
    shutil.copy(ROOT / facts(zoo, "bolt-all", "switch")["binary"], binary)
    data = tmp_path / "perf.data"
    rec = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "10000", "-g", "-o",
                          str(data), "--", str(binary), "train"], capture_output=True,
                         text=True, timeout=120)
    assert rec.returncode == 0, rec.stderr[-500:]
    before = _unsplit("fold", "-i", str(data))
    assert before.returncode == 0 and "warning" not in before.stderr, before.stderr
    assert re.search(r"^switch;step \d+$", before.stdout, re.M) and ".cold" not in before.stdout
    old = bytes.fromhex(toolbox.build_id(binary) or "")
    content = binary.read_bytes()
    assert content.count(old) == 1
    new = old[:-1] + bytes([old[-1] ^ 1])
    binary.write_bytes(content.replace(old, new))
    r = _unsplit("fold", "-i", str(data))
    assert r.returncode == 0, r.stderr
    ours = [line for line in r.stderr.splitlines() if line.startswith("unsplit: ")]
    assert ours == [f"unsplit: warning: {binary}: not the file profiled (build-id {new.hex()}, "
                    f"the profile's {old.hex()}): its frames keep perf's names"]
    assert re.search(r"^switch;step\.cold\.\d+ \d+$", r.stdout, re.M), r.stdout
    assert bolt_truth.folded_counts(r.stdout).total() == \
        bolt_truth.folded_counts(before.stdout).total()


def _file_offset(binary: Path, address: int) -> int:
    """The file offset of a virtual address, by llvm-readelf-22's program headers."""
    out = subprocess.run(["llvm-readelf-22", "-lW", str(binary)], capture_output=True,
                         text=True, check=True).stdout
    for m in re.finditer(r"^\s+LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+\S+\s+(0x[0-9a-f]+)", out,
                         re.M):
        offset, vaddr, size = (int(g, 16) for g in m.groups())
        if vaddr <= address < vaddr + size:
            return address - vaddr + offset
    raise AssertionError(hex(address))


def test_frames_perf_could_not_name(zoo: dict[str, Any]) -> None:
    """A frame of a split module perf printed as `[unknown]`: its address is what perf 6.1
    prints, the file offset (older perf: the runtime pc, the same for a non-PIE file)."""
    f = facts(zoo, "bolt-all", "switch")
    binary = ROOT / f["binary"]
    cold = next(s for s in toolbox.text_symbols(binary) if s.name == "step.cold.4")
    address = cold.start + 4
    offset = _file_offset(binary, address)
    assert offset != address  # the test tells the two apart
    text = "".join(f"switch 1 1.{k}: 1 cpu-clock:\n\t{a:16x} [unknown] ({binary})\n\n"
                   for k, a in enumerate((offset, address)))
    r = _unsplit("fold", stdin=text)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "switch;step 2\n"


def test_bytes_that_are_not_utf8_are_read() -> None:
    text = b"p\xff 1 1.0: 1 cpu-clock:\n\t  401136 f\xffoo+0x1 (/nonexistent)\n\n"
    r = subprocess.run([sys.executable, "-m", "unsplit", "fold"], input=text,
                       capture_output=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == "p\ufffd;f\ufffdoo 1\n"


_REPORT = re.compile(r"^\s+[\d.]+%\s+(\d+)\s+(\S+)\s+\[\.\] (.+?)\s*$")


def test_perf_report_with_symfs_names_the_procedure(profile: dict[str, Any],
                                                    tmp_path: Path) -> None:
    """`perf report --symfs DIR` on the copies `unsplit perf-symfs` writes: every sample of the
    BOLTed program counted under its procedure as perf2bolt-22 names it (one entry per
    fragment, several of one name), no fragment name left; `perf annotate` finds the code."""
    binary = profile["binary"]
    own = _own_samples(profile["text"], binary, trim=True)  # every sample whose leaf is there
    truth = bolt_truth.perf2bolt_targets(binary, sorted({fs[0][0] for _, fs, _ in own}),
                                         tmp_path)
    symfs = tmp_path / "symfs"
    r = subprocess.run([sys.executable, "-m", "unsplit", "perf-symfs", str(symfs), str(binary)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    report = subprocess.run(["perf", "report", "-i", str(profile["data"]), "--symfs",
                             str(symfs), "--stdio", "--no-children", "--sort", "dso,sym", "-n"],
                            capture_output=True, text=True, timeout=300, check=True).stdout
    counted: Counter[str] = Counter()
    for line in report.splitlines():
        m = _REPORT.match(line)
        if m is not None and m[2] == binary.name:
            counted[m[3]] += int(m[1])
    assert counted and not [n for n in counted if ".cold" in n]
    leaves: Counter[str] = Counter(truth[frames[0][0]][0] for _, frames, _ in own)
    assert leaves["step"] >= 100
    assert {n: counted[n] for n in leaves} == dict(leaves)
    annotate = subprocess.run(["perf", "annotate", "-i", str(profile["data"]), "--symfs",
                               str(symfs), "--stdio", "-s", "step"], capture_output=True,
                              text=True, timeout=300)
    assert "<step>:" in annotate.stdout and "<step.cold" not in annotate.stdout


def test_perf_symfs_bad_input(zoo: dict[str, Any], tmp_path: Path) -> None:
    stripped = ROOT / facts(zoo, "gcc-pgo-stripped", "crash")["binary"]
    good = ROOT / facts(zoo, "gcc-pgo", "crash")["binary"]
    r = subprocess.run([sys.executable, "-m", "unsplit", "perf-symfs", str(tmp_path),
                        str(stripped), str(good), "--json"], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.splitlines()[0].startswith(f"unsplit: {stripped}: no .symtab")
    done = json.loads(r.stdout)
    assert [d["renamed"] for d in done] == [3]  # main.cold, run.cold, transfer.cold
    copy = Path(done[0]["path"])
    names = {s.name for s in toolbox.text_symbols(copy)}
    assert "run" in names and not [n for n in names if n.endswith(".cold")]
    assert toolbox.build_id(copy) == toolbox.build_id(good)


def test_inlines_are_the_inputs_chain(zoo: dict[str, Any], tmp_path: Path) -> None:
    """`fold --inlines --lines` in bolt-dlopen's libwork.so, where `quarantine_record` exists
    only inlined in `verify_record`'s cold fragment: each frame is the procedure at its call's
    line, then the inlined calls, outermost first, as llvm-symbolizer-22 gives them on the
    pre-BOLT input at the address perf2bolt-22 translates to."""
    f = facts(zoo, "bolt-dlopen", "libwork")
    binary, inp = ROOT / f["binary"], ROOT / f["input"]
    cold = next(s for s in toolbox.text_symbols(binary) if s.name == "verify_record.cold")
    addresses = toolbox.instructions(binary, cold.start, cold.end)
    truth = bolt_truth.perf2bolt_targets(binary, addresses, tmp_path)
    starts = {s.name: s.start for s in toolbox.text_symbols(inp)}
    ours, theirs = bolt_truth.instructions(binary), bolt_truth.instructions(inp)
    text: list[str] = []
    expected: Counter[str] = Counter()
    for k, address in enumerate(addresses):
        at = starts[truth[address][0]] + truth[address][2]
        if ours.get(address) != theirs.get(at):
            continue  # an instruction BOLT made: no input line of its own
        chain = toolbox.inline_chain(inp, at)
        if len(chain) < 2:
            continue
        outer = [f"verify_record ({chain[-1]['file']}:{chain[-1]['line']})"]
        outer += [f"{c['function']} ({c['file']}:{c['line']})" for c in reversed(chain[:-1])]
        expected[";".join(["w", *outer])] += 1
        off = address - cold.start
        text.append(f"w 1 1.{k}: 1 cpu-clock:\n\t{_file_offset(binary, address):16x} "
                    f"verify_record.cold+{off:#x} ({binary})\n\n")
    assert sum(expected.values()) >= 3
    r = _unsplit("fold", "--inlines", "--lines", stdin="".join(text))
    assert r.returncode == 0, r.stderr
    assert bolt_truth.folded_counts(r.stdout) == expected


GCC_HOT_COLD = r"""
#include <stdio.h>
static volatile long sink;
__attribute__((noinline)) long work(long n, int mode)
{
    long s = 0;
    for (long i = 0; i < n; i++) {
        if (mode) {                 /* never taken in training: GCC moves it to work.cold */
            s += i * 7 % 13;
            s ^= s << 3;
            sink = s;
        } else {
            s += i;
        }
    }
    return s;
}
int main(int argc, char **argv)
{
    int mode = argc > 1;
    long total = 0;
    for (int r = 0; r < (mode ? 400 : 2); r++)
        total += work(1000000, mode);
    printf("%ld\n", total);
    return 0;
}
"""


def test_gcc_cold_profile_folds_to_the_parent(tmp_path: Path) -> None:
    """A real profile of a GCC PGO program run on the path its training never took: its time
    is in `work.cold`; every sample whose leaf is in the program folds to the symbol table's
    parent of the symbol around it (nm: `work.cold` is `work`)."""
    gcc_pgo_build(tmp_path, {"hc.c": GCC_HOT_COLD}, [["gcc", "-O2", "-g", "hc.c", "-o", "hc"]],
                  train=["./hc"])
    binary = tmp_path / "hc"
    syms = toolbox.text_symbols(binary)
    assert any(s.name == "work.cold" for s in syms), [s.name for s in syms]
    data = tmp_path / "perf.data"
    rec = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "5000", "-g", "-o",
                          str(data), "--", str(binary), "cold"], capture_output=True, text=True,
                         timeout=300)
    assert rec.returncode == 0, rec.stderr[-500:]
    text = subprocess.run(["perf", "script", "-i", str(data)], capture_output=True, text=True,
                          timeout=120, check=True).stdout
    own = _own_samples(text, binary, trim=True)
    expected: Counter[str] = Counter()
    for comm, frames, _ in own:
        names = []
        for address, _, caller in frames:
            sym = toolbox.symbol_at(syms, address - caller)
            assert sym is not None
            names.append(toolbox.fragment_name(sym.name)[0])
        expected[";".join([comm, *reversed(names)])] += 1
    cold = sum(1 for _, frames, _ in own if frames[0][1] == "work.cold")
    assert cold >= 100, f"only {cold} samples in work.cold"
    r = _unsplit("fold", stdin="".join(block for _, _, block in own))
    assert r.returncode == 0, r.stderr
    assert bolt_truth.folded_counts(r.stdout) == expected
