"""A pexpect driver for a real GDB session, with the plugin loaded the way a user loads it.

The interface (``command``, ``run``, ``backtrace``, ``alive``, ``close``, ``transcript``) is
driver_base.Driver's, shared with driver_lldb.LldbDriver, so one scenario table drives both
debuggers.
"""

from __future__ import annotations

import os
import re
import shlex

from .driver_base import PROMPT, REPO, DebuggerTimeout, Driver

__all__ = ["GDB", "PLUGIN", "PROMPT", "REPO", "DebuggerTimeout", "GdbDriver"]

PLUGIN = os.path.join(REPO, "gdb", "unsplit_gdb.py")
GDB = os.environ.get("UNSPLIT_GDB", "gdb")


class GdbDriver(Driver):
    name = "gdb"
    error_prefix = ""
    plugin_file = PLUGIN
    _ansi = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
    _settings = (f"set prompt {PROMPT}", "set style enabled off", "set pagination off",
                 "set height 0", "set width 0", "set confirm off", "set debuginfod enabled off")

    def _start(self, plugin: bool, startup_timeout: float) -> None:
        argv = ["-nx", "-q"]
        for setting in self._settings:
            argv += ["-iex", setting]
        if plugin:
            # -iex runs where ~/.gdbinit would: before the binary and the core are loaded.
            argv += ["-iex", self.spelling("load")]
        argv.append(self.binary)
        if self.core is not None:
            argv.append(self.core)
        self._spawn(GDB, argv)
        self.startup = self._expect_prompt(startup_timeout, "startup")

    def run(self, timeout: float | None = None) -> str:
        return self.command(" ".join(["run", *map(shlex.quote, self.args)]), timeout)

    def select_thread(self, number: int) -> None:
        self.command(f"thread {number}")
