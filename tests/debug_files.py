"""The debug file a debugger session's background writer leaves in a cache, for the tests and
benchmarks that start a later session on it (tests/e2e/test_gdb_later_session.py,
bench/debuginfo.py)."""

from __future__ import annotations

import fcntl
import time
from pathlib import Path


def written(cache: Path, timeout: float) -> Path:
    """The debug file in `cache`, once written whole: unsplit.debuginfo.cache.write_once renames
    it into place when done, then frees and removes its lock (waited for where still there)."""
    deadline = time.monotonic() + timeout
    while True:
        done = sorted(cache.rglob("*.debug"))
        if done:
            try:
                with open(f"{done[0]}.lock", "rb") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX)
            except FileNotFoundError:
                pass  # freed and removed already
            return done[0]
        if time.monotonic() > deadline:
            raise TimeoutError(f"no debug file in {cache} after {timeout} s")
        time.sleep(0.1)
