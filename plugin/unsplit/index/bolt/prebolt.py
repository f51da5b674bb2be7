"""Find the pre-BOLT ("input") binary of a BOLTed one, for its DWARF and symbol addresses: the file
whose build-id is the output's with BOLT's flipped last bit restored (``shared/specs/bolt-bat.md``
§1, §3.5), looked for where docs/debug-info.md says, in that order. A candidate is refused, with
one line, unless every function BAT names is a symbol of it with room for BAT's offsets."""

from __future__ import annotations

import os
from collections.abc import Iterator

from unsplit.cache_dir import cache_root
from unsplit.elf import debuginfod
from unsplit.elf.binary import Binary
from unsplit.elf.derived import PerFile
from unsplit.errors import BinaryError, DecodeError
from unsplit.index.bolt import bat_translate

ENV_PATH = "UNSPLIT_INPUT_PATH"
DEBUG_ROOTS = ("/usr/lib/debug",)
_ELF_MAGIC = b"\x7fELF"
_MAX_DIR_FILES = 2000  # a directory scan reads headers only, but never without bound

def _search(binary: Binary) -> Binary | None:
    return find_input(binary)


# The input of each Binary, kept on it: a session's index cache owns its Binary objects, so
# `bb input` in one session (set_input) is not another's. The session drops its locations by
# pc (Session.locations) on each change.
_INPUTS = PerFile(_search)


def input_for(binary: Binary) -> Binary | None:
    """The input of ``binary``: the one :func:`set_input` named, else :func:`find_input`'s
    answer, searched once per Binary and kept."""
    return _INPUTS(binary)


def set_input(binary: Binary, path: str | None) -> Binary | None:
    """``bb input PATH`` / ``--input PATH``: verify and remember; None forgets (search again)."""
    if path is None:
        _INPUTS.forget(binary)
        return None
    found = find_input(binary, path)
    _INPUTS.set(binary, found)
    return found


def input_build_id(output_build_id: bytes) -> bytes:
    """The input's build-id: BOLT flipped the last bit of it (spec §1)."""
    if not output_build_id:
        return output_build_id
    return output_build_id[:-1] + bytes([output_build_id[-1] ^ 1])


def find_input(binary: Binary, explicit: str | None = None) -> Binary | None:
    """The verified pre-BOLT binary of ``binary``, or None when none is found.

    ``explicit`` is a path the user named: it is checked and refused with BinaryError when it is
    not the input of ``binary``. Automatic candidates that fail the check are skipped.
    Binaries without BAT have no input to find: None (or the explicit file, unverified).
    """
    if explicit is not None:
        candidate = Binary(explicit)
        verify(binary, candidate)
        return candidate
    if not bat_translate.has_bat(binary):
        return None
    seen: set[str] = {os.path.realpath(binary.path)}
    for path in candidate_paths(binary):
        real = os.path.realpath(path)
        if real in seen or not _looks_like_elf(path):
            continue
        seen.add(real)
        try:
            candidate = Binary(path)
        except BinaryError:
            continue
        if _build_id_matches(binary, candidate) and _verified(binary, candidate):
            return candidate
        candidate.close()
    return None


def candidate_paths(binary: Binary) -> Iterator[str]:
    """Every path worth checking, in search order (files; directories are listed)."""
    want = input_build_id(binary.build_id or b"")
    here = os.path.dirname(os.path.abspath(binary.path))
    dirs = [here, os.path.join(here, "input")]
    extra = [p for p in os.environ.get(ENV_PATH, "").split(":") if p]
    for d in dirs:
        yield from _list_dir(d)
    for p in extra:
        if os.path.isdir(p):
            yield from _list_dir(p)
        else:
            yield p
    if want:
        hexid = want.hex()
        for root in DEBUG_ROOTS:
            base = os.path.join(root, ".build-id", hexid[:2], hexid[2:])
            yield base + ".debug"
            yield base
        cache = os.environ.get("DEBUGINFOD_CACHE_PATH") or os.path.join(
            os.path.expanduser("~"), ".cache", "debuginfod_client"
        )
        yield os.path.join(cache, hexid, "executable")
        yield os.path.join(cache, hexid, "debuginfo")
        for kind in debuginfod.KINDS:  # a generator: asked only if nothing above was it
            fetched = debuginfod.fetch(want, kind)
            if fetched is not None:
                yield fetched


def verify(binary: Binary, candidate: Binary) -> None:
    """Raise BinaryError (one line) unless ``candidate`` is the pre-BOLT input of ``binary``."""
    out_id, in_id = binary.build_id, candidate.build_id
    if out_id and in_id and in_id != input_build_id(out_id):
        raise BinaryError(
            f"{candidate.path}: not the input of {binary.path}: build-id {in_id.hex()}, "
            f"expected {input_build_id(out_id).hex()}"
        )
    problem = mismatch(binary, candidate)
    if problem:
        raise BinaryError(f"{candidate.path}: not the input of {binary.path}: {problem}")


def function_address(input_binary: Binary, name: str, unit: str | None = None) -> int | None:
    """Address of function ``name`` in the input binary: the local one listed under STT_FILE
    ``unit`` when there is one (each translation unit may have its own static ``helper`` or
    ``__cxx_global_array_dtor``), else the first STT_FUNC of that name."""
    entry = _function(input_binary, name, unit)
    return None if entry is None else entry[0]


def function_extent(input_binary: Binary, name: str, unit: str | None = None
                    ) -> tuple[int, int] | None:
    """(address, size) of function ``name`` in the input binary, chosen as
    :func:`function_address` chooses it."""
    return _function(input_binary, name, unit)


def output_unit(binary: Binary, name: str, address: int) -> str | None:
    """The STT_FILE of the local function symbol ``name`` at ``address`` of a BOLTed binary:
    BOLT keeps each symbol in its file's group (spec §6.1), so this names the input's unit."""
    sym = binary.function_at(name, address)
    return None if sym is None else sym.file


def _function(binary: Binary, name: str, unit: str | None) -> tuple[int, int] | None:
    if unit is not None:
        found = _locals(binary).get((unit, name))
        if found is not None:
            return found
    return _functions(binary).get(name)


def _local_functions(binary: Binary) -> dict[tuple[str, str], tuple[int, int]]:
    """(STT_FILE, name) -> (address, size) of the local functions."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for f in binary.functions:
        if f.local and f.file is not None:
            out.setdefault((f.file, f.name), (f.value, f.size))
    return out


_locals = PerFile(_local_functions)


# --------------------------------------------------------------------------------------------


def mismatch(binary: Binary, candidate: Binary) -> str | None:
    """Why ``candidate`` cannot be the input of ``binary`` (None if it can)."""
    try:
        index = bat_translate.load(binary)
    except DecodeError as e:
        return f"cannot check against a malformed BAT ({e})"
    if index is None:
        return None
    funcs = _functions(candidate)
    missing = [n for n in index.procedures if n not in funcs]
    if missing:
        shown = ", ".join(missing[:3]) + (
            f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        )
        return f"{len(missing)} BOLTed function(s) missing from its symbols: {shown}"
    for hot in index.table.hot:
        name = index.name_of(hot)
        entry = _function(candidate, name, output_unit(binary, name, hot))
        size = 0 if entry is None else entry[1]
        if not size:
            continue  # assembly functions often have no size: nothing to compare
        maps = [index.table.maps[a] for a in (hot, *index.table.split_fragments(hot))]
        reach = max(m.max_input_offset() for m in maps)
        if reach >= size:
            return f"BAT reaches {name}+{reach:#x} but {name} is only {size:#x} bytes there"
    return None


def _verified(binary: Binary, candidate: Binary) -> bool:
    """Whether `candidate` passes :func:`mismatch`. A pair found good is remembered on disk by
    both files' paths, sizes and times (``inputs-vN/`` under the cache root), so that a later
    session does not decode BAT to check it again."""
    marker = _verdict_path(binary, candidate)
    if marker is not None and os.path.isfile(marker):
        return True
    if mismatch(binary, candidate) is not None:
        return False
    if marker is not None:
        try:
            os.makedirs(os.path.dirname(marker), exist_ok=True)
            with open(marker, "wb"):
                pass
        except OSError:
            pass  # a cache that cannot be written: checked again next time
    return True


VERDICT_VERSION = 1


def _verdict_path(binary: Binary, candidate: Binary) -> str | None:
    stamps = []
    for path in (binary.path, candidate.path):
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamps.append(f"{os.path.realpath(path)}\0{st.st_size}\0{st.st_mtime_ns}")
    import hashlib  # here: most sessions never ask (it loads OpenSSL)

    digest = hashlib.sha1("\n".join(stamps).encode()).hexdigest()
    return os.path.join(cache_root(), f"inputs-v{VERDICT_VERSION}", digest[:2], digest[2:])


def _build_id_matches(binary: Binary, candidate: Binary) -> bool:
    """Automatic candidates must carry the flipped build-id; without build-ids, the symbol check
    alone decides (a sibling file `t` of `t.bolt` is the common case)."""
    out_id, in_id = binary.build_id, candidate.build_id
    if out_id and in_id:
        return in_id == input_build_id(out_id)
    return not out_id and not in_id


_STT_NOTYPE, _STT_FUNC = 0, 2


def _function_table(binary: Binary) -> dict[str, tuple[int, int]]:
    """name -> (address, size) of the first defined STT_FUNC of each name, else of its first
    STT_NOTYPE label: BOLT also moves code written in assembly without `.type` (zstd's
    Huffman loops), which BAT names by such a label."""
    out: dict[str, tuple[int, int]] = {}
    labels: dict[str, tuple[int, int]] = {}
    table = ".symtab" if binary.has_section(".symtab") else ".dynsym"
    for sym in binary.symbol_entries(table):
        if sym.type == _STT_FUNC and sym.defined:
            out.setdefault(sym.name, (sym.value, sym.size))
        elif sym.type == _STT_NOTYPE and sym.defined and not sym.name.startswith(("$", ".L")):
            labels.setdefault(sym.name, (sym.value, sym.size))
    return {**labels, **out}


_functions = PerFile(_function_table)


def _list_dir(directory: str) -> Iterator[str]:
    try:
        names = sorted(os.listdir(directory))[:_MAX_DIR_FILES]
    except OSError:
        return
    for name in names:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            yield path


def _looks_like_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == _ELF_MAGIC
    except OSError:
        return False
