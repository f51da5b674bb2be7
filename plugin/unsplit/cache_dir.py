"""Where unsplit keeps files between sessions: module indexes, pre-BOLT input verdicts, debug
files, LLDB's CFI files. Part of the base: every layer that caches asks it."""

from __future__ import annotations

import os


def cache_root() -> str:
    """``$UNSPLIT_CACHE``, else ``$XDG_CACHE_HOME/unsplit`` (``~/.cache/unsplit``)."""
    return os.environ.get("UNSPLIT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "unsplit")


def keep_if_writable(path: str, data: bytes) -> None:
    """Write `data` to the cache file `path` whole or not at all (a reader never sees half of
    it); a cache that cannot be written (read-only, full) is no error: what it would have kept
    is worked out again next session."""
    import tempfile  # (only where something is kept: a session mostly reads)

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path))
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except OSError:
            os.unlink(tmp)
            raise
    except OSError:
        pass
