"""What a debugger adapter provides to step (the `bb next/step/finish/until/advance/stepi`
protocol), apart from the stepping policy itself (stepping.py): the command table names it as
every debugger loads, and a session that never steps never imports the policy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from unsplit.host import Host

if TYPE_CHECKING:
    from unsplit.debug.stepping import StepOutcome, StepPlan
    from unsplit.index.model.records import Location


@runtime_checkable
class SteppingHost(Host, Protocol):
    """A debugger that runs step plans: what `bb next/step/finish/until/advance/stepi` need
    (with MachineState and SelectedFrame where it has them: the frame's CFA, its level)."""

    def statements_only(self) -> bool:
        """Whether the debugger's own line steps stop only where a statement row begins (GDB;
        LLDB's stop at a line's first row too): stepping.statement_lines."""
        ...

    def stops_on_return(self) -> bool:
        """Whether the debugger's own next/step stop where the stepping frame returns to,
        in the middle of the caller's line or not (LLDB), rather than going on to where a
        line of the caller begins (GDB's infrun)."""
        ...

    def cannot_run(self) -> str | None:
        """Why the program cannot be stepped (CORE_FILE, NOT_RUNNING), None when it can."""
        ...

    def step_whole(self, kind: str, line: int | None) -> str | None:
        """Run the whole step command as one step of the debugger's own, whose stop the
        debugger reports by itself (lldb-dap: an IDE learns of a stop only from its events);
        what to print then, or None: the policy runs it leg by leg (step_logical)."""
        ...

    def step_logical(self, plan: StepPlan) -> StepOutcome:
        """Apply one step plan (run to its targets or the frame's return, with a frame check)
        and say how it ended."""
        ...

    def step_context(self, kind: str, line: int | None) -> object:
        """Before a step command runs, what its report compares with (the stepping frame);
        may print what the debugger prints then (GDB's `Run till exit from …`)."""
        ...

    def stop_report(self, kind: str, loc: Location | None, pc: int, context: object) -> str:
        """Where the step stopped, as the debugger prints its own steps (render.stop)."""
        ...
