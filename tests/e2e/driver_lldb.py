"""A pexpect driver for a real LLDB 22 session, with the plugin imported the way a user does.

The interface (``command``, ``run``, ``backtrace``, ``alive``, ``close``, ``transcript``) is
driver_base.Driver's, shared with driver_gdb.GdbDriver, so one scenario table drives both
debuggers.

LLDB echoes each ``-O`` command with its default prompt, so the echo of
``settings set prompt "(bbtest) "`` contains our prompt: the driver synchronises on a marker
printed by a ``script`` command before it trusts the prompt.
"""

from __future__ import annotations

import os
import re
import time

import pexpect

from .driver_base import PROMPT, REPO, DebuggerTimeout, Driver, normalize

__all__ = ["LLDB", "PLUGIN", "PROMPT", "REPO", "DebuggerTimeout", "LldbDriver"]

PLUGIN = os.path.join(REPO, "lldb", "unsplit_lldb.py")
LLDB = os.environ.get("UNSPLIT_LLDB", "lldb-22")

_ANSI = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|[78])")
# A stop LLDB keeps: `Process N stopped` and the thread that stopped for a reason (`* thread #1,
# ..., stop reason = breakpoint 1.1`), or the end of the process. LLDB also prints `Process N
# stopped` alone for a stop it resumes from at once (after a stop hook that continues): a
# command that waits for a stop returned there, and the next one found the process running.
_STOPPED = re.compile(r"Process \d+ stopped\r?\n(?:[^\n]*\n)*?[^\n]*thread #\d+[^\n]*stop reason = "
                      r"[^\r\n]*|Process \d+ exited with status = -?\d+")
_SYNC = "unsplit-driver-" + "ready"
# What LLDB prints before it redraws its prompt after output that came while it waited at the
# prompt (a stop printed again, a process's output), unlike the prompt that ends a command.
_REDRAW = "\x1b[1G\x1b[J"


def _lldb_quote(word: str) -> str:
    """One argument for `process launch --` (LLDB's own quoting, not the shell's)."""
    if word and not re.search(r"[\s\"'\\`]", word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`") + '"'


def _clean(text: str) -> str:
    """LLDB output without escapes, carriage returns, and the prompts it redraws inside it."""
    return normalize(text, _ANSI).replace(PROMPT, "").strip("\n")


class LldbDriver(Driver):
    name = "lldb"
    error_prefix = "error: "
    plugin_file = PLUGIN
    _ansi = _ANSI
    _clean = staticmethod(_clean)
    _settings = (f'settings set prompt "{PROMPT}"', "settings set use-color false",
                 "settings set show-statusline false", "settings set show-progress false",
                 "settings set show-autosuggestion false", "settings set auto-confirm true",
                 "settings set symbols.enable-external-lookup false",
                 "settings set target.load-script-from-symbol-file false")

    def _start(self, plugin: bool, startup_timeout: float) -> None:
        argv = ["--no-lldbinit", "--no-use-colors"]
        for setting in self._settings:
            argv += ["-O", setting]
        self._spawn(LLDB, argv)
        self.child.sendline(f'script print("{_SYNC[:8]}" + "{_SYNC[8:]}")')
        self._expect(_SYNC, startup_timeout, "startup")
        self.startup = self._expect_prompt(startup_timeout, "startup")
        if plugin:
            # Where ~/.lldbinit would import it: before the target exists.
            self._checked(self.spelling("load"))
        create = f'target create "{self.binary}"'
        if self.core is not None:
            create = f'target create --core "{self.core}" "{self.binary}"'
        self._checked(create, startup_timeout)

    def command(self, text: str, timeout: float | None = None) -> str:
        """As Driver.command, past LLDB's asynchronous output: a prompt LLDB redraws after it
        (for instance a stop printed again while the command ran) does not end the command;
        what came before the echo of the command is not its output."""
        self._log.write(f"\n>>> {text}\n")
        self.child.sendline(text)
        deadline = time.monotonic() + self._patience(timeout)
        out = ""
        while True:
            self._expect(PROMPT, max(deadline - time.monotonic(), 0.1), text, "prompt")
            before = self.child.before or ""
            if not before.endswith(_REDRAW):
                break
            out += before + PROMPT  # the command's output is still to come
        raw = out + before
        if out:  # what came before the echo of the command is not its output
            echo = raw.rfind(text.strip() + "\r\n") if text.strip() else -1
            raw = raw[echo:] if echo >= 0 else before
        return self._strip_echo(text, _clean(raw))

    def run(self, timeout: float | None = None) -> str:
        return self.until_stop(" ".join(["process launch --", *map(_lldb_quote, self.args)])
                               .strip(), timeout)

    def break_address(self, address: int, module: str | None = None) -> str:
        if module is None:
            return super().break_address(address)
        return self.command(f"breakpoint set -s {module} -a {address:#x}")

    def select_thread(self, number: int) -> None:
        # `thread select` prints the stop description after its prompt, which would put the
        # driver one prompt behind: select through the API (the same selection).
        out = self.command("script lldb.debugger.GetSelectedTarget().GetProcess()"
                           f".SetSelectedThreadByIndexID({number})")
        assert out.strip() == "True", out

    def until_stop(self, text: str, timeout: float | None = None) -> str:
        """LLDB reports the stop asynchronously, after its prompt: wait for the report of a
        stop it keeps (a thread with a stop reason, or the exit; _STOPPED), then for the prompt
        after it."""
        timeout = self._patience(timeout)
        self._log.write(f"\n>>> {text}\n")
        self.child.sendline(text)
        try:
            self.child.expect(_STOPPED, timeout=timeout)
        except (pexpect.TIMEOUT, pexpect.EOF):
            raise DebuggerTimeout(f"lldb: no stop within {timeout}s after {text!r}\n"
                                  f"--- transcript ---\n{self.transcript}") from None
        head = (self.child.before or "") + (self.child.after or "")
        tail = self._expect_prompt(timeout, text)
        return self._strip_echo(text, _clean(head) + "\n" + tail)

    def _checked(self, text: str, timeout: float = 60) -> str:
        out = self.command(text, timeout)
        if "error:" in out:
            raise RuntimeError(f"lldb: {text!r} failed:\n{out}")
        return out
