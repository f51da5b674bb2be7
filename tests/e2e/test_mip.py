"""MIP (`__llvm_mipmap` + `__llvm_mipraw`) in both debuggers, on the zoo's clang-mip crash:
clang-mfs whose bb address map was replaced by the Machine IR Profile sections.

What each command must say comes from the variant's facts (fixtures/README.md): the functions'
symbols and sizes (nm), their blocks (llvm-readobj-22 on the clang build, %0 the entry and
%1..%n in map order), which blocks the training run reached (a gdb run with a breakpoint at
every block start), the moved pieces (nm) and gdb's own unwind of the crash.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from ..conftest import ROOT, facts
from .conftest import json_lines, start_crash

pytestmark = pytest.mark.e2e
VARIANT = "clang-mip"


def _bias(f: dict[str, Any]) -> int:
    """Load bias of the PIE: both debuggers disable ASLR, as the facts' gdb run did."""
    return int(f["crash"]["load_bias"], 16) if f["pie"] else 0


def _blocks(fn: dict[str, Any]) -> list[dict[str, Any]]:
    """The function's blocks by address, each running to the next start (the last to the end
    of its symbol), flagged by the training run."""
    blocks = sorted(fn["blocks"], key=lambda b: int(b["start"], 16))
    ends = [int(b["start"], 16) for b in blocks[1:]] + [int(fn["address"], 16) + fn["size"]]
    return [{"block": b["block_id"], "start": int(b["start"], 16), "end": end,
             "flags": ["covered" if b["covered"] else "not-covered"]}
            for b, end in zip(blocks, ends, strict=True)]


@pytest.fixture(params=["core", "live"])
def session(request: pytest.FixtureRequest, debugger: Callable[..., Any],
            zoo: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(a session stopped at the crash, the facts)."""
    f = facts(zoo, VARIANT, "crash")
    return start_crash(debugger, f, request.param), f


@pytest.mark.parametrize("proc", ["transfer", "run", "audit"])
def test_blocks_lists_the_map(session: tuple[Any, dict[str, Any]], proc: str) -> None:
    s, f = session
    bias = _bias(f)
    (rows,) = json_lines(s.command(f"bb blocks {proc} --json"), ("[",))
    got = [{"block": r["block"], "start": int(r["start"], 16) - bias,
            "end": int(r["end"], 16) - bias, "flags": r["flags"]} for r in rows]
    assert got == _blocks(f["mip"]["functions"][proc])
    assert {r["fragment"] for r in rows} == {"hot"}


def test_where_names_every_block(session: tuple[Any, dict[str, Any]]) -> None:
    s, f = session
    bias = _bias(f)
    addresses, expected = [], []
    for name, fn in f["mip"]["functions"].items():
        for b in _blocks(fn):
            for link in (b["start"], b["end"] - 1):
                addresses.append(hex(link + bias))
                expected.append((name, "hot", b["block"], link - b["start"], b["flags"]))
    assert len(addresses) >= 12
    got = json_lines(s.command("bb where --json " + " ".join(addresses)), ("{", "["))
    if len(got) == 1 and isinstance(got[0], list):
        got = got[0]
    assert [(loc["procedure"], loc["fragment"], loc["block"], loc["block_offset"],
             loc["block_flags"]) for loc in got] == expected


def test_where_and_bt_in_moved_code(session: tuple[Any, dict[str, Any]]) -> None:
    """The crash is in transfer.cold, a piece clang labels with an STT_NOTYPE symbol and the
    map does not hold: the symbol table names it, so `bb where` and `bt` name the procedure."""
    s, f = session
    crash = f["crash"]
    (loc,) = json_lines(s.command("bb where --json"))
    assert (loc["procedure"], loc["fragment"], loc["fragment_symbol"]) == \
        (crash["procedure"], crash["fragment"], crash["symbol"])
    assert "block" not in loc  # MIP has no block there
    bt = s.backtrace()
    for n, frame in enumerate(crash["frames"][:3]):
        line = next(ln for ln in bt.splitlines() if re.match(rf"^\s*\*?\s*(frame )?#{n}[: ]", ln))
        assert f"{frame['procedure']} [{frame['fragment']}]" in line, bt


@pytest.mark.parametrize("proc", ["transfer", "run"])
def test_break_on_a_block_the_training_run_reaches(debugger: Callable[..., Any],
                                                   zoo: dict[str, Any], proc: str) -> None:
    """`bb break PROC:%ID` on PROC's last non-entry block covered by the training run: run
    with the training arguments, the program stops there, and `bb where` says so."""
    f = facts(zoo, VARIANT, "crash")
    fn = f["mip"]["functions"][proc]
    block = [b for b in _blocks(fn) if b["block"] != 0 and b["flags"] == ["covered"]][-1]
    s = debugger(ROOT / f["binary"], args=f["training_args"])
    out = s.command(f"bb break {proc}:%{block['block']}")
    assert out.startswith("Breakpoint"), out
    s.run()
    (loc,) = json_lines(s.command("bb where --json"))
    assert int(loc["address"], 16) == block["start"] + _bias(f)
    assert (loc["procedure"], loc["fragment"], loc["block"], loc["block_offset"],
            loc["block_flags"]) == (proc, "hot", block["block"], 0, ["covered"])


def test_break_on_a_block_the_training_run_misses(debugger: Callable[..., Any],
                                                  zoo: dict[str, Any]) -> None:
    """A block the profile says never ran: the same run passes it by and exits normally."""
    f = facts(zoo, VARIANT, "crash")
    missed = [(name, b) for name, fn in f["mip"]["functions"].items() for b in _blocks(fn)
              if b["flags"] == ["not-covered"]]
    assert missed, "the training run reached every block: no profile to check"
    name, block = missed[0]
    s = debugger(ROOT / f["binary"], args=f["training_args"])
    out = s.command(f"bb break {name}:%{block['block']}")
    assert out.startswith("Breakpoint"), out
    out = s.run()
    assert re.search(r"exited normally|exited with status = 0", out), out
