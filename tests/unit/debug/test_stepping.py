"""The policy of `bb next`/`step`/`finish` (debug.stepping) on zoo binaries, without a debugger.

Oracles that are not unsplit: the facts' marker lines and fragment ranges (nm, llvm-symbolizer,
the sources' marker comments), llvm-objdump-22's instruction starts, and for the CFI legs the
pcs GDB reported when the crash core was made. Chaining (return to the caller's next line, a
callee without lines stepped out of, frames below the selected one) is driven by a scripted
apply: the outcomes an adapter would report, at addresses taken from the facts.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pytest
from unsplit.debug import stepping
from unsplit.debug.stepping import StepOutcome, StepPlan, Walk
from unsplit.elf.core import Core
from unsplit.errors import AddressLookupError, UsageError
from unsplit.formats import dwarf_expr
from unsplit.host import LoadedModule
from unsplit.index.model.records import Location
from unsplit.render.stop import verbose_line
from unsplit.session import Session

from fixtures.toolbox import markers as source_markers

from ...conftest import ROOT, facts

LINE_VARIANTS = ["gcc-pgo", "clang-mfs", "clang-bbsections", "bolt-all-dbg", "bolt-all",
                 "bolt-random2", "bolt-cdsplit"]
BOLT_VARIANTS = ["bolt-all", "bolt-random2", "bolt-cdsplit", "bolt-randomN", "bolt-reverse",
                 "bolt-profile2"]


@dataclass
class FakeHost:
    """A Host over one binary (no bias) or a core: the pc, the frame level and registers are
    the test's; `step_logical` answers from a script of outcomes."""

    module_list: list[LoadedModule]
    pc: int
    level: int = 0
    core: Core | None = None
    outcomes: list[StepOutcome] = field(default_factory=list)
    applied: list[StepPlan] = field(default_factory=list)

    def modules(self) -> list[LoadedModule]:
        return self.module_list

    def selected_pc(self) -> int:
        return self.pc

    def evaluate_address(self, expression: str) -> int:
        return int(expression, 0)

    def selected_frame_level(self) -> int:
        return self.level

    def selected_frame_is_caller(self) -> bool:
        return self.level > 0

    def cannot_run(self) -> str | None:
        return None

    def step_context(self, kind: str, line: int | None) -> object:
        return None

    def stop_report(self, kind: str, loc: Location | None, pc: int, context: object) -> str:
        return verbose_line(loc, pc)

    def statements_only(self) -> bool:
        return False

    def stops_on_return(self) -> bool:
        return False

    def step_whole(self, kind: str, line: int | None) -> str | None:
        return None

    def step_logical(self, plan: StepPlan) -> StepOutcome:
        self.applied.append(plan)
        outcome = self.outcomes.pop(0)
        if outcome.pc is not None:
            self.pc, self.level = outcome.pc, 0
        return outcome


@dataclass
class CoreHost(FakeHost):
    def frame0_registers(self, thread: int | None = None) -> dict[str, int]:
        assert self.core is not None
        return {dwarf_expr.register_name(r): v for r, v in self.core.threads[0].registers.items()}

    def read_memory(self, address: int, size: int) -> bytes:
        assert self.core is not None
        return bytes(self.core.read_memory(address, size))


def _binary(f: dict[str, Any]) -> str:
    return str(ROOT / f["binary"])


def _markers(f: dict[str, Any], source: str) -> dict[str, int]:
    """Marker -> line, from the facts or (BOLT without DWARF) the source's marker comments."""
    markers: dict[str, int] | None = f.get("markers", {}).get(source)
    if markers is not None:
        return markers
    return source_markers(ROOT / "fixtures" / "src" / source)


def _fragments(f: dict[str, Any], proc: str) -> dict[str, tuple[int, int]]:
    return {x["symbol"]: (int(x["start"], 16), int(x["end"], 16))
            for x in f["split_functions"][proc]["fragments"]}


def _lines(f: dict[str, Any], proc: str) -> stepping.ProcedureLines:
    index = Session().index(_binary(f))
    return stepping.procedure_lines(index, index.procedures[proc])


@cache
def _instruction_starts(binary: str) -> frozenset[int]:
    tool = shutil.which("llvm-objdump-22")
    if tool is None:
        pytest.skip("llvm-objdump-22 not installed")
    out = subprocess.run([tool, "-d", "--no-show-raw-insn", binary], capture_output=True,
                         text=True, check=True).stdout
    return frozenset(int(m.group(1), 16) for m in re.finditer(r"^\s*([0-9a-f]+):", out, re.M))


# -- line starts ---------------------------------------------------------------------------

@pytest.mark.parametrize("variant", LINE_VARIANTS)
def test_line_starts_in_every_fragment_match_the_markers(zoo: dict[str, Any],
                                                         variant: str) -> None:
    """Each marked line of a split procedure begins somewhere in that procedure, in a fragment
    the facts say holds its code; every line start lies inside one of its fragments."""
    f = facts(zoo, variant, "crash")
    markers = _markers(f, "crash.c")
    placed = f.get("marker_fragments", {}).get("crash.c", {})
    for proc in ("main", "run", "transfer"):
        frags = _fragments(f, proc)
        lines = _lines(f, proc)
        starts = lines.line_starts()
        assert lines.has_lines and starts, proc
        for span in starts:
            assert any(lo <= span.start < hi for lo, hi in frags.values()), (proc, span)
        # The rare path's markers (the training run never took them, so they are the cold
        # code the step must find in another fragment).
        for marker in ("cold path", "cold call"):
            name = f"{proc} {marker}"
            if name not in markers:
                continue
            at = [s for s in starts if s.line == markers[name]]
            assert at, (name, [(hex(s.start), s.line) for s in starts])
            if placed.get(name):
                holders = [frags[sym] for sym in placed[name] if sym in frags]
                assert any(lo <= s.start < hi for s in at for lo, hi in holders), (name, at)
    # Lines are told apart in both fragments of transfer: its hot path and its crash site.
    spans = _lines(f, "transfer").line_starts()
    lines_started = {s.line for s in spans}
    assert {markers["transfer hot path"], markers["crash site"]} <= lines_started


@pytest.mark.parametrize("variant", BOLT_VARIANTS)
@pytest.mark.parametrize("program", ["crash", "loop", "switch"])
def test_bat_carried_lines_begin_at_instruction_starts(zoo: dict[str, Any], variant: str,
                                                       program: str) -> None:
    """BOLT output without DWARF: lines come from the pre-BOLT binary through BAT, and each one
    begins where llvm-objdump-22 decodes an instruction (never inside a re-encoded branch)."""
    f = facts(zoo, variant, program)
    binary = _binary(f)
    index = Session().index(binary)
    assert "bat" in index.sources_used and not f.get("has_debug_info")
    insns = _instruction_starts(binary)
    total = 0
    for proc in f["split_functions"]:
        if proc not in index.procedures:
            continue
        lines = stepping.procedure_lines(index, index.procedures[proc])
        bad = [hex(s.start) for s in lines.line_starts() if s.start not in insns]
        assert not bad, (proc, bad)
        total += len(lines.line_starts())
    assert total > 0  # lines were carried at all


def test_block_fallback_without_lines(zoo: dict[str, Any]) -> None:
    """clang-mfs-nodebug: no DWARF, a bb address map: a step goes by basic block and says so;
    gcc-pgo-nodebug has neither: one instruction."""
    f = facts(zoo, "clang-mfs-nodebug", "crash")
    binary = _binary(f)
    host = FakeHost([LoadedModule(binary, 0)], 0)
    session = Session()
    proc = session.index(binary).procedures["transfer"]
    frags = _fragments(f, "transfer")
    assert proc.blocks
    block = proc.blocks[0]
    plan = stepping.line_plan(session, host, "next", block.start)
    assert plan.mode == "line" and "stepped by basic block" in plan.note
    assert set(plan.targets) == {b.start for b in proc.blocks} - {block.start}
    assert plan.line_ranges == ((block.start, block.end),)
    assert all(any(lo <= t < hi for lo, hi in frags.values()) for t in plan.targets)
    # Both fragments are the procedure: a jump between them is no return.
    for lo, hi in frags.values():
        assert plan.in_procedure(lo) and plan.in_procedure(hi - 1)

    g = facts(zoo, "gcc-pgo-nodebug", "crash")
    gbinary = _binary(g)
    start = min(lo for lo, _ in _fragments(g, "transfer").values())
    gplan = stepping.line_plan(Session(), FakeHost([LoadedModule(gbinary, 0)], 0), "next",
                               start)
    assert gplan.mode == "instruction" and "stepped one instruction" in gplan.note


# -- chaining -------------------------------------------------------------------------------

def _line_start(f: dict[str, Any], proc: str, marker: str, source: str = "crash.c") -> int:
    line = _markers(f, source)[marker]
    starts = [s.start for s in _lines(f, proc).line_starts() if s.line == line]
    assert starts, marker
    return min(starts)


def test_return_goes_on_to_the_callers_next_line(zoo: dict[str, Any]) -> None:
    """`next` whose frame returns into the middle of the caller's line steps on to the caller's
    next line (a second leg); a return onto a line start stops there."""
    f = facts(zoo, "clang-mfs", "crash")
    binary = _binary(f)
    markers = _markers(f, "crash.c")
    start = _line_start(f, "transfer", "crash site")
    call = _line_start(f, "run", "run cold call")
    after = _line_start(f, "run", "run cold after call")
    mid_call_line = call + 1  # inside run's call line (the return address lies there)
    host = FakeHost([LoadedModule(binary, 0)], start,
                    outcomes=[StepOutcome("returned", mid_call_line), StepOutcome("target", after)])
    text = stepping.run(Session(), host, "next")
    first, second = host.applied
    assert first.procedure == "transfer" and second.procedure == "run"
    assert second.line == f"crash.c:{markers['run cold call']}" and after in second.targets
    assert mid_call_line not in second.targets
    assert f"at crash.c:{markers['run cold after call']}" in text, text

    host = FakeHost([LoadedModule(binary, 0)], start, outcomes=[StepOutcome("returned", after)])
    text = stepping.run(Session(), host, "next")
    assert len(host.applied) == 1, host.applied  # the return address began a line: done
    assert f"at crash.c:{markers['run cold after call']}" in text, text

    # `advance LINE` stops when the frame returns, as GDB's does.
    host = FakeHost([LoadedModule(binary, 0)], call,
                    outcomes=[StepOutcome("returned", mid_call_line)])
    walk = Walk(Session(), host, "advance", markers["run cold after call"])
    plan = walk.first()
    assert isinstance(plan, StepPlan) and after in plan.targets and not plan.step_into
    assert walk.after(StepOutcome("returned", 0x1234)) == StepOutcome("returned", 0x1234)


def test_step_into_a_callee_without_lines_runs_it_out(zoo: dict[str, Any]) -> None:
    """`step` that enters code without lines (a PLT stub, libc) finishes it and goes on with
    the line; a callee with lines is where it stops."""
    f = facts(zoo, "clang-mfs", "crash")
    binary = _binary(f)
    call = _line_start(f, "main", "main cold call")
    run_entry = _fragments(f, "run")["run"][0]
    session = Session()
    host = FakeHost([LoadedModule(binary, 0)], call)
    walk = Walk(session, host, "step")
    plan = walk.first()
    assert isinstance(plan, StepPlan) and plan.step_into
    nowhere = 0x10  # no module: no lines
    out = walk.after(StepOutcome("called", nowhere))
    assert isinstance(out, StepPlan) and out.mode == "finish"
    back = walk.after(StepOutcome("returned", call + 1))
    assert isinstance(back, StepPlan) and back.mode == "line" and back.procedure == "main"
    # A callee with lines: the step ends at its entry.
    assert walk.after(StepOutcome("called", run_entry)) == StepOutcome("called", run_entry)


def test_refusals_are_usage_errors(zoo: dict[str, Any]) -> None:
    f = facts(zoo, "clang-mfs", "crash")
    host = FakeHost([LoadedModule(_binary(f), 0)], _line_start(f, "run", "run cold call"))
    with pytest.raises(UsageError, match="unknown step kind"):
        stepping.run(Session(), host, "leap")
    with pytest.raises(AddressLookupError, match="line 1 has no code in run"):
        stepping.line_plan(Session(), host, "advance", host.pc, 1)


def test_plan_round_trips_as_json(zoo: dict[str, Any]) -> None:
    """The form LLDB's thread plan receives its leg in (SBStructuredData)."""
    import json

    f = facts(zoo, "clang-mfs", "crash")
    host = FakeHost([LoadedModule(_binary(f), 0)], _line_start(f, "run", "run cold call"))
    plan = stepping.line_plan(Session(), host, "step", host.pc)
    again = StepPlan.from_json(json.loads(json.dumps(plan.to_json())))
    assert again == plan


# -- the selected frame, through the CFI (a crash core) ------------------------------------

@pytest.mark.parametrize("variant", ["gcc-pgo", "clang-mfs-nodebug", "bolt-all"])
def test_finish_and_next_act_on_the_selected_frame(zoo: dict[str, Any], variant: str) -> None:
    """At the crash (transfer <- run <- main): `finish` with frame N selected returns to frame
    N+1's pc with SP at frame N's CFA; `next` in frame N first lets frames below it return, to
    frame N's pc. The pcs are those GDB reported when the core was made."""
    f = facts(zoo, variant, "crash")
    core_path = f["_entry"].get("core")
    assert core_path is not None, f"{variant}: the fixture build made no crash core"
    core = Core(str(ROOT / core_path))
    binary = _binary(f)
    truth = [int(x["pc"], 16) for x in f["crash"]["frames"]]
    modules = core.modules(binary)
    session = Session()
    for level in (0, 1):
        host = CoreHost(modules, truth[level], level, core)
        plan = stepping.finish_plan(session, host, "finish", truth[level], level)
        assert plan.return_address == truth[level + 1], (level, plan)
        assert plan.frame_cfa is not None
        # SP once it returned: above frame 0's own SP, and the next frame's CFA is higher still
        sp = core.threads[0].registers[dwarf_expr.RSP]
        assert plan.frame_cfa > sp
    cfa0 = stepping.finish_plan(session, CoreHost(modules, truth[0], 0, core), "finish",
                                truth[0]).frame_cfa
    cfa1 = stepping.finish_plan(session, CoreHost(modules, truth[1], 1, core), "finish",
                                truth[1], 1).frame_cfa
    assert cfa0 is not None and cfa1 is not None and cfa1 > cfa0
    # `next` with frame 1 selected: frame 0 returns first, to frame 1's pc, SP at its CFA.
    host = CoreHost(modules, truth[1], 1, core)
    up = Walk(session, host, "next").first()
    assert (up.mode, up.return_address, up.frame_cfa) == ("finish", truth[1], cfa0)
    # A pc that is no frame of this stack cannot be finished from the CFI.
    with pytest.raises(AddressLookupError, match="does not unwind to frame #1"):
        stepping.finish_plan(session, CoreHost(modules, 0x10, 1, core), "finish", 0x10, 1)


def test_finish_without_registers_leaves_the_return_to_the_adapter(zoo: dict[str, Any]) -> None:
    f = facts(zoo, "clang-mfs", "crash")
    host = FakeHost([LoadedModule(_binary(f), 0)], _line_start(f, "run", "run cold call"))
    plan = stepping.finish_plan(Session(), host, "finish", host.pc)
    assert plan.return_address is None and plan.frame_cfa is None and plan.procedure == "run"


@pytest.mark.parametrize("variant", ["gcc-pgo", "clang-mfs-nodebug", "bolt-all", "bolt-profile2"])
def test_line_plan_names_the_stepping_frame_by_its_cfa(zoo: dict[str, Any], variant: str) -> None:
    """A line plan at the crash (transfer's cold code) carries frame 0's CFA and return address
    from the CFI, and CFA rules over every fragment of transfer, so an adapter recognises the
    frame at any target without the debugger's unwinder. Oracles: the pc GDB gave frame 1 when
    the core was made, and the core's memory (the return address lies just below the CFA)."""
    f = facts(zoo, variant, "crash")
    core = Core(str(ROOT / f["_entry"]["core"]))
    truth = [int(x["pc"], 16) for x in f["crash"]["frames"]]
    host = CoreHost(core.modules(_binary(f)), truth[0], 0, core)
    plan = stepping.line_plan(Session(), host, "next", truth[0])
    assert plan.procedure == "transfer" and plan.return_address == truth[1], plan
    assert plan.frame_cfa is not None
    assert int.from_bytes(core.read_memory(plan.frame_cfa - 8, 8), "little") == truth[1]
    registers = {dwarf_expr.register_name(r).lower(): v
                 for r, v in core.threads[0].registers.items()}
    assert plan.is_stepping_frame(truth[0], registers.__getitem__) is True
    deeper = dict(registers, rsp=registers["rsp"] - 64, rbp=registers["rbp"] - 64)
    assert plan.is_stepping_frame(truth[0], deeper.__getitem__) is False
    # The rules lie in transfer's fragments (facts) and cover every target.
    bias = next(m.bias for m in host.modules() if m.path == _binary(f))
    frags = [(bias + lo, bias + hi) for lo, hi in _fragments(f, "transfer").values()]
    assert plan.cfa_rules
    for lo, hi, _, _ in plan.cfa_rules:
        assert any(a <= lo and hi <= b for a, b in frags), (hex(lo), hex(hi))
    for target in plan.targets:
        assert any(lo <= target < hi for lo, hi, _, _ in plan.cfa_rules), hex(target)
    # Nowhere in transfer, the plan cannot tell: the adapter's own check applies.
    assert plan.is_stepping_frame(0x10, registers.__getitem__) is None
    without = stepping.line_plan(Session(), FakeHost(host.modules(), truth[0]), "next",
                                 truth[0])
    assert without.frame_cfa is None
    assert without.is_stepping_frame(truth[0], registers.__getitem__) is None


def test_same_named_statics_keep_their_own_lines_and_cfa_rules(zoo: dict[str, Any]) -> None:
    """Four units' static `helper`, each split by BOLT: the per-procedure caches of stepping
    are keyed by entry too, so each gets CFA rules and line spans inside its own fragments
    (fragment ranges from the fixture facts, per unit)."""
    f = facts(zoo, "bolt-statics", "statics")
    index = Session().index(str(ROOT / f["binary"]))
    units = [v["fragments"] for k, v in f["split_functions"].items()
             if k.startswith("_ZL6helperii@")]
    assert len(units) == 4
    for fragments in units:
        ranges = [(int(x["start"], 16), int(x["end"], 16)) for x in fragments]
        proc = index.procedure_at(ranges[0][0])
        assert proc is not None and proc.entry == ranges[0][0]
        rules = stepping.cfa_rules(index, proc)
        assert rules
        assert all(any(lo <= a and b <= hi for lo, hi in ranges) for a, b, _, _ in rules)
        spans = stepping.procedure_lines(index, proc).spans
        assert all(any(lo <= s.start and s.end <= hi for lo, hi in ranges) for s in spans)
