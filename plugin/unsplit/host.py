"""The narrow interface between the core and a debugger (GDB or LLDB).

Kept to primitives, as pwndbg learned to: each adapter implements :class:`Host` in a few lines
with its own API, and every command is written once against it. No debugger object crosses this
boundary; addresses are plain ints (runtime addresses). What goes beyond `Host` is a protocol an
adapter's host provides or not (:class:`MachineState`, :class:`LiveHost`, ...); each command says
which it needs (commands.Command.needs) and `dispatch` checks once.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol, runtime_checkable


class LoadedModule(NamedTuple):
    """An ELF file mapped into the debuggee: runtime address = file address + bias."""

    path: str
    bias: int


@runtime_checkable
class Host(Protocol):
    """What the core asks of every debugger (and of the CLI's StaticHost)."""

    def modules(self) -> list[LoadedModule]:
        """The executable and every loaded shared library, with load biases."""
        ...

    def selected_pc(self) -> int:
        """PC of the selected frame; raises UsageError when there is no process or core."""
        ...

    def evaluate_address(self, expression: str) -> int:
        """Evaluate a user's address expression (`$pc`, `0x401000`, `main+4`)."""
        ...


@runtime_checkable
class MachineState(Protocol):
    """A thread's registers and the debuggee's memory: what unwinding with CFI reads."""

    def read_memory(self, address: int, size: int) -> bytes:
        """The debuggee's memory; b"" (or fewer bytes) where it cannot be read, never an
        exception."""
        ...

    def frame0_registers(self, thread: int | None = None) -> dict[str, int]:
        """The innermost frame's general registers (`RAX`…`R15`, `RIP`, any case) of the
        selected thread, or of thread number `thread` as the debugger numbers them; raises
        UsageError with no process or core."""
        ...


@runtime_checkable
class SelectedFrame(Protocol):
    """Which of the debugger's frames the user selected."""

    def selected_frame_level(self) -> int:
        """The selected frame's number, as `bt` shows it."""
        ...

    def selected_frame_is_caller(self) -> bool:
        """The selected frame's PC is a return address (frame 1 and up, unless the frame below
        is a signal trampoline), so its code and line are those of PC - 1."""
        ...


@runtime_checkable
class NativeFrames(Protocol):
    """The debugger's own threads and frames, for `bb bt` and `bb frames` to name or check."""

    def thread_numbers(self) -> list[int]:
        """Every thread's number (`bb bt --all-threads`)."""
        ...

    def native_frame_pcs(self, thread: int | None = None) -> list[int]:
        """The pc of each frame the debugger itself unwinds, innermost first, inlined frames
        left out (`bb bt` compares)."""
        ...

    def native_frame_numbers(self, thread: int | None = None) -> list[tuple[int, int]]:
        """For each of those frames, the number the debugger's `bt` gives the innermost frame
        sharing its registers (an inlined call's) and how many frames `bt` shows for it (its
        inlined calls and itself), so `bb frames` and `bb bt` number as `bt` and `frame N`."""
        ...


@runtime_checkable
class LiveHost(Host, MachineState, SelectedFrame, NativeFrames, Protocol):
    """A debugger with a process or a core: all of the above."""


@runtime_checkable
class FrameNaming(Protocol):
    def set_frame_naming(self, flag: bool) -> list[str]:
        """`bb enable|disable`: install or restore the debugger's frame names; warnings."""
        ...


@runtime_checkable
class ExactFrames(Protocol):
    def set_exact_frames(self, flag: bool | None) -> str:
        """`bb exact-frames on|off` (None: the state): make the debugger's own frame list
        follow the CFI where it can; what to print."""
        ...


@runtime_checkable
class DebugInfo(Protocol):
    def set_debuginfo(self, flag: bool | None) -> str:
        """`bb debuginfo on|off` (None: the state and the modules given one): hand split
        modules without DWARF unsplit's debug file; what to print."""
        ...


# Breakpoints (debug.breakpoint_host.BreakpointHost) and stepping
# (debug.stepping_host.SteppingHost) are declared in debug/, beside the records they pass.
# What a command needs is checked once, by commands.dispatch, from the command's `needs`.


class StaticHost:
    """A Host with no debugger: the CLI's (one module, no bias, no frames)."""

    __slots__ = ("module_list",)

    def __init__(self, module_list: list[LoadedModule]) -> None:
        self.module_list = module_list

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
