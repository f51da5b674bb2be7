"""The narrow interface between the core and a debugger (GDB or LLDB).

Kept to primitives, as pwndbg learned to: each adapter implements :class:`Host` in a few lines
with its own API, and every command is written once against it. No debugger object crosses this
boundary; addresses are plain ints (runtime addresses).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class LoadedModule:
    """An ELF file mapped into the debuggee: runtime address = file address + bias."""

    path: str
    bias: int


class Host(Protocol):
    """What the core asks of a debugger."""

    def modules(self) -> list[LoadedModule]:
        """The executable and every loaded shared library, with load biases."""
        ...

    def selected_pc(self) -> int:
        """PC of the selected frame; raises UsageError when there is no process or core."""
        ...

    def evaluate_address(self, expression: str) -> int:
        """Evaluate a user's address expression (`$pc`, `0x401000`, `main+4`)."""
        ...

    # Optional, probed with getattr (an adapter may lack them):
    #   selected_frame_is_caller() -> bool: the selected frame's PC is a return address
    #     (frame 1 and up, unless the frame below is a signal trampoline), so its code and line
    #     are those of PC - 1, as both debuggers show.
    #   create_breakpoint(spec: BreakSpec, sites: list[tuple[LoadedModule, Site]]) -> str:
    #     one native breakpoint for `bb break` at the sites the core resolved now, re-resolved
    #     by the adapter (debug.breakpoints.resolve) when modules load; returns what to print
    #     (the debugger's own `break` message, unsplit.render.breaks).
    #   bb_breakpoints() -> list[break_text.BreakGroup]: every `bb break` and its locations.
    #   selected_frame_level() -> int: the selected frame's number, as `bt` shows it.
    #   set_frame_naming(flag: bool) -> list[str] | None: install or restore frame names;
    #     returns warnings to show.
    #   set_exact_frames(flag: bool | None) -> str: `bb exact-frames on|off` (None: the state);
    #     make the debugger's own frame list follow the CFI where it can; returns what to print.
    #   set_debuginfo(flag: bool | None) -> str: `bb debuginfo on|off` (None: the state and the
    #     modules given one): hand split modules without DWARF unsplit's debug file.
    #   frame0_registers(thread: int | None = None) -> dict[str, int]: the innermost frame's
    #     general registers (`RAX`…`R15`, `RIP`, any case) of the selected thread, or of thread
    #     number `thread` as the debugger numbers them; raises UsageError with no process/core.
    #   read_memory(address: int, size: int) -> bytes: the debuggee's memory; b"" (or fewer
    #     bytes) where it cannot be read, never an exception.
    #   native_frame_pcs(thread: int | None = None) -> list[int]: the pc of each frame the
    #     debugger itself unwinds, innermost first, inlined frames left out (bb bt compares).
    #   native_frame_numbers(thread: int | None = None) -> list[int]: for each of those frames,
    #     the number the debugger's `bt` gives the innermost frame sharing its registers (an
    #     inlined call's), so that `bb frames` rows and `frame N` agree.
    #   thread_numbers() -> list[int]: every thread's number (bb bt --all-threads).
    #   cannot_run() -> str | None: why the program cannot be stepped (unsplit.debug.stepping's
    #     CORE_FILE, NOT_RUNNING), None when it can.
    #   step_logical(plan: stepping.StepPlan) -> stepping.StepOutcome: apply one step plan
    #     (run to its targets or the frame's return, with a frame check) and say how it ended.
    #   step_context(kind: str, line: int | None) -> object: before a step command runs, what
    #     its report compares with (the stepping frame); may print what the debugger prints
    #     then (GDB's `Run till exit from …`).
    #   stop_report(kind, loc: Location | None, pc: int, context) -> str: where the step
    #     stopped, as the debugger prints its own steps (unsplit.render.stop).


@dataclass(slots=True)
class StaticHost:
    """A Host with no debugger: the CLI's (one module, no bias, no frames)."""

    module_list: list[LoadedModule]

    def modules(self) -> list[LoadedModule]:
        return self.module_list

    def selected_pc(self) -> int:
        from unsplit.errors import UsageError

        raise UsageError("no process: give an address")

    def evaluate_address(self, expression: str) -> int:
        from unsplit.errors import UsageError

        try:
            return int(expression, 0)
        except ValueError:
            raise UsageError(f"not an address: {expression!r}") from None
