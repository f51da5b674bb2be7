"""A Debug Adapter Protocol client as an IDE is one (VS Code and every editor with DAP): the
adapter (lldb-dap-22, or GDB's own ``gdb -i dap``) started as a child, JSON messages framed by
``Content-Length`` headers on its stdin and stdout
(https://microsoft.github.io/debug-adapter-protocol/overview#base-protocol).

Written here rather than taken from a package: the base protocol is 30 lines, and the test needs
to see every event in order."""

from __future__ import annotations

import json
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from .driver_base import OPENED


class DapSession:
    def __init__(self, argv: Sequence[str], env: dict[str, str] | None = None) -> None:
        # The adapter's stderr goes to a file: a pipe nobody reads would stop it when full.
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr,
                                     env={**os.environ, **(env or {})})
        self._pending = b""
        self._seq = 0
        self.messages: list[dict[str, Any]] = []  # everything received, in order
        OPENED.append(self)

    @property
    def stderr(self) -> str:
        """What the adapter wrote to its stderr so far."""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    @property
    def transcript(self) -> str:
        """What a user of the IDE could see: the adapter's output events, then its stderr."""
        said = [str(m.get("body", {}).get("output", "")) for m in self.messages
                if m.get("type") == "event" and m.get("event") == "output"]
        return "".join(said) + "\n--- stderr ---\n" + self.stderr

    def _read(self, deadline: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            head, sep, rest = self._pending.partition(b"\r\n\r\n")
            if sep:
                length = next(int(h.split(b":")[1]) for h in head.split(b"\r\n")
                              if h.lower().startswith(b"content-length"))
                if len(rest) >= length:
                    self._pending = rest[length:]
                    message: dict[str, Any] = json.loads(rest[:length])
                    self.messages.append(message)
                    return message
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the adapter said nothing in time; received:\n" +
                                   "\n".join(json.dumps(m)[:300] for m in self.messages))
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    self.proc.wait(10)
                    raise EOFError(f"the adapter exited: {self.stderr}")
                self._pending += chunk

    def send(self, command: str, **arguments: Any) -> int:
        assert self.proc.stdin is not None
        self._seq += 1
        body = json.dumps({"seq": self._seq, "type": "request", "command": command,
                           "arguments": arguments}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return self._seq

    def wait(self, kind: str, name: str, timeout: float = 60,
             seq: int | None = None) -> dict[str, Any]:
        """The next message of `kind` ("event"/"response") named `name` (the response to
        request `seq` when given)."""
        deadline = time.monotonic() + timeout
        for m in self.messages:  # already received
            if self._is(m, kind, name, seq) and not m.get("_seen"):
                m["_seen"] = True
                return m
        while True:
            m = self._read(deadline)
            if self._is(m, kind, name, seq):
                m["_seen"] = True
                return m

    @staticmethod
    def _is(m: dict[str, Any], kind: str, name: str, seq: int | None) -> bool:
        if m.get("type") != kind:
            return False
        if kind == "event":
            return bool(m.get("event") == name)
        return bool(m.get("command") == name and (seq is None or m.get("request_seq") == seq))

    def request(self, command: str, timeout: float = 60, **arguments: Any) -> dict[str, Any]:
        """Send a request and wait for its response; fail on success=false."""
        seq = self.send(command, **arguments)
        response = self.wait("response", command, timeout, seq)
        assert response.get("success"), response
        body: dict[str, Any] = response.get("body") or {}
        return body

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("disconnect", terminateDebuggee=True)
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired, ValueError):
                self.proc.kill()
                self.proc.wait()
        self._drain()

    def _drain(self) -> None:
        """Read the messages the adapter sent before it exited (output events among them)."""
        assert self.proc.stdout is not None
        if self.proc.stdout.closed:
            return
        try:
            while True:
                self._read(time.monotonic() + 5)
        except (TimeoutError, EOFError):
            pass
        self.proc.stdout.close()
