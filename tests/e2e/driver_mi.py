"""A GDB/MI client as an IDE is one (VS Code cpptools, CLion, Eclipse): GDB started with
``--interpreter=mi3``, commands written on its stdin, records read from its stdout.

The value syntax is GDB's (gdb/doc/gdb.texinfo, "GDB/MI Output Syntax"): c-strings, tuples
``{a="1",b=[...]}``, lists ``[...]`` of values or of results. No package parses it for us
(pygdbmi would be a new dependency for 40 lines), so ``parse_results`` does.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from .driver_base import OPENED, REPO

PLUGIN = os.path.join(REPO, "gdb", "unsplit_gdb.py")
GDB = os.environ.get("UNSPLIT_GDB", "gdb")


def _string(text: str, i: int) -> tuple[str, int]:
    assert text[i] == '"', text[i:i + 40]
    out, i = [], i + 1
    escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
    while text[i] != '"':
        if text[i] == "\\":
            out.append(escapes.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out), i + 1


def _value(text: str, i: int) -> tuple[Any, int]:
    if text[i] == '"':
        return _string(text, i)
    close = "}" if text[i] == "{" else "]"
    i += 1
    items: list[Any] = []
    named: dict[str, Any] = {}
    while text[i] != close:
        if text[i] in '{["':
            value, i = _value(text, i)
            items.append(value)
        else:
            eq = text.index("=", i)
            key = text[i:eq]
            value, i = _value(text, eq + 1)
            named[key] = value
            items.append({key: value})
        if text[i] == ",":
            i += 1
    if close == "}":
        return named, i + 1
    return items, i + 1


def parse_results(text: str) -> dict[str, Any]:
    """`a="1",frame={...}` (what follows a record's class) as a dict."""
    out, _ = _value("{" + text + "}", 0)
    assert isinstance(out, dict)
    return out


class MiSession:
    """One GDB in MI mode, the plugin sourced the way a user's ~/.gdbinit would."""

    def __init__(self, argv: Sequence[str], *, plugin: bool = True,
                 env: dict[str, str] | None = None, gdb: str = GDB) -> None:
        cmd = [gdb, "--interpreter=mi3", "-nx", "-q", "-iex", "set debuginfod enabled off",
               "-iex", "set startup-with-shell off"]
        if plugin:
            cmd += ["-iex", f"source {PLUGIN}"]
        cmd += ["--args", *argv]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, bufsize=1,
                                     env={**os.environ, **(env or {})})
        self._pending = b""
        self.lines: list[str] = []  # everything GDB printed (stdout and stderr), in order
        OPENED.append(self)
        self.read_until(lambda line: line.startswith("(gdb)"), 60)

    def _line(self, deadline: float) -> str:
        """The next line of GDB's output. Read from the descriptor, not the file object: a
        buffered readline may hold lines that select() no longer sees."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("GDB/MI said nothing in time:\n" + self.transcript)
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise EOFError("GDB exited:\n" + self.transcript)
                self._pending += chunk
        raw, _, self._pending = self._pending.partition(b"\n")
        line = raw.decode(errors="replace").rstrip("\r")
        self.lines.append(line)
        return line

    @property
    def transcript(self) -> str:
        return "\n".join(self.lines)

    def read_until(self, done: Any, timeout: float) -> list[str]:
        deadline = time.monotonic() + timeout
        lines = []
        while True:
            line = self._line(deadline)
            lines.append(line)
            if done(line):
                return lines

    def command(self, text: str, timeout: float = 60) -> dict[str, Any]:
        """Send one MI command; the results of its ^done (or ^running) record."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        for line in self.read_until(lambda s: s.startswith(("^done", "^running", "^error")),
                                    timeout):
            if line.startswith("^error"):
                raise AssertionError(f"{text}: {line}")
            if line.startswith(("^done", "^running")):
                rest = line.partition(",")[2]
                return parse_results(rest) if rest else {}
        raise AssertionError("unreachable")

    def wait_stopped(self, timeout: float = 60) -> dict[str, Any]:
        """The results of the next ``*stopped`` record."""
        line = self.read_until(lambda s: s.startswith("*stopped"), timeout)[-1]
        return parse_results(line.partition(",")[2])

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("-gdb-exit\n")
                self.proc.stdin.flush()
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._drain()

    def _drain(self) -> None:
        """Keep what GDB printed after the last record read, up to its exit."""
        assert self.proc.stdout is not None
        if self.proc.stdout.closed:
            return
        fd = self.proc.stdout.fileno()
        # A debuggee that outlived GDB may hold the pipe open: wait a little, not for ever.
        while select.select([fd], [], [], 5)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self._pending += chunk
        self.lines += self._pending.decode(errors="replace").splitlines()
        self._pending = b""
        self.proc.stdout.close()
