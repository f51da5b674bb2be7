"""The real-world benchmarks' own judgement (bench/realworld.py, bench/realworld_cpp.py): what
they count as a stop and as a frame named right decides what their figures claim. Transcripts
here are shaped like GDB 13's and LLDB 22's; names demangled by llvm-cxxfilt-22."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import realworld as rw  # noqa: E402
import realworld_cpp as cpp  # noqa: E402

# One LLDB stop, as the benchmark's script prints it: LLDB's stop header, then `bt`, which
# begins with the same header.
_LLDB_STOP = """\
Process 4242 stopped
* thread #1, name = 'sj', stop reason = breakpoint 3.1
    frame #0: 0x0000555555556010 sj`parse [cold]
UNSPLIT-STOP
UNSPLIT-FRAMES [[0, 93824992239632, false, false], [1, 93824992235555, false, false]]
UNSPLIT-BT-BEGIN
* thread #1, name = 'sj', stop reason = breakpoint 3.1
  * frame #0: 0x0000555555556010 sj`parse [cold] at sj.cpp:12:3
    frame #1: 0x0000555555555023 sj`main + 19 at sj.cpp:30:5
UNSPLIT-BT-END
Process 4242 resuming
Process 4242 exited with status = 0 (0x00000000)
UNSPLIT-STOP
UNSPLIT-FRAMES []
UNSPLIT-BT-BEGIN
error: invalid thread
UNSPLIT-BT-END
"""
BIAS = 0x555555554000
FRAGS = [rw.Fragment("parse", "cold", "parse.cold", 0x2000, 0x2040, (0x2000, 0x2010))]
CODE = [rw.Symbol("main", 0x1010, 0x40), rw.Symbol("parse", 0x1100, 0x80),
        rw.Symbol("parse.cold", 0x2000, 0x40)]


def test_a_stop_is_counted_once() -> None:
    """LLDB repeats its stop header at the top of `bt`: one stop, not two; a block printed after
    the program ended is no stop."""
    stops = rw._stop_frames(_LLDB_STOP, rw._LLDB_FRAME)
    assert len(stops) == 1
    assert [(f.number, f.pc) for f in stops[0]] == [(0, BIAS + 0x2010), (1, BIAS + 0x1023)]


def test_frames_are_judged_by_where_their_pc_is() -> None:
    """A frame counts as moved code because a fragment holds its pc (a caller's: pc - 1), not
    because its text says `[cold]`, and must then be named `proc [fragment`; any other frame
    of the program's code by the symbol that holds its pc."""
    frames = rw._stop_frames(_LLDB_STOP, rw._LLDB_FRAME)[0]
    problems, counts = rw.check_frames(_build(), frames, BIAS, FRAGS,
                                       "lldb", lambda a: True, CODE)
    assert problems == [] and counts == {"own": 2, "moved": 1, "lines": 2, "shown": 2}
    # The same text for a pc the fragments do not hold: `[cold]` is not what makes it moved.
    moved_away = [rw.Frame(0, BIAS + 0x1110, frames[0].text), frames[1]]
    problems, counts = rw.check_frames(_build(), moved_away, BIAS, FRAGS, "lldb",
                                       lambda a: True, CODE)
    assert counts["moved"] == 0 and problems == []  # named `parse`: its symbol
    untagged = [rw.Frame(0, BIAS + 0x2010, "sj`parse at sj.cpp:12:3"), frames[1]]
    problems, _ = rw.check_frames(_build(), untagged, BIAS, FRAGS, "lldb", lambda a: True, CODE)
    assert len(problems) == 1 and "not named parse [cold]" in problems[0]
    wrong = [frames[0], rw.Frame(1, BIAS + 0x1023, "sj`parse + 19 at sj.cpp:30:5")]
    problems, _ = rw.check_frames(_build(), wrong, BIAS, FRAGS, "lldb", lambda a: True, CODE)
    assert len(problems) == 1 and "not named main" in problems[0]


def _build() -> rw.Build:
    return rw.Build("test", Path("sj"), Path("sj"), True)


@pytest.mark.skipif(shutil.which("llvm-cxxfilt-22") is None, reason="llvm-cxxfilt-22")
@pytest.mark.parametrize(("mangled", "base"), [
    ("_ZN8simdjson3dom6parser5parseEPKhmb", "simdjson::dom::parser::parse"),
    ("_ZNK8simdjson3dom7element6get_idEv", "simdjson::dom::element::get_id"),
    ("_ZN8simdjson8internal13to_chars_implIdEEPcS2_T_",
     "simdjson::internal::to_chars_impl<double>"),
    ("_ZNK8simdjson3dom7elementcvbEv", "simdjson::dom::element::operator bool"),
    ("_ZN8simdjsonltERKNS_3dom7elementES3_", "simdjson::operator<"),
    ("_ZN12_GLOBAL__N_14walkEi.constprop.0", "(anonymous namespace)::walk"),
])
def test_cxx_base_is_the_qualified_name_alone(mangled: str, base: str) -> None:
    """Parameters, qualifiers, clone suffixes and a template's return type go; llvm-cxxfilt-22
    demangles (the oracle)."""
    text = subprocess.run(["llvm-cxxfilt-22", mangled], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert cpp.cxx_base(text) == base


def test_cpp_frames_are_named_by_their_demangled_name() -> None:
    named = cpp.cpp_named(dwarf=False)
    name = "_ZN8simdjson3dom6parser5parseEPKhmb"
    assert named(name, None, "simdjson::dom::parser::parse (this=0x1, len=3) at a.cpp:3")
    assert named(name, None, "sj`simdjson::dom::parser::parse(unsigned char const*, "
                             "unsigned long, bool) + 12")
    assert named(name, "cold", "simdjson::dom::parser::parse [cold] (this=0x1) at a.cpp:3")
    assert named(name, "cold", "sj`simdjson::dom::parser::parse(unsigned char const*, "
                               "unsigned long, bool) [cold] + 0x1d")
    assert not named(name, "cold", "simdjson::dom::parser::parse (this=0x1) at a.cpp:3")
    assert not named(name, None, "simdjson::dom::parser::parse_many (this=0x1) at a.cpp:3")
    assert not named(name, "cold", f"{name} [cold] ()")  # a mangled name where we name it
