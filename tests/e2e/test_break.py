"""`bb break` in both debuggers: one table of locations on the zoo's crash program, each run
until the program stops, checked against the variant's facts.

The program `crash` (argument `crash`) calls `transfer` once, from `run`'s cold path, and
dies inside `transfer`'s cold fragment. Where each breakpoint must stop comes from the facts
(fixtures/facts.py: nm, llvm-readobj-22 and a gdb run, never unsplit): the fragments' symbol
ranges, the crash PC, the blocks of the PGO map. BOLT offsets are input-function offsets:
their value is perf2bolt-22's translation of the crash PC through BAT, checked here against the
pre-BOLT input's own bytes at that offset. Native commands (`info breakpoints` / `breakpoint list`,
delete, disable, condition) live in the helpers keyed on the debugger's name.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

from fixtures.toolbox import markers_in

from .. import bolt_truth, builders
from ..conftest import ROOT, facts
from ..variants import BREAK
from .conftest import resume, stop_names

pytestmark = pytest.mark.e2e


# FILE:LINE cases: a line whose code is only in moved code. GCC marks the store of the crash
# site as a non-statement row (its is_stmt row for that line comes after the store, so the
# program dies before reaching it): there, the first line of the cold path.
LINE_MARKERS = {"gcc-pgo": "transfer cold path"}


# -- helpers (debugger-neutral) --------------------------------------------------------------

def _json(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _where(session: Any) -> dict[str, Any]:
    (loc,) = _json(session.command("bb where --json"))
    return loc


def _bias(f: dict[str, Any]) -> int:
    """Load bias of the executable: both debuggers disable ASLR, as the facts' gdb run did."""
    return int(f["crash"]["load_bias"], 16) if f["pie"] else 0


def _fragments(f: dict[str, Any], proc: str = "transfer") -> list[dict[str, Any]]:
    frags: list[dict[str, Any]] = f["split_functions"][proc]["fragments"]
    return frags


def _start(debugger: Callable[..., Any], zoo: dict[str, Any], variant: str
           ) -> tuple[Any, dict[str, Any]]:
    f = facts(zoo, variant, "crash")
    return debugger(ROOT / f["binary"], args=["crash"]), f


def _number(out: str) -> int:
    m = re.search(r"^Breakpoint (\d+)", out, re.M)
    assert m, out
    return int(m.group(1))


def _crashed(out: str) -> bool:
    return "SIGSEGV" in out


def _stop_at(session: Any, address: int) -> dict[str, Any]:
    loc = _where(session)
    assert int(loc["address"], 16) == address, (hex(address), loc)
    return loc


# -- helpers (one per debugger) ---------------------------------------------------------------

def _native(session: Any, action: str, number: int) -> str:
    """delete / disable / a condition that never holds, on breakpoint `number`."""
    gdb = {"delete": f"delete {number}", "disable": f"disable {number}",
           "condition": f"condition {number} $sp == 0"}
    lldb = {"delete": f"breakpoint delete {number}", "disable": f"breakpoint disable {number}",
            "condition": f"breakpoint modify -c '$sp == 0' {number}"}
    out: str = session.command((gdb if session.name == "gdb" else lldb)[action])
    return out


# -- the scenarios ----------------------------------------------------------------------------

@pytest.mark.parametrize("variant", BREAK)
def test_all_fragments_stops_in_the_entry_then_in_moved_code(
        debugger: Callable[..., Any], zoo: dict[str, Any], variant: str) -> None:
    s, f = _start(debugger, zoo, variant)
    bias = _bias(f)
    frags = _fragments(f)
    starts = {int(fr["start"], 16) + bias: fr for fr in frags}
    out = s.command("bb break transfer --all-fragments")
    assert out.startswith("Breakpoint"), out

    s.run()
    loc = _stop_at(s, int(frags[0]["start"], 16) + bias)
    assert (loc["procedure"], loc["fragment"]) == ("transfer", "hot")
    assert set(starts) <= s.breakpoint_addresses()  # every fragment start is listed natively

    # Then, before the crash, the start of the fragment that crashes (maybe after others):
    # code that a native `break transfer` (the hot range only) never stops in.
    for _ in range(len(frags)):
        out = resume(s)
        loc = _where(s)
        fr = starts.get(int(loc["address"], 16))
        assert fr is not None and fr["fragment"] != "hot", loc
        assert (loc["procedure"], loc["fragment"]) == ("transfer", fr["fragment"])
        assert stop_names(out, "transfer", fr["fragment"]), out  # the stop line names it
        if fr["symbol"] == f["crash"]["symbol"]:
            break
    else:
        pytest.fail("never stopped at the start of the crashing fragment")
    assert _crashed(resume(s))


def _input_bytes_at(f: dict[str, Any], proc: str, offset: int, count: int) -> bytes:
    """`count` bytes of the pre-BOLT input at `proc`+`offset` (from its symbol table)."""
    with open(ROOT / f["input"], "rb") as stream:
        elf = ELFFile(stream)
        symtab = elf.get_section_by_name(".symtab")
        (sym,) = [s for s in symtab.iter_symbols() if s.name == proc]
        return _bytes_at(elf, sym["st_value"] + offset, count)


def _bytes_at(elf: ELFFile, address: int, count: int) -> bytes:
    for sec in elf.iter_sections():
        if sec["sh_addr"] <= address < sec["sh_addr"] + sec["sh_size"] and sec.name:
            start = address - sec["sh_addr"]
            return bytes(sec.data()[start:start + count])
    raise AssertionError(f"{address:#x} is in no section")


def _offset_of_crash(f: dict[str, Any]) -> int:
    """transfer+OFFSET naming the crash PC in the original procedure."""
    link = int(f["crash"]["link_pc"], 16)
    if f["has_bat"]:
        # BOLT: the input function's offset, as perf2bolt-22 translates the crash PC through
        # BAT; the input's bytes there must be the very instruction that crashes in the output.
        with tempfile.TemporaryDirectory() as tmp:
            truth = bolt_truth.perf2bolt_targets(ROOT / f["binary"], [link], Path(tmp))
        proc, _, offset = truth[link]
        assert proc == "transfer", truth
        with open(ROOT / f["binary"], "rb") as stream:
            crash_bytes = _bytes_at(ELFFile(stream), link, 3)
        assert _input_bytes_at(f, "transfer", offset, 3) == crash_bytes
        return offset
    # Symbols and bb address maps: the fragments laid end to end, entry first.
    hot, *rest = _fragments(f)
    offset = int(hot["end"], 16) - int(hot["start"], 16)
    for fr in rest:
        if fr["symbol"] == f["crash"]["symbol"]:
            return offset + link - int(fr["start"], 16)
        offset += int(fr["end"], 16) - int(fr["start"], 16)
    raise AssertionError("crash not in transfer")


@pytest.mark.parametrize("variant", BREAK)
def test_offset_in_the_original_procedure(debugger: Callable[..., Any], zoo: dict[str, Any],
                                          variant: str) -> None:
    s, f = _start(debugger, zoo, variant)
    offset = _offset_of_crash(f)
    out = s.command(f"bb break transfer+{offset:#x}")
    assert out.startswith("Breakpoint"), out
    s.run()
    loc = _stop_at(s, int(f["crash"]["link_pc"], 16) + _bias(f))
    assert (loc["procedure"], loc["fragment_symbol"]) == ("transfer", f["crash"]["symbol"])
    assert _crashed(resume(s))


def test_basic_block(debugger: Callable[..., Any], zoo: dict[str, Any]) -> None:
    """run:%ID for the cold block of run that calls transfer (from the PGO map's facts)."""
    s, f = _start(debugger, zoo, "clang-mfs-pgomap")
    call = int(f["crash"]["frames"][1]["link_pc"], 16) - 1
    (block,) = [b for b in f["split_functions"]["run"]["blocks"]
                if int(b["start"], 16) <= call < int(b["end"], 16)]
    assert block["fragment"] != "hot"
    out = s.command(f"bb break run:%{block['block_id']}")
    assert out.startswith("Breakpoint"), out
    s.run()
    loc = _stop_at(s, int(block["start"], 16) + _bias(f))
    assert (loc["procedure"], loc["fragment"], loc["block"]) == \
        ("run", block["fragment"], block["block_id"])
    assert _crashed(resume(s))


@pytest.mark.parametrize("variant", BREAK)
def test_source_line_in_moved_code(debugger: Callable[..., Any], zoo: dict[str, Any],
                                   variant: str) -> None:
    """FILE:LINE of a line that only moved code has; on BOLT without DWARF (bolt-all,
    bolt-cdsplit) from the pre-BOLT input, where a native `break crash.c:LINE` has nothing."""
    s, f = _start(debugger, zoo, variant)
    marker = LINE_MARKERS.get(variant, "crash site")
    line = f["markers"]["crash.c"][marker]
    if marker == "crash site":
        expected = int(f["crash"]["link_pc"], 16)
    else:
        (expected,) = [int(fr["sample"]["address"], 16) for fr in _fragments(f)
                       if fr.get("sample", {}).get("line") == line]
    out = s.command(f"bb break crash.c:{line}")
    assert out.startswith("Breakpoint"), out
    stop = s.run()
    loc = _stop_at(s, expected + _bias(f))
    assert (loc["procedure"], loc["line"]) == ("transfer", line)
    assert loc["fragment"] != "hot"
    assert stop_names(stop, "transfer", loc["fragment"], line), stop
    assert _crashed(resume(s))


@pytest.mark.parametrize("action", ["delete", "disable", "condition"])
@pytest.mark.parametrize("variant", ["gcc-pgo", "bolt-all"])
def test_native_delete_disable_condition_act_on_every_location(
        debugger: Callable[..., Any], zoo: dict[str, Any], variant: str, action: str) -> None:
    s, f = _start(debugger, zoo, variant)
    number = _number(s.command("bb break transfer --all-fragments"))
    out = _native(s, action, number)
    assert "error" not in out.lower(), out
    if action == "delete":
        assert s.breakpoint_addresses() == set()
    assert _crashed(s.run())  # no location stopped it: the program ran to its crash
    assert _where(s)["fragment_symbol"] == f["crash"]["symbol"]


def test_bolt_originals_are_left_out(debugger: Callable[..., Any], zoo: dict[str, Any]) -> None:
    """bolt-patched: `process` also names BOLT's patched original `_Z7processPKii.org.0` (its
    old entry, a jump to the new code; facts: nm). `bb break process:%0` and `bb break process`
    set one location each, at process's entry, each saying once that the original was left
    out; the original's own name still sets one there."""
    f = facts(zoo, "bolt-patched", "except")
    entry = int(_fragments(f, "_Z7processPKii")[0]["start"], 16)
    original = int(f["bolt_originals"]["_Z7processPKii.org.0"], 16)
    s = debugger(ROOT / f["binary"], args=["throw"])
    for text in ("process:%0", "process"):
        out = s.command(f"bb break {text}")
        assert out.startswith("Breakpoint") and "error" not in out, out
        assert sum("BOLT's patched original" in x for x in out.splitlines()) == 1, out
    s.run()
    loc = _stop_at(s, entry)
    assert (loc["linkage_name"], loc["fragment"], loc["block"]) == ("_Z7processPKii", "hot", 0)
    assert s.breakpoint_addresses() == {entry}
    out = s.command("bb break _Z7processPKii.org.0")
    assert out.startswith("Breakpoint") and "left out" not in out, out
    assert s.breakpoint_addresses() == {entry, original}


def test_no_match_sets_nothing(debugger: Callable[..., Any], zoo: dict[str, Any]) -> None:
    s, _ = _start(debugger, zoo, "gcc-pgo")
    out = s.command("bb break no_such_procedure_anywhere").strip()
    assert len(out.splitlines()) == 1 and "nothing set" in out, out
    assert "Traceback" not in out
    assert s.breakpoint_addresses() == set()
    assert "No breakpoints" in s.list_breakpoints()
    assert _crashed(s.run())


# -- a library loaded at run time -------------------------------------------------------------

@pytest.fixture(scope="module")
def split_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PIE whose library's `work` has a GCC PGO cold fragment (`work.cold`)."""
    return builders.split_library(tmp_path_factory.mktemp("breaklib"), pie=True)


def test_pending_breakpoint_in_a_library(debugger: Callable[..., Any],
                                         split_library: Path) -> None:
    line = markers_in(builders.SPLIT_LIB_C)["lib crash"]
    s = debugger(split_library / "m", args=["crash"])
    out = s.command(f"bb break lib.c:{line} --pending")
    assert out.startswith("Catchpoint" if s.name == "gdb" else "Breakpoint"), out
    if s.name == "gdb":  # GDB loads no library before `run`
        assert "pending" in out, out
    for _ in range(2):  # and again after a restart: the library is loaded anew
        stop = s.run()
        loc = _where(s)
        assert (loc["procedure"], loc["fragment_symbol"], loc["line"]) == \
            ("work", "work.cold", line), loc
        assert stop_names(stop, "work", "cold", line), stop
    assert _crashed(resume(s))


def test_gdb_pending_break_numbers_what_stops(gdb: Callable[..., Any],
                                              zoo: dict[str, Any]) -> None:
    """GDB: `bb break --pending` in a library dlopen() loads later (bolt-dlopen) is held by a
    placeholder that `info breakpoints` lists as a catchpoint, and says so; when the library
    loads, the breakpoints it brings are named by the numbers the stop reads, at verify_record's
    fragments (nm, facts.json). A static that exists only inlined (quarantine_record: no symbol,
    an abstract DW_TAG_subprogram in the pre-BOLT input) is said to stay pending, with where it
    is declared (the source's own line)."""
    f = facts(zoo, "bolt-dlopen", "libwork")
    source = (ROOT / "fixtures" / "src" / "libwork.c").read_text().splitlines()
    declared = next(n for n, text in enumerate(source, 1) if " quarantine_record(" in text)
    s = gdb(ROOT / f["executable"], args=["crash"])
    said = s.command("bb break --pending verify_record -a")
    m = re.fullmatch(r"Catchpoint (\d+) \(verify_record\) pending: .*", said.strip())
    assert m, said
    inlined = s.command("bb break --pending quarantine_record")
    assert inlined.startswith("Catchpoint"), inlined
    info = s.command("info breakpoints")
    assert re.search(rf"^{m[1]}\s+catchpoint\s", info, re.M), info
    stop = s.run()
    told = re.search(rf"^unsplit: Catchpoint {m[1]} \(bb break verify_record --all-fragments\): "
                     r"Breakpoints (\d+)-(\d+) in libwork\.so", stop, re.M)
    assert told, stop
    hit = re.search(r"hit Breakpoint (\d+), ", stop)
    assert hit and int(told[1]) <= int(hit[1]) <= int(told[2]), stop
    base = int(f["crash"]["library_base"], 16)
    starts = {int(x["start"], 16) + base
              for x in f["split_functions"]["verify_record"]["fragments"]}
    rows = re.findall(r"^(\d+)\s+breakpoint\s+keep\s+y\s+(0x[0-9a-f]+)", s.command(
        "info breakpoints"), re.M)
    numbered = {int(n): int(a, 16) for n, a in rows}
    assert {numbered[n] for n in range(int(told[1]), int(told[2]) + 1)} == starts, rows
    assert numbered[int(hit[1])] in starts
    assert re.search(r"^unsplit: Catchpoint \d+ \(bb break quarantine_record\): "
                     r"quarantine_record has no code of its own in libwork\.so, every call of it "
                     rf"was inlined \(declared at libwork\.c:{declared}\): it stays pending",
                     s.transcript, re.M), s.transcript


@pytest.mark.parametrize("variant", ["gcc-pgo", "gcc-pgo-nodebug"])
def test_condition_option(debugger: Callable[..., Any], zoo: dict[str, Any],
                          variant: str) -> None:
    """`bb break PROC -c EXPR`: recurse deep enters walk with depth 8, 7, … (GCC keeps the
    recursion; clang makes it a loop); a condition on
    the first argument's register stops it at depth 3 only. In GDB a condition it cannot
    parse is one line and sets nothing."""
    f = facts(zoo, variant, "recurse")
    s = debugger(ROOT / f["binary"], args=["deep"])
    out = s.command("bb break walk -c '$rdi == 3'")
    assert re.search(r"^Breakpoint \d+", out, re.M), out
    stop = s.run()
    assert re.search(r"[Bb]reakpoint \d+", stop), stop  # a breakpoint stop, not the exit
    assert s.register("rdi") == 3
    if s.name == "gdb":
        bad = s.command("bb break walk -c 'no_such_name_xyz > 1'").strip()
        assert len(bad.splitlines()) == 1 and "nothing set" in bad, bad
        assert "Traceback" not in bad
    assert s.alive()
