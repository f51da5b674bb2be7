"""What a command needs of the debugger is declared (commands.Command.needs, unsplit.host's
protocols) and checked once by dispatch: a host without it gets one line naming the command."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from unsplit.commands import CAPABILITIES, COMMANDS, NEEDS_SAID, check_capabilities, dispatch
from unsplit.debug.breakpoint_host import BreakpointHost
from unsplit.debug.stepping_host import SteppingHost
from unsplit.errors import UsageError
from unsplit.host import (
    DebugInfo,
    ExactFrames,
    FrameNaming,
    Host,
    LiveHost,
    LoadedModule,
    MachineState,
    NativeFrames,
    SelectedFrame,
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

    def statements_only(self) -> bool:
        return False

    def stops_on_return(self) -> bool:
        return False

    def step_whole(self, kind: str, line: int | None) -> str | None:
        return None

    def step_context(self, kind: str, line: int | None) -> object:
        return None

    def stop_report(self, kind: str, loc: object, pc: int, context: object) -> str:
        return ""


def test_a_host_with_the_capability_passes_the_check() -> None:
    host = _Stepper([LoadedModule(str(CRASH), 0)])
    assert isinstance(host, SteppingHost) and not isinstance(host, FrameNaming)
    with pytest.raises(UsageError, match=r"^bb next: The program is not being run\.$"):
        dispatch(Session(persistent=False), host, "next", "")


def _asked_of_hosts() -> set[str]:
    """The protocols the core tests a host for anywhere (`isinstance(host, P)`, `needs=(P,)`)."""
    names: set[str] = set()
    for path in (ROOT / "plugin" / "unsplit").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" \
                    and len(node.args) == 2 and getattr(node.args[0], "id", "") == "host" \
                    and isinstance(node.args[1], ast.Name) and node.args[1].id[0].isupper():
                names.add(node.args[1].id)
            if isinstance(node, ast.keyword) and node.arg == "needs" and \
                    isinstance(node.value, ast.Tuple):
                names.update(e.id for e in node.value.elts if isinstance(e, ast.Name))
    return names


def _provided(host_module: Path) -> set[type]:
    """What an adapter's host module checks its host class against as it loads (PROVIDES)."""
    tree = ast.parse(host_module.read_text(), str(host_module))
    value = next(node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                 and any(getattr(t, "id", None) == "PROVIDES" for t in node.targets))
    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "check_capabilities":
        return set(CAPABILITIES)
    assert isinstance(value, ast.Tuple), ast.dump(value)
    return {PROTOCOLS[e.id] for e in value.elts if isinstance(e, ast.Name)}


PROTOCOLS: dict[str, type] = {p.__name__: p for p in (
    Host, MachineState, SelectedFrame, NativeFrames, LiveHost, FrameNaming, ExactFrames,
    DebugInfo, BreakpointHost, SteppingHost)}


@pytest.mark.parametrize("adapter", ["gdb/unsplit_gdb_impl/host.py",
                                     "lldb/unsplit_lldb_impl/host.py"])
def test_each_adapter_checks_every_protocol_the_core_asks_for(adapter: str) -> None:
    """A host method renamed or missing fails the adapter as it loads, whichever command
    needs it: what an adapter checks covers each protocol the core asks a host for (LiveHost's
    parts too: `bb bt` asks for registers, memory, the selected frame, the native frames)."""
    asked = _asked_of_hosts()
    assert {"LiveHost", "MachineState", "SelectedFrame", "NativeFrames"} <= asked
    provided = _provided(ROOT / adapter)
    uncovered = sorted(name for name in asked
                       if not any(PROTOCOLS[name] in p.__mro__ for p in provided))
    assert uncovered == []


def test_a_host_class_without_a_capability_fails_the_check() -> None:
    with pytest.raises(TypeError, match=r"^_Stepper lacks the methods of .*LiveHost"):
        check_capabilities(_Stepper)
