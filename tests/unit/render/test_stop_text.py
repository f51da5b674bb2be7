"""unsplit.render.stop against the debuggers' own output, copied from gdb 13.1 and lldb 22.1.8
stopping in fixtures/src/crash.c (GCC PGO build): the same stop, rendered by the core, must read
the same, byte for byte where the debugger's own line is right."""

from __future__ import annotations

from unsplit.index.model.records import Location
from unsplit.render import stop as stop_text

from ...conftest import ROOT

SOURCE = str(ROOT / "fixtures" / "src" / "crash.c")


def _loc(line: int, column: int, procedure: str = "transfer", fragment: str = "hot") -> Location:
    return Location(0x555555555418, 0x1418, "/x/crash", procedure, fragment=fragment,
                    file="crash.c", line=line, column=column, path=SOURCE)


# lldb-22 `next` in transfer (train mode): the lines under `frame #0: … at crash.c:25:8`.
LLDB_25 = """\
   22  \t
   23  \t__attribute__((noinline)) long transfer(struct account *a, long amount, int mode)
   24  \t{
-> 25  \t    if (__builtin_expect(mode == 0, 1)) {
    \t       ^
   26  \t        a->balance += amount; /* BB: transfer hot path */
   27  \t        return a->balance;
   28  \t    }"""


def test_lldb_source_block_is_lldbs() -> None:
    assert stop_text.lldb_source_block(_loc(25, 8), 3, 3, caret=True) == LLDB_25
    assert stop_text.lldb_source_block(_loc(25, 8), 1, 0, caret=False) == \
        "   24  \t{\n-> 25  \t    if (__builtin_expect(mode == 0, 1)) {"
    assert stop_text.lldb_source_block(_loc(2, 0), 3, 0, caret=True).splitlines()[0] == \
        "   1   \t/* crash.c - a hot loop normally; with \"crash\", a NULL write inside a cold " \
        "fragment."


def test_gdb_same_frame_is_the_line_and_its_text() -> None:
    loc = _loc(25, 8)
    text = "    if (__builtin_expect(mode == 0, 1)) {"
    # gdb 13 `next` ending where a row begins, and `stepi` ending inside one.
    assert stop_text.gdb_stop(loc, loc.address, native_frame="", what=stop_text.SRC_LINE,
                              at_line_start=True) == f"25\t{text}"
    assert stop_text.gdb_stop(loc, loc.address, native_frame="", what=stop_text.SRC_LINE,
                              at_line_start=False) == f"0x0000555555555418\t25\t{text}"


def test_gdb_new_frame_names_the_procedure_as_written() -> None:
    native = ("#0  run (a=a@entry=0x7fffffffe650, n=n@entry=1, mode=mode@entry=1) at "
              "/work/main/fixtures/src/crash.c:40")
    loc = _loc(42, 13, "run", "cold")
    out = stop_text.gdb_stop(loc, 0x5555555550ca, native_frame=native,
                             what=stop_text.gdb_what("auto", True), at_line_start=True)
    assert out == ("run [cold] (a=a@entry=0x7fffffffe650, n=n@entry=1, mode=mode@entry=1) at "
                   "/work/main/fixtures/src/crash.c:42\n"
                   "42\t            audit(\"run slow path\", i); /* BB: run cold path */")
    # GDB without DWARF: `0x… in transfer.cold.1 ()`; mid-row, so the pc stays.
    out = stop_text.gdb_stop(_loc(32, 10, "transfer", "cold.1"), 0x800227,
                             native_frame="#0  0x0000000000800227 in transfer.cold.1 ()",
                             what=stop_text.gdb_what("auto", True), at_line_start=False)
    assert out.splitlines()[0] == "0x0000000000800227 in transfer [cold.1] () at " + SOURCE + ":32"
    assert stop_text.gdb_what("location", False) == stop_text.LOCATION
    assert stop_text.gdb_what("auto", False) == stop_text.SRC_LINE
