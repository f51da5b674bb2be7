"""A pexpect driver for a real GDB session, with the plugin loaded the way a user loads it.

The interface (``command``, ``run``, ``backtrace``, ``alive``, ``close``, ``transcript``) is
driver_base.Driver's, shared with driver_lldb.LldbDriver, so one scenario table drives both
debuggers.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import IO

from .driver_base import PROMPT, REPO, DebuggerTimeout, Driver

__all__ = ["GDB", "PLUGIN", "PROMPT", "REPO", "DebuggerTimeout", "GdbDriver"]

PLUGIN = os.path.join(REPO, "gdb", "unsplit_gdb.py")
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


class GdbDriver(Driver):
    name = "gdb"
    _ansi = _ANSI
    _kill = "kill"
    _alive = "echo alive\\n"

    def __init__(self, binary: str, *, core: str | None = None, args: Sequence[str] = (),
                 plugin: bool = True, log: IO[str] | None = None,
                 startup_timeout: float = 60, env: Mapping[str, str] | None = None) -> None:
        super().__init__(binary, core, args, log, env)
        argv = ["-nx", "-q"]
        for setting in _SETTINGS:
            argv += ["-iex", setting]
        if plugin:
            # -iex runs where ~/.gdbinit would: before the binary and the core are loaded.
            argv += ["-iex", f"source {PLUGIN}"]
        argv.append(binary)
        if core is not None:
            argv.append(core)
        self._spawn(GDB, argv)
        self.startup = self._expect_prompt(startup_timeout, "startup")

    def run(self, timeout: float = 60) -> str:
        """Start the program with the driver's args; output up to the next stop."""
        return self.command(" ".join(["run", *map(shlex.quote, self.args)]), timeout)

    def break_function(self, name: str) -> str:
        return self.command(f"break {name}")

    def select_frame(self, number: int) -> str:
        return self.command(f"frame {number}")
