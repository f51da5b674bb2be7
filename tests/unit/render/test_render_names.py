"""The step, stop and break renderers name a C++ procedure as the debugger would (issue 15 with
issue 18's output): demangled in the session's wording, GDB's without parameter types where
GDB has DWARF (its own frame line says so), linkage names when demangling is off. Oracles:
c++filt (GDB's libiberty wording) and llvm-cxxfilt-22 (LLDB's)."""

from __future__ import annotations

import subprocess

from unsplit.index.model.records import Location
from unsplit.index.names.demangle import GNU, LLVM
from unsplit.render import breaks as break_text
from unsplit.render import stop as stop_text

LINKAGE = "_Z7processPKii"
PC = 0x800304


def _demangled(tool: str) -> str:
    return subprocess.run([tool], input=LINKAGE + "\n", capture_output=True, text=True,
                          check=True).stdout.strip()


def _loc() -> Location:
    return Location(PC, PC, "/x/except", LINKAGE, fragment="cold.2", offset=0x7c,
                    file="except.cpp", line=30, column=5, path="/nonexistent/except.cpp")


def test_gdb_stop_line_without_dwarf_names_the_procedure_with_its_parameters() -> None:
    native = f"#0  {PC:#018x} in {LINKAGE}.cold.2 ()"
    line = stop_text.gdb_location_line(native, _loc(), PC, False, style=GNU)
    assert line == f"{PC:#018x} in {_demangled('c++filt')} [cold.2] () at " \
                   "/nonexistent/except.cpp:30"
    assert LINKAGE in stop_text.gdb_location_line(native, _loc(), PC, False, style=None)


def test_gdb_stop_line_with_dwarf_names_it_as_gdb_does() -> None:
    """GDB with DWARF: `process (records=…, n=16) at except.cpp:28` (no parameter types)."""
    native = f"#0  {PC:#018x} in process (records=0x4172b0, n=16) at /src/except.cpp:28"
    out = stop_text.gdb_stop(_loc(), PC, native_frame=native, what=stop_text.LOCATION,
                             at_line_start=False, style=GNU)
    qualified = _demangled("c++filt").split("(")[0]
    assert out == f"{PC:#018x} in {qualified} [cold.2] (records=0x4172b0, n=16) at " \
                  "/src/except.cpp:30"


def test_verbose_line_and_lldb_break_message_are_demangled() -> None:
    assert f" in {_demangled('c++filt')} [cold.2]+0x7c at " in \
        stop_text.verbose_line(_loc(), PC, GNU)
    assert f" in {LINKAGE} [cold.2]+0x7c at " in stop_text.verbose_line(_loc(), PC, None)
    text = break_text.lldb_created(3, 1, PC, _loc(), LLVM)
    assert text == f"Breakpoint 3: where = except`{_demangled('llvm-cxxfilt-22')} [cold.2] " \
                   f"+ 124 at except.cpp:30:5, address = {PC:#018x}"
