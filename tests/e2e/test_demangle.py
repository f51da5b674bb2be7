"""C++ names in both debuggers as the debugger itself shows them (issue 15), and GDB's
` from LIB` wording kept.

The zoo's except.cpp under bolt-all has `_Z7processPKii` split in five; the program stops in
its fragment `cold.2` (`throw` mode runs the catch path). Expected names come from the
demanglers the debuggers follow: c++filt (libiberty, GDB's) and llvm-cxxfilt-22 (LLVM's,
LLDB's); fragment addresses from the facts (nm); GDB's own wording from GDB without the plugin.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from ..conftest import ROOT, facts
from .conftest import json_lines

pytestmark = pytest.mark.e2e

LINKAGE = "_Z7processPKii"
DEMANGLER = {"gdb": "c++filt", "lldb": "llvm-cxxfilt-22"}

@pytest.fixture(autouse=True)
def _frames_without_dwarf(monkeypatch: pytest.MonkeyPatch) -> None:
    """These cases are the plugin's own frame names and lines where the module has no DWARF:
    GDB's automatic debug file (bb debuginfo, tests/e2e/test_debuginfo_gdb.py) would make GDB's
    own output right and leave the plugin nothing to add, so it is off here."""
    monkeypatch.setenv("UNSPLIT_DEBUGINFO", "0")


def _demangled(debugger_name: str, name: str) -> str:
    return subprocess.run([DEMANGLER[debugger_name]], input=name + "\n", capture_output=True,
                          text=True, check=True).stdout.strip()


def _stop_in_cold_2(debugger: Callable[..., Any], zoo: dict[str, Any]) -> tuple[Any, str, str]:
    """A session stopped at the first instruction of process's cold.2 fragment."""
    f = facts(zoo, "bolt-all", "except")
    frag = next(fr for fr in f["split_functions"][LINKAGE]["fragments"]
                if fr["fragment"] == "cold.2")
    session = debugger(ROOT / f["binary"], args=["throw"])
    if session.name == "gdb":
        session.break_address(int(frag["start"], 16))
    else:  # LLDB places a name breakpoint on a BOLTed non-PIE binary reliably, not -a; at
        # the symbol itself: past the prologue LLDB 22 adds the procedure's prologue size to a
        # fragment's symbol (mid-instruction, on BOLT's own -dbg output too)
        session.break_entry(frag["symbol"])
    stop = session.run()
    return session, stop, frag["start"]


def test_cold_cpp_frame_reads_demangled(debugger: Callable[..., Any],
                                        zoo: dict[str, Any]) -> None:
    session, stop, start = _stop_in_cold_2(debugger, zoo)
    name = _demangled(session.name, LINKAGE)
    assert name == "process(int const*, int)"  # the oracle itself, as the issue states it
    label = f"{name} [cold.2]"
    # LLDB's stop and bt read the debug file's DWARF: as on the input's own, the arguments
    # stand where the types were
    shown = "process [cold.2](records=" if session.name == "lldb" else label
    assert shown in stop
    frame0 = next(ln for ln in session.backtrace().splitlines() if "#0" in ln)
    assert shown in frame0 and LINKAGE not in frame0

    text = session.command("bb where")
    assert f"is in {label} (except)" in text
    assert f"procedure {name}+0x" in text
    (loc,) = json_lines(session.command("bb where --json"))
    assert (loc["procedure"], loc["linkage_name"], loc["fragment"]) == (name, LINKAGE, "cold.2")
    assert int(loc["address"], 16) == int(start, 16)

    row = next(ln for ln in session.command("bb frames").splitlines() if ln.startswith("0 "))
    assert name in row and "cold.2" in row

    blocks = session.command("bb blocks process")
    assert blocks.splitlines()[0].startswith(f"{name}: ")


@pytest.mark.parametrize("form", ["process", "process(int const*, int)", LINKAGE])
def test_bb_break_takes_every_form_of_the_name(debugger: Callable[..., Any],
                                               zoo: dict[str, Any], form: str) -> None:
    """GDB's `break` accepts a qualified name without parameters, the demangled name and the
    linkage name; `bb break` too, and `bb break --list` names the procedure demangled at every
    location (one per fragment, at its start)."""
    f = facts(zoo, "bolt-all", "except")
    session = debugger(ROOT / f["binary"], args=["throw"])
    text = session.command(f"bb break {form} --all-fragments")
    name = _demangled(session.name, LINKAGE)
    fragments = f["split_functions"][LINKAGE]["fragments"]
    assert f"{len(fragments)} locations" in text, text
    listing = session.command("bb break --list").splitlines()
    assert f"bb break {form} --all-fragments" in listing[0], listing
    for fr in fragments:
        row = next(ln for ln in listing if f"{int(fr['start'], 16):#018x} in " in ln)
        assert f" in {name}+0x" in row and f" {fr['fragment']}" in row, row
        assert LINKAGE not in row.split(f" {fr['fragment']}")[0], row


def test_gdb_follows_print_demangle(gdb: Callable[..., Any], zoo: dict[str, Any]) -> None:
    session, _, _ = _stop_in_cold_2(gdb, zoo)
    session.command("set print demangle off")
    frame0 = next(ln for ln in session.backtrace().splitlines() if "#0" in ln)
    assert f"{LINKAGE} [cold.2]" in frame0
    (loc,) = json_lines(session.command("bb where --json"))
    assert (loc["procedure"], loc["linkage_name"]) == (LINKAGE, LINKAGE)
    session.command("set print demangle on")
    assert "process(int const*, int) [cold.2]" in session.backtrace()


def _stop_at_throw(debugger: Callable[..., Any], zoo: dict[str, Any], variant: str,
                   plugin: bool = True) -> Any:
    f = facts(zoo, variant, "except")
    session = debugger(ROOT / f["binary"], args=["throw"], plugin=plugin)
    session.command("break __cxa_throw")
    session.run()
    return session


def test_library_frame_without_line_keeps_gdbs_wording(gdb: Callable[..., Any],
                                                       zoo: dict[str, Any]) -> None:
    """clang-mfs except stopped in libstdc++'s __cxa_throw (no DWARF there): no frame of the
    stack is in moved code, so `bt` is GDB's own to the byte, `from …/libstdc++.so.6` too."""
    native = _stop_at_throw(gdb, zoo, "clang-mfs", plugin=False).backtrace()
    if not re.search(r"#0 .* in __cxa_throw \(\) from /\S+/libstdc\+\+\.so\.6$", native, re.M):
        pytest.skip("libstdc++ has line information on this machine (its debug package)")
    ours = _stop_at_throw(gdb, zoo, "clang-mfs").backtrace()
    assert ours == native


def test_library_frame_is_never_shown_as_a_source_file(gdb: Callable[..., Any],
                                                       zoo: dict[str, Any]) -> None:
    """clang-bbsections except at __cxa_throw: parse's cold fragment is on the stack, so the
    filter names it; the libstdc++ frame must not read ` at /…/libstdc++.so.6`."""
    bt = _stop_at_throw(gdb, zoo, "clang-bbsections").backtrace()
    assert "parse [cold]" in bt
    frame0 = next(ln for ln in bt.splitlines() if ln.startswith("#0"))
    assert "__cxa_throw ()" in frame0 and not re.search(r" at \S+\.so(\.\d+)*$", frame0)
