"""The fixture zoo's variants the end-to-end tests run, each list named once, for GDB and LLDB
alike (fixtures/build.py makes the variants; each one's facts.json says what it is).

A list is named for what its builds have in common; a test picks the list whose builds show
what it checks, so the same choice made in two files is one name here.
"""

from __future__ import annotations

# Every crash build of the zoo, with and without DWARF: the scenarios both debuggers share,
# live and on the core (test_scenarios.py).
EVERY_CRASH = [
    "gcc-pgo", "gcc-pgo-nodebug", "clang-mfs", "clang-mfs-nodebug", "clang-mfs-pgomap",
    "clang-bbsections",
    "bolt-all", "bolt-all-dbg", "bolt-random2", "bolt-random2-dbg",
    "bolt-profile2", "bolt-profile2-dbg", "bolt-cdsplit", "bolt-cdsplit-dbg",
    "bolt-randomN", "bolt-randomN-dbg", "bolt-reverse", "bolt-reverse-dbg",
    "bolt-nonreloc", "bolt-nonreloc-dbg", "bolt-nolite", "bolt-nolite-dbg",
]

# Symbol-only crash builds (no DWARF), each compiler's and each BOLT layout: LLDB's own `bt`
# of every crash core (test_exact_frames.py).
NO_DWARF = ["clang-mfs-nodebug", "gcc-pgo-nodebug", "gcc-pgo-stripped",
            *(f"bolt-{v}" for v in ("all", "random2", "randomN", "profile2", "cdsplit",
                                    "reverse", "nonreloc", "nolite"))]

# BOLT's layouts without DWARF, whose lines come from BAT and the pre-BOLT binary: the frames
# in code BOLT rewrote (test_bolt_lines.py).
BOLT_WITHOUT_DWARF = ("bolt-all", "bolt-cdsplit", "bolt-nolite", "bolt-nonreloc",
                      "bolt-profile2", "bolt-random2", "bolt-randomN", "bolt-reverse")

# BOLT's layouts, one build each: the plugin's names in BOLTed code (test_bolt.py).
BOLT_LAYOUTS = ["bolt-all", "bolt-cdsplit", "bolt-random2", "bolt-randomN", "bolt-reverse",
                "bolt-nonreloc", "bolt-nolite"]

# BOLT without DWARF, given unsplit's debug file (bb debuginfo, debuginfod): GDB's own
# commands in moved code (test_debuginfo_gdb.py) ...
DEBUG_FILE_GDB = ["bolt-all", "bolt-cdsplit"]
# ... LLDB's own view of it (test_debuginfo_lldb.py) and a plain GDB served by debuginfod
# (test_debuginfod.py).
DEBUG_FILE = ["bolt-all", "bolt-random2"]

# ... and the pre-BOLT input's variables, parameters and return values in moved code through
# the debug file, against plain GDB (and LLDB, on the first two) on the input
# (test_debuginfo_variables.py): a split at every block, a profile's, reordered blocks.
DEBUG_FILE_VARIABLES = ["bolt-all", "bolt-cdsplit", "bolt-reverse"]
# ... and the same through inputs of other producers' DWARF: GCC 12's -g (DWARF 5 without
# .debug_addr), GCC's and clang's -gdwarf-4 (.debug_loc, .debug_ranges), split at every block.
DEBUG_FILE_OTHER_DWARF = ["bolt-gcc", "bolt-gcc-dwarf4", "bolt-clang-dwarf4"]

# `bb break`: a GCC fragment, clang's with a PGO basic-block map, BOLT with and without DWARF
# and with its own split (test_break.py); LLDB's own breakpoint resolver on them
# (test_break_lldb.py, without bolt-all-dbg).
BREAK = ["gcc-pgo", "clang-mfs-pgomap", "bolt-all", "bolt-all-dbg", "bolt-cdsplit"]
BREAK_LLDB = ["gcc-pgo", "clang-mfs-pgomap", "bolt-all", "bolt-cdsplit"]

# The CFI's frames against the debuggers' (test_exact_frames.py): crash builds with and without
# DWARF ...
EXACT_FRAMES = ["clang-mfs-nodebug", "bolt-all", "gcc-pgo-nodebug", "clang-mfs"]
# ... and symbol-only builds where main.cold has a `ret` in its middle: after it, the FDE's rows
# do not begin like a function's, and LLDB 22 unwinds with its assembly profiler instead (also
# `bb finish` where LLDB invents a frame, test_stepping.py).
RET_MID_FRAGMENT = ["clang-mfs-nodebug", "bolt-random2"]

# The GDB adapter's cores: each compiler's split, with and without DWARF, and BOLT's
# (test_gdb_adapter.py).
GDB_CORES = ("gcc-pgo", "gcc-pgo-nodebug", "clang-mfs", "clang-bbsections", "bolt-all",
             "bolt-all-dbg", "bolt-cdsplit")
# The LLDB adapter's live crashes and cores (test_lldb_adapter.py).
LLDB_LIVE = ["gcc-pgo", "gcc-pgo-nodebug", "clang-mfs", "bolt-all", "bolt-all-dbg"]
LLDB_CORES = ["gcc-pgo", "clang-mfs-nodebug", "bolt-all", "bolt-random2-dbg"]

# Stepping (test_stepping.py): builds with lines, each compiler's split and BOLT's with DWARF
# ...
STEP_WITH_LINES = ["gcc-pgo", "clang-mfs", "bolt-all-dbg"]
# ... the same and BOLT without DWARF (lines from BAT and the pre-BOLT binary) ...
STEP = [*STEP_WITH_LINES, "bolt-all"]
# ... LLDB's scripted thread plan by hand ...
STEP_SCRIPTED = ["gcc-pgo", "clang-mfs", "bolt-all"]
# ... and a return into the middle of a line in the caller's cold fragment, for each layout of
# main's cold path (GCC, clang, basic-block sections, BOLT's profile and cdsplit).
RETURN_MID_LINE = ["gcc-pgo", "clang-mfs", "clang-bbsections", "bolt-profile2", "bolt-cdsplit"]

# The multi-unit C++ program whose units each have their own static `helper`, BOLTed with and
# without DWARF: `bb break helper` sets one location in each (test_break_statics.py).
STATICS = ["bolt-statics", "bolt-statics-dbg"]

# Always-inlined calls in code BOLT moved, without DWARF: `finish` out of an inlined frame
# against the pre-BOLT input (test_finish_inlined.py).
INLINED = "bolt-inlined"
