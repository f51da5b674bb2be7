"""A pexpect driver for a real LLDB 22 session, with the plugin imported the way a user does.

Same interface as driver_gdb.GdbDriver, so one scenario table drives both debuggers:
``command(text)`` returns one command's output with the echo and the prompt stripped,
``run()`` launches the program and returns its output up to the next stop, ``backtrace()`` is
``bt``. Every expect has a timeout; the whole transcript is kept in ``transcript`` (and copied to
``log`` when given) so a failing test can attach it.

LLDB echoes each ``-O`` command with its default prompt, so the echo of
``settings set prompt "(bbtest) "`` contains our prompt: the driver synchronises on a marker
printed by a ``script`` command before it trusts the prompt.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Sequence
from types import TracebackType
from typing import IO

import pexpect

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGIN = os.path.join(REPO, "lldb", "unsplit_lldb.py")
PROMPT = "(bbtest) "
LLDB = os.environ.get("UNSPLIT_LLDB", "lldb-22")

# Everything that could make output depend on the terminal or stop for a question.
_SETTINGS = (
    f'settings set prompt "{PROMPT}"',
    "settings set use-color false",
    "settings set show-statusline false",
    "settings set show-progress false",
    "settings set show-autosuggestion false",
    "settings set auto-confirm true",
    "settings set symbols.enable-external-lookup false",
    "settings set target.load-script-from-symbol-file false",
)

_ANSI = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|[78])")
_STOPPED = re.compile(r"Process \d+ (stopped|exited with status = -?\d+)")
_SYNC = "unsplit-driver-" + "ready"


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


def _lldb_quote(word: str) -> str:
    """One argument for `process launch --` (LLDB's own quoting, not the shell's)."""
    if word and not re.search(r"[\s\"'\\`]", word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`") + '"'


def _clean(text: str) -> str:
    text = _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "")
    return text.replace(PROMPT, "").strip("\n")


class LldbDriver:
    name = "lldb"

    def __init__(self, binary: str, *, core: str | None = None, args: Sequence[str] = (),
                 plugin: bool = True, log: IO[str] | None = None,
                 startup_timeout: float = 60) -> None:
        self.binary = binary
        self.core = core
        self.args = list(args)
        self._log = _Tee(log)
        argv = ["--no-lldbinit", "--no-use-colors"]
        for setting in _SETTINGS:
            argv += ["-O", setting]
        env = dict(os.environ, TERM="dumb", LC_ALL="C.UTF-8", COLUMNS="1000", LINES="2000")
        env.pop("DEBUGINFOD_URLS", None)
        self.child = pexpect.spawn(LLDB, argv, env=env, encoding="utf-8", codec_errors="replace",
                                   dimensions=(2000, 1000), echo=False, timeout=60)
        self.child.logfile_read = self._log
        self.child.sendline(f'script print("{_SYNC[:8]}" + "{_SYNC[8:]}")')
        self._expect(_SYNC, startup_timeout, "startup")
        self.startup = self._expect_prompt(startup_timeout, "startup")
        if plugin:
            # Where ~/.lldbinit would import it: before the target exists.
            self._checked(f'command script import "{PLUGIN}"')
        create = f'target create "{binary}"'
        if core is not None:
            create = f'target create --core "{core}" "{binary}"'
        self._checked(create, startup_timeout)

    # -- the interface ------------------------------------------------------------------

    def command(self, text: str, timeout: float = 60) -> str:
        """Output of one command, prompt and echo stripped, lines joined with \\n."""
        self._log.write(f"\n>>> {text}\n")
        self.child.sendline(text)
        return self._strip_echo(text, self._expect_prompt(timeout, text))

    def run(self, timeout: float = 60) -> str:
        """Launch the program with the driver's args; output up to the next stop."""
        text = " ".join(["process launch --", *map(_lldb_quote, self.args)]).strip()
        self._log.write(f"\n>>> {text}\n")
        self.child.sendline(text)
        # The stop is reported asynchronously: wait for it, then for the prompt after it.
        try:
            self.child.expect(_STOPPED, timeout=timeout)
        except (pexpect.TIMEOUT, pexpect.EOF):
            raise DebuggerTimeout(f"lldb: no stop within {timeout}s after {text!r}\n"
                                  f"--- transcript ---\n{self.transcript}") from None
        head = (self.child.before or "") + (self.child.after or "")
        tail = self._expect_prompt(timeout, text)
        return self._strip_echo(text, _clean(head) + "\n" + tail)

    def backtrace(self) -> str:
        return self.command("bt")

    def close(self) -> None:
        if not self.child.isalive():
            return
        try:
            self.child.sendline("process kill")
            self.child.sendline("quit")
            self.child.expect(pexpect.EOF, timeout=10)
        except (pexpect.TIMEOUT, pexpect.EOF, OSError):
            pass
        finally:
            self.child.close(force=True)

    def __enter__(self) -> LldbDriver:
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
            return self.command('script print("al" + "ive")', timeout=10).strip() == "alive"
        except DebuggerTimeout:
            return False

    def _checked(self, text: str, timeout: float = 60) -> str:
        out = self.command(text, timeout)
        if "error:" in out:
            raise RuntimeError(f"lldb: {text!r} failed:\n{out}")
        return out

    @staticmethod
    def _strip_echo(text: str, out: str) -> str:
        first, _, rest = out.partition("\n")
        return rest if first.strip() == text.strip() else out

    def _expect(self, pattern: str, timeout: float, what: str) -> None:
        try:
            self.child.expect_exact(pattern, timeout=timeout)
        except pexpect.TIMEOUT:
            raise DebuggerTimeout(f"lldb: no {pattern!r} within {timeout}s after {what!r}\n"
                                  f"--- transcript ---\n{self.transcript}") from None
        except pexpect.EOF:
            raise DebuggerTimeout(f"lldb exited after {what!r}\n"
                                  f"--- transcript ---\n{self.transcript}") from None

    def _expect_prompt(self, timeout: float, what: str) -> str:
        self._expect(PROMPT, timeout, what)
        return _clean(self.child.before or "")
