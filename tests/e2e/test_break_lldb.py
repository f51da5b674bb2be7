"""`bb break` in a real lldb-22: what only LLDB's scripted breakpoint resolver gives.

test_break.py checks, for both debuggers, that each way of naming a location stops where the
facts say. This file checks the LLDB mechanics: one `bb break` is one breakpoint in
`breakpoint list` with one location per site; `disable`, `delete` and `modify -c` work on it;
locations follow the program to its load address (PIE), are found again when it restarts, and
a pending breakpoint resolves when `dlopen` loads the library that has the location. Expected
addresses come from the zoo's facts (or `nm` for the library built here), lines from markers.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fixtures.toolbox import markers as source_markers

from .. import builders
from ..conftest import facts
from ..variants import BREAK_LLDB
from .conftest import resume
from .driver_lldb import REPO, LldbDriver

ROOT = Path(REPO)
e2e = pytest.mark.e2e



# -- helpers --------------------------------------------------------------------------------

def _stop_reason(stop: str) -> str:
    m = re.search(r"stop reason = ([^\n]+)", stop)
    if m:
        return m[1].strip()
    m = re.search(r"exited with status = -?\d+", stop)
    return m[0] if m else "?"


def _hits(reason: str) -> set[str]:
    """`breakpoint 1.2 2.1` (two breakpoints at one address) -> {"1.2", "2.1"}."""
    return set(reason.split()[1:]) if reason.startswith("breakpoint ") else set()


def _frame0(stop: str) -> str:
    m = re.search(r"frame #0: [^\n]+", stop)
    assert m, stop
    return m[0]


def _file_pc(session: LldbDriver) -> int:
    """The selected frame's pc as a file address of its module (`image lookup -a $pc`)."""
    out = session.command("image lookup -a $pc")
    m = re.search(r"Address: \S+\[(0x[0-9a-f]+)\]", out)
    assert m, out
    return int(m[1], 16)


def _breakpoints(listing: str) -> dict[int, list[str]]:
    """`breakpoint list` -> breakpoint id -> its location lines."""
    out: dict[int, list[str]] = {}
    current = None
    for line in listing.splitlines():
        if m := re.match(r"(\d+): ", line):
            current = out.setdefault(int(m[1]), [])
        elif (m := re.match(r"\s+\d+\.\d+: ", line)) and current is not None:
            current.append(line)
    return out


def _file_addresses(locations: list[str]) -> set[int]:
    """Location lines before the run: `address = crash[0x…]` (file addresses)."""
    return {int(a, 16) for line in locations
            for a in re.findall(r"address = \S+\[(0x[0-9a-f]+)\]", line)}


def _stops(session: LldbDriver, first: str) -> list[tuple[str, int, str]]:
    """Every stop from `first` until the program dies: (stop reason, file pc, frame #0 line)."""
    out = []
    stop = first
    for _ in range(40):
        reason = _stop_reason(stop)
        if reason.startswith("exited"):
            out.append((reason, -1, ""))
            return out
        out.append((reason, _file_pc(session), _frame0(stop)))
        if not reason.startswith("breakpoint"):
            return out
        stop = resume(session)
    raise AssertionError(f"more than 40 stops: {out}")


# -- one breakpoint, many locations, on four kinds of split code ----------------------------

@e2e
@pytest.mark.parametrize("variant", BREAK_LLDB)
def test_one_lldb_breakpoint_per_bb_break(lldb: Callable[..., LldbDriver], zoo: dict[str, Any],
                                          variant: str) -> None:
    f = facts(zoo, variant, "crash")
    fragments = f["split_functions"]["transfer"]["fragments"]
    starts = {int(fr["start"], 16) for fr in fragments}
    # In run's cold fragment, a statement in every variant (clang marks no row of line 29
    # `transfer cold path` is_stmt).
    cold_line = f["markers"]["crash.c"]["run cold path"]
    session = lldb(ROOT / f["binary"], args=["crash"])

    out = session.command("bb break transfer --all-fragments")
    assert out == f"Breakpoint 1: {len(fragments)} locations.", out  # as `breakpoint set`
    out = session.command(f"bb break crash.c:{cold_line}")
    # LLDB's own words for one location, with the procedure as written and its true line.
    assert re.fullmatch(rf"Breakpoint 2: where = crash`run \[[^\]]+\] \+ \d+ at "
                        rf"crash\.c:{cold_line}(:\d+)?, address = 0x[0-9a-f]{{16}}", out), out
    # LLDB's own breakpoint finds the line in run's code too: from the DWARF, or (BOLT without
    # DWARF) from the symbol file the plugin gives LLDB, whose line records for moved code are
    # the pre-BOLT binary's lines through BAT (its choice of locations is LLDB's own).
    native = session.command(f"breakpoint set -f crash.c -l {cold_line}")
    assert "no locations (pending)" not in native, native
    located = _breakpoints(session.command("breakpoint list"))[3]
    assert located and all("crash`run" in line for line in located), located
    session.command("breakpoint delete 3")
    block = None
    if variant == "clang-mfs-pgomap":
        block = next(b for b in f["split_functions"]["transfer"]["blocks"]
                     if b["fragment"] != "hot")
        out = session.command(f"bb break transfer:%{block['block_id']}")
        assert out.startswith("Breakpoint 4: where = crash`transfer"), out

    listing = session.command("breakpoint list")
    bps = _breakpoints(listing)
    assert sorted(bps) == ([1, 2, 4] if block else [1, 2]), listing
    assert "unsplit: bb break transfer --all-fragments, locations = " \
           f"{len(fragments)}" in listing, listing
    assert _file_addresses(bps[1]) == starts, listing
    if block:
        assert _file_addresses(bps[4]) == {int(block["start"], 16)}, listing

    stops = _stops(session, session.run())
    reasons = [r for r, _, _ in stops]
    assert reasons[-1].startswith("signal SIGSEGV"), stops
    hot = next(int(fr["start"], 16) for fr in fragments if fr["fragment"] == "hot")
    entry = next(s for s in stops if any(h.startswith("1.") for h in _hits(s[0])))
    assert "1.1" in _hits(entry[0]) and entry[1] == hot, stops
    assert re.search(r"`transfer\b(?! \[)", entry[2]), entry
    for reason, pc, frame in stops[:-1]:
        if any(h.startswith("1.") for h in _hits(reason)):
            assert pc in starts, (reason, hex(pc), starts)
        proc, frag = next((p, fr) for p, d in f["split_functions"].items()
                          for fr in d["fragments"]
                          if int(fr["start"], 16) <= pc < int(fr["end"], 16))
        label = proc if frag["fragment"] == "hot" else f"{proc} [{frag['fragment']}]"
        assert f"`{label}" in frame, frame  # the stop line names the procedure as written
    line_stops = [s for s in stops if "2.1" in _hits(s[0])]
    assert len(line_stops) == 1, stops
    assert "`run [" in line_stops[0][2] and f"crash.c:{cold_line}" in line_stops[0][2], \
        line_stops
    if block:
        assert [pc for r, pc, _ in stops if "4.1" in _hits(r)] == [int(block["start"], 16)], \
            stops
    # After the run the same locations are resolved at load addresses (PIE: biased).
    listing = session.command("breakpoint list")
    assert f"locations = {len(fragments)}, resolved = {len(fragments)}" in listing, listing


# -- LLDB's own breakpoint commands on a `bb break` -----------------------------------------

@e2e
def test_disable_condition_restart_delete(lldb: Callable[..., LldbDriver],
                                          zoo: dict[str, Any]) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    fragments = f["split_functions"]["transfer"]["fragments"]
    cold = next(int(fr["start"], 16) for fr in fragments if fr["fragment"] != "hot")
    session = lldb(ROOT / f["binary"], args=["crash"])
    assert session.command("bb break transfer -a") == "Breakpoint 1: 2 locations."

    session.command("breakpoint disable 1")
    assert _stop_reason(session.run()).startswith("signal SIGSEGV")
    session.command("breakpoint enable 1")
    # transfer(a, 1000, 1) in crash mode: a false condition never stops, a true one does.
    session.command("breakpoint modify -c 'amount == 7' 1")
    assert _stop_reason(session.run()).startswith("signal SIGSEGV")
    session.command("breakpoint modify -c 'amount == 1000' 1")
    stops = _stops(session, session.run())  # a new process: locations found again
    assert [(_hits(r), pc) for r, pc, _ in stops[:2]] == [
        ({"1.1"}, int(fragments[0]["start"], 16)), ({"1.2"}, cold)], stops
    assert "transfer [cold]" in stops[1][2], stops
    assert "hit count = 2" in session.command("breakpoint list 1")

    session.command("breakpoint delete 1")
    assert "No breakpoints currently set" in session.command("breakpoint list")
    assert _stop_reason(session.run()).startswith("signal SIGSEGV")


@e2e
def test_nothing_matches_and_the_resolver_by_name(lldb: Callable[..., LldbDriver],
                                                  zoo: dict[str, Any]) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    session = lldb(ROOT / f["binary"])
    for bad in ("no_such_procedure", "crash.c:9999", "transfer:%3"):
        out = [line for line in session.command(f"bb break {bad}").splitlines() if line]
        assert len(out) == 1 and out[0].startswith("error: "), (bad, out)
    assert "No breakpoints currently set" in session.command("breakpoint list")
    # The class `bb break` uses, by the name a user gives `breakpoint set -P`.
    out = session.command("breakpoint set -P unsplit_lldb.SplitResolver -k location "
                          "-v transfer -k all_fragments -v 1")
    assert re.match(r"Breakpoint 1: 2 locations", out), out
    assert "unsplit: bb break transfer --all-fragments, locations = 2" in \
        session.command("breakpoint list")


# -- a pending breakpoint in a library that dlopen loads ------------------------------------

@pytest.fixture(scope="module")
def dlopen_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PIE that dlopens libw.so, whose work() GCC split (PGO) into work and work.cold."""
    return builders.split_library(tmp_path_factory.mktemp("dlopen"), load="dlopen", pie=True)


def _nm(path: Path) -> dict[str, int]:
    out = subprocess.run(["nm", str(path)], check=True, capture_output=True, text=True).stdout
    return {parts[2]: int(parts[0], 16) for line in out.splitlines()
            if len(parts := line.split()) == 3}


@e2e
def test_pending_breakpoint_resolves_when_dlopen_loads_the_library(
        lldb: Callable[..., LldbDriver], dlopen_library: Path) -> None:
    symbols = _nm(dlopen_library / "libw.so")
    entry, cold = symbols["work"], symbols["work.cold"]
    line = source_markers(dlopen_library / "lib.c")["lib cold"]
    session = lldb(dlopen_library / "m", args=["crash"])

    out = session.command("bb break work -a")
    assert out.startswith("error: bb break: work: not found in any loaded module"), out
    assert session.command("bb break work -a --pending") == \
        "Breakpoint 1: no locations (pending)."
    assert session.command(f"bb break lib.c:{line} --pending") == \
        "Breakpoint 2: no locations (pending)."
    assert session.command("bb break --list") == \
        f"Breakpoint 1 (bb break work --all-fragments): pending\n" \
        f"Breakpoint 2 (bb break lib.c:{line}): pending"
    listing = session.command("breakpoint list")
    assert re.search(r"1: unsplit: bb break work --all-fragments, locations = 0", listing)
    assert re.search(rf"2: unsplit: bb break lib\.c:{line}, locations = 0", listing)

    for _ in range(2):  # the second run: libw.so is loaded again, at its new address
        stops = _stops(session, session.run())
        assert stops[-1][0].startswith("signal SIGSEGV"), stops
        hits = {(h.split(".")[0], pc) for r, pc, _ in stops[:-1] for h in _hits(r)}
        assert ("1", entry) in hits and ("1", cold) in hits, stops
        at_line = [s for s in stops if "2.1" in _hits(s[0])]
        assert len(at_line) == 1, stops
        # (LLDB's own line there is 5: GCC put a non-statement row of line 5 after line 8's.)
        assert "libw.so`work [cold]" in at_line[0][2], at_line
        assert all("libw.so`work" in frame for _, _, frame in stops[:-1]), stops
    listing = session.command("breakpoint list")  # LLDB counts hits per process
    assert "1: unsplit: bb break work --all-fragments, locations = 2, resolved = 2, " \
           "hit count = 2" in listing, listing
