"""A real elfutils debuginfod (Debian package `debuginfod`) serving a directory, for the tests of
the fleet recipe (issue 16 item 4): `debuginfod -F DIR` on a free port of this machine, with its
own database, stopped when the test ends."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def debuginfod(tree: Path, work: Path, wait_for: list[tuple[str, str]]) -> Iterator[str]:
    """Serve `tree`; yield its URL once every (build-id, "debuginfo"|"executable") in
    `wait_for` is answered (the first scan is asynchronous)."""
    if shutil.which("debuginfod") is None:
        pytest.fail("debuginfod is not installed (setup.sh installs the Debian package)")
    port = _free_port()
    log = (work / "debuginfod.log").open("w")
    proc = subprocess.Popen(["debuginfod", "-F", str(tree), "-p", str(port),
                             "-d", str(work / "debuginfod.sqlite"), "-t", "0", "-g", "0"],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        for build_id, kind in wait_for:
            while True:
                if proc.poll() is not None:
                    pytest.fail(f"debuginfod exited: {(work / 'debuginfod.log').read_text()}")
                try:
                    with urllib.request.urlopen(f"{url}/buildid/{build_id}/{kind}", timeout=5):
                        break
                except (urllib.error.URLError, OSError):
                    if time.monotonic() > deadline:
                        pytest.fail(f"debuginfod never served {kind} of {build_id}: "
                                    f"{(work / 'debuginfod.log').read_text()[-2000:]}")
                    time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
