"""What an IDE on the Debug Adapter Protocol sees of a crash in moved code (issue 16 item 3):
lldb-dap-22 (LLVM's VS Code extension) with the plugin imported by `initCommands`, and GDB's own
DAP interpreter (`gdb -i dap`, GDB >= 14: GDB 18.1 from tools/debuggers.sh) with the plugin
sourced. Nothing else is configured: `stackTrace` names each split frame by its procedure, with
`source.path` the real file and the true line, live and from a core.

Oracles: the procedure chain gdb_probe.py recorded when the zoo was built (facts `crash`) and the
lines of the source's `BB:` markers; never unsplit's output."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .. import builders
from ..conftest import ROOT, facts
from .conftest import gdb_at_least
from .driver_dap import DapSession
from .driver_gdb import PLUGIN as GDB_PLUGIN
from .driver_lldb import PLUGIN as LLDB_PLUGIN

pytestmark = pytest.mark.e2e

LLDB_DAP = os.environ.get("UNSPLIT_LLDB_DAP", "lldb-dap-22")
CHAIN = [("transfer", "crash site"), ("run", "run cold call"), ("main", "main cold call")]


@pytest.fixture
def dap(tmp_path: Path) -> Iterator[Any]:
    sessions: list[DapSession] = []

    def start(argv: list[str]) -> DapSession:
        session = DapSession(argv, env={"UNSPLIT_CACHE": str(tmp_path / "cache")})
        sessions.append(session)
        session.request("initialize", adapterID="unsplit-test", clientID="unsplit-test",
                        linesStartAt1=True, columnsStartAt1=True, pathFormat="path")
        return session
    yield start
    for s in sessions:
        s.close()


def _stopped_frames(session: DapSession, request: str, **arguments: Any) -> list[dict[str, Any]]:
    """`launch`/`attach`, configurationDone, the stop, and the stack of the stopped thread."""
    session.send(request, **arguments)
    session.wait("event", "initialized")
    session.request("configurationDone")
    stopped = session.wait("event", "stopped")
    thread = stopped["body"].get("threadId") or session.request("threads")["threads"][0]["id"]
    frames: list[dict[str, Any]] = session.request("stackTrace", threadId=thread, startFrame=0,
                                                   levels=20)["stackFrames"]
    return frames


def _check(frames: list[dict[str, Any]], f: dict[str, Any], tagged: bool) -> None:
    """The first frames are the crash chain: named by procedure (GDB's frame filter adds the
    fragment tag the zoo's gdb probe recorded, `transfer [cold.1]`; LLDB's names come from the
    DWARF file: `transfer`), in crash.c, on the markers' lines. Without the plugin both
    adapters name these frames by their fragment symbols (`transfer.cold.1`), with no source
    and no line (test_without_the_plugin_the_checks_fail)."""
    assert f["crash"]["expected_chain"] == [p for p, _ in CHAIN]
    markers = f["markers"]["crash.c"]
    for frame, (procedure, marker), fact in zip(frames, CHAIN, f["crash"]["frames"],
                                                strict=False):
        assert fact["procedure"] == procedure, fact
        expected = f"{procedure} [{fact['fragment']}]" if tagged else procedure
        assert frame["name"] == expected, frame
        source = frame.get("source") or {}
        assert source.get("path") and os.path.isfile(source["path"]), frame
        assert Path(source["path"]).name == "crash.c", frame
        assert frame["line"] == markers[marker], frame


def _gdb_dap(plugin: bool = True) -> list[str]:
    argv = [gdb_at_least(14), "-i", "dap", "-nx", "-iex", "set debuginfod enabled off"]
    return argv + (["-iex", f"source {GDB_PLUGIN}"] if plugin else [])


def _lldb_dap_init(plugin: bool = True) -> list[str]:
    if shutil.which(LLDB_DAP) is None:
        pytest.fail(f"{LLDB_DAP} is not installed (setup.sh installs lldb-22, which has it)")
    return [f'command script import "{LLDB_PLUGIN}"'] if plugin else []


@pytest.mark.parametrize("variant", ["bolt-all", "bolt-random2", "bolt-cdsplit"])
def test_lldb_dap_live_crash_in_moved_code(dap: Any, zoo: dict[str, Any], variant: str) -> None:
    init = _lldb_dap_init()
    f = facts(zoo, variant, "crash")
    assert not f["has_debug_info"]
    session = dap([LLDB_DAP])
    frames = _stopped_frames(session, "launch", program=str(ROOT / f["binary"]),
                             args=f["crash"]["argv"][1:], initCommands=init)
    _check(frames, f, tagged=False)
    pcs = [int(fr["instructionPointerReference"], 16) for fr in frames[:3]]
    assert pcs == [int(fr["pc"], 16) for fr in f["crash"]["frames"][:3]], pcs
    plain = dap([LLDB_DAP])  # the pre-BOLT input (its own DWARF) at the same crash
    theirs = _stopped_frames(plain, "launch", program=str(ROOT / f["input"]),
                             args=f["crash"]["argv"][1:], initCommands=[])
    assert _values(session, frames[0]) == _values(plain, theirs[0]) != {}, _values(plain, theirs[0])


def _values(session: DapSession, frame: dict[str, Any]) -> dict[str, str]:
    """The Variables pane of `frame` (every scope's variables), pointers left out (the two
    programs' stacks differ)."""
    out: dict[str, str] = {}
    for scope in session.request("scopes", frameId=frame["id"])["scopes"]:
        if scope.get("name") == "Registers":
            continue
        ref = scope["variablesReference"]
        for v in session.request("variables", variablesReference=ref)["variables"]:
            if not v.get("value", "").startswith("0x"):
                out[f"{scope['name']}.{v['name']}"] = v.get("value", "")
    return out


def test_lldb_dap_core_of_crash_in_moved_code(dap: Any, zoo: dict[str, Any]) -> None:
    init = _lldb_dap_init()
    f = facts(zoo, "bolt-all", "crash")
    session = dap([LLDB_DAP])
    frames = _stopped_frames(session, "attach", program=str(ROOT / f["binary"]),
                             coreFile=str(ROOT / f["crash"]["core"]), initCommands=init)
    _check(frames, f, tagged=False)


@pytest.mark.parametrize("variant", ["bolt-all", "bolt-cdsplit"])
def test_gdb_dap_live_crash_in_moved_code(dap: Any, zoo: dict[str, Any], variant: str) -> None:
    f = facts(zoo, variant, "crash")
    session = dap(_gdb_dap())
    frames = _stopped_frames(session, "launch", program=str(ROOT / f["binary"]),
                             args=f["crash"]["argv"][1:])
    _check(frames, f, tagged=True)


@pytest.mark.parametrize("adapter", ["lldb-dap", "gdb"])
def test_without_the_plugin_the_checks_fail(dap: Any, zoo: dict[str, Any], adapter: str) -> None:
    """The premise of the checks above: each adapter alone does not pass them (it names the
    frames `transfer.cold.1`, with no source or line), so what they see is the plugin's."""
    f = facts(zoo, "bolt-all", "crash")
    if adapter == "gdb":
        frames = _stopped_frames(dap(_gdb_dap(plugin=False)), "launch",
                                 program=str(ROOT / f["binary"]), args=f["crash"]["argv"][1:])
    else:
        frames = _stopped_frames(dap([LLDB_DAP]), "launch", program=str(ROOT / f["binary"]),
                                 args=f["crash"]["argv"][1:],
                                 initCommands=_lldb_dap_init(plugin=False))
    assert len(frames) >= len(CHAIN) and frames[0]["name"].startswith("transfer.cold"), frames
    with pytest.raises(AssertionError):
        _check(frames, f, tagged=adapter == "gdb")


def test_gdb_dap_sources_are_full_paths(dap: Any, tmp_path: Path) -> None:
    """A program built from a relative source name (`gcc crash.c`, as make and Bazel do): GDB's
    DAP gives each frame's source as the full path (DAPFrameDecorator), and so must the frames
    the plugin names, or an IDE cannot open the file. The oracle is the file itself."""
    work = tmp_path / "rel"
    work.mkdir()
    source = (ROOT / "fixtures" / "src" / "crash.c").read_text()
    builders.gcc_pgo_build(work, {"crash.c": source},
                           [["gcc", "-O2", "-g", "crash.c", "-o", "crash"]], train=["./crash"])
    nm = subprocess.run(["nm", str(work / "crash")], capture_output=True, text=True,
                        check=True).stdout
    assert re.search(r" t transfer\.cold$", nm, re.M), nm  # the premise: GCC split transfer
    frames = _stopped_frames(dap(_gdb_dap()), "launch", program=str(work / "crash"),
                             args=["crash"], cwd=str(work))
    # The frames are the plugin's (GDB alone names them `transfer`, `run`, `main`, from the
    # DWARF): the crash is in transfer.cold, called from the cold parts nm lists.
    names = [f"{p} [cold]" if re.search(rf" t {p}\.cold$", nm, re.M) else p
             for p in ("transfer", "run", "main")]
    assert [f["name"] for f in frames[:3]] == names, frames[:3]
    sources = [f["source"]["path"] for f in frames[:3]]
    assert sources == [str(work / "crash.c")] * 3, frames[:3]


def _dlopen_park_stop(session: DapSession, f: dict[str, Any], how: str) -> dict[str, Any]:
    """lldb-dap runs bolt-dlopen's workers with a function breakpoint at the library's park
    (not loaded yet: workers dlopen()s it) and the plugin imported by `how`; returns the stack
    of the first thread to stop there, whose frame 1 is in work's cold fragment."""
    load = [f'command script import "{LLDB_PLUGIN}"']
    commands = {"preRunCommands": load} if how == "preRunCommands" else {"initCommands": load}
    session.send("launch", program=str(ROOT / f["executable"]), args=["crash"], **commands)
    session.wait("event", "initialized")
    session.request("setFunctionBreakpoints", breakpoints=[{"name": "park"}])
    session.request("configurationDone")
    stopped = session.wait("event", "stopped")
    assert stopped["body"]["reason"] == "breakpoint", stopped
    frames: list[dict[str, Any]] = session.request(
        "stackTrace", threadId=stopped["body"]["threadId"], startFrame=0, levels=20)["stackFrames"]
    return frames


@pytest.mark.parametrize("how", ["initCommands", "preRunCommands", "warm cache"])
def test_lldb_dap_dlopen_library_callers_in_moved_code(dap: Any, zoo: dict[str, Any],
                                                      how: str) -> None:
    """A BOLTed library loaded by dlopen(), a stop in its hot code (park) whose caller is in a
    cold fragment (work.cold): the IDE names the caller `work`, in libwork.c, on the line of the
    call, with nothing typed in the debug console. The library gets unsplit's debug file when the
    plugin first sees it, not only once a thread's pc is in its moved code. Oracles: the frames
    gdb unwound at the fixture's crash (park <- work.cold, by nm) and the source's markers."""
    if shutil.which(LLDB_DAP) is None:
        pytest.fail(f"{LLDB_DAP} is not installed (setup.sh installs lldb-22, which has it)")
    f = facts(zoo, "bolt-dlopen", "libwork")
    parked = [x for x in f["crash"]["threads"][-1]["frames"] if x["module"] == "libwork.so"]
    assert [x["symbol"] for x in parked] == ["park", "work.cold"]  # the premise
    if how == "warm cache":  # a first session leaves its files in the cache; the second counts
        _dlopen_park_stop(dap([LLDB_DAP]), f, "initCommands")
    frames = _dlopen_park_stop(dap([LLDB_DAP]), f, how)
    assert frames[0]["name"] == "park", frames[:2]
    caller, source = frames[1], frames[1].get("source") or {}
    assert caller["name"] == "work", frames[:2]
    assert source.get("path") and Path(source["path"]).name == "libwork.c", caller
    assert os.path.isfile(source["path"]), caller
    assert caller["line"] == f["markers"]["libwork.c"]["work cold park call"], caller


def test_lldb_dap_names_moved_frames_of_a_module_over_the_limit(
        dap: Any, zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module no source of lines describes (a BOLT output whose pre-BOLT input is not at
    hand, as a BOLTed Debian libLLVM's is nowhere) gets its file of names whatever its size:
    with the limit for files with lines at 0 KB, the IDE still names each frame in moved code
    by its procedure, not by its fragment symbol (`transfer.cold.1`, what lldb-dap says with
    no file). Oracle: the chain the zoo's gdb probe recorded at the crash (facts)."""
    init = _lldb_dap_init()
    f = facts(zoo, "bolt-all", "crash")
    (tmp_path / "alone").mkdir()
    binary = tmp_path / "alone" / "crash"
    shutil.copy2(ROOT / f["binary"], binary)  # its input stays in the fixture's input/
    monkeypatch.setenv("UNSPLIT_DEBUGINFO_MAX_KB", "0")
    monkeypatch.delenv("UNSPLIT_INPUT_PATH", raising=False)
    monkeypatch.setenv("DEBUGINFOD_CACHE_PATH", str(tmp_path / "no-debuginfod"))
    monkeypatch.delenv("DEBUGINFOD_URLS", raising=False)
    frames = _stopped_frames(dap([LLDB_DAP]), "attach", program=str(binary),
                             coreFile=str(ROOT / f["crash"]["core"]), initCommands=init)
    assert [x["procedure"] for x in f["crash"]["frames"][:3]] == f["crash"]["expected_chain"]
    assert [x["name"] for x in frames[:3]] == f["crash"]["expected_chain"], frames[:3]
    assert not any("___lldb_unnamed_symbol" in x["name"] for x in frames), frames



def _alone(tmp_path: Path, f: dict[str, Any], monkeypatch: pytest.MonkeyPatch
           ) -> tuple[Path, Path, Any]:
    """`f`'s binary copied alone (no pre-BOLT input beside it: its debug file can only name its
    procedures, as a stripped library BOLTed without its input), where the session's debug
    file of it goes (the dap fixture's cache), and that file's lock taken, as a second writer
    on one cache finds it: the file waits until it is released. The session takes the module
    for one whose file takes a while (more code than UNSPLIT_DEBUGINFO_MAX_KB, 0 here: a
    BOLTed libLLVM passes the default 512 KB)."""
    from unsplit.debuginfo.cache import path_for
    from unsplit.elf.binary import Binary

    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UNSPLIT_DEBUGINFO_MAX_KB", "0")
    (tmp_path / "alone").mkdir()
    binary = Path(shutil.copy2(ROOT / f["binary"], tmp_path / "alone"))
    found = path_for(Binary(str(binary)))
    assert found is not None and found.endswith("-no-input.debug"), found
    path = Path(found)
    path.parent.mkdir(parents=True)
    lock = open(f"{path}.lock", "ab")
    fcntl.flock(lock, fcntl.LOCK_EX)
    return binary, path, lock


def _said(session: DapSession, pattern: str, timeout: float = 120) -> str:
    """The first console line matching `pattern`, waiting for it."""
    deadline = time.monotonic() + timeout
    while not (m := re.search(pattern, session.transcript, re.M)):
        session.wait("event", "output", timeout=max(deadline - time.monotonic(), 0.1))
    return m[0]


def _symbol_file(session: DapSession, binary: Path) -> str:
    """The symbol file LLDB reads for `binary` (the `modules` request)."""
    for module in session.request("modules")["modules"]:
        if module.get("path") == str(binary):
            return str(module.get("symbolFilePath", ""))
    raise AssertionError(f"{binary} is not among the modules")


def _crash_frames(frames: list[dict[str, Any]], f: dict[str, Any]) -> None:
    """The crash chain by procedure, at the pcs of the zoo's gdb probe: named, and not one
    frame invented or lost."""
    assert [fr["name"] for fr in frames[:3]] == [p for p, _ in CHAIN], frames[:3]
    pcs = [int(fr["instructionPointerReference"], 16) for fr in frames[:3]]
    assert pcs == [int(fr["pc"], 16) for fr in f["crash"]["frames"][:3]], pcs


@pytest.mark.parametrize("variant", ["bolt-all", "bolt-random2"])
def test_lldb_dap_core_names_frames_before_the_debug_file_is_written(
        dap: Any, zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        variant: str) -> None:
    """A core whose module's debug file of names is not written yet: the first stackTrace
    names every frame in moved code by its procedure, at the true pcs, while the file is
    still to be written (LLDB reads the names file given at once), and once it is written
    LLDB reads it instead and the frames stay the same."""
    init = _lldb_dap_init()
    f = facts(zoo, variant, "crash")
    binary, path, lock = _alone(tmp_path, f, monkeypatch)
    session = dap([LLDB_DAP])
    frames = _stopped_frames(session, "attach", program=str(binary),
                             coreFile=str(ROOT / f["crash"]["core"]), initCommands=init)
    _crash_frames(frames, f)
    assert not path.exists()
    first = _symbol_file(session, binary)
    assert first.startswith(str(tmp_path / "cache")) and first != str(path), first
    lock.close()
    said = _said(session, r"^unsplit: debug info for split module crash \(.*\)$")
    assert str(path) in said
    assert _symbol_file(session, binary) == str(path)
    thread = session.request("threads")["threads"][0]["id"]
    _crash_frames(session.request("stackTrace", threadId=thread, startFrame=0,
                                  levels=20)["stackFrames"], f)


_WRITER_SEEN = """
import os, time

def _writers():
    found = []
    for task in os.listdir("/proc/self/task"):
        try:
            children = open(f"/proc/self/task/{task}/children").read().split()
        except OSError:
            continue
        for child in children:
            try:
                if b"unsplit.debuginfo.background" in open(f"/proc/{child}/cmdline", "rb").read():
                    found.append(child)
            except OSError:
                pass
    return found

class WriterSeen:
    def __init__(self, target, extra_args, internal_dict):
        pass

    def handle_stop(self, exe_ctx, stream):
        end = time.monotonic() + 30
        while not _writers() and time.monotonic() < end:
            time.sleep(0.05)
        with open(os.environ["UNSPLIT_TEST_SEEN"], "w") as f:
            f.write("running" if _writers() else "none")
        return True
"""


def test_lldb_dap_core_starts_the_writer_while_lldb_loads_the_core(
        dap: Any, zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The names file's writer is started as soon as LLDB lists the core's modules, before
    any stop hook runs (LLDB reads the modules' symbol tables in between: seconds on a
    BOLTed libLLVM): a stop hook added before the plugin's, which runs first, already finds
    the writer among lldb-dap's child processes. Then the frames are named as before."""
    init = _lldb_dap_init()
    f = facts(zoo, "bolt-all", "crash")
    binary, path, lock = _alone(tmp_path, f, monkeypatch)
    (tmp_path / "writer_seen.py").write_text(_WRITER_SEEN)
    seen = tmp_path / "seen"
    monkeypatch.setenv("UNSPLIT_TEST_SEEN", str(seen))
    first = [f'command script import "{tmp_path / "writer_seen.py"}"',
             "target stop-hook add -P writer_seen.WriterSeen"]
    session = dap([LLDB_DAP])
    frames = _stopped_frames(session, "attach", program=str(binary),
                             coreFile=str(ROOT / f["crash"]["core"]), initCommands=first + init)
    assert seen.read_text() == "running", session.transcript
    _crash_frames(frames, f)
    assert not path.exists()  # the names file alone
    lock.close()
    _said(session, r"^unsplit: debug info for split module crash \(.*\)$")
    assert _symbol_file(session, binary) == str(path)


@pytest.mark.parametrize("blocked", ["debug file", "both"])
def test_lldb_dap_writer_that_cannot_write_says_one_line(
        dap: Any, zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        blocked: str) -> None:
    """The cache cannot take the debug file, or neither file (a directory has its name): one
    line says why there is no debug file, no traceback, and the session goes on; the frames
    keep their names file's names where it was made."""
    from unsplit.debuginfo.cache import names_path

    init = _lldb_dap_init()
    f = facts(zoo, "bolt-all", "crash")
    binary, path, lock = _alone(tmp_path, f, monkeypatch)
    (path / "taken").mkdir(parents=True)
    if blocked == "both":
        (Path(names_path(str(path))) / "taken").mkdir(parents=True)
    lock.close()
    session = dap([LLDB_DAP])
    frames = _stopped_frames(session, "attach", program=str(binary),
                             coreFile=str(ROOT / f["crash"]["core"]), initCommands=init)
    if blocked == "both":  # LLDB's own names: the module's symbols
        assert frames[0]["name"].startswith("transfer.cold"), frames[:3]
    else:
        _crash_frames(frames, f)
    _said(session, r"^unsplit: no debug file for crash: cannot make one: .*$")
    lines = [line for line in session.transcript.splitlines() if line.startswith(
        ("unsplit: no debug file", "unsplit: cannot load", "unsplit: debug info for"))]
    assert len(lines) == 1, session.transcript


@pytest.mark.parametrize("variant", ["bolt-all", "gcc-pgo-nodebug"])
def test_lldb_dap_core_gets_the_whole_debug_file_first(
        dap: Any, zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        variant: str) -> None:
    """A module whose debug file has lines and variables (its pre-BOLT input beside it:
    lldb-dap keeps a stop's variables and VS Code its stack until the next stop, which a core
    never has) and one that is not BOLT's (symbols alone, indexed at once) get the whole file
    before the first stackTrace, however big: no names file."""
    init = _lldb_dap_init()
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UNSPLIT_DEBUGINFO_MAX_KB", "0")
    f = facts(zoo, variant, "crash")
    session = dap([LLDB_DAP])
    frames = _stopped_frames(session, "attach", program=str(ROOT / f["binary"]),
                             coreFile=str(ROOT / f["crash"]["core"]), initCommands=init)
    if f["has_debug_info"] or variant.startswith("bolt"):
        _check(frames, f, tagged=False)
    else:
        assert [fr["name"] for fr in frames[:3]] == [p for p, _ in CHAIN], frames[:3]
    assert "named by" not in session.transcript, session.transcript


def test_lldb_dap_gives_the_debug_file_between_requests(
        dap: Any, zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The debug file written while lldb-dap serves a request (here a console command that
    waits until the file is written, then a while longer) replaces the names file only after
    that request: the module's symbol file is the same at the request's end as at its start,
    and the debug file's once it is answered. lldb-dap holds the target's API mutex through
    each request; a symbol file replaced under one leaves its frames with freed symbols."""
    init = _lldb_dap_init()
    f = facts(zoo, "bolt-all", "crash")
    binary, path, lock = _alone(tmp_path, f, monkeypatch)
    session = dap([LLDB_DAP])
    _crash_frames(_stopped_frames(session, "attach", program=str(binary),
                                  coreFile=str(ROOT / f["crash"]["core"]),
                                  initCommands=init), f)
    names = _symbol_file(session, binary)
    started = tmp_path / "started"
    lock_file = f"{path}.lock"
    script = (  # the debug file written, its writer ended, then time for a thread to give it
        f"import os, time; m = lldb.target.FindModule(lldb.SBFileSpec({str(binary)!r})); "
        f"a = m.GetSymbolFileSpec().fullpath; open({str(started)!r}, 'w').close(); "
        "end = time.monotonic() + 120\n"
        f"while (not os.path.exists({str(path)!r}) or os.path.exists({lock_file!r})) "
        "and time.monotonic() < end: time.sleep(0.05)\n"
        "time.sleep(2); print('symbol file:', a, '->', m.GetSymbolFileSpec().fullpath)")
    seq = session.send("evaluate", context="repl",
                       expression=f"`script exec({script!r})")
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline, session.transcript
        time.sleep(0.05)
    lock.close()  # the writer goes on
    answer = session.wait("response", "evaluate", timeout=180, seq=seq)
    assert answer.get("success"), answer
    assert answer["body"]["result"].strip() == f"symbol file: {names} -> {names}", answer
    _said(session, r"^unsplit: debug info for split module crash \(.*\)$")
    assert _symbol_file(session, binary) == str(path)


def _cfa_offset_at_start(binary: Path, start: int) -> int:
    """The CFA's offset from the stack pointer at `start`, by the FDE that begins there
    (llvm-dwarfdump-22 --eh-frame: the rules before its first advance)."""
    text = subprocess.run(["llvm-dwarfdump-22", "--eh-frame", str(binary)], capture_output=True,
                          text=True, check=True, timeout=60).stdout
    fde = re.search(rf"^\S+ \S+ \S+ FDE cie=\S+ pc=0*{start:x}\.\.\.\S+\n((?:  .*\n)*)", text,
                    re.M)
    assert fde is not None, f"no FDE starts at {start:#x}"
    offset = 8  # the CIE's (x86-64: the return address alone)
    for line in fde[1].splitlines():
        if "DW_CFA_advance_loc" in line:
            break
        if m := re.search(r"DW_CFA_def_cfa_offset: \+(\d+)", line):
            offset = int(m[1])
    return offset


def test_lldb_dap_names_file_unwinds_a_moved_frame_that_its_hot_part_set_up(
        dap: Any, zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A core stopped at the start of a moved fragment that the function's entry fragment gave
    its stack frame (BOLT's `walk.cold.0`: 48 bytes, where a function's first instruction has
    8): with the names file alone (no CFI of its own), lldb-dap's frames are those GDB unwinds
    by the module's `.eh_frame`, named by their procedures."""
    init = _lldb_dap_init()
    f = facts(zoo, "bolt-all", "recurse")
    binary, path, lock = _alone(tmp_path, f, monkeypatch)
    moved = int(f["split_functions"]["walk"]["fragments"][1]["start"], 16)
    assert _cfa_offset_at_start(binary, moved) > 8
    core = tmp_path / "walk.core"
    said = subprocess.run(
        ["gdb", "-nx", "-q", "-batch", "-ex", f"break *{moved:#x}", "-ex", "run", "-ex", "bt",
         "-ex", f"gcore {core}", "--args", str(binary)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "LC_ALL": "C"}).stdout
    truth = [int(pc, 16) for pc in re.findall(r"^#\d+ +(0x[0-9a-f]+) in ", said, re.M)]
    assert core.exists() and len(truth) >= 2 and truth[0] == moved, said
    session = dap([LLDB_DAP])
    frames = _stopped_frames(session, "attach", program=str(binary), coreFile=str(core),
                             initCommands=init)
    assert not path.exists()  # the names file alone
    assert [fr["name"] for fr in frames[:2]] == ["walk", "main"], frames[:3]
    pcs = [int(fr["instructionPointerReference"], 16) for fr in frames[:len(truth)]]
    assert pcs == truth, (pcs, said)
    lock.close()


@pytest.mark.parametrize("debuginfo", ["on", "off"])
def test_lldb_dap_bb_finish_stop_reaches_the_ide(dap: Any, zoo: dict[str, Any], debuginfo: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`bb finish` typed in lldb-dap's debug console (stopped in audit, called from run's
    moved code): lldb-dap tells the IDE of the stop (a `stopped` event), as after its own
    `thread step-out`, and the new top frame is run's moved code at the call's line in
    crash.c, with the debug file (names and lines) or without it (the CFI file's lines). Before,
    the step ran synchronously inside the command and lldb-dap never saw the stop: the IDE
    kept showing audit, as disassembly where the module has no debug file. Oracles: the
    fixture's marker line and run's fragments (facts)."""
    if debuginfo == "off":
        monkeypatch.setenv("UNSPLIT_LLDB_DEBUGINFO", "0")
    init = _lldb_dap_init()
    f = facts(zoo, "bolt-all", "crash")
    session = dap([LLDB_DAP])
    session.send("launch", program=str(ROOT / f["binary"]), args=["crash"], initCommands=init)
    session.wait("event", "initialized")
    session.request("setFunctionBreakpoints", breakpoints=[{"name": "audit"}])
    session.request("configurationDone")
    thread = session.wait("event", "stopped")["body"]["threadId"]  # audit, from main
    session.request("continue", threadId=thread)
    session.wait("event", "stopped")  # audit, from run's moved code
    top = session.request("stackTrace", threadId=thread, startFrame=0, levels=1)["stackFrames"]
    session.request("evaluate", expression="`bb finish", context="repl", frameId=top[0]["id"])
    stopped = session.wait("event", "stopped", timeout=30)
    assert stopped["body"].get("reason") == "step", stopped
    frame = session.request("stackTrace", threadId=thread, startFrame=0,
                            levels=1)["stackFrames"][0]
    source = frame.get("source") or {}
    assert Path(source.get("path") or "").name == "crash.c", frame
    assert frame["line"] == f["markers"]["crash.c"]["run cold call"], frame
    pc = int(frame["instructionPointerReference"], 16)
    assert any(int(g["start"], 16) <= pc < int(g["end"], 16) and g["fragment"] != "hot"
               for g in f["split_functions"]["run"]["fragments"]), (hex(pc), frame)


def _finish_in_dap(session: DapSession, binary: Path, init: list[str],
                   command: str) -> tuple[dict[str, Any], dict[str, str]]:
    """`binary train` stopped at transfer's third hit (called from run; it returns 0+1+2):
    `command` typed in the debug console; the top frame after the stop, and the Locals
    scope's values there."""
    session.send("launch", program=str(binary), args=["train"], initCommands=init)
    session.wait("event", "initialized")
    session.request("setFunctionBreakpoints", breakpoints=[{"name": "transfer"}])
    session.request("configurationDone")
    thread = session.wait("event", "stopped", timeout=60)["body"]["threadId"]
    for _ in range(2):
        session.request("continue", threadId=thread)
        session.wait("event", "stopped", timeout=60)
    top = session.request("stackTrace", threadId=thread, startFrame=0, levels=1)["stackFrames"]
    session.request("evaluate", expression=f"`{command}", context="repl", frameId=top[0]["id"])
    session.wait("event", "stopped", timeout=60)
    frame = session.request("stackTrace", threadId=thread, startFrame=0,
                            levels=1)["stackFrames"][0]
    scopes = session.request("scopes", frameId=frame["id"])["scopes"]
    locals_ = next(s for s in scopes if s["name"] == "Locals")
    values = session.request("variables", variablesReference=locals_["variablesReference"])
    return frame, {v["name"]: v["value"] for v in values["variables"]}


def test_lldb_dap_bb_finish_shows_the_value_returned(dap: Any, zoo: dict[str, Any]) -> None:
    """`bb finish` out of transfer (a long) in lldb-dap's debug console, BOLT output without
    DWARF given the plugin's debug file: the IDE's Locals show the value returned, as plain
    lldb-dap's `thread step-out` on the pre-BOLT input does ("(Return Value)"), with the
    caller's line. Before, the finish ran to the return address by a plan of its own, which
    reads no value: Locals had none."""
    f = facts(zoo, "bolt-all", "crash")
    theirs, said = _finish_in_dap(dap([LLDB_DAP]), ROOT / f["input"],
                                  _lldb_dap_init(plugin=False), "thread step-out")
    assert said.get("(Return Value)") == "3", said  # the premise
    ours, shown = _finish_in_dap(dap([LLDB_DAP]), ROOT / f["binary"], _lldb_dap_init(),
                                 "bb finish")
    assert (ours["name"], ours["line"]) == (theirs["name"], theirs["line"]), (ours, theirs)
    assert shown.get("(Return Value)") == said["(Return Value)"], (shown, said)
