"""A module's debug file written by another process, so that a debugging session goes on while
it is made (a BOLTed sqlite3's takes seconds: docs/benchmarks.md) and the next session finds it
kept. The writer is ``python -m unsplit.debuginfo.background MODULE [--input PRE_BOLT]``: it
writes the file where unsplit.debuginfo.cache keeps it (two writers take turns: cache.write_once)
and prints its Outcome as one JSON line; with ``--names``, the module's names file
(unsplit.debuginfo.names_file) first, for the session to load while it waits. It runs in a
session of its own with its output in files, so a debugger that exits (``gdb -batch``) or is
interrupted leaves it to finish.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

from unsplit.debuginfo.cache import Outcome, debug_file_for, path_for
from unsplit.elf.binary import Binary
from unsplit.errors import DEBUG_HINT, UnsplitError

if TYPE_CHECKING:
    from unsplit.index.cache.store import IndexStore


def interpreter() -> str:
    """This Python's own interpreter, to run the writer with. An embedded Python's
    sys.executable can name a file that is not there (GDB 13 on Debian: /usr/bin/python) or the
    host program, so the interpreter of this version under sys.base_exec_prefix comes next."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for path in (sys.executable, os.path.join(sys.base_exec_prefix, "bin", version)):
        if path and os.path.basename(path).startswith("python") and os.access(path, os.X_OK):
            return path
    raise UnsplitError(f"no Python interpreter to write the debug file with (looked for "
                       f"{sys.executable!r} and {version} under {sys.base_exec_prefix})")


class Writer:
    """One writer process, started by :func:`start`."""

    def __init__(self, module: str, process: subprocess.Popen[bytes], out: IO[bytes],
                 err: IO[bytes]) -> None:
        self.module = module
        self.started = time.monotonic()
        self._process = process
        self._out, self._err = out, err
        self._outcome: Outcome | None = None

    @property
    def pid(self) -> int:
        return self._process.pid

    def done(self) -> bool:
        return self._process.poll() is not None

    def wait_for(self, path: str, poll: float = 0.02) -> bool:
        """Block until the writer has made `path` (True) or has ended without it (False)."""
        while not os.path.isfile(path):
            if self.done():
                return os.path.isfile(path)
            time.sleep(poll)
        return True

    def wait(self) -> Outcome:
        """Block until the writer has finished; what became of the module."""
        self._process.wait()
        return self.outcome()

    def outcome(self) -> Outcome:
        """What the finished writer says (a writer that failed: its last line, and with
        ``UNSPLIT_DEBUG`` set all it printed)."""
        if self._outcome is None:
            status = self._process.wait()
            self._out.seek(0)
            self._err.seek(0)
            said = self._out.read().decode(errors="replace").strip().splitlines()
            errors = self._err.read().decode(errors="replace").strip()
            self._out.close()
            self._err.close()
            self._outcome = _parsed(self.module, said[-1] if said else "") if status == 0 \
                else None
            if self._outcome is None:
                last = errors.splitlines()[-1] if errors else "no output"
                why = errors if os.environ.get("UNSPLIT_DEBUG") else f"{last} {DEBUG_HINT}"
                self._outcome = Outcome(self.module, None, f"the writer failed (exit {status}): "
                                        f"{why}")
        return self._outcome


def _parsed(module: str, line: str) -> Outcome | None:
    try:
        said = json.loads(line)
    except ValueError:
        return None
    if not isinstance(said, dict) or not isinstance(said.get("reason"), str) or \
            not isinstance(said.get("path"), (str, type(None))):
        return None
    return Outcome(module, said["path"], said["reason"])


def start(module: str, input_path: str | None = None, names: bool = False) -> Writer:
    """Start writing `module`'s debug file (its pre-BOLT input `input_path`, as the session
    chose it; `names`: its names file first) in a process that outlives this one;
    UnsplitError when it cannot start."""
    command = [interpreter(), "-m", "unsplit.debuginfo.background", module]
    if input_path is not None:
        command += ["--input", input_path]
    if names:
        command.append("--names")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    try:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                   env=env, start_new_session=True)
    except OSError as e:
        out.close()
        err.close()
        raise UnsplitError(f"cannot start the debug file's writer: {e}") from None
    return Writer(module, process, out, err)


def _behind() -> None:
    """Once the names file is written, the rest of the writer's work runs behind the session
    on a busy machine: the debugger reads that file and answers its first `stackTrace` in
    the meantime (seconds of CPU on a BOLTed libLLVM, docs/benchmarks.md), and needs the CPU
    first. (An idle core runs both at once as before.)"""
    os.nice(NICE_AFTER_NAMES)


NICE_AFTER_NAMES = 10


def _first(binary: Binary, store: IndexStore | None) -> bool:
    """Whether neither the module's debug file nor its persistent index is kept: only then
    is its BAT scanned ahead, in another process (unsplit.index.bolt.scan_ahead)."""
    kept = path_for(binary)
    return (kept is not None and not os.path.isfile(kept)
            and (store is None or not os.path.isfile(store.path_for(binary))))


def _meanwhile(binary: Binary) -> None:
    """What the names file needs and BAT's scan does not, done while another process scans
    it: the writer's imports, the module's functions in one piece, and where each FDE ends."""
    from unsplit.debuginfo import names_file  # noqa: F401
    from unsplit.debuginfo.debug_file import make  # noqa: F401
    from unsplit.elf.cfi_table import table_for
    from unsplit.index.sources.symbols import work_out_plain

    work_out_plain(binary)
    table_for(binary).work_out_fde_ends()


def main(argv: Sequence[str] | None = None) -> int:
    from unsplit.collector import collector_paused

    with collector_paused():  # over the imports too
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    from unsplit.index.bolt import prebolt
    from unsplit.index.cache.store import IndexStore
    from unsplit.index.module_index import IndexCache

    ap = argparse.ArgumentParser(prog="python -m unsplit.debuginfo.background",
                                 description="write a split module's debug file into the cache")
    ap.add_argument("module")
    ap.add_argument("--input", metavar="PRE_BOLT")
    ap.add_argument("--names", action="store_true",
                    help="write the names file first (cache.names_path)")
    args = ap.parse_args(argv)
    indexes = IndexCache(IndexStore(), None)
    try:
        if args.input is not None:
            prebolt.set_input(indexes.binary(args.module), args.input)
    except (UnsplitError, OSError) as e:
        outcome = Outcome(args.module, None, f"cannot make one: {e}")
    else:
        from unsplit.index.bolt import scan_ahead

        binary = indexes.binary(args.module)
        if args.names and _first(binary, indexes.store) and scan_ahead.start(binary):
            _meanwhile(binary)
        outcome = debug_file_for(args.module, indexes, names=args.names, named=_behind)
        scan_ahead.finish(binary)
    print(json.dumps({"path": outcome.path, "reason": outcome.reason}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
