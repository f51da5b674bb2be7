#!/usr/bin/env python3
"""Print the call stack an IDE gets from a debug adapter at a program's first stop.

A Debug Adapter Protocol client, as VS Code is one: it starts ADAPTER (`lldb-dap-22`, or
`gdb -i dap`), launches PROGRAM (or loads a core with --core), and prints each frame of the
stopped thread's `stackTrace` as the IDE shows it: the name, the source path and the line.

    tools/dap_stack.py --adapter lldb-dap-22 --init "command script import lldb/unsplit_lldb.py" \\
        fixtures/build/bolt-all/crash crash
    tools/dap_stack.py --adapter "gdb -i dap" fixtures/build/bolt-all/crash crash
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from typing import IO, Any


class Adapter:
    """Messages framed by `Content-Length` headers on the adapter's stdin and stdout."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.seq = 0
        self.events: list[dict[str, Any]] = []  # received, not yet waited for

    def send(self, command: str, **arguments: Any) -> int:
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command,
                           "arguments": arguments}).encode()
        stdin: IO[bytes] = self.proc.stdin  # type: ignore[assignment]
        stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stdin.flush()
        return self.seq

    def receive(self) -> dict[str, Any]:
        stdout: IO[bytes] = self.proc.stdout  # type: ignore[assignment]
        length = 0
        while (line := stdout.readline().strip()) != b"":
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if not length:
            sys.exit("dap_stack: the adapter closed its output")
        message: dict[str, Any] = json.loads(stdout.read(length))
        return message

    def request(self, command: str, **arguments: Any) -> dict[str, Any]:
        seq = self.send(command, **arguments)
        while True:
            m = self.receive()
            if m.get("type") == "event":
                self.events.append(m)
            elif m.get("type") == "response" and m.get("request_seq") == seq:
                if not m.get("success"):
                    sys.exit(f"dap_stack: {command}: {m.get('message')}")
                body: dict[str, Any] = m.get("body") or {}
                return body

    def event(self, name: str) -> dict[str, Any]:
        for m in self.events:
            if m.get("event") == name:
                self.events.remove(m)
                return m
        while (m := self.receive()).get("event") != name:
            if m.get("type") == "event":
                self.events.append(m)
        return m


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", required=True, help="the adapter's command line")
    parser.add_argument("--init", action="append", default=[],
                        help="a debugger command run first (lldb-dap's initCommands)")
    parser.add_argument("--core", help="a core file of PROGRAM, instead of running it")
    parser.add_argument("--levels", type=int, default=20, help="how many frames to ask for")
    parser.add_argument("program")
    parser.add_argument("args", nargs="*")
    a = parser.parse_args()
    dap = Adapter(shlex.split(a.adapter))
    dap.request("initialize", adapterID="dap_stack", clientID="dap_stack",
                linesStartAt1=True, columnsStartAt1=True, pathFormat="path")
    program = os.path.abspath(a.program)
    extra = {"initCommands": a.init} if a.init else {}
    if a.core:
        dap.send("attach", program=program, coreFile=os.path.abspath(a.core), **extra)
    else:
        dap.send("launch", program=program, args=a.args, **extra)
    dap.event("initialized")
    dap.request("configurationDone")
    stopped = dap.event("stopped")
    thread = stopped["body"].get("threadId") or dap.request("threads")["threads"][0]["id"]
    frames = dap.request("stackTrace", threadId=thread, startFrame=0,
                         levels=a.levels)["stackFrames"]
    for n, f in enumerate(frames):
        source = f.get("source") or {}
        where = f"{source.get('path') or source.get('name') or '?'}:{f.get('line', 0)}"
        print(f"#{n}  {f['name']}  {where}")
    dap.send("disconnect", terminateDebuggee=True)
    dap.proc.wait(timeout=30)


if __name__ == "__main__":
    main()
