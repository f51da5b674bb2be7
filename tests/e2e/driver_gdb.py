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
    _ansi = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
    _kill = "kill"
    _alive = "echo alive\\n"
    _register = "p/x $%s"
    _all_bt = "thread apply all bt"
    _thread_head = re.compile(r"^Thread \d+ ")
    _script = "python"
    _load = f"source {PLUGIN}"
    _settings = (f"set prompt {PROMPT}", "set style enabled off", "set pagination off",
                 "set height 0", "set width 0", "set confirm off", "set debuginfod enabled off")

    def _start(self, plugin: bool, startup_timeout: float) -> None:
        argv = ["-nx", "-q"]
        for setting in self._settings:
            argv += ["-iex", setting]
        if plugin:
            # -iex runs where ~/.gdbinit would: before the binary and the core are loaded.
            argv += ["-iex", self._load]
        argv.append(self.binary)
        if self.core is not None:
            argv.append(self.core)
        self._spawn(GDB, argv)
        self.startup = self._expect_prompt(startup_timeout, "startup")

    def run(self, timeout: float | None = None) -> str:
        return self.command(" ".join(["run", *map(shlex.quote, self.args)]), timeout)

    def break_function(self, name: str) -> str:
        return self.command(f"break {name}")

    def break_entry(self, name: str) -> str:
        return self.command(f"break *'{name}'")

    def break_address(self, address: int, module: str | None = None) -> str:
        return self.command(f"break *{address:#x}")

    def break_line(self, file: str, line: int) -> str:
        return self.command(f"break {file}:{line}")

    def list_breakpoints(self) -> str:
        return self.command("info breakpoints")

    def breakpoint_addresses(self) -> set[int]:
        return {int(m.group(1), 16) for m in re.finditer(
            r"^\S+\s+breakpoint\s+\S+\s+[yn]\s+(0x[0-9a-f]+)", self.list_breakpoints(), re.M)}

    def delete_breakpoints(self) -> str:
        return self.command("delete")

    def select_frame(self, number: int) -> str:
        return self.command(f"frame {number}")

    def select_thread(self, number: int) -> None:
        self.command(f"thread {number}")
