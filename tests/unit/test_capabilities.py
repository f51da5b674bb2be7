"""What a command needs of the debugger is declared (commands.Command.needs, unsplit.host's
protocols) and checked once by dispatch: a host without it gets one line naming the command."""

from __future__ import annotations

import pytest
from unsplit.commands import COMMANDS, NEEDS_SAID, dispatch
from unsplit.debug.breakpoints import BreakpointHost
from unsplit.debug.stepping import SteppingHost
from unsplit.errors import UsageError
from unsplit.host import (
    DebugInfo,
    ExactFrames,
    FrameNaming,
    Host,
    LiveHost,
    LoadedModule,
    MachineState,
    StaticHost,
)
from unsplit.session import Session

from ..conftest import ROOT

CRASH = ROOT / "fixtures" / "build" / "gcc-pgo" / "crash"


def test_every_need_is_a_declared_protocol_with_a_message() -> None:
    known = {LiveHost, BreakpointHost, SteppingHost, ExactFrames, DebugInfo}
    for command in COMMANDS.values():
        for need in command.needs:
            assert need in known, (command.name, need)
            assert need in NEEDS_SAID


# A command that needs what a StaticHost lacks: its argument, and what `bb NAME: ` is followed by.
TOLD = {
    "next": ("", "this debugger adapter cannot step"),
    "finish": ("", "this debugger adapter cannot step"),
    "bt": ("", "needs a debugger with a process or a core file"),
    "frames": ("--json", "needs a debugger with a process or a core file"),
    "break": ("transfer", "this debugger adapter cannot set breakpoints"),
    "exact-frames": ("on", "needs a debugger"),
    "debuginfo": ("status", "needs a debugger"),
}


@pytest.mark.parametrize("name", TOLD)
def test_a_host_without_the_capability_is_told_in_one_line(name: str) -> None:
    argument, said = TOLD[name]
    host = StaticHost([LoadedModule(str(CRASH), 0)])
    with pytest.raises(UsageError) as e:
        dispatch(Session(persistent=False), host, name, argument)
    assert str(e.value) == f"bb {name}: {said}"
    assert "\n" not in str(e.value)


def test_help_needs_no_capability() -> None:
    host = StaticHost([LoadedModule(str(CRASH), 0)])
    assert "usage: bb next" in dispatch(Session(persistent=False), host, "next", "--help")


def test_offline_commands_run_on_a_plain_host() -> None:
    host = StaticHost([LoadedModule(str(CRASH), 0)])
    assert isinstance(host, Host) and not isinstance(host, MachineState)
    out = dispatch(Session(persistent=False), host, "where", "0x1119")
    assert "transfer" in out


class _Stepper(StaticHost):
    """A host that can step (and nothing else): dispatch lets `bb next` through to the policy,
    which then asks it whether the program can run."""

    def cannot_run(self) -> str | None:
        return "The program is not being run."

    def step_logical(self, plan: object) -> object:
        raise AssertionError("never reached")

    def step_context(self, kind: str, line: int | None) -> object:
        return None

    def stop_report(self, kind: str, loc: object, pc: int, context: object) -> str:
        return ""


def test_a_host_with_the_capability_passes_the_check() -> None:
    host = _Stepper([LoadedModule(str(CRASH), 0)])
    assert isinstance(host, SteppingHost) and not isinstance(host, FrameNaming)
    with pytest.raises(UsageError, match=r"^bb next: The program is not being run\.$"):
        dispatch(Session(persistent=False), host, "next", "")
