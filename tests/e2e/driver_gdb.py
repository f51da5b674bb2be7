"""A pexpect driver for a real GDB session, with the plugin loaded the way a user loads it.

Same interface as driver_lldb.LldbDriver, so one scenario table drives both debuggers:
``command(text)`` returns one command's output with the echo and the prompt stripped,
``run()`` starts the program and returns its output up to the next stop, ``backtrace()`` is
``bt``. Every expect has a timeout; the whole transcript is kept in ``transcript`` (and copied to
``log`` when given) so a failing test can attach it.
"""

from __future__ import annotations

import io
import os
import re
import shlex
from collections.abc import Sequence
from types import TracebackType
from typing import IO

import pexpect

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGIN = os.path.join(REPO, "gdb", "unsplit_gdb.py")
PROMPT = "(bbtest) "
GDB = os.environ.get("UNSPLIT_GDB", "gdb")

# Everything that could make output depend on the terminal or stop for a question.
_SETTINGS = (
    f"set prompt {PROMPT}",
    "set style enabled off",
    "set pagination off",
    "set height 0",
    "set width 0",
    "set confirm off",
    "set debuginfod enabled off",
)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


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


class GdbDriver:
    name = "gdb"

    def __init__(self, binary: str, *, core: str | None = None, args: Sequence[str] = (),
                 plugin: bool = True, log: IO[str] | None = None,
                 startup_timeout: float = 60) -> None:
        self.binary = binary
        self.core = core
        self.args = list(args)
        self._log = _Tee(log)
        argv = ["-nx", "-q"]
        for setting in _SETTINGS:
            argv += ["-iex", setting]
        if plugin:
            # -iex runs where ~/.gdbinit would: before the binary and the core are loaded.
            argv += ["-iex", f"source {PLUGIN}"]
        argv.append(binary)
        if core is not None:
            argv.append(core)
        env = dict(os.environ, TERM="dumb", LC_ALL="C.UTF-8", COLUMNS="1000", LINES="2000")
        env.pop("DEBUGINFOD_URLS", None)
        self.child = pexpect.spawn(GDB, argv, env=env, encoding="utf-8", codec_errors="replace",
                                   dimensions=(2000, 1000), echo=False, timeout=60)
        self.child.logfile_read = self._log
        self.startup = self._expect_prompt(startup_timeout, "startup")

    # -- the interface ------------------------------------------------------------------

    def command(self, text: str, timeout: float = 60) -> str:
        """Output of one command, prompt and echo stripped, lines joined with \\n."""
        self._log.write(f"\n>>> {text}\n")
        self.child.sendline(text)
        out = self._expect_prompt(timeout, text)
        first, _, rest = out.partition("\n")
        return rest if first.strip() == text.strip() else out

    def run(self, timeout: float = 60) -> str:
        """Start the program with the driver's args; output up to the next stop."""
        return self.command(" ".join(["run", *map(shlex.quote, self.args)]), timeout)

    def backtrace(self) -> str:
        return self.command("bt")

    def close(self) -> None:
        if not self.child.isalive():
            return
        try:
            self.child.sendline("kill")
            self.child.sendline("quit")
            self.child.expect(pexpect.EOF, timeout=10)
        except (pexpect.TIMEOUT, pexpect.EOF, OSError):
            pass
        finally:
            self.child.close(force=True)

    def __enter__(self) -> GdbDriver:
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
            return self.command("echo alive\\n", timeout=10).strip() == "alive"
        except DebuggerTimeout:
            return False

    def _expect_prompt(self, timeout: float, what: str) -> str:
        try:
            self.child.expect_exact(PROMPT, timeout=timeout)
        except pexpect.TIMEOUT:
            raise DebuggerTimeout(f"gdb: no prompt within {timeout}s after {what!r}\n"
                                  f"--- transcript ---\n{self.transcript}") from None
        except pexpect.EOF:
            raise DebuggerTimeout(f"gdb exited after {what!r}\n"
                                  f"--- transcript ---\n{self.transcript}") from None
        before = self.child.before or ""
        return _ANSI.sub("", before).replace("\r\n", "\n").replace("\r", "").strip("\n")
