"""LLDB mechanism of the core's step plans (unsplit.stepping.StepPlan): a scripted thread plan.

:class:`LogicalStep` follows lldb/examples/python/scripted_step.py: constructed with
``(thread_plan, args_data, internal_dict)``, asked ``explains_stop``, ``should_stop``,
``should_step``, ``is_stale``. It composes with LLDB's own plans: it single-steps (should_step)
through the stepping procedure's code, in whichever fragment it runs, and hands every call it
steps over to ``QueueThreadPlanForStepOut`` (a breakpoint on the return address, LLDB's own frame
checks), so a call costs one stop. The procedure's call and return instructions are found once
per plan by disassembly, so a jump between fragments is told from a call or a return without
trusting the unwinder in moved code (LLDB's assembly profiler assumes every symbol is a
function start). A stop the plan does not explain (a breakpoint, a signal) ends the step there,
as LLDB's own plans do.

`bb next` and friends run it with ``SBThread.StepUsingScriptedThreadPlan`` (synchronously: the
commands are synchronous). The StepPlan reaches the class through this module (`_pending`), not
through args_data: run by hand with `thread step-scripted` it finds no plan and completes at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import lldb
from unsplit.stepping import CORE_FILE, NOT_RUNNING, StepOutcome, StepPlan

CLASS = "unsplit_lldb_impl.stepping.LogicalStep"
_CALL = ("call", "callq", "bl", "blr")
_RETURN = ("ret", "retq", "retn")


@dataclass
class _Job:
    plan: StepPlan
    outcome: StepOutcome | None = None
    calls: dict[int, int] = field(default_factory=dict)  # call instruction -> next one
    returns: set[int] = field(default_factory=set)


_pending: _Job | None = None
_imported: set[int] = set()  # debuggers whose script interpreter has imported this module


class LogicalStep:
    """A scripted thread plan applying the pending StepPlan."""

    def __init__(self, thread_plan: Any, args_data: Any = None,
                 internal_dict: dict[str, Any] | None = None) -> None:
        self.thread_plan = thread_plan
        self.job = _pending
        self.child: Any = None
        self.leaving = False  # stepping out of code the plan left without a call (tail call)
        self.return_to: int | None = None  # stepping over a call: its return address
        self.callee_sp = 0  # SP in the callee's first instruction
        thread = thread_plan.GetThread()
        self.prev = int(thread.GetFrameAtIndex(0).GetPC())
        if self.job is None:
            thread_plan.SetPlanComplete(False)
            return
        if self.job.plan.mode == "finish" and thread.GetNumFrames() > 1:
            # LLDB's step-out when it can unwind this frame; when it cannot (frame 0 in some
            # cold fragments has no caller for LLDB) the plan steps to a return instruction.
            self.leaving = True
            self.child = thread_plan.QueueThreadPlanForStepOut(0, False)

    # -- what LLDB asks ------------------------------------------------------------------

    def explains_stop(self, event: Any) -> bool:
        reason = self.thread_plan.GetThread().GetStopReason()
        return bool(reason in (lldb.eStopReasonTrace, lldb.eStopReasonPlanComplete))

    def should_step(self) -> bool:
        return self.child is None

    def is_stale(self) -> bool:
        return False

    def should_stop(self, event: Any) -> bool:
        job = self.job
        if job is None:
            return True
        if self.child is not None:
            if not self.child.IsPlanComplete():
                return False
            self.child = None
            pc = self._pc()
            if self.leaving:
                return self._done("returned", pc)
            if self.return_to is not None:
                if pc == self.return_to and self._sp() <= self.callee_sp:
                    self._run_to_return()  # a deeper activation returned there
                    return False
                self.return_to = None
            self.prev = pc  # back from a call at its return address
            return self._check(pc, after_call=True)
        return self._check(self._pc())

    # -- the plan -------------------------------------------------------------------------

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
        assert self.job is not None
        self.job.outcome = StepOutcome(kind, pc)
        self.thread_plan.SetPlanComplete(True)
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
            self.callee_sp = self._sp()
            self._run_to_return()
            return False
        if pc in plan.targets:
            return self._done("target", pc)
        if not plan.in_procedure(pc):
            # Left without a call or a return (a tail call): this frame now returns from there.
            self.leaving = True
            self.child = self.thread_plan.QueueThreadPlanForStepOut(0, False)
        return False


# -- applying a plan ------------------------------------------------------------------------

def _instructions(target: Any, ranges: tuple[tuple[int, int], ...]
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


_decoded: dict[tuple[int, tuple[tuple[int, int], ...]], tuple[dict[int, int], set[int]]] = {}


def apply(debugger: Any, thread: Any, plan: StepPlan) -> StepOutcome:
    """Run `plan` on `thread` with the scripted plan; how it ended."""
    global _pending
    target = thread.GetProcess().GetTarget()
    key = (int(thread.GetProcess().GetUniqueID()), plan.ranges)
    if key not in _decoded:
        _decoded[key] = _instructions(target, plan.ranges)
    calls, returns = _decoded[key]
    _ensure_imported(debugger)
    job = _pending = _Job(plan, None, calls, returns)
    try:
        error = thread.StepUsingScriptedThreadPlan(CLASS, True)
    finally:
        _pending = None
    if not error.Success():
        return StepOutcome("stopped", None, f"lldb: {error.GetCString()}")
    process = thread.GetProcess()
    if process.GetState() in (lldb.eStateExited, lldb.eStateDetached, lldb.eStateInvalid):
        return StepOutcome("stopped", None, f"Process {process.GetProcessID()} exited with "
                                            f"status = {process.GetExitStatus()}")
    if job.outcome is not None:
        return job.outcome
    stream = lldb.SBStream()
    thread.GetStatus(stream)
    pc = int(thread.GetFrameAtIndex(0).GetPC())
    return StepOutcome("stopped", pc, stream.GetData().strip() or
                       f"stopped: {thread.GetStopDescription(256)}")


def _ensure_imported(debugger: Any) -> None:
    """The class must be reachable by name from the script interpreter's session."""
    if debugger.GetID() in _imported:
        return
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand("script import unsplit_lldb_impl.stepping",
                                                   result)
    _imported.add(debugger.GetID())


def cannot_run(target: Any) -> str | None:
    process = target.GetProcess() if target.IsValid() else None
    if process is None or not process.IsValid():
        return NOT_RUNNING
    if (process.GetPluginName() or "") == "elf-core":
        return CORE_FILE
    if process.GetState() not in (lldb.eStateStopped, lldb.eStateSuspended):
        return NOT_RUNNING
    return None
