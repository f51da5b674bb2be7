"""`bb break` without a debugger: the location grammar (debug/breakpoints.parse) and dispatch of
`bb break` to a fake BreakpointHost, which records what an adapter would be asked to set.
Expected addresses come from the fixture facts (nm's fragment symbols, the markers' lines)."""

from __future__ import annotations

from typing import Any

import pytest
from unsplit.commands import dispatch
from unsplit.debug import breakpoints
from unsplit.debug.breakpoint_host import BreakpointHost
from unsplit.debug.breakpoints import BreakSpec, Site
from unsplit.errors import AddressLookupError, UsageError
from unsplit.host import LoadedModule, StaticHost
from unsplit.render.breaks import BreakGroup
from unsplit.session import Session

from ...conftest import ROOT, facts


@pytest.mark.parametrize(("text", "fields"), [
    ("transfer", {"procedure": "transfer"}),
    ("transfer+0x1c", {"procedure": "transfer", "offset": 0x1C}),
    ("transfer + 28", {"procedure": "transfer", "offset": 28}),
    ("transfer:%5", {"procedure": "transfer", "block": 5}),
    ("crash.c:32", {"file": "crash.c", "line": 32}),
    ("ns::Ledger<int>::post(int const*, int) const",
     {"procedure": "ns::Ledger<int>::post(int const*, int) const"}),
    ("ns::f:%0", {"procedure": "ns::f", "block": 0}),
    ("transfer.cold.1", {"procedure": "transfer.cold.1"}),
])
def test_location_forms(text: str, fields: dict[str, Any]) -> None:
    assert breakpoints.parse(f"  {text} ") == BreakSpec(text, **fields)


def test_all_fragments_only_for_a_procedure() -> None:
    assert breakpoints.parse("transfer", all_fragments=True).all_fragments
    assert not breakpoints.parse("crash.c:32", all_fragments=True).all_fragments


@pytest.mark.parametrize(("text", "said"), [
    ("", "bb break: give a location"),
    ("transfer; rm", "bb break: cannot read location 'transfer; rm'"),
    ("'quoted'", "bb break: cannot read location"),
])
def test_bad_locations_are_one_line(text: str, said: str) -> None:
    with pytest.raises(UsageError) as e:
        breakpoints.parse(text)
    assert str(e.value).startswith(said) and "\n" not in str(e.value)


class _Breaker(StaticHost):
    """A host that sets breakpoints by remembering them (and can do nothing else)."""

    def __init__(self, module_list: list[LoadedModule]) -> None:
        super().__init__(module_list)
        self.made: list[tuple[BreakSpec, list[tuple[LoadedModule, Site]]]] = []

    def create_breakpoint(self, spec: BreakSpec, sites: list[tuple[LoadedModule, Site]]) -> str:
        self.made.append((spec, sites))
        return f"Breakpoint {len(self.made)}: {len(sites)} locations."

    def bb_breakpoints(self) -> list[BreakGroup]:
        return []


def _host(f: dict[str, Any]) -> _Breaker:
    host = _Breaker([LoadedModule(str(ROOT / f["binary"]), 0)])
    assert isinstance(host, BreakpointHost)
    return host


def _fragments(f: dict[str, Any], proc: str) -> list[tuple[str, int, int]]:
    return [(fr["symbol"], int(fr["start"], 16), int(fr["end"], 16))
            for fr in f["split_functions"][proc]["fragments"]]


@pytest.mark.parametrize("variant", ["gcc-pgo", "clang-mfs"])
def test_procedure_and_its_fragments(zoo: dict[str, Any], variant: str) -> None:
    f = facts(zoo, variant, "crash")
    host = _host(f)
    frags = _fragments(f, "transfer")
    out = dispatch(Session(persistent=False), host, "break", "transfer")
    assert out == "Breakpoint 1: 1 locations."
    spec, sites = host.made[0]
    assert spec.procedure == "transfer" and not spec.all_fragments
    hot = next(start for sym, start, _ in frags if sym == "transfer")
    assert [s.file_address for _, s in sites] == [hot]

    dispatch(Session(persistent=False), host, "break", "--all-fragments transfer")
    _, sites = host.made[1]
    assert sorted(s.file_address for _, s in sites) == sorted(start for _, start, _ in frags)
    assert {s.procedure for _, s in sites} == {"transfer"}


def test_source_line_in_moved_code(zoo: dict[str, Any]) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    host = _host(f)
    line = f["markers"]["crash.c"]["crash site"]
    [symbol] = f["marker_fragments"]["crash.c"]["crash site"]
    _, start, end = next(fr for fr in _fragments(f, "transfer") if fr[0] == symbol)
    dispatch(Session(persistent=False), host, "break", f"crash.c:{line} -c 'n > 1'")
    spec, sites = host.made[0]
    assert (spec.file, spec.line, spec.condition) == ("crash.c", line, "n > 1")
    assert sites and all(start <= s.file_address < end for _, s in sites), (sites, start, end)


def test_nothing_found_sets_nothing(zoo: dict[str, Any]) -> None:
    host = _host(facts(zoo, "gcc-pgo", "crash"))
    with pytest.raises(AddressLookupError) as e:
        dispatch(Session(persistent=False), host, "break", "no_such_procedure")
    assert str(e.value).startswith("bb break: no_such_procedure: not found")
    assert host.made == []
    dispatch(Session(persistent=False), host, "break", "--pending no_such_procedure")
    assert host.made[0][1] == []


def test_bolt_originals_are_left_out(zoo: dict[str, Any]) -> None:
    """bolt-patched: `process` names process and BOLT's patched original of it (facts: nm);
    `bb break` and `bb blocks` leave the original out and say so in one line, whose name is
    shown as the session shows names."""
    f = facts(zoo, "bolt-patched", "except")
    host = _host(f)
    entry = _fragments(f, "_Z7processPKii")[0][1]
    for text in ("process:%0", "process", "process(int const*, int)"):
        out = dispatch(Session(persistent=False), host, "break", text)
        assert [s.file_address for _, s in host.made[-1][1]] == [entry], text
        assert out.splitlines()[1:] == [
            "note: left out process(int const*, int) [clone .org.0]: BOLT's patched original "
            "entry, which only jumps to the function's new code"], out
    blocks = dispatch(Session(persistent=False), host, "blocks", "process").splitlines()
    assert blocks[0].startswith("note: left out process(int const*, int) [clone .org.0]")
    assert [x for x in blocks if "no basic-block information" in x] == []
    out = dispatch(Session(persistent=False), host, "break", "_Z7processPKii.org.0")
    assert [s.file_address for _, s in host.made[-1][1]] == \
        [int(f["bolt_originals"]["_Z7processPKii.org.0"], 16)] and "note" not in out
