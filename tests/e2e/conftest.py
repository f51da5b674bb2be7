"""End-to-end fixtures: the zoo (built once, cached) and real debugger sessions.

`debugger` is parametrized over gdb and lldb, so one scenario table drives both; each session
logs to a file that is printed when a test fails. Every session a test made is checked once the
test is over (``no_hidden_bugs``): a bug the plugin reported, or a traceback, fails the test
unless it is marked ``expect_internal_error``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT
from .driver_base import OPENED, bugs_shown


def json_lines(text: str, starts: tuple[str, ...] = ("{",)) -> list[Any]:
    """The JSON documents in a command's output: its lines that start with one of ``starts``."""
    return [json.loads(line) for line in text.splitlines() if line.startswith(starts)]


def gdb_at_least(major: int) -> str:
    """The GDB under test (UNSPLIT_GDB, else gdb) when it is that new, else the GDB 18.1 that
    `make debuggers` puts in .debuggers/ (`make test` makes it before the suite runs)."""
    for candidate in (os.environ.get("UNSPLIT_GDB", "gdb"),
                      str(ROOT / ".debuggers" / "bin" / "gdb-18")):
        if shutil.which(candidate) is None:
            continue
        out = subprocess.run([candidate, "-nx", "-batch", "-ex", "show version"],
                             capture_output=True, text=True, timeout=60).stdout
        m = re.search(r"GNU gdb .*?(\d+)\.\d+", out)
        if m and int(m[1]) >= major:
            return candidate
    pytest.fail(f"no GDB >= {major}: run `make debuggers` (GDB 18.1 into .debuggers/)")


def stop_names(stop: str, procedure: str, fragment: str, line: int | None = None) -> bool:
    """The stop report names the procedure, never a fragment's symbol (`transfer.cold.1`):
    `transfer [cold.1]` where the plugin prints the location, or `transfer (` where the
    debugger's own line is already right (GDB reading unsplit's debug file, or DWARF whose
    ranges cover the moved code: then the plugin adds no second line). With `line`, that line
    is the one shown."""
    name = rf"\b{re.escape(procedure)}(?: \[{re.escape(fragment)}\](?: ?\(|\+0x| \+ \d| at |$)| \()"
    if re.search(name, stop) is None:
        return False
    return line is None or re.search(rf"[:\s]{line}(?::\d+)?\b", stop) is not None


def start_crash(debugger: Callable[..., Any], f: dict[str, Any], mode: str) -> Any:
    """A session on the zoo's crash program ``f``: on its core ("core"), or run to the crash."""
    binary = ROOT / f["binary"]
    if mode == "core":
        return debugger(binary, core=str(ROOT / f["crash"]["core"]))
    session = debugger(binary, args=["crash"])
    session.run()
    return session


def _driver_class(name: str) -> Any:
    # The debugger itself comes from UNSPLIT_GDB / UNSPLIT_LLDB (`make matrix`), else gdb, lldb-22.
    if name == "gdb":
        from .driver_gdb import GDB, GdbDriver

        if shutil.which(GDB) is None:
            pytest.skip(f"{GDB} not installed")
        return GdbDriver
    from .driver_lldb import LLDB, LldbDriver

    if shutil.which(LLDB) is None:
        pytest.skip(f"{LLDB} not installed")
    return LldbDriver


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(autouse=True)
def no_hidden_bugs(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test whose sessions showed a bug of the plugin (driver_base.BUG) anywhere in their
    transcripts, also where the test's own assertions passed (a frame filter that crashed
    leaves GDB's own frame, which may be what the test wanted to see). A test marked
    ``expect_internal_error`` must show one instead. Autouse fixtures are set up first, so this
    runs after every other fixture closed its sessions (their transcripts are whole)."""
    first = len(OPENED)
    yield
    made, OPENED[first:] = OPENED[first:], []
    rep = getattr(request.node, "rep_call", None)
    if rep is None or not rep.passed:
        return  # the test failed or was skipped: its own report says more
    shown = [f"{type(s).__name__} #{i}: {bug}" for i, s in enumerate(made)
             for bug in bugs_shown(s.transcript)]
    if request.node.get_closest_marker("expect_internal_error") is not None:
        assert shown, "marked expect_internal_error, but no session showed an internal error"
        return
    assert not shown, "a session showed a bug of the plugin:\n" + "\n".join(shown)


def _sessions(request: pytest.FixtureRequest, tmp_path: Path, name: str
              ) -> Iterator[Callable[..., Any]]:
    """A factory of `name` sessions; each logs to a file printed when the test fails."""
    cls = _driver_class(name)
    sessions: list[Any] = []
    logs: list[Path] = []

    def start(binary: str | Path, **kwargs: Any) -> Any:
        log_path = tmp_path / f"{name}-{len(logs)}.log"
        logs.append(log_path)
        log = log_path.open("w")
        session = cls(str(binary), log=log, **kwargs)
        sessions.append(session)
        return session

    start.name = name  # type: ignore[attr-defined]
    yield start
    for s in sessions:
        try:
            s.close()
        except Exception:  # a dead session is reported by the test itself
            pass
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        for path in logs:
            print(f"----- {path.name} -----\n{path.read_text(errors='replace')[-20000:]}")


@pytest.fixture(params=["gdb", "lldb"])
def debugger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """A factory: debugger(binary, core=None, args=(), plugin=True) -> a started session."""
    yield from _sessions(request, tmp_path, request.param)


@pytest.fixture
def lldb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """The same factory for LLDB alone, for what only LLDB has."""
    yield from _sessions(request, tmp_path, "lldb")


@pytest.fixture
def gdb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """The same factory for GDB alone, for what only GDB has."""
    yield from _sessions(request, tmp_path, "gdb")


@pytest.fixture
def debug_file_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """GDB's sessions write their debug files before the first prompt, not in the background:
    for a test that reads one session's answers against each other on a core, where the
    background writer's file, loaded at whichever prompt or command comes after it is done,
    changed GDB's own frames between two commands (`bt -no-filters` named `transfer` where
    `bt` named `transfer.cold`) and put `unsplit: debug info for split module …` into the
    output of whichever command came then. The writer in the background is
    test_debuginfo_background's."""
    monkeypatch.setenv("UNSPLIT_DEBUGINFO_BACKGROUND", "0")


def resume(session: Any, timeout: float | None = None) -> str:
    """Continue to the next stop; the output up to it (each driver's `cont`)."""
    return str(session.cont(timeout))
