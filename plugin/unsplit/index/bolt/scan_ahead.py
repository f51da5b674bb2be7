"""BAT's scan of a big module in a second process, while this one does what does not need it
(the module's symbols and CFI, the writer's imports): the scan is a pure-Python walk of every
entry (5.6 M on a BOLTed libLLVM) that the first names of an lldb-dap session wait for
(docs/benchmarks.md), and no record says where the next begins, so the walk itself cannot
be split. A forked child runs
:func:`unsplit.formats.bat_scan.scan_only` on the descriptor and sends its columns back through
a pipe; :func:`take` gives them to bat_translate.bat_table. Whatever the child could not scan
(an unusual descriptor, or a child that failed) is scanned here again, so the answer and its
errors are this process's own."""

from __future__ import annotations

import os
import sys
from array import array

from unsplit.elf.binary import Binary
from unsplit.elf.derived import PerFile
from unsplit.errors import DecodeError
from unsplit.formats import bat, bat_scan

_COLUMNS = 5  # addresses, offsets (one more), cursors, hot indices, parents


class Pending:
    """One child scanning one descriptor."""

    def __init__(self, desc: bytes) -> None:
        self._desc_size = len(desc)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: its columns, or nothing when the scan was not for it
            os.close(read)
            status = 1
            try:
                found = bat_scan.scan_only(desc)
                with os.fdopen(write, "wb") as out:
                    if found is not None:
                        out.write(_packed(found))
                status = 0
            finally:  # a failed child's traceback goes to stderr; the parent scans again
                if status:
                    import traceback  # (a failed child alone: `unsplit debuginfo` imports none)

                    traceback.print_exc(file=sys.stderr)
                os._exit(status)
        os.close(write)
        self._pid, self._read = pid, read

    def result(self) -> bat_scan.BatScan | None:
        """The child's scan (None: scan here), once it has ended."""
        chunks = []
        with os.fdopen(self._read, "rb") as f:
            while chunk := f.read(1 << 20):
                chunks.append(chunk)
        _, status = os.waitpid(self._pid, 0)
        if status != 0 or not chunks:
            return None
        return _unpacked(b"".join(chunks), self._desc_size)


def _packed(found: bat_scan.BatScan) -> bytes:
    head = array("Q", [found.hot_count, len(found)])
    return b"".join(a.tobytes() for a in (head, found.addresses, found.offsets, found.cursors,
                                          found.hot_indices, found.parents))


def _unpacked(data: bytes, desc_size: int) -> bat_scan.BatScan | None:
    """The columns `_packed` wrote (None when they are not all there: scan here)."""
    head = array("Q", data[:16])
    hot_count, n = head
    if len(data) != 16 + 8 * (_COLUMNS * n + 1) or hot_count > n:
        return None
    cols = []
    pos = 16
    for size in (n, n + 1, n, n, n):
        cols.append(array("Q", data[pos: pos + 8 * size]))
        pos += 8 * size
    if cols[1][-1] != desc_size:
        return None
    return bat_scan.BatScan(cols[0], cols[1], cols[2], cols[3], cols[4], hot_count)


_PENDING: PerFile[list[Pending]] = PerFile(lambda binary: [])


def start(binary: Binary) -> bool:
    """Scan `binary`'s BAT descriptor in a child process from now on; whether one started
    (not without a note, or where this system cannot fork). For a process without threads
    (the debug file's writer): a forked child of one with threads may hang on their locks."""
    if not hasattr(os, "fork") or _PENDING(binary):
        return False
    data = binary.section_data(bat.SECTION)
    if data is None:
        return False
    try:
        desc, _ = bat.note_descriptor(data)
    except DecodeError:
        return False  # said where the note is read (bat_translate.bat_table)
    _PENDING(binary).append(Pending(desc))
    return True


def take(binary: Binary) -> bat_scan.BatScan | None:
    """The scan :func:`start` began for `binary` (None: none began, or scan here)."""
    pending = _PENDING.get(binary)
    if not pending:
        return None
    return pending.pop().result()


def finish(binary: Binary) -> None:
    """End what :func:`start` began and nothing took (the index was read from the cache)."""
    take(binary)
