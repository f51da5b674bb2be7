"""Files fetched by build-id from the debuginfod servers of ``$DEBUGINFOD_URLS`` (elfutils'
protocol: ``/buildid/HEX/executable``, ``/buildid/HEX/debuginfo``), into debuginfod's own client
cache, where GDB, LLDB and every other client find them too.

Through libdebuginfod (elfutils, ``libdebuginfod.so.1``: gdb depends on it on Debian) by ctypes,
which honours the user's whole configuration (``DEBUGINFOD_CACHE_PATH``, ``_TIMEOUT``,
``_MAXSIZE``, netrc); ``debuginfod-find`` when the library is absent. Nothing is asked unless
``DEBUGINFOD_URLS`` names a server, and ``UNSPLIT_DEBUGINFOD=0`` turns it off.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ctypes

KINDS = ("executable", "debuginfo")


def enabled() -> bool:
    return bool(os.environ.get("DEBUGINFOD_URLS", "").strip()) and \
        os.environ.get("UNSPLIT_DEBUGINFOD", "1") != "0"


@cache
def _library() -> ctypes.CDLL | None:
    import ctypes  # (here: a session without DEBUGINFOD_URLS never needs it)

    try:
        lib = ctypes.CDLL("libdebuginfod.so.1")
    except OSError:
        return None
    lib.debuginfod_begin.restype = ctypes.c_void_p
    lib.debuginfod_end.argtypes = [ctypes.c_void_p]
    for name in ("debuginfod_find_executable", "debuginfod_find_debuginfo"):
        fn = getattr(lib, name)
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                       ctypes.POINTER(ctypes.c_void_p)]
    return lib


def _with_library(lib: ctypes.CDLL, build_id: str, kind: str) -> str | None:
    import ctypes.util

    client = lib.debuginfod_begin()
    if not client:
        return None
    try:
        path = ctypes.c_void_p()
        find = getattr(lib, f"debuginfod_find_{kind}")
        fd = find(client, build_id.encode(), 0, ctypes.byref(path))  # 0: a hex string
        if fd < 0 or not path.value:
            return None
        os.close(fd)
        found = ctypes.string_at(path.value).decode(errors="surrogateescape")
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.free.argtypes = [ctypes.c_void_p]
        libc.free(path)
        return found
    finally:
        lib.debuginfod_end(client)


def _with_command(build_id: str, kind: str) -> str | None:
    tool = shutil.which("debuginfod-find")
    if tool is None:
        return None
    timeout = float(os.environ.get("DEBUGINFOD_TIMEOUT", "90")) + 30
    try:
        out = subprocess.run([tool, kind, build_id], capture_output=True, text=True,
                             timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = out.stdout.strip()
    return path if out.returncode == 0 and os.path.isfile(path) else None


def fetch(build_id: bytes, kind: str) -> str | None:
    """The local path of the `kind` file ("executable" or "debuginfo") of `build_id`, fetched
    (or found in debuginfod's cache); None when disabled, absent or unreachable."""
    if kind not in KINDS:
        raise ValueError(kind)
    if not build_id or not enabled():
        return None
    lib = _library()
    hexid = build_id.hex()
    return _with_library(lib, hexid, kind) if lib is not None else _with_command(hexid, kind)
