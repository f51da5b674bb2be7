"""Where unsplit keeps files between sessions: module indexes, pre-BOLT input verdicts, debug
files, LLDB's CFI files. Part of the base: every layer that caches asks it."""

from __future__ import annotations

import os


def cache_root() -> str:
    """``$UNSPLIT_CACHE``, else ``$XDG_CACHE_HOME/unsplit`` (``~/.cache/unsplit``)."""
    return os.environ.get("UNSPLIT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "unsplit")
