"""The core's :class:`unsplit.host.Host` over LLDB's SB API.

Everything comes from the execution context LLDB hands a command (or from the SBFrame a
``${script.frame:…}`` callback gets), never from ``lldb.debugger``/``lldb.frame`` globals,
which are only set in the interactive ``script`` interpreter.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from unsplit.commands import check_capabilities
from unsplit.debug.breakpoints import BreakSpec, Site
from unsplit.debug.frame_namer import holds_return_address
from unsplit.debug.stepping import StepOutcome, StepPlan
from unsplit.errors import UsageError
from unsplit.host import LoadedModule
from unsplit.index.model.records import Location
from unsplit.render.breaks import BreakGroup

from . import state as state_mod
from .modules import loaded_modules

if TYPE_CHECKING:
    import lldb

_INVALID = 0xFFFFFFFFFFFFFFFF  # LLDB_INVALID_ADDRESS


def _first_error(message: str | None) -> str:
    """The line that says what went wrong, without LLDB's notes and source excerpt."""
    lines = [line.strip() for line in (message or "").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    line = (errors or lines or ["failed"])[0].removeprefix("error:").strip()
    return re.sub(r"^<user expression \d+>:\d+:\d+:\s*", "", line)


class LldbHost:
    """Host for one command invocation (or one frame callback)."""

    def __init__(self, debugger: lldb.SBDebugger, target: lldb.SBTarget,
                 frame: lldb.SBFrame | None = None) -> None:
        self.debugger = debugger
        self.target = target
        self.frame = frame if frame is not None and frame.IsValid() else None
        self.notes: list[str] = []  # warnings for the command's result

    @classmethod
    def from_exe_ctx(cls, debugger: lldb.SBDebugger, exe_ctx: lldb.SBExecutionContext) -> LldbHost:
        target = exe_ctx.GetTarget()
        if not target.IsValid():
            target = debugger.GetSelectedTarget()
        frame = exe_ctx.GetFrame()
        if not frame.IsValid():
            thread = exe_ctx.GetThread()
            if thread.IsValid():
                frame = thread.GetSelectedFrame()
        return cls(debugger, target, frame)

    def modules(self) -> list[LoadedModule]:
        if not self.target.IsValid():
            return []
        return loaded_modules(self.target)

    def selected_pc(self) -> int:
        process = self.target.GetProcess() if self.target.IsValid() else None
        if process is None or not process.IsValid() or self.frame is None:
            raise UsageError("no process: run the program, load a core, or give an address")
        return int(self.frame.GetPC())

    def selected_frame_level(self) -> int:
        return 0 if self.frame is None else int(self.frame.GetFrameID())

    def selected_frame_is_caller(self) -> bool:
        """A caller's PC is a return address (unsplit.debug.frame_namer's rule)."""
        from .naming import LldbFrame

        frame = self.frame
        return frame is not None and holds_return_address(
            LldbFrame(frame, frame.GetThread(), trampolines=True))

    def evaluate_address(self, expression: str) -> int:
        text = expression.strip()
        try:
            return int(text, 0)
        except ValueError:
            pass
        if not self.target.IsValid():
            raise UsageError(f"cannot evaluate {text!r}: no target")
        if self.frame is not None:
            value = self.frame.EvaluateExpression(text)
        else:
            value = self.target.EvaluateExpression(text)
        if value.GetError().Success():
            if value.GetType().IsFunctionType():
                address = value.GetAddress().GetLoadAddress(self.target)
                if address == _INVALID:
                    address = value.GetAddress().GetFileAddress()
                return int(address)
            return int(value.GetValueAsUnsigned())
        # Names the expression parser cannot spell, such as `transfer.cold`.
        address = self._symbol_address(text)
        if address is not None:
            return address
        raise UsageError(f"cannot evaluate {text!r}: {_first_error(value.GetError().GetCString())}")

    def _symbol_address(self, name: str) -> int | None:
        found = self.target.FindSymbols(name)
        for context in found:
            symbol = context.GetSymbol()
            if not symbol.IsValid():
                continue
            start = symbol.GetStartAddress()
            address = start.GetLoadAddress(self.target)
            return int(address if address != _INVALID else start.GetFileAddress())
        return None

    def create_breakpoint(self, spec: BreakSpec, sites: list[tuple[LoadedModule, Site]]) -> str:
        """One LLDB breakpoint with a scripted resolver (see .breakpoints)."""
        from . import breakpoints

        session = state_mod.for_debugger(self.debugger.GetID()).session
        return breakpoints.create(self.target, spec, sites, session)

    def bb_breakpoints(self) -> list[BreakGroup]:
        from . import breakpoints

        if not self.target.IsValid():
            return []
        return breakpoints.listing(self.target)

    # -- stepping (unsplit.debug.stepping: the plan is the core's, see stepping.py) ---------------

    def statements_only(self) -> bool:
        """LLDB's steps stop at a line's first row, statement or not."""
        return False

    def stops_on_return(self) -> bool:
        """LLDB's step-in and step-over stop where the stepping frame returns to."""
        return True

    def step_whole(self, kind: str, line: int | None) -> str | None:
        from . import cfi_symbols, stepping

        if not cfi_symbols.in_lldb_dap():
            return None
        return stepping.step_whole(self.debugger, self._thread(), kind, line)

    def cannot_run(self) -> str | None:
        from . import stepping

        return stepping.cannot_run(self.target)

    def step_logical(self, plan: StepPlan) -> StepOutcome:
        from . import stepping

        process = self.target.GetProcess()
        thread = self.frame.GetThread() if self.frame is not None else \
            process.GetSelectedThread()
        outcome = stepping.apply(self.debugger, thread, plan)
        # The frame this host was made with is gone: later questions are about the new stop.
        frame = thread.GetFrameAtIndex(0) if thread.IsValid() else None
        self.frame = frame if frame is not None and frame.IsValid() else None
        if outcome.kind == "stopped" and outcome.message.startswith("* thread"):
            # A stop the step did not make (a breakpoint, a signal), reported as LLDB does.
            from dataclasses import replace

            pid = process.GetProcessID()
            outcome = replace(outcome, message=f"Process {pid} stopped\n{outcome.message}")
        return outcome

    def _thread(self) -> Any:
        if self.frame is not None:
            return self.frame.GetThread()
        return self.target.GetProcess().GetSelectedThread()

    def step_context(self, kind: str, line: int | None) -> object:
        from . import step_report

        return step_report.context(self._thread(), kind)

    def stop_report(self, kind: str, loc: Location | None, pc: int, context: object) -> str:
        """What LLDB prints for its own step to `pc` (see step_report.py)."""
        from . import step_report

        known = context if isinstance(context, step_report.StepContext) else None
        return step_report.report(self.debugger, self._thread(), kind, loc, known)

    # -- bb bt (unsplit.debug.unwind compares LLDB's frames with the CFI's, see .unwinding) -------

    def frame0_registers(self, thread: int | None = None) -> dict[str, int]:
        from . import unwinding

        return unwinding.frame0_registers(self.target, self.frame, thread)

    def read_memory(self, address: int, size: int) -> bytes:
        from . import unwinding

        return unwinding.read_memory(self.target, address, size)

    def native_frame_pcs(self, thread: int | None = None) -> list[int]:
        from . import unwinding

        return unwinding.native_frame_pcs(self.target, self.frame, thread)

    def native_frame_numbers(self, thread: int | None = None) -> list[tuple[int, int]]:
        from . import unwinding

        return unwinding.native_frame_numbers(self.target, self.frame, thread)

    def thread_numbers(self) -> list[int]:
        from . import unwinding

        return unwinding.thread_numbers(self.target)

    def set_frame_naming(self, flag: bool) -> list[str]:
        import lldb

        from . import backtrace, capabilities, naming

        missing = capabilities.missing_for_naming(lldb)
        if flag and missing:
            return [f"unsplit: this LLDB has no {', '.join(missing)}: frame names stay LLDB's"]
        notes = list(naming.set_enabled(self.debugger, flag))
        if flag:
            return notes + backtrace.install(self.debugger)
        backtrace.restore(self.debugger)
        return notes

    def set_exact_frames(self, flag: bool | None) -> str:
        from . import cfi_symbols

        return cfi_symbols.set_enabled(self.debugger, self.target, flag)

    def set_debuginfo(self, flag: bool | None) -> str:
        from . import cfi_symbols

        return cfi_symbols.set_debuginfo(self.debugger, self.target, flag)


# What LldbHost provides: every protocol of the core's a `bb` command asks for (commands.py's
# CAPABILITIES), checked as the adapter loads: a missing or renamed method fails every session
# at once, not the one command that needs it.
state_mod.register_host(LldbHost)
PROVIDES = check_capabilities(LldbHost)
