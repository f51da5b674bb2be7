"""What the pexpect drivers of GDB (driver_gdb.GdbDriver) and LLDB (driver_lldb.LldbDriver) share.

One interface, so one scenario table drives both debuggers: ``command(text)`` returns one
command's output with the echo and the prompt stripped, ``run()`` starts the program and returns
its output up to the next stop, ``backtrace()`` is ``bt``, ``alive()`` says whether the session
still answers, ``close()`` (or leaving a ``with`` block) ends it. Every expect has a timeout; the
whole transcript is kept in ``transcript`` (and copied to ``log`` when given) so a failing test
can attach it, and checked for the plugin's bugs once the test is over (``bugs_shown``, run
by conftest.py for every session in ``OPENED``). The verbs (``cont``, ``break_function``,
``register``, ...) are what each debugger spells its own way, both spellings side by side in
SPELLING, so a test says what it does rather than branching on the debugger's name. A subclass
sets the class attributes and has ``_start`` (spawn the debugger, load the plugin, the binary
and the core), ``run``, and whatever of a verb is more than a spelling (LLDB's asynchronous
stops, its thread selection).
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import IO, Any, NamedTuple, Self

import pexpect

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROMPT = "(bbtest) "

# What a bug prints in a debugger: the plugin's own report (errors.py's contract), a Python
# traceback (LLDB's script interpreter, UNSPLIT_DEBUG=1), GDB's report of a Python hook that
# raised (`Python Exception <class 'KeyError'>: 'x'`).
DEBUG_FILE_LOADED = re.compile(r"unsplit: debug info for split module \S+ \(")
"""GDB's word, at a prompt, that a debug file written in the background was loaded."""
DEBUG_FILE_AWAITED = re.compile(r"\A(unsplit: waiting for the debug file of \S+ \(being written "
                                r"for [\d.]+ s\)\n)?(unsplit: debug info for split module \S+ "
                                r"\(.*\)\n)?")
"""What GDB says first on a command that waits for a debug file written in the background
(debuginfo.WAITING_COMMANDS): that it waits (if still written), then that it loaded it."""
BUG = re.compile(r"unsplit: internal error|Traceback \(most recent call last\)|Python Exception")

OPENED: list[Any] = []
"""Every session a test made (a Driver, driver_mi.MiSession, driver_dap.DapSession), in order:
conftest.py checks each one's transcript with bugs_shown when the test is over."""


def after_debug_file(out: str) -> str:
    """`out` without the lines of DEBUG_FILE_AWAITED: what the command itself said, whether
    its debug file was made before (an earlier test's cache) or is waited for."""
    return DEBUG_FILE_AWAITED.sub("", out, count=1)


def bugs_shown(transcript: str) -> list[str]:
    """The lines of ``transcript`` that show a bug of the plugin (BUG), each after the command
    that made it (the driver's ``>>> `` line) and before the line after it."""
    lines = transcript.splitlines()
    shown = []
    command = "(startup)"
    for i, line in enumerate(lines):
        if line.startswith(">>> "):
            command = line
        elif BUG.search(line):
            shown.append("\n    ".join([command, *lines[i:i + 2]]))
    return shown


class Say(NamedTuple):
    """One verb as each debugger spells it: a command (a str.format template) or a pattern."""

    gdb: str
    lldb: str


# The verbs of Driver (and what it reads back) in each debugger's words, side by side.
SPELLING = {
    "kill": Say("kill", "process kill"),  # ends the debugged process, before "quit"
    "alive": Say("echo alive\\n", 'script print("al" + "ive")'),  # prints "alive"
    "cont": Say("continue", "process continue"),
    "next": Say("next", "thread step-over"),  # the debugger's own step over a line
    "step": Say("step", "thread step-in"),  # the debugger's own step into calls
    "finish": Say("finish", "thread step-out"),  # the debugger's own run out of a frame
    "load": Say("source {plugin}", 'command script import "{plugin}"'),
    "script": Say("python", "script"),  # then the line of Python
    "break_function": Say("break {name}", "breakpoint set -n {name}"),  # past the prologue
    "break_entry": Say("break *'{name}'", "breakpoint set --skip-prologue false -n {name}"),
    "break_address": Say("break *{address:#x}", "breakpoint set -a {address:#x}"),
    "break_line": Say("break {file}:{line}", "breakpoint set -f {file} -l {line}"),
    "list_breakpoints": Say("info breakpoints", "breakpoint list"),
    # (a pattern) a location's address in the list
    "breakpoint_address": Say(r"^\S+\s+breakpoint\s+\S+\s+[yn]\s+(0x[0-9a-f]+)",
                              r"address = (0x[0-9a-f]+)"),
    "delete_breakpoints": Say("delete", "breakpoint delete --force"),
    "select_frame": Say("frame {number}", "frame select {number}"),
    "register": Say("p/x ${name}", "register read {name}"),  # prints `= 0x…`
    "all_backtraces": Say("thread apply all bt", "bt all"),
    # (a pattern) the line that starts a thread's part of all_backtraces
    "thread_head": Say(r"^Thread \d+ ", r"^[* ] thread #\d+"),
}


class DebuggerTimeout(AssertionError):
    """The debugger did not come back to its prompt in time (the transcript says where)."""


class _Tee(io.StringIO):
    """Keeps the transcript and copies it to the caller's log."""

    def __init__(self, log: IO[str] | None) -> None:
        super().__init__()
        self.log = log

    def write(self, s: str) -> int:
        if self.log is not None:
            self.log.write(s)
            self.log.flush()
        return super().write(s)


def normalize(text: str, ansi: re.Pattern[str]) -> str:
    """``text`` without terminal escape sequences (``ansi``) and carriage returns."""
    return ansi.sub("", text).replace("\r\n", "\n").replace("\r", "")


class Driver:
    """A debugger session under pexpect; subclasses set the class attributes and spawn it."""

    name: str
    error_prefix: str  # what starts the line of a command's error
    _ansi: re.Pattern[str]  # the escape sequences this debugger prints
    plugin_file: str  # the file that loads the plugin into this debugger

    # Everything that could make output depend on the terminal or stop for a question.
    _settings: tuple[str, ...]

    def __init__(self, binary: str, *, core: str | None = None, args: Sequence[str] = (),
                 plugin: bool = True, log: IO[str] | None = None,
                 startup_timeout: float = 60, env: Mapping[str, str] | None = None,
                 timeout: float = 60) -> None:
        self.extra_env = dict(env or {})  # on top of ours (a test's DEBUGINFOD_URLS, say)
        self.binary = binary
        self.core = core
        self.args = list(args)
        self.timeout = timeout  # how long a command may take, unless it says otherwise
        self._log = _Tee(log)
        OPENED.append(self)  # before the start: a bug while loading counts too
        self._start(plugin, startup_timeout)

    def _start(self, plugin: bool, startup_timeout: float) -> None:
        """Spawn the debugger; load the plugin (where `plugin`), then the binary and the core."""
        raise NotImplementedError

    def _spawn(self, program: str, argv: list[str]) -> None:
        env = dict(os.environ, TERM="dumb", LC_ALL="C.UTF-8", COLUMNS="1000", LINES="2000")
        env.pop("DEBUGINFOD_URLS", None)
        env.update(self.extra_env)
        self.child = pexpect.spawn(program, argv, env=env, encoding="utf-8",
                                   codec_errors="replace", dimensions=(2000, 1000), echo=False,
                                   timeout=60)
        self.child.logfile_read = self._log

    # -- the interface ------------------------------------------------------------------

    def command(self, text: str, timeout: float | None = None) -> str:
        """Output of one command, prompt and echo stripped, lines joined with \\n."""
        self._log.write(f"\n>>> {text}\n")
        self.child.sendline(text)
        return self._strip_echo(text, self._expect_prompt(self._patience(timeout), text))

    def command_json(self, text: str, timeout: float | None = None) -> Any:
        """The JSON value a `--json` command prints. The one other line it may share the output
        with is the plugin's word that a debug file written meanwhile was loaded (said at the
        prompt, so after the value when the writer ends while the command runs)."""
        out = self.command(text, timeout)
        values = [line for line in out.splitlines() if line[:1] in "[{"]
        others = [line for line in out.splitlines()
                  if line[:1] not in "[{" and not DEBUG_FILE_LOADED.match(line)]
        assert len(values) == 1 and not others, out
        return json.loads(values[0])

    def run(self, timeout: float | None = None) -> str:
        """Start the program with the driver's args; output up to the next stop."""
        raise NotImplementedError

    def backtrace(self) -> str:
        return self.command("bt")

    def _patience(self, timeout: float | None) -> float:
        return self.timeout if timeout is None else timeout

    # -- verbs each debugger spells its own way (SPELLING) ------------------------------------

    def spelling(self, verb: str, **fields: Any) -> str:
        """This debugger's words for `verb` (SPELLING), with `fields` filled in."""
        return str(getattr(SPELLING[verb], self.name)).format(plugin=self.plugin_file, **fields)

    def _say(self, verb: str, **fields: Any) -> str:
        return self.command(self.spelling(verb, **fields))

    def cont(self, timeout: float | None = None) -> str:
        """Continue to the next stop; the output up to it."""
        return self.until_stop(self.spelling("cont"), timeout)

    def until_stop(self, text: str, timeout: float | None = None) -> str:
        """Run `text`, a command that resumes the program; the output up to its next stop."""
        return self.command(text, timeout)

    def load_plugin(self) -> str:
        """Load the plugin the way a user's init file does (`source`, `command script import`);
        what the debugger prints."""
        return self._say("load")

    def script(self, code: str) -> str:
        """Run one line of Python in the debugger (`python CODE`, `script CODE`)."""
        return self.command(f"{self.spelling('script')} {code}")

    def break_function(self, name: str) -> str:
        """The debugger's own breakpoint on a function by name (past its prologue)."""
        return self._say("break_function", name=name)

    def break_entry(self, name: str) -> str:
        """The debugger's own breakpoint at the first instruction of function `name`."""
        return self._say("break_entry", name=name)

    def break_address(self, address: int, module: str | None = None) -> str:
        """The debugger's own breakpoint at `address` (LLDB: in `module`, where given)."""
        return self._say("break_address", address=address)

    def break_line(self, file: str, line: int) -> str:
        """The debugger's own breakpoint at `file:line`."""
        return self._say("break_line", file=file, line=line)

    def list_breakpoints(self) -> str:
        """The debugger's own list of breakpoints (`info breakpoints`, `breakpoint list`)."""
        return self._say("list_breakpoints")

    def breakpoint_addresses(self) -> set[int]:
        """Every breakpoint location address the debugger lists."""
        return {int(m.group(1), 16) for m in re.finditer(
            self.spelling("breakpoint_address"), self.list_breakpoints(), re.M)}

    def delete_breakpoints(self) -> str:
        """Delete every breakpoint, without a question."""
        return self._say("delete_breakpoints")

    def select_frame(self, number: int) -> str:
        """Select frame `number` of the current thread; what the debugger prints."""
        return self._say("select_frame", number=number)

    def select_thread(self, number: int) -> None:
        """Select the thread the debugger numbers `number`."""
        raise NotImplementedError

    def register(self, name: str, frame: int | None = None) -> int:
        """The debugger's own value of register `name` (`pc`, `rdi`, ...) in the selected
        frame, or in frame `frame` after selecting it."""
        if frame is not None:
            self.select_frame(frame)
        out = self._say("register", name=name)
        m = re.search(r"= (0x[0-9a-f]+)", out)
        assert m, out
        return int(m.group(1), 16)

    def thread_backtraces(self) -> list[str]:
        """Each thread's part of the backtrace of all threads (GDB: `thread apply all bt`,
        LLDB: `bt all`), in the debugger's order."""
        head = re.compile(self.spelling("thread_head"))
        blocks: list[list[str]] = []
        for line in self._say("all_backtraces").splitlines():
            if head.match(line):
                blocks.append([])
            if blocks:
                blocks[-1].append(line)
        return ["\n".join(b) for b in blocks]

    def close(self) -> None:
        if not self.child.isalive():
            return
        try:
            self.child.sendline(self.spelling("kill"))
            self.child.sendline("quit")
            self.child.expect(pexpect.EOF, timeout=10)
        except (pexpect.TIMEOUT, pexpect.EOF, OSError):
            pass
        finally:
            self.child.close(force=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- helpers ------------------------------------------------------------------------

    @property
    def transcript(self) -> str:
        return self._log.getvalue()

    def alive(self) -> bool:
        """Whether the session still answers a trivial command."""
        try:
            return self.command(self.spelling("alive"), timeout=10).strip() == "alive"
        except DebuggerTimeout:
            return False

    @staticmethod
    def _strip_echo(text: str, out: str) -> str:
        first, _, rest = out.partition("\n")
        return rest if first.strip() == text.strip() else out

    def _expect(self, pattern: str, timeout: float, what: str, shown: str | None = None) -> None:
        """Wait for the exact text ``pattern`` (named ``shown`` in the error, else its repr)."""
        try:
            self.child.expect_exact(pattern, timeout=timeout)
        except pexpect.TIMEOUT:
            raise DebuggerTimeout(f"{self.name}: no {shown or repr(pattern)} within {timeout}s "
                                  f"after {what!r}\n--- transcript ---\n{self.transcript}") \
                from None
        except pexpect.EOF:
            raise DebuggerTimeout(f"{self.name} exited after {what!r}\n"
                                  f"--- transcript ---\n{self.transcript}") from None

    def _expect_prompt(self, timeout: float, what: str) -> str:
        self._expect(PROMPT, timeout, what, "prompt")
        return self._clean(self.child.before or "")

    def _clean(self, text: str) -> str:
        return normalize(text, self._ansi).strip("\n")
