"""Stepping across moved code: the policy of `bb next`, `step`, `finish`, `until`, `advance` and
`stepi`. A line step treats the logical procedure as one piece of code and runs until its frame
(known by its CFA, from the CFI, not the debugger's unwinder) reaches the start of another line
in any fragment, or returns. :class:`StepPlan` is what an adapter applies once,
:class:`StepOutcome` how it ended, :class:`Walk` chains plans and :func:`run` drives it.
Lines come from ModuleIndex.line_at; without lines a step goes by basic block, else by
instruction."""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, fields
from itertools import groupby
from operator import attrgetter
from typing import Any

from unsplit.debug import cfi, unwind
from unsplit.debug.stepping_host import SteppingHost
from unsplit.elf import cfi_table
from unsplit.elf.binary import Binary
from unsplit.elf.derived import PerFile, PerInput
from unsplit.elf.line_row import LineRow
from unsplit.errors import AddressLookupError, UnsplitError, UsageError
from unsplit.formats import dwarf_expr
from unsplit.host import Host, LoadedModule, MachineState, NativeFrames, SelectedFrame
from unsplit.index.inlines import DwarfFrames, module_frames
from unsplit.index.line_table import ProcedureLines, Span
from unsplit.index.model.records import LineInfo, Location, Procedure
from unsplit.index.module_index import ModuleIndex
from unsplit.index.names.demangle import demangle
from unsplit.index.session_view import SessionView
from unsplit.render.stop import verbose_line

LINE_KINDS = ("next", "step", "until")
KINDS = ("next", "step", "finish", "until", "advance", "stepi")
MAX_LEGS = 256  # plans chained by one command (returns, calls stepped into or out of)
_MAX_ADDRESS = (1 << 64) - 1

# What Host.cannot_run() answers, so both debuggers say the same words.
CORE_FILE = "cannot step in a core file: there is no live process"
NOT_RUNNING = "the program is not being run"


@dataclass(frozen=True, slots=True)
class StepPlan:
    """What an adapter applies once (runtime addresses throughout).

    mode "line": run until the stepping frame (the newest one when the plan is applied) reaches
      one of `targets` (a frame check keeps recursion apart), or returns; with `step_into`, also
      stop at the first instruction of a function called from `call_ranges`.
    mode "finish": run until the stepping frame returns. mode "instruction": one instruction.
    mode "enter": the debugger's own step into an inlined call it hides at `pc`, if any.
    """

    kind: str  # the user's command: next, step, finish, until, advance, stepi
    mode: str  # line, finish, instruction, enter
    pc: int
    procedure: str | None = None
    ranges: tuple[tuple[int, int], ...] = ()  # the logical procedure: every fragment
    line_ranges: tuple[tuple[int, int], ...] = ()  # the code of the current line
    call_ranges: tuple[tuple[int, int], ...] = ()  # where a call is stepped into (step)
    targets: tuple[int, ...] = ()
    step_into: bool = False
    line: str | None = None  # "crash.c:29" for messages
    note: str = ""  # said to the user: how this step had to be made
    at_line_start: bool = False  # `pc` begins a line of the procedure, or a statement row
    # From the CFI (unsplit.debug.unwind), when known: where the stepping frame returns to and its
    # CFA, which is the SP once it has returned (x86-64). A plan with these runs to
    # `return_address` until SP is back at `frame_cfa`, without the debugger's own unwinding;
    # a line plan's targets count where the newest frame's CFA is `frame_cfa`.
    return_address: int | None = None
    frame_cfa: int | None = None
    # (start, end, register, offset), runtime addresses, sorted: in [start, end) of the
    # procedure's code the CFA is `register` + `offset` (the CFI rows that name a register).
    cfa_rules: tuple[tuple[int, int, str, int], ...] = ()

    def to_json(self) -> dict[str, object]:
        """The plan as JSON values (LLDB passes it to its thread plan as SBStructuredData)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StepPlan:
        def pairs(v: Any) -> tuple[tuple[int, int], ...]:
            return tuple((int(lo), int(hi)) for lo, hi in v or ())

        return cls(str(data["kind"]), str(data["mode"]), int(data["pc"]),
                   procedure=data.get("procedure"), ranges=pairs(data.get("ranges")),
                   line_ranges=pairs(data.get("line_ranges")),
                   call_ranges=pairs(data.get("call_ranges")),
                   targets=tuple(int(t) for t in data.get("targets") or ()),
                   step_into=bool(data.get("step_into")), line=data.get("line"),
                   note=str(data.get("note") or ""),
                   at_line_start=bool(data.get("at_line_start")),
                   return_address=_int_or_none(data.get("return_address")),
                   frame_cfa=_int_or_none(data.get("frame_cfa")),
                   cfa_rules=tuple((int(lo), int(hi), str(reg), int(off))
                                   for lo, hi, reg, off in data.get("cfa_rules") or ()))

    def in_procedure(self, address: int) -> bool:
        return any(lo <= address < hi for lo, hi in self.ranges)

    def is_target(self, address: int) -> bool:
        return address in self.targets

    def is_stepping_frame(self, address: int, register: Callable[[str], int]) -> bool | None:
        """Whether the newest frame, stopped at `address` with registers `register(name)`
        (`rsp`, `rbp`…), is the stepping frame: its CFA is `frame_cfa`. None when the plan
        cannot tell (no CFA of the stepping frame, or no register rule at `address`)."""
        if self.frame_cfa is None:
            return None
        i = bisect_right(self.cfa_rules, (address, _MAX_ADDRESS)) - 1
        if i < 0 or not self.cfa_rules[i][0] <= address < self.cfa_rules[i][1]:
            return None
        _, _, name, offset = self.cfa_rules[i]
        return (register(name) + offset) & _MAX_ADDRESS == self.frame_cfa


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """How an adapter's application of a plan ended.

    target:   the stepping frame reached a target
    returned: the stepping frame returned (pc is in its caller)
    called:   `step_into`: the first instruction of a callee (pc)
    stopped:  something else stopped the program (breakpoint, signal, exit): `message` says what
    done:     an instruction plan executed its instruction
    """

    kind: str
    pc: int | None = None
    message: str = ""


# -- the lines of a procedure ---------------------------------------------------------------

def procedure_lines(index: ModuleIndex, proc: Procedure) -> ProcedureLines:
    """The line spans of `proc` in `index` (the module's LineTable), code of line 0 counted
    with the line before it (_through_line_zero)."""
    key = (proc.name, proc.entry)
    per_input = _STEP_LINES(index.binary, index.input_binary(), dict)
    found = per_input.get(key)
    if found is None:
        found = per_input[key] = _through_line_zero(index.line_table.procedure_lines(proc))
    return found


# (name, entry) -> a procedure's spans as steps see them, for the module's pre-BOLT input
_STEP_LINES: PerInput[dict[tuple[str, int], ProcedureLines]] = PerInput()


def _through_line_zero(lines: ProcedureLines) -> ProcedureLines:
    """`lines` with each span of no line (line-0 rows: compiler-made code, common in optimized
    C++) joined to the span before it in the same fragment, as both debuggers step: GDB drops
    line-0 rows as it reads the line table, LLDB's step goes on through a line-0 range as part
    of the line it steps. A fragment that begins with such code keeps it lineless."""
    firsts = {f.start for f in lines.procedure.fragments}
    spans: list[Span] = []
    for span in lines.spans:
        if span.key is None and spans and spans[-1].end == span.start \
                and span.start not in firsts and spans[-1].key is not None:
            last = spans[-1]
            spans[-1] = Span(last.start, span.end, last.file, last.line, last.starts_line)
        else:
            spans.append(span)
    return ProcedureLines(lines.procedure, spans, lines.has_lines)


# (name, entry) -> a procedure's own lines, for the module's pre-BOLT input (kept on the
# module's Binary; `bb input` changes the input)
_OWN_LINES: PerInput[dict[tuple[str, int], ProcedureLines]] = PerInput()


def own_lines(index: ModuleIndex, proc: Procedure) -> ProcedureLines:
    """The line spans of `proc` as its own lines: code inlined into it belongs to the line of
    the call (DW_AT_call_line of the outermost inlined block), as `next` and `until` see it in
    both debuggers (GDB's infrun steps through an inlined call made on the line being stepped;
    LLDB's step-over does too). An inlined call on another line begins that line, where its
    block begins. Without DWARF inline information, the spans of procedure_lines."""
    base = procedure_lines(index, proc)
    key = (proc.name, proc.entry)
    per_input = _OWN_LINES(index.binary, index.input_binary(), dict)
    found = per_input.get(key)
    if found is None:
        rows = sorted({r.address for f in proc.fragments
                       for r in index.line_table.rows_in(f.start, f.end)})
        found = per_input[key] = _outer_spans(base, module_frames(index), rows)
    return found


def _pieces(spans: list[Span], rows: list[int]) -> list[Span]:
    """`spans` cut at every row address inside them: one span of a line may run through
    several inlined calls (GCC: the same line of the same inlined function, called twice on
    different lines), each of which its call's line owns."""
    out: list[Span] = []
    for span in spans:
        start, first = span.start, True
        for address in rows[bisect_right(rows, span.start):bisect_right(rows, span.end - 1)]:
            out.append(Span(start, address, span.file, span.line, span.starts_line and first))
            start, first = address, False
        out.append(Span(start, span.end, span.file, span.line, span.starts_line and first))
    return out


def _outer_spans(base: ProcedureLines, frames: DwarfFrames,
                 rows: list[int] | None = None) -> ProcedureLines:
    spans: list[Span] = []
    previous: tuple[str, int] | None = None
    for span in _pieces(base.spans, rows or []):
        chain = frames.frames(span.start) if span.key is not None else []
        if len(chain) > 1 and chain[-1].line:
            outer = chain[-1]
            name = os.path.basename(outer.path) if outer.path else span.file
            # An inlined call begins its line (GDB stops there: at the call site) only where
            # its block begins, coming from code of another line.
            starts = (name, outer.line) != previous
            span = Span(span.start, span.end, name, outer.line, starts)
        else:
            at_fragment_start = not spans or spans[-1].end != span.start
            starts = span.starts_line and (at_fragment_start or span.key != previous)
            span = Span(span.start, span.end, span.file, span.line, starts)
        if spans and spans[-1].end == span.start and spans[-1].key == span.key \
                and not span.starts_line:
            last = spans[-1]
            spans[-1] = Span(last.start, span.end, last.file, last.line, last.starts_line)
        else:
            spans.append(span)
        previous = span.key
    return ProcedureLines(base.procedure, spans, base.has_lines)


# (name, entry, own lines) -> a procedure's spans as GDB's steps see them (statement_lines)
_STATEMENT_LINES: PerInput[dict[tuple[str, int, bool], ProcedureLines]] = PerInput()


def statement_lines(index: ModuleIndex, proc: Procedure, lines: ProcedureLines,
                    own: bool) -> ProcedureLines:
    """`lines` (of `proc`: its own lines if `own`) as a debugger whose steps stop only where
    a statement row begins sees them (GDB's infrun): in the entry fragment, a line none of
    whose rows is a statement begins no stop (GCC writes such a row for a closing brace).
    Code the compiler moved keeps it: there it marks the first rows of split code so. Code
    BOLT moved, whose rows are the pre-BOLT input's (the module has no DWARF of its own), is
    stepped as GDB steps the input: in every fragment."""
    key = (proc.name, proc.entry, own)
    per_input = _STATEMENT_LINES(index.binary, index.input_binary(), dict)
    found = per_input.get(key)
    if found is None:
        entry = proc.fragments[0] if proc.fragments else None
        everywhere = not index.line_table.dwarf.available
        spans = [s._replace(starts_line=False) if s.starts_line and entry is not None
                 and (everywhere or entry.start <= s.start < entry.end)
                 and not _statement_at(index, s.start) else s for s in lines.spans]
        spans = _named_by_statements(index, spans, own)
        found = per_input[key] = ProcedureLines(lines.procedure, spans, lines.has_lines)
    return found


def statement_row(index: ModuleIndex, file_address: int) -> LineRow | None:
    """The row GDB names `file_address` by where the module's own DWARF has several rows
    there, the last no statement and an earlier one a statement (GCC): the last statement row
    (GDB's find_pc_line looks back over the rows at one address for a statement); None where
    the last row names it, as everywhere else."""
    return _statement_row_of(index.line_table.dwarf.rows_in(file_address, file_address + 1))


def _statement_row_of(rows: list[LineRow]) -> LineRow | None:
    """statement_row of the `rows` at one address."""
    if len(rows) < 2 or rows[-1].is_stmt:
        return None
    named = [r for r in rows if r.is_stmt and r.line]
    return named[-1] if named else None


def _named_by_statements(index: ModuleIndex, spans: list[Span], own: bool) -> list[Span]:
    """`spans` cut where GDB names an address by an earlier statement row (statement_row),
    each piece from there given that row's line, a stop there unless the code before it is
    of the same line (GDB steps on through a line, stopping where a statement of another
    begins). A span named by an inlined call's line (own_lines) keeps it, and so does, in
    `own` spans, code inlined there (GDB's next goes by the call's line)."""
    dwarf = index.line_table.dwarf
    frames = module_frames(index) if own else None
    out: list[Span] = []
    for span in spans:
        rows = dwarf.rows_in(span.start, span.end) if span.key is not None else []
        named: dict[int, LineRow] = {}
        for address, group in groupby(rows, key=attrgetter("address")):  # (address order)
            at = list(group)
            row = _statement_row_of(at)
            if row is not None and span.key == (at[-1].file, at[-1].line) \
                    and (frames is None or len(frames.frames(address)) < 2):
                named[address] = row
        if not named:
            out.append(span)
            continue
        cuts = sorted({span.start, *named})
        for k, start in enumerate(cuts):
            end = cuts[k + 1] if k + 1 < len(cuts) else span.end
            row = named.get(start)
            if row is None:
                out.append(Span(start, end, span.file, span.line,
                                span.starts_line and start == span.start))
                continue
            before = out[-1] if out and out[-1].end == start else None
            starts = before is None or before.key != (row.file, row.line)
            out.append(Span(start, end, row.file, row.line, starts))
    return out


def _no_rules(binary: Binary) -> dict[tuple[str, int], list[tuple[int, int, str, int]]]:
    return {}


# (name, entry) -> CFA rules of a procedure, per file (kept on its Binary)
_CFA_RULES = PerFile(_no_rules)


def cfa_rules(index: ModuleIndex, proc: Procedure) -> list[tuple[int, int, str, int]]:
    """(start, end, register, offset), file addresses: where in `proc`'s fragments the CFI
    gives the CFA as a register plus an offset (cached per index). Code whose CFA is an
    expression, or that no FDE covers, has no rule."""
    per_index = _CFA_RULES(index.binary)
    key = (proc.name, proc.entry)
    found = per_index.get(key)
    if found is None:
        found = per_index[key] = sorted(
            rule for frag in proc.fragments for rule in _fragment_cfa_rules(
                cfi_table.table_for(index.binary), frag.start, frag.end))
    return found


def _fragment_cfa_rules(table: cfi_table.CfiTable, start: int,
                        end: int) -> list[tuple[int, int, str, int]]:
    out: list[tuple[int, int, str, int]] = []
    address = start
    while address < end:
        try:
            fde = table.fde_at(address)
        except UnsplitError:
            return out  # damaged CFI: no rules here, the adapter's own check applies
        if fde is None or fde.end <= address:
            return out
        stop = min(fde.end, end)
        rows = fde.rows
        for k, row in enumerate(rows):
            lo = max(row.address, address)
            hi = min(rows[k + 1].address if k + 1 < len(rows) else fde.end, stop)
            if lo < hi and row.cfa.register is not None:
                out.append((lo, hi, dwarf_expr.register_name(row.cfa.register).lower(),
                            row.cfa.offset))
        address = stop
    return out


# -- plans -----------------------------------------------------------------------------------

def _where(session: SessionView, host: Host, pc: int) -> tuple[LoadedModule, ModuleIndex,
                                                             Procedure] | None:
    found = session.module_of(host, pc)
    if found is None:
        return None
    mod, index = found
    proc = index.procedure_at(pc - mod.bias)
    return None if proc is None else (mod, index, proc)


def _runtime(bias: int, ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and merged[-1][1] == lo:
            merged[-1] = (merged[-1][0], hi)
        else:
            merged.append((lo, hi))
    return tuple((bias + lo, bias + hi) for lo, hi in merged)


def line_plan(session: SessionView, host: Host, kind: str, pc: int,
              line: int | None = None, no_line: bool = False) -> StepPlan:
    """The plan of a line step (next, step, until) from `pc`, or of `until/advance LINE`;
    with `no_line`, as if `pc` were of no line: any line's start ends it."""
    found = _where(session, host, pc)
    if found is None:
        if line is not None:
            raise AddressLookupError(f"bb {kind}: {pc:#x} is in no known procedure")
        return StepPlan(kind, "instruction", pc,
                        note=f"{pc:#x} is in no known procedure: stepped one instruction")
    mod, index, proc = found
    # `next` and `until` step over inlined calls as over calls; `step` enters them, and a
    # line asked for by number may be an inlined function's.
    own = not (kind == "step" or line is not None)
    lines = own_lines(index, proc) if own else procedure_lines(index, proc)
    if isinstance(host, SteppingHost) and host.statements_only():
        lines = statement_lines(index, proc, lines, own)
    file_pc = pc - mod.bias
    here = lines.span_at(file_pc)
    ranges = _runtime(mod.bias, [(f.start, f.end) for f in proc.fragments])
    common = {"pc": pc, "procedure": proc.name, "ranges": ranges, "step_into": kind == "step",
              **_frame_identity(host, pc, mod.bias, index, proc)}
    if line is not None:
        return _to_line_plan(kind, lines, mod.bias, line, here, common)
    if not lines.has_lines:
        return _block_plan(kind, proc, mod.bias, file_pc, common)
    key = here.key if here is not None and not no_line else None
    current = [(s.start, s.end) for s in lines.spans if s.key == key] if key else []
    targets = [s.start for s in lines.line_starts()
               if s.key != key and (key is not None or s.start != file_pc)]
    if kind == "step" and isinstance(host, SteppingHost) and host.statements_only():
        # GDB's step stops where an inlined call begins that is made on another line than
        # the one the code stepped from is part of (at the call's line: infrun's "stepped
        # into inlined function"), even inside a line of the same inlined function.
        outer = own_lines(index, proc).span_at(file_pc)
        made_on = None if outer is None or outer.key is None else \
            (os.path.basename(outer.key[0]), outer.key[1])
        targets += [a for a, call in _inlined_call_starts(index, proc)
                    if a != file_pc and call != made_on]
    if kind == "until":
        # `until` never stops at a line that lies before this one (the loop's jump back).
        offset = proc.logical_offset(file_pc) or 0
        targets = [t for t in targets if (proc.logical_offset(t) or 0) > offset] or targets
    # `step` enters any call made before the next line begins, wherever the code runs.
    return StepPlan(kind, "line", line_ranges=_runtime(mod.bias, current),
                    call_ranges=ranges,
                    targets=tuple(sorted(mod.bias + t for t in targets)),
                    line=None if key is None else f"{key[0]}:{key[1]}",
                    at_line_start=(here is not None and here.starts_line
                                   and here.start == file_pc) or _statement_at(index, file_pc),
                    **common)  # type: ignore[arg-type]


def _other_row_begins(session: SessionView, host: Host, pc: int, line: str | None) -> bool:
    """Whether a row of the module's own DWARF begins at `pc` whose line is not `line`
    ("file:N", the line stepped)."""
    found = session.module_of(host, pc)
    if found is None:
        return False
    rows = found[1].line_table.dwarf.rows_in(pc - found[0].bias, pc - found[0].bias + 1)
    return bool(rows) and rows[-1].line != 0 and f"{rows[-1].file}:{rows[-1].line}" != line


def _statement_at(index: ModuleIndex, file_pc: int) -> bool:
    """Whether a statement row of a line begins at `file_pc`: where GDB's step that returns
    into a caller stops (infrun: the start of a statement of another line than the callee's),
    and LLDB's too (its step-over stops wherever a step out of the callee lands)."""
    return any(r.address == file_pc and r.is_stmt and r.line
               for r in index.line_table.rows_in(file_pc, file_pc + 1))


def _frame_identity(host: Host, pc: int, bias: int, index: ModuleIndex,
                    proc: Procedure) -> dict[str, object]:
    """The stepping frame (frame 0, at `pc`) as the CFI knows it: its return address and CFA,
    and the CFA rules that find it again from any of its procedure's code. One CFI step of
    frame 0, not a backtrace (which also names every frame: ten times slower)."""
    if not isinstance(host, MachineState):
        return {}
    read_memory = host.read_memory
    try:
        regs = dwarf_expr.registers_from_names(host.frame0_registers())
        if regs.get(dwarf_expr.RIP) != pc:
            return {}
        found = cfi.step(index.binary, pc - bias, bias, regs, read_memory, True)
    except UnsplitError:
        return {}
    if found is None or found.caller is None or dwarf_expr.RIP not in found.caller:
        return {}
    rules = tuple((bias + lo, bias + hi, reg, off) for lo, hi, reg, off
                  in cfa_rules(index, proc))
    return {"return_address": found.caller[dwarf_expr.RIP], "frame_cfa": found.cfa,
            "cfa_rules": rules}


def _to_line_plan(kind: str, lines: ProcedureLines, bias: int, line: int, here: Span | None,
                  common: dict[str, object]) -> StepPlan:
    file = here.file if here is not None and here.file else None
    starts = [s for s in lines.spans if s.line == line and (file is None or s.file == file)]
    starts = [s for s in starts if s.starts_line] or starts[:1]
    if not starts:
        name = demangle(lines.procedure.name)
        raise AddressLookupError(f"bb {kind}: line {line} has no code in {name}"
                                 + ("" if lines.has_lines else " (no line information)"))
    where = f"{starts[0].file}:{line}"
    return StepPlan(kind, "line", targets=tuple(sorted(bias + s.start for s in starts)),
                    line=where, **{**common, "step_into": False})  # type: ignore[arg-type]


def _block_plan(kind: str, proc: Procedure, bias: int, file_pc: int,
                common: dict[str, object]) -> StepPlan:
    if not proc.blocks:
        return StepPlan(kind, "instruction", file_pc + bias, procedure=proc.name,
                        note=f"no line or block information for {demangle(proc.name)}: "
                             "stepped one instruction")
    block = proc.block_at(file_pc)
    targets = [b.start for b in proc.blocks if block is None or b.start != block.start]
    current = [] if block is None else [(block.start, block.end)]
    return StepPlan(kind, "line", line_ranges=_runtime(bias, current),
                    call_ranges=_runtime(bias, current),
                    targets=tuple(sorted(bias + t for t in targets)),
                    note=f"no line information for {demangle(proc.name)}: stepped by basic block",
                    **common)  # type: ignore[arg-type]


def finish_plan(session: SessionView, host: Host, kind: str, pc: int, level: int = 0) -> StepPlan:
    """Run until the frame at `pc` returns: the selected frame, number `level` as the debugger
    counts (0 for a callee stepped into). Where it returns to and its CFA come from the CFI
    when it covers the frame (the debugger's own unwinder may invent a frame in moved code);
    without CFI an adapter returns by its own means, which only frame 0 can do."""
    found = _where(session, host, pc)
    name = found[2].name if found else None
    ranges = _runtime(found[0].bias, [(f.start, f.end) for f in found[2].fragments]) \
        if found else ()
    back = return_of(session, host, pc, level)
    if back is None and level > 0:
        raise AddressLookupError(f"bb {kind}: the call frame information does not unwind to "
                                 f"frame #{level} ({pc:#x}): select frame 0")
    return StepPlan(kind, "finish", pc, procedure=name, ranges=ranges,
                    return_address=None if back is None else back[0],
                    frame_cfa=None if back is None else back[1])


def inlined_finish_plan(session: SessionView, host: Host, kind: str, pc: int, depth: int,
                        lookup: int | None = None) -> StepPlan | None:
    """`finish` from the call inlined `depth` calls deep (0: the innermost) at `pc` in the
    newest physical frame: run until that frame reaches code of the caller, as both debuggers'
    own `finish`/`thread step-out` from an inlined frame do (GDB steps in the calling frame
    with an empty range, over calls and through code inlined there): a statement row of the
    caller's own code, or the start of an inlined call made by the caller (GDB shows the
    caller there, at the call's line), this call's own block entered again included.
    `lookup` is the address whose inline chain names the call (a return address's
    instruction before it). None when no inline chain has that call (the debugger's frame is
    then finished as a physical one)."""
    found = _where(session, host, pc)
    if found is None:
        return None
    mod, index, proc = found
    frames = module_frames(index)
    file_pc = (pc if lookup is None else lookup) - mod.bias
    chain = frames.frames(file_pc)
    if depth >= len(chain) - 1:
        return None
    outer = _call_identity(chain[depth + 1:])
    caller_depth = len(chain) - depth - 1
    targets: list[int] = []
    for frag in proc.fragments:
        points: dict[int, bool] = {}
        for r in index.line_table.rows_in(frag.start, frag.end):
            points[r.address] = points.get(r.address, False) or (r.is_stmt and r.line != 0)
        previous: tuple[object, ...] | None = None  # the caller-level call the code before is in
        for address in sorted(points):
            here = frames.frames(address)
            inner = _call_identity(here[-caller_depth - 1:]) \
                if len(here) > caller_depth and _call_identity(here[-caller_depth:]) == outer \
                else None
            if inner is not None and inner != previous and address != pc - mod.bias:
                targets.append(address)  # an inlined call (this one again too) begins here
            elif inner is None and points[address] and address != pc - mod.bias:
                targets.append(address)  # a statement of the caller's own code
            previous = inner
    ranges = _runtime(mod.bias, [(f.start, f.end) for f in proc.fragments])
    return StepPlan(kind, "line", pc, procedure=proc.name, ranges=ranges,
                    targets=tuple(sorted(mod.bias + t for t in targets)),
                    **_frame_identity(host, pc, mod.bias, index, proc))  # type: ignore[arg-type]


# (name, entry) -> where inlined calls begin in a procedure, with the line each is made on
_CALL_STARTS: PerInput[dict[tuple[str, int], list[tuple[int, tuple[str, int]]]]] = PerInput()


def _inlined_call_starts(index: ModuleIndex, proc: Procedure
                         ) -> list[tuple[int, tuple[str, int]]]:
    """(file address, (file name, line) of the call) where an inlined call begins in `proc`
    (code that the code just before it is not in), for the outermost call begun there."""
    key = (proc.name, proc.entry)
    per_input = _CALL_STARTS(index.binary, index.input_binary(), dict)
    found = per_input.get(key)
    if found is None:
        frames = module_frames(index)
        found = []
        for frag in proc.fragments:
            for address in sorted({r.address for r in index.line_table.rows_in(frag.start,
                                                                               frag.end)}):
                call = _new_call(frames.frames(address), frames.frames(address - 1))
                if call is not None:
                    found.append((address, call))
        per_input[key] = found
    return found


def _new_call(chain: list[LineInfo], before: list[LineInfo]) -> tuple[str, int] | None:
    """(file name, line) of the outermost inlined call of `chain` (an address's frames) that
    `before` (the frames of the address before it) is not in; None when there is none."""
    for k in range(len(chain) - 2, -1, -1):
        depth = len(chain) - k  # frames from the procedure's own down to this call
        if len(before) < depth or \
                _call_identity(chain[k:]) != _call_identity(before[len(before) - depth:]):
            caller = chain[k + 1]
            return None if caller.path is None else (os.path.basename(caller.path),
                                                     caller.line)
    return None


def _inlined_call_of_line(session: SessionView, host: Host, pc: int, line: str) -> bool:
    """Whether an inlined call begins at `pc` (the debuggers show its caller there) that is
    made on `line` ("file:N", the line a step ran through) of the function around it."""
    found = _where(session, host, pc)
    if found is None:
        return False
    mod, index, _ = found
    frames = module_frames(index)
    call = _new_call(frames.frames(pc - mod.bias), frames.frames(pc - mod.bias - 1))
    file, _, number = line.rpartition(":")
    return call is not None and call == (os.path.basename(file), int(number))


def _call_identity(chain: list[LineInfo]) -> tuple[object, ...]:
    """A call as an inline chain names it, innermost first: the function called, then each
    frame out with the place of the call in it."""
    if not chain:
        return ()
    return (chain[0].function, *((f.function, f.path, f.line, f.column) for f in chain[1:]))


def selected_inlined_call(host: Host, level: int) -> tuple[int, int, int] | None:
    """(physical frame number, its pc, depth of the call: 0 for the innermost) when the
    debugger's selected frame `level` is the frame of an inlined call; None otherwise (or
    when the debugger does not say which of its frames are inlined calls)."""
    if not isinstance(host, NativeFrames):
        return None
    for k, (first, count) in enumerate(host.native_frame_numbers()):
        if first <= level < first + count:
            if level == first + count - 1:
                return None
            pcs = host.native_frame_pcs()
            return (k, pcs[k], level - first) if k < len(pcs) else None
    return None


def up_plan(session: SessionView, host: Host, kind: str, pc: int, level: int) -> StepPlan:
    """Run until the frames below the selected one (`pc`, the debugger's frame `level` > 0)
    have returned: to `pc`, with SP at the CFA of the frame below it."""
    back = return_of(session, host, pc, level, below=True)
    if back is None:
        raise AddressLookupError(f"bb {kind}: the call frame information does not unwind to "
                                 f"frame #{level} ({pc:#x}): select frame 0")
    return StepPlan(kind, "finish", pc, return_address=back[0], frame_cfa=back[1])


def return_of(session: SessionView, host: Host, pc: int, level: int,
              below: bool = False) -> tuple[int, int] | None:
    """(return address, CFA) of the frame at `pc`, the debugger's frame `level`, unwound from
    frame 0 with the CFI; with `below`, those of the frame it called. None without registers,
    memory or CFI for it. The frame is found by its pc, the match nearest `level` (recursion
    repeats a pc; LLDB may count a frame it invented)."""
    if not isinstance(host, MachineState):
        return None
    try:
        frames = unwind.backtrace(host.modules(),
                                  dwarf_expr.registers_from_names(host.frame0_registers()),
                                  host.read_memory, session.index, limit=level + 3)
    except UnsplitError:
        return None
    matches = [k for k, f in enumerate(frames) if f.pc == pc and (k > 0 or not below)
               and (below or (f.cfa is not None and k + 1 < len(frames)))]
    if not matches:
        return None
    k = min(matches, key=lambda m: (abs(m - level), m))
    if below:
        cfa = frames[k - 1].cfa
        return None if cfa is None else (frames[k].pc, cfa)
    cfa = frames[k].cfa
    return None if cfa is None else (frames[k + 1].pc, cfa)


def procedure_has_lines(session: SessionView, host: Host, pc: int) -> bool:
    """Whether `pc` is in a procedure with line information (the return address itself may
    be in code of line 0)."""
    found = _where(session, host, pc)
    return found is not None and procedure_lines(found[1], found[2]).has_lines


def has_lines(session: SessionView, host: Host, pc: int) -> bool:
    found = session.module_of(host, pc)
    return found is not None and found[1].line_at(pc - found[0].bias) is not None


Apply = Callable[[StepPlan], StepOutcome]
"""Host.step_logical: apply one plan, say how it ended."""


# -- one command ---------------------------------------------------------------------------

class Walk:
    """The plans of one step command, leg by leg: :meth:`first`, then :meth:`after` each
    outcome, which gives the next plan or the final outcome. `bb` commands drive it with
    Host.step_logical (:func:`run`); LLDB's thread plan drives it itself when run by hand.

    A leg's purpose says what its "returned"/"called" outcome means: "line" (the stepping frame
    returned: go on to the caller's next line; or stepped into a callee), "callee" (a callee
    without lines ran to its return: go on with the line), "up" (the frames below the selected
    one returned: step from there), "done" (finish and stepi end with their leg).
    """

    def __init__(self, session: SessionView, host: Host, kind: str, line: int | None = None,
                 level: int | None = None) -> None:
        if kind not in KINDS:
            raise UsageError(f"unknown step kind {kind!r}")
        self.session, self.host, self.kind, self.line = session, host, kind, line
        self.level = level
        self.notes: list[str] = []
        self.legs = 0
        self.purpose = "line"
        self.plan: StepPlan | None = None  # the last leg's
        self.inline_depth = 0  # finish: the depth of the inlined call selected (leg "up")
        self.inlined_finish = False  # finish out of an inlined call: it stops in the caller

    def first(self) -> StepPlan:
        """The first leg, from the selected frame (frame 0 unless `level` says otherwise)."""
        host, kind = self.host, self.kind
        pc = host.selected_pc()
        level = self.level
        if level is None:
            level = host.selected_frame_level() if isinstance(host, SelectedFrame) else 0
        if kind == "stepi":
            return self._leg("done", StepPlan(kind, "instruction", pc))
        if kind == "finish":
            inlined = selected_inlined_call(host, level)
            self.inlined_finish = inlined is not None
            if inlined is not None:
                frame, physical_pc, depth = inlined
                if frame == 0:
                    plan = inlined_finish_plan(self.session, host, kind, physical_pc, depth)
                    if plan is not None:
                        return self._leg("done", plan)
                else:
                    # The frames below the inlined call's physical frame return first.
                    self.inline_depth = depth
                    return self._leg("up", up_plan(self.session, host, kind, physical_pc,
                                                   frame))
            return self._leg("done", finish_plan(self.session, host, kind, pc, level))
        if level > 0:
            # Frames below the selected one return first (to the selected frame's pc, SP at
            # the CFA of the frame below it); the step goes on from there in the selected frame.
            return self._leg("up", up_plan(self.session, host, kind, pc, level))
        return self._leg("line", line_plan(self.session, host, kind, pc, self.line))

    def after(self, outcome: StepOutcome) -> StepPlan | StepOutcome:
        """The next leg after `outcome`, or the outcome the command ends with."""
        session, host, kind = self.session, self.host, self.kind
        if self.legs >= MAX_LEGS:
            return StepOutcome("stopped", None, f"bb {kind}: gave up after {MAX_LEGS} legs")
        if outcome.kind == "target" and outcome.pc is not None and self.purpose == "line" \
                and kind == "step" and self.plan is not None and self.plan.line is not None \
                and _inlined_call_of_line(session, host, outcome.pc, self.plan.line):
            # GDB's step enters an inlined call that begins where it stops when the call is
            # made on the line being stepped (infrun's step_into_inline_frame), and so does
            # LLDB's step-in: without running, the debugger's own step at the pc.
            return self._leg("done", StepPlan(kind, "enter", outcome.pc))
        if outcome.kind not in ("returned", "called") or self.purpose == "done" \
                or outcome.pc is None:
            return outcome
        pc = outcome.pc
        if self.purpose == "callee":
            return self._leg("line", line_plan(session, host, kind, pc))
        if outcome.kind == "called":
            # `step` reached a callee: stop at its entry if it has lines (optimized code has no
            # prologue to skip; GDB stops there too), else run it to its return and go on with
            # the line being stepped.
            if has_lines(session, host, pc):
                return outcome
            return self._leg("callee", finish_plan(session, host, kind, pc))
        if self.purpose == "up" and kind == "finish":
            # Back in the inlined call's physical frame (at a return address): finish the call.
            plan = inlined_finish_plan(session, host, kind, pc, self.inline_depth, pc - 1)
            if plan is None:
                return self._leg("done", finish_plan(session, host, kind, pc))
            if plan.is_target(pc):
                return StepOutcome("target", pc)
            return self._leg("done", plan)
        if self.purpose == "up" and self.line is not None:
            return self._leg("line", line_plan(session, host, kind, pc, self.line))
        # The stepping frame returned. `until LINE`/`advance` stop there, as GDB's do; a line
        # step goes on to the caller's next line, which may be in a fragment of its own.
        if self.line is not None or not procedure_has_lines(session, host, pc):
            return outcome
        if self.purpose == "line" and kind in LINE_KINDS \
                and isinstance(host, SteppingHost) and host.stops_on_return():
            return StepOutcome("target", pc)  # LLDB's own steps stop where the frame returns
        plan = line_plan(session, host, kind, pc)
        # The call ended its line: the caller's next one is here, unless it is the line
        # stepped (a recursive call's return), which GDB steps on through.
        if plan.at_line_start and (self.plan is None or self.plan.line is None
                                   or plan.line != self.plan.line):
            return StepOutcome("target", pc)
        if isinstance(host, SteppingHost) and host.statements_only() \
                and self.plan is not None and _other_row_begins(session, host, pc,
                                                                self.plan.line):
            # GDB back in a frame at a row of another line that is no statement: it steps on
            # as from no line (infrun: "stepped to a different frame, but it's not the start
            # of a statement"), to where any line's statement begins, this one's too.
            plan = line_plan(session, host, kind, pc, no_line=True)
        return self._leg("line", plan)

    def _leg(self, purpose: str, plan: StepPlan) -> StepPlan:
        self.purpose, self.plan = purpose, plan
        self.legs += 1
        if plan.note and plan.note not in self.notes:
            self.notes.append(plan.note)
        return plan


def run(session: SessionView, host: Host, kind: str, line: int | None = None) -> str:
    """Step as `bb KIND` asks; returns what to print (where the program stopped)."""
    if kind not in KINDS:
        raise UsageError(f"unknown step kind {kind!r}")
    if not isinstance(host, SteppingHost):
        raise UsageError(f"bb {kind}: this debugger adapter cannot step")
    reason = host.cannot_run()
    if reason:
        raise UsageError(f"bb {kind}: {reason}")
    said = host.step_whole(kind, line)
    if said is not None:
        return said
    walk = Walk(session, host, kind, line)
    context = host.step_context(kind, line)  # what the report compares with
    step: StepPlan | StepOutcome = walk.first()
    while isinstance(step, StepPlan):
        step = walk.after(host.step_logical(step))
    return _report(session, host, kind, step, walk.notes, context, walk.inlined_finish)


def _as_statement(session: SessionView, loc: Location) -> Location:
    """`loc` with the line GDB names its address by where that is an earlier statement row
    of several there (statement_row), as GDB's own step reports it."""
    row = statement_row(session.index(loc.module), loc.file_address)
    if row is None:
        return loc
    return loc._replace(file=row.file, path=row.path or loc.path, line=row.line,
                        column=row.column or None)


def _at_call_site(session: SessionView, host: Host, pc: int, loc: Location) -> Location:
    """`loc` at the line of the call where a step over inlined calls stopped at the start of
    an inlined block: the debuggers show the calling function's frame there, at its line."""
    found = _where(session, host, pc)
    if found is None:
        return loc
    mod, index, proc = found
    file_pc = pc - mod.bias
    here = own_lines(index, proc).span_at(file_pc)
    if here is None or here.line == loc.line:
        return loc
    frames = module_frames(index)
    chain = frames.frames(file_pc)
    if len(chain) < 2 or chain[-1].line != here.line:
        return loc
    before = frames.frames(file_pc - 1)
    if _call_identity(before[-len(chain):]) == _call_identity(chain):
        return loc  # inside the inlined block: the debuggers show the inlined function
    outer = chain[-1]
    return loc._replace(file=here.file, path=outer.path or loc.path, line=outer.line,
                        column=outer.column or None)


def _report(session: SessionView, host: Host, kind: str, outcome: StepOutcome,
            notes: list[str], context: object = None, inlined_finish: bool = False) -> str:
    """What the step prints: the debugger's own report of the stop (Host.stop_report, see
    unsplit.render.stop), after the notes on how the step was made; a stop the step did not
    make (a breakpoint, a signal) as the debugger reported it."""
    lines = list(notes)
    if outcome.kind == "stopped" and outcome.message:
        lines.append(outcome.message)
    try:
        pc = None if outcome.kind == "stopped" and outcome.pc is None else host.selected_pc()
    except UnsplitError:
        pc = None
    if pc is None:
        return "\n".join(lines)
    loc = session.locate(host, pc)
    if loc is not None and isinstance(host, SteppingHost) and host.statements_only():
        loc = _as_statement(session, loc)
    if (kind in ("next", "until") or inlined_finish) and loc is not None:
        loc = _at_call_site(session, host, pc, loc)
    style = session.demangling()
    stepper = host if isinstance(host, SteppingHost) else None
    # A stop the step did not make (a breakpoint, a signal) the debugger has reported already
    # (GDB prints it as it stops; LLDB's report is the message): not again, and no finish's
    # return value.
    if outcome.kind != "stopped":
        lines.append(stepper.stop_report(kind, loc, pc, context) if stepper is not None
                     else verbose_line(loc, pc, style))
    if session.verbose and stepper is not None:
        extra = verbose_line(loc, pc, style)
        # GDB's report of a stop the step did not make carries the plugin's corrected stop,
        # the verbose line included (gdb/unsplit_gdb_impl/stop.py): not twice.
        if extra not in (outcome.message or "").splitlines():
            lines.append(extra)
    return "\n".join(line for line in lines if line)
