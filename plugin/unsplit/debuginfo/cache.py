"""Debug files the debugger adapters hand to GDB and LLDB for split modules without DWARF: made
by unsplit.debuginfo.synthesize once per module and kept under ``$UNSPLIT_CACHE`` or
``~/.cache/unsplit``, named by build-id, a fingerprint of the module's layout (a build-id alone
does not name one BOLT output: see :func:`fingerprint`) and, for a BOLT output, what its lines
were made from (:func:`made_from`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Callable
from typing import NamedTuple

from unsplit.cache_dir import cache_root
from unsplit.elf.binary import Binary
from unsplit.errors import UnsplitError
from unsplit.formats.section_ids import ESL_SECTION
from unsplit.index.bolt import bat_translate, prebolt
from unsplit.index.module_index import IndexCache

FORMAT_VERSION = 5  # bump when the files' content changes: old ones are then not reused


def cache_dir() -> str:
    """``debuginfo-vN`` under the cache root (unsplit.cache_dir.cache_root)."""
    return os.path.join(cache_root(), f"debuginfo-v{FORMAT_VERSION}")


def path_for(binary: Binary, root: str | None = None) -> str | None:
    """Where the debug file of `binary` is kept (None without a build-id to name it by)."""
    named = _name(binary)
    if named is None:
        return None
    folder, stem = named
    return os.path.join(root or cache_dir(), folder, f"{stem}{made_from(binary)}.debug")


def names_path(debug_file: str) -> str:
    """Where the names file (unsplit.debuginfo.names_file) of the module whose debug file
    goes to `debug_file` is kept."""
    return debug_file.removesuffix(".debug") + ".names"


def kept_paths(binary: Binary, root: str | None = None) -> list[str]:
    """Every debug file kept for `binary`, whatever each was made from."""
    named = _name(binary)
    if named is None:
        return []
    folder = os.path.join(root or cache_dir(), named[0])
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(os.path.join(folder, n) for n in names
                  if n.startswith(named[1]) and n.endswith(".debug"))


def _name(binary: Binary) -> tuple[str, str] | None:
    build_id = binary.build_id
    if not build_id or len(build_id) < 2:
        return None
    h = build_id.hex()
    return os.path.join("by-module", h[:2]), f"{h[2:]}-{fingerprint(binary)}"


def made_from(binary: Binary) -> str:
    """What a BOLT output's file is made from besides the output: its lines and inline chains
    come from the pre-BOLT input (prebolt.input_for: found, or named by `bb input`), so a file
    made before the input was found has none, and must not be reused once it is. "" for a
    module without BAT, "-no-input", or "-input-" and a digest of the input's build-id and
    layout (and of its separate debug file's, where its DWARF is)."""
    if not bat_translate.has_bat(binary):
        return ""
    found = prebolt.input_for(binary)
    if found is None:
        return "-no-input"
    digest = hashlib.sha1((found.build_id or b"") + fingerprint(found).encode())
    dwarf = found.dwarf_binary
    if dwarf is not None and dwarf is not found:
        digest.update((dwarf.build_id or b"") + fingerprint(dwarf).encode())
    return f"-input-{digest.hexdigest()[:16]}"


def fingerprint(binary: Binary) -> str:
    """What tells apart two modules with one build-id: BOLT gives every output of one input
    the input's build-id (last bit flipped) whatever its options, so the layouts of
    `-split-strategy=all` and `=cdsplit` outputs share it. Their section headers and symbol
    tables differ."""
    digest = hashlib.sha1()
    for section in binary.raw_sections:  # (pyelftools not needed: a later session spares it)
        digest.update(f"{section.name}:{section.addr}:{section.size};".encode())
    digest.update(binary.section_data(".symtab") or b"")
    return digest.hexdigest()[:16]


def _translated(binary: Binary) -> bool:
    """Whether the module's file is its pre-BOLT input's DWARF moved through BAT, not one
    written from the index."""
    from unsplit.debuginfo.translate.build import input_with_dwarf

    return input_with_dwarf(binary) is not None


class Outcome(NamedTuple):
    """What became of one module: `path` is the debug file to load (None: none needed)."""

    module: str
    path: str | None
    reason: str  # MADE, CACHED, TO_WRITE (path: where it goes), or why nothing is needed


MADE, CACHED, TO_WRITE = "made", "cached", "to write"


def max_code_bytes() -> int:
    """The most code a debugger session describes when a module loads, where the file has
    lines written from the index: that walks every instruction of the split procedures, so a
    big module is left to `unsplit
    debuginfo` ahead of time (``UNSPLIT_DEBUGINFO_MAX_KB``, default 512 KB: seconds, once, then
    cached). A BOLT output whose input has DWARF has no limit (that DWARF is translated in about
    BOLT's own time, docs/benchmarks.md), nor has a file of names alone (:func:`names_only`)."""
    try:
        return int(os.environ.get("UNSPLIT_DEBUGINFO_MAX_KB", "512")) * 1024
    except ValueError:
        return 512 * 1024


def names_only(binary: Binary) -> bool:
    """Whether the module's file can only name its procedures: no DWARF of its own, no ESL
    line table, and for a BOLT output no pre-BOLT input with DWARF. That file costs one pass
    over the procedures, not a walk over the code (docs/benchmarks.md, bench/libllvm.py), so
    a session writes it whatever the module's size."""
    if binary.dwarf_binary is not None or binary.has_section(ESL_SECTION):
        return False
    if not bat_translate.has_bat(binary):
        return True
    found = prebolt.input_for(binary)
    return found is None or found.dwarf_binary is None


def debug_file_for(module: str, indexes: IndexCache | None = None, root: str | None = None,
                   max_code: int | None = None, write: bool = True, index: bool = True,
                   names: bool = False, named: Callable[[], None] | None = None) -> Outcome:
    """The cached debug file for `module`, written first if missing (`write` False: TO_WRITE
    and its path, for unsplit.debuginfo.background to write; `index` False: before indexing);
    `names`: the names file written first, then `named` called. Outcome.path is None for a
    module with DWARF, no split procedure, no build-id, or more than `max_code` bytes to
    describe with lines from the index. `indexes`: the session's, whose pre-BOLT input
    (`bb input`) the file follows. Never raises: a module the core cannot read gets a reason
    instead."""
    try:
        indexes = IndexCache() if indexes is None else indexes
        binary = indexes.binary(module)
        if binary.dwarf_binary is not None:
            return Outcome(module, None, "has DWARF")
        path = path_for(binary, root)
        if path is None:
            return Outcome(module, None, "no build-id")
        if os.path.isfile(path):
            return Outcome(module, path, CACHED)
        code = sum(end - start for start, end in binary.text_address_ranges())
        # (names_only first: it is cheap, and true of most libraries; _translated imports
        # the translator)
        if (max_code is not None and code > max_code and not names_only(binary)
                and not _translated(binary)):
            kb = (code + 1023) >> 10
            return Outcome(module, None, f"{kb} KB of code, more than a session writes at load: "
                           f"`unsplit debuginfo {module} --build-id-dir DIR` makes it")
        if not write and not index:
            return Outcome(module, path, TO_WRITE)
        found = indexes.get(module)
        if not found.has_moved_fragments():  # (before the writer's imports: most libraries)
            return Outcome(module, None, "not split")
        from unsplit.debuginfo import names_file
        from unsplit.debuginfo.debug_file import make
        from unsplit.debuginfo.synthesize import has_own_dwarf

        if has_own_dwarf(found):
            return Outcome(module, None, "has DWARF")
        if not write:
            return Outcome(module, path, TO_WRITE)
        if names:
            write_once(names_path(path), lambda: names_file.make(found))
            if named is not None:
                named()
        return Outcome(module, path, write_once(path, lambda: make(found).data))
    except (UnsplitError, OSError) as e:
        return Outcome(module, None, f"cannot make one: {e}")


def write_once(path: str, data: Callable[[], bytes]) -> str:
    """Write `path` with `data()` unless another process has (MADE, or CACHED): writers of one
    file take turns on ``PATH.lock`` (two debuggers on one cache make it once), and a reader
    never sees half a file (written to a temporary name, then renamed)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lock_path = f"{path}.lock"
    with open(lock_path, "ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if os.path.isfile(path):
            return CACHED
        tmp = f"{path}.tmp{os.getpid()}"
        try:
            with open(tmp, "wb") as f:
                f.write(data())
            os.replace(tmp, path)
        finally:
            # (a writer that took the lock before it goes finds the file, or writes it)
            for left in (tmp, lock_path):
                if os.path.exists(left):
                    os.remove(left)
    return MADE
