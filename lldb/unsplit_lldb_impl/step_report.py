"""What `bb next`/`step`/`finish`/`until`/`advance`/`stepi` print in LLDB: LLDB's own stop report
(``Thread::GetStatus``) in LLDB's words (stop reason, ``Process N stopped``, `finish`'s return
value), with source lines in place of disassembly where only the plugin has a line."""

from __future__ import annotations

import re
from dataclasses import dataclass

import lldb
from unsplit.index.model.records import Location

from .frame_source import with_source

# LLDB's own stop reasons for its steps (ThreadPlanStepOverRange and friends).
NATIVE_REASON = {"next": "step over", "step": "step in", "finish": "step out",
                 "until": "step until", "advance": "step until",
                 "stepi": "instruction step into"}
_SCALAR = (lldb.eTypeClassBuiltin, lldb.eTypeClassPointer, lldb.eTypeClassEnumeration,
           lldb.eTypeClassTypedef)


@dataclass(frozen=True, slots=True)
class StepContext:
    return_type: str | None  # finish: the name of a scalar return type


def context(thread: lldb.SBThread, kind: str) -> StepContext:
    if kind != "finish" or not thread.IsValid():
        return StepContext(None)
    selected = thread.GetSelectedFrame()
    function = selected.GetFunction()
    # Out of an inlined call there is no return to read a value from (LLDB's own step-out
    # prints none).
    if not function.IsValid() or selected.IsInlined():
        return StepContext(None)
    returned = function.GetType().GetFunctionReturnType()
    if not returned.IsValid() or returned.GetName() == "void" \
            or returned.GetCanonicalType().GetTypeClass() not in _SCALAR:
        return StepContext(None)
    return StepContext(str(returned.GetName()))


def report(debugger: lldb.SBDebugger, thread: lldb.SBThread, kind: str, loc: Location | None,
           step: StepContext | None) -> str:
    process = thread.GetProcess()
    stream = lldb.SBStream()
    thread.GetStatus(stream)
    lines = str(stream.GetData() or "").rstrip("\n").splitlines()
    if not lines:
        return ""
    lines[0] = re.sub(r"stop reason = .*$", f"stop reason = {NATIVE_REASON.get(kind, kind)}",
                      lines[0])
    frame = thread.GetFrameAtIndex(0)
    entry = frame.GetLineEntry()
    if loc is not None and loc.line and not (entry.IsValid() and entry.GetLine()):
        lines = with_source(debugger, lines, "frame #0:", loc)
    # LLDB's own status has the value where its own step-out ran the finish.
    if step is not None and step.return_type is not None \
            and not any(line.startswith("Return value:") for line in lines):
        value = frame.EvaluateExpression(f"({step.return_type})$rax")
        if value.IsValid() and value.GetError().Success():
            lines[1:1] = [f"Return value: ({value.GetTypeName()}) {value.GetName()} = "
                          f"{value.GetValue()}", ""]
    pid = process.GetProcessID()
    # `thread until` says it resumes the process (a run to a location, not a step).
    resumed = [f"Process {pid} resuming"] if kind in ("until", "advance") else []
    return "\n".join([*resumed, f"Process {pid} stopped", *lines])
