"""LLDB mechanism of the core's step plans (debug.stepping.StepPlan): :class:`LogicalStep`, a
scripted thread plan (lldb/examples/python/scripted_step.py) that single-steps through the
procedure in any fragment and runs over each call to its return address; `finish` runs to the
return address and CFA of the core's CFI unwinder. It takes what to do from its arguments, never
module state: from `bb next` and friends (:func:`apply`: one leg, its outcome in ``_outcomes``),
or by hand (``thread step-scripted -C unsplit_lldb.LogicalStep -k kind -v next``: it chains the
legs itself through unsplit.debug.stepping.Walk)."""

from __future__ import annotations

import itertools
import json
import sys
from dataclasses import dataclass, field
from typing import Any

import lldb
from unsplit.debug.stepping import CORE_FILE, NOT_RUNNING, StepOutcome, StepPlan, Walk
from unsplit.errors import UnsplitError, UsageError
from unsplit.session import Session

from . import state
from .frame_source import with_source
from .naming import plugin_line
from .report import report_internal, with_traceback

CLASS = "unsplit_lldb_impl.stepping.LogicalStep"
_CALL = ("call", "callq", "bl", "blr")
_RETURN = ("ret", "retq", "retn")


@dataclass
class _Job:
    plan: StepPlan
    calls: dict[int, int] = field(default_factory=dict)  # call instruction -> next one
    returns: set[int] = field(default_factory=set)


_outcomes: dict[int, StepOutcome] = {}  # token -> how the leg `apply` asked for ended
_tokens = itertools.count(1)
_imported: set[int] = set()  # debuggers whose script interpreter has imported this module


def _arguments(args_data: Any) -> dict[str, Any]:
    """The plan's SBStructuredData as JSON values ({} when none was given)."""
    if args_data is None or not args_data.IsValid():
        return {}
    stream = lldb.SBStream()
    if not args_data.GetAsJSON(stream).Success():
        return {}
    try:
        value = json.loads(stream.GetData() or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class LogicalStep:
    """A scripted thread plan: one leg given as a StepPlan, or a whole step command."""

    def __init__(self, thread_plan: lldb.SBThreadPlan, args_data: Any = None,
                 internal_dict: dict[str, Any] | None = None) -> None:
        self.thread_plan = thread_plan
        self.job: _Job | None = None
        self.walk: Walk | None = None
        self.token: int | None = None
        self.outcome: StepOutcome | None = None
        self.failure = ""
        self.child: Any = None
        self.leaving = False  # stepping out of code the plan left without a call (tail call)
        self.return_to: int | None = None  # running to a return address...
        self.back_sp = 0  # ...until SP is at least this (the frame is back)
        self.finishing = False  # that return ends the leg (finish), else it was a call
        self.prev = self._pc()
        args = _arguments(args_data)
        try:
            if isinstance(args.get("plan"), dict):
                self.token = int(args.get("token") or 0)
                self._start(StepPlan.from_json(args["plan"]))
            else:
                self._begin_walk(args)
        except UnsplitError as e:
            # Refused before anything ran: LLDB reports the exception as the command's error
            # and queues nothing, so the thread does not move.
            message = str(e) if str(e).startswith("bb ") else f"bb: {e}"
            print(f"error: {message}", file=sys.stderr)  # LLDB's own error does not say why
            raise UsageError(message) from None
        except Exception as e:  # a bug: said, and nothing queued, as above
            raise UsageError(report_internal(e)) from None

    # -- what LLDB asks ------------------------------------------------------------------

    def explains_stop(self, event: Any) -> bool:
        reason = self.thread_plan.GetThread().GetStopReason()
        return bool(reason in (lldb.eStopReasonTrace, lldb.eStopReasonPlanComplete))

    def should_step(self) -> bool:
        return self.child is None

    def is_stale(self) -> bool:
        return False

    def stop_description(self, stream: Any) -> None:
        """The stop reason LLDB shows: what this step did."""
        kind = self.walk.kind if self.walk is not None else \
            (self.job.plan.kind if self.job is not None else "step")
        notes = list(self.walk.notes) if self.walk is not None else []
        if self.failure:
            notes.append(self.failure)
        elif self.outcome is not None and self.outcome.message:
            notes.append(self.outcome.message)
        stream.Print(f"bb {kind}" + (": " + "; ".join(notes) if notes else ""))

    def should_stop(self, event: Any) -> bool:
        if self.job is None:
            return True
        try:
            return self._should_stop()
        except UnsplitError as e:
            return self._fail(str(e))
        except Exception as e:  # a bug: the step ends here and its stop reason says why
            return self._fail(with_traceback(e))

    def _should_stop(self) -> bool:
        if self.child is not None:
            if not self.child.IsPlanComplete():
                return False
            self.child = None
            pc = self._pc()
            if self.leaving:
                return self._done("returned", pc)
            if self.return_to is not None:
                if pc == self.return_to and self._sp() < self.back_sp:
                    self._run_to_return()  # a deeper activation returned there
                    return False
                self.return_to = None
                if self.finishing:
                    return self._done("returned", pc)
            self.prev = pc  # back from a call at its return address
            return self._check(pc, after_call=True)
        return self._check(self._pc())

    # -- legs ------------------------------------------------------------------------------

    def _context(self, selected: bool = False) -> tuple[state.StepHost, Session]:
        """An LldbHost on frame 0 (or the selected frame) of this thread, and the session."""
        thread = self.thread_plan.GetThread()
        target = thread.GetProcess().GetTarget()
        frame = thread.GetSelectedFrame() if selected else thread.GetFrameAtIndex(0)
        return state.make_host(target.GetDebugger(), target, frame), \
            state.for_debugger(target.GetDebugger().GetID()).session

    def _begin_walk(self, args: dict[str, Any]) -> None:
        host, session = self._context(selected=True)
        kind = str(args.get("kind") or "next")
        line = args.get("line")
        reason = host.cannot_run()
        if reason:
            raise UsageError(f"bb {kind}: {reason}")
        self.walk = Walk(session, host, kind, None if line in (None, "") else int(line))
        step = self.walk.first()
        if isinstance(step, StepOutcome):
            self._finish(step)
        else:
            self._start(step)

    def _start(self, plan: StepPlan) -> None:
        thread = self.thread_plan.GetThread()
        target = thread.GetProcess().GetTarget()
        self.job = _Job(plan, *_decoded(target, plan.ranges))
        self.child, self.leaving, self.return_to, self.finishing = None, False, None, False
        self.prev = self._pc()
        if plan.mode != "finish":
            return
        if _own_step_out_agrees(thread, plan):
            # LLDB's own step-out goes where the CFI says: it also reads the value returned,
            # which lldb-dap shows (Locals' "(Return Value)"), as after its own step-out.
            self.leaving = True
            self.child = self.thread_plan.QueueThreadPlanForStepOut(0, False)
        elif plan.return_address is not None and plan.frame_cfa is not None:
            # The CFI's return address and CFA: right where LLDB's unwinder invents a caller.
            self.return_to, self.back_sp, self.finishing = plan.return_address, \
                plan.frame_cfa, True
            self._run_to_return()
        elif thread.GetNumFrames() > 1:
            # No CFI for this frame: LLDB's own step-out; when LLDB cannot unwind either,
            # the plan steps to a return instruction of the procedure.
            self.leaving = True
            self.child = self.thread_plan.QueueThreadPlanForStepOut(0, False)

    def _run_to_return(self) -> None:
        assert self.return_to is not None
        target = self.thread_plan.GetThread().GetProcess().GetTarget()
        self.child = self.thread_plan.QueueThreadPlanForRunToAddress(
            lldb.SBAddress(self.return_to, target))

    def _sp(self) -> int:
        return int(self.thread_plan.GetThread().GetFrameAtIndex(0).GetSP())

    def _pc(self) -> int:
        return int(self.thread_plan.GetThread().GetFrameAtIndex(0).GetPC())

    def _done(self, kind: str, pc: int) -> bool:
        """A leg ended: the next leg of a walk, or the end of the plan."""
        outcome = StepOutcome(kind, pc)
        if self.walk is not None:
            self.walk.host, _ = self._context()
            step = self.walk.after(outcome)
            if isinstance(step, StepPlan) and step.mode == "enter":
                # Entering an inlined call without running is LLDB's own step-in's virtual
                # step, which a thread plan cannot make: the step ends at the call.
                step = outcome
            if isinstance(step, StepPlan):
                self._start(step)  # from here: single steps, or a child plan it queued
                return False
            outcome = step
        return self._finish(outcome)

    def _finish(self, outcome: StepOutcome) -> bool:
        self.outcome = outcome
        if self.token is not None:
            _outcomes[self.token] = outcome
        self.thread_plan.SetPlanComplete(True)
        return True

    def _fail(self, message: str) -> bool:
        self.failure = message
        self.job = None
        self.thread_plan.SetPlanComplete(False)
        return True

    def _check(self, pc: int, after_call: bool = False) -> bool:
        job = self.job
        assert job is not None
        plan = job.plan
        prev, self.prev = self.prev, pc
        if plan.mode == "instruction":
            return self._done("done", pc)
        if not after_call and prev in job.returns:
            return self._done("returned", pc)
        if not after_call and prev in job.calls:
            if plan.step_into and plan.mode == "line":
                return self._done("called", pc)
            # Over the call: run to the instruction after it, until SP says this frame is
            # back (a recursive activation passes there deeper). No unwinding needed, which
            # LLDB cannot always do from moved code.
            self.return_to = job.calls[prev]
            self.back_sp = self._sp() + 1
            self._run_to_return()
            return False
        if pc in plan.targets:
            return self._done("target", pc)
        if not plan.in_procedure(pc):
            # Left without a call or a return (a tail call, often to a PLT stub, where LLDB's
            # step-out stops at once): this frame now returns from there, to where the CFI says.
            from unsplit.debug.stepping import return_of

            host, session = self._context()
            back = return_of(session, host, pc, 0)
            if back is not None:
                self.return_to, self.back_sp = back
                self.finishing = True
                self._run_to_return()
            else:
                self.leaving = True
                self.child = self.thread_plan.QueueThreadPlanForStepOut(0, False)
        return False


def _own_step_out_agrees(thread: lldb.SBThread, plan: StepPlan) -> bool:
    """Whether LLDB's own step-out of frame 0 runs to where `plan` (finish) does: frame 0 is
    the stepping frame (its CFA, no inlined call), LLDB's caller is at the CFI's return address,
    and the caller has debug information (LLDB's step-out goes on out of code without it)."""
    if plan.return_address is None or plan.frame_cfa is None or thread.GetNumFrames() < 2:
        return False
    frame, caller = thread.GetFrameAtIndex(0), thread.GetFrameAtIndex(1)
    return not frame.IsInlined() and int(frame.GetCFA()) == plan.frame_cfa \
        and int(caller.GetPC()) == plan.return_address and caller.GetFunction().IsValid()


# -- applying a plan ------------------------------------------------------------------------

def _instructions(target: lldb.SBTarget, ranges: tuple[tuple[int, int], ...]
                  ) -> tuple[dict[int, int], set[int]]:
    """Call instructions (-> the address after each) and return instructions in `ranges`."""
    calls: dict[int, int] = {}
    returns: set[int] = set()
    process = target.GetProcess()
    for lo, hi in ranges:
        error = lldb.SBError()
        data = process.ReadMemory(lo, hi - lo, error)
        if not error.Success() or not data:
            continue
        for insn in target.GetInstructions(lldb.SBAddress(lo, target), data):
            mnemonic = (insn.GetMnemonic(target) or "").lower()
            address = int(insn.GetAddress().GetLoadAddress(target))
            if mnemonic in _CALL:
                calls[address] = address + int(insn.GetByteSize())
            elif mnemonic in _RETURN:
                returns.add(address)
    return calls, returns


_decoded_cache: dict[tuple[int, tuple[tuple[int, int], ...]],
                     tuple[dict[int, int], set[int]]] = {}


def _decoded(target: lldb.SBTarget, ranges: tuple[tuple[int, int], ...]
             ) -> tuple[dict[int, int], set[int]]:
    """_instructions, cached per process."""
    key = (int(target.GetProcess().GetUniqueID()), ranges)
    if key not in _decoded_cache:
        _decoded_cache[key] = _instructions(target, ranges)
    return _decoded_cache[key]


def apply(debugger: lldb.SBDebugger, thread: lldb.SBThread, plan: StepPlan) -> StepOutcome:
    """Run `plan` on `thread` with the scripted plan; how it ended."""
    frame = thread.GetFrameAtIndex(0)
    if plan.mode == "enter" or (plan.step_into and plan.mode == "line"
                                and int(frame.GetPC()) == plan.pc):
        if _hidden_inlined_call(thread.GetProcess().GetTarget(), frame):
            # LLDB's own step-in here enters the inlined call without running (it shows one
            # inlined frame more: ThreadPlanStepInRange's virtual step), as on the unsplit
            # program.
            thread.StepInto()
            return StepOutcome("target", int(thread.GetFrameAtIndex(0).GetPC()))
        if plan.mode == "enter":
            return StepOutcome("target", int(frame.GetPC()))
    _ensure_imported(debugger)
    token = next(_tokens)
    args = lldb.SBStructuredData()
    args.SetFromJSON(json.dumps({"plan": plan.to_json(), "token": token}))
    error = thread.StepUsingScriptedThreadPlan(CLASS, args, True)
    outcome = _outcomes.pop(token, None)
    if not error.Success():
        return StepOutcome("stopped", None, f"lldb: {error.GetCString()}")
    process = thread.GetProcess()
    if process.GetState() in (lldb.eStateExited, lldb.eStateDetached, lldb.eStateInvalid):
        return StepOutcome("stopped", None, f"Process {process.GetProcessID()} exited with "
                                            f"status = {process.GetExitStatus()}")
    if outcome is not None:
        return outcome
    stream = lldb.SBStream()
    thread.GetStatus(stream)
    frame = thread.GetFrameAtIndex(0)
    said = str(stream.GetData() or "").strip()
    loc = plugin_line(frame) if said else None
    if loc is not None:  # a breakpoint in code only the plugin has lines for: its source
        said = "\n".join(with_source(debugger, said.splitlines(), "frame #0:", loc))
    return StepOutcome("stopped", int(frame.GetPC()),
                       said or f"stopped: {thread.GetStopDescription(256)}")


def step_whole(debugger: lldb.SBDebugger, thread: lldb.SBThread, kind: str,
               line: int | None) -> str:
    """lldb-dap: the whole step as one scripted plan that chains its legs itself, resumed
    asynchronously, so that lldb-dap sees the stop and tells its client (a step run
    synchronously from a command hides its stop from lldb-dap: the IDE kept showing the
    stop before). Nothing to print: the IDE shows the stop, as after LLDB's own steps."""
    _ensure_imported(debugger)
    args = lldb.SBStructuredData()
    args.SetFromJSON(json.dumps({"kind": kind, "line": "" if line is None else line}))
    frame = thread.GetFrameAtIndex(0)
    inline = kind == "step" and _hidden_inlined_call(thread.GetProcess().GetTarget(), frame)
    was_async = debugger.GetAsync()
    debugger.SetAsync(True)
    try:
        if inline:  # into the inlined call at the pc, as in apply
            error = lldb.SBError()
            thread.StepInto(None, lldb.LLDB_INVALID_LINE_NUMBER, error)
        else:
            error = thread.StepUsingScriptedThreadPlan(CLASS, args, True)
    finally:
        debugger.SetAsync(was_async)
    if not error.Success():
        raise UsageError(f"bb {kind}: {error.GetCString()}")
    return ""


def _hidden_inlined_call(target: lldb.SBTarget, frame: lldb.SBFrame) -> bool:
    """Whether an inlined call begins at `frame`'s pc that LLDB does not show (it shows the
    caller there, the inlined frames of code that begins at the stop hidden)."""
    pc = int(frame.GetPC())
    context = target.ResolveSymbolContextForAddress(lldb.SBAddress(pc, target),
                                                    lldb.eSymbolContextBlock)
    inlined = context.GetBlock().GetContainingInlinedBlock()
    if not inlined.IsValid() or inlined == frame.GetBlock().GetContainingInlinedBlock():
        return False
    return any(int(inlined.GetRangeStartAddress(k).GetLoadAddress(target)) == pc
               for k in range(inlined.GetNumRanges()))


def _ensure_imported(debugger: lldb.SBDebugger) -> None:
    """The class must be reachable by name from the script interpreter's session."""
    if debugger.GetID() in _imported:
        return
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand("script import unsplit_lldb_impl.stepping",
                                                   result)
    _imported.add(debugger.GetID())


def cannot_run(target: lldb.SBTarget) -> str | None:
    process = target.GetProcess() if target.IsValid() else None
    if process is None or not process.IsValid():
        return NOT_RUNNING
    if (process.GetPluginName() or "") == "elf-core":
        return CORE_FILE
    if process.GetState() not in (lldb.eStateStopped, lldb.eStateSuspended):
        return NOT_RUNNING
    return None
