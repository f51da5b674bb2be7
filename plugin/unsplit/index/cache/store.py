"""The persistent index: the parts of a ModuleIndex that walk the whole file (the BAT scan, the
one-piece functions, the symbols' split procedures), kept by build-id under the cache root
(``index-vN/xx/rest.idx``) for the CLI, GDB and LLDB. Flat and versioned, read without running
anything (the layout is written out above :func:`encode`); a file that does not match its source,
is damaged or has another version is ignored with one line and rebuilt; writes are atomic."""

from __future__ import annotations

import json
import os
import struct
import sys
import zlib
from _thread import get_ident
from array import array
from collections.abc import Callable
from typing import Any

from unsplit.cache_dir import cache_root
from unsplit.elf.binary import Binary
from unsplit.errors import BadIndexFile
from unsplit.formats.bat_scan import BatScan, Lookup
from unsplit.index.model.records import Fragment, Procedure
from unsplit.index.sources import StoredParts
from unsplit.index.sources.symbols import PlainFunctions

MAGIC = b"UNSPLIX\0"
VERSION = 2  # 2: clang's sized STT_NOTYPE split labels count as functions (binary.py)
_PREFIX = struct.Struct("<8sII")
_TYPECODES = {"B": 1, "Q": 8, "L": 8, "I": 4, "q": 8}  # what the head may name, and sizes
_MAX_HEAD = 64 << 20


class IndexStore:
    """The cache directory of persistent indexes; ``warn`` gets one line per ignored file."""

    def __init__(self, root: str | None = None,
                 warn: Callable[[str], None] | None = None) -> None:
        self._root = root
        self.warn = warn or _stderr

    @property
    def directory(self) -> str:
        return os.path.join(self._root or cache_root(), f"index-v{VERSION}")

    def path_for(self, binary: Binary) -> str:
        key = binary.build_id.hex() if binary.build_id else \
            "path-" + os.path.realpath(binary.path).encode().hex()[-64:]
        return os.path.join(self.directory, key[:2], key[2:] + ".idx")

    # -- reading -------------------------------------------------------------------------

    def load(self, binary: Binary) -> StoredParts | None:
        """The stored parts of ``binary``, or None (absent, stale, damaged: said once)."""
        path = self.path_for(binary)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        try:
            head, arrays = decode(data)
            if head.get("source") != source_stamp(binary):
                return None  # stale: the file (or its debug file) changed since
            return _parts(head, arrays)
        except BadIndexFile as e:
            self.warn(f"unsplit: ignoring the cached index {path}: {e}; rebuilding it")
            return None

    # -- writing -------------------------------------------------------------------------

    def save(self, binary: Binary, parts: StoredParts) -> str | None:
        """Write atomically; returns the path, or None when the directory is not writable
        (said once: a read-only cache must not stop a session)."""
        path = self.path_for(binary)
        head: dict[str, Any] = {"source": source_stamp(binary), "module": binary.path}
        arrays: list[tuple[str, array[int] | bytes]] = [
            ("plain.starts", parts.plain.starts), ("plain.ends", parts.plain.ends),
            ("plain.names", parts.plain.name_offsets), ("plain.strings", parts.plain.strings)]
        if parts.bat_scan is not None:
            s = parts.bat_scan
            head["bat_hot_count"] = s.hot_count
            arrays += [("bat.addresses", s.addresses), ("bat.offsets", s.offsets),
                       ("bat.cursors", s.cursors), ("bat.hot_indices", s.hot_indices),
                       ("bat.parents", s.parents)]
            arrays += [(f"bat.lookup.{k}", v) for k, v in s.lookup()._asdict().items()]
            if parts.bat_symbol_order is not None:
                arrays.append(("bat.symbol_order", parts.bat_symbol_order))
        head["procedures"] = [
            [p.name, [[f.name, f.start, f.end, f.symbol, f.logical_start, f.source]
                      for f in p.fragments]] for p in parts.symbol_procedures]
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = _exclusive(os.path.dirname(path))
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(encode(head, arrays))
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as e:
            self.warn(f"unsplit: cannot write the index cache {path}: {e.strerror}")
            return None
        return path

    # -- `unsplit cache` -----------------------------------------------------------------

    def entries(self) -> list[tuple[str, int]]:
        """(path, size) of every index file in the cache."""
        out = []
        for dirpath, _, files in os.walk(self.directory):
            for name in files:
                if name.endswith(".idx"):
                    p = os.path.join(dirpath, name)
                    try:
                        out.append((p, os.path.getsize(p)))
                    except OSError:
                        continue
        return sorted(out)

    def remove(self, binary: Binary | None = None) -> list[str]:
        """Delete the index of ``binary`` (every index when None); the paths deleted."""
        return remove_files([p for p, _ in self.entries()] if binary is None
                            else [self.path_for(binary)])


def remove_files(paths: list[str]) -> list[str]:
    """Delete the cache files `paths`; the ones that were there."""
    done = []
    for p in paths:
        try:
            os.unlink(p)
            done.append(p)
        except FileNotFoundError:
            continue
    return done


def _exclusive(directory: str) -> tuple[int, str]:
    """A new file of ours alone in `directory` (mode 0600, as tempfile.mkstemp makes one,
    whose import and its shutil's cost a command that writes one index more than the write;
    the name holds the process and thread, and O_EXCL skips a name a crashed run left)."""
    n = 0
    while True:
        tmp = os.path.join(directory, f".tmp-{os.getpid()}-{get_ident()}-{n}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), tmp
        except FileExistsError:
            n += 1


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def source_stamp(binary: Binary) -> list[Any]:
    """What the stored parts were computed from: the file and the debug file whose symbols
    stand in for a stripped one (path, size, mtime)."""
    stamp: list[Any] = [binary.identity[1], binary.identity[2]]
    if not binary.has_section(".symtab"):
        companion = binary.debug_companion
        stamp.append(None if companion is None else list(companion.identity))
    return stamp


# -- the format -------------------------------------------------------------------------------


def _pad(n: int) -> int:
    return -n % 8


# The file: magic "UNSPLIX\0", u32 version, u32 length of the JSON head, the JSON head (UTF-8),
# zero padding to 8 bytes, then each array the head lists ([name, typecode, count]) in order,
# each padded to 8 bytes; little-endian; the file ends exactly after the last array, and the
# head's ``crc32`` covers every byte after the head. The head names the file it was made from
# (size, mtime; the same for the debug file whose symbols were used).
def encode(head: dict[str, Any], arrays: list[tuple[str, array[int] | bytes]]) -> bytes:
    """The file's bytes: prefix, JSON head (with the array list), padded arrays."""
    listing = []
    blobs = []
    for name, values in arrays:
        if isinstance(values, (bytes, bytearray)):
            code, raw = "B", bytes(values)
            count = len(raw)
        else:
            code = values.typecode
            arr = values if sys.byteorder == "little" else _swapped(values)
            raw, count = arr.tobytes(), len(values)
        listing.append([name, code, count])
        blobs.append(raw + b"\0" * _pad(len(raw)))
    crc = 0
    for blob in blobs:
        crc = zlib.crc32(blob, crc)
    text = json.dumps(dict(head, arrays=listing, crc32=crc), separators=(",", ":")).encode()
    out = [_PREFIX.pack(MAGIC, VERSION, len(text)), text,
           b"\0" * _pad(_PREFIX.size + len(text)), *blobs]
    return b"".join(out)


def decode(data: bytes) -> tuple[dict[str, Any], dict[str, array[int] | bytes]]:
    """Head and arrays of a file's bytes; BadIndexFile for anything unexpected."""
    if len(data) < _PREFIX.size:
        raise BadIndexFile("shorter than its header")
    magic, version, head_len = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise BadIndexFile("not an unsplit index (bad magic)")
    if version != VERSION:
        raise BadIndexFile(f"format version {version}, this unsplit reads {VERSION}")
    if head_len > min(_MAX_HEAD, len(data) - _PREFIX.size):
        raise BadIndexFile("head runs past the end")
    try:
        head = json.loads(data[_PREFIX.size: _PREFIX.size + head_len])
    except (UnicodeDecodeError, json.JSONDecodeError) as e:  # the decoders' answers
        raise BadIndexFile(f"head is not JSON ({e})") from None
    if not isinstance(head, dict) or not isinstance(head.get("arrays"), list):
        raise BadIndexFile("head has no array list")
    pos = _PREFIX.size + head_len
    pos += _pad(pos)
    first = pos
    view = memoryview(data)
    arrays: dict[str, array[int] | bytes] = {}
    for item in head["arrays"]:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
                and item[1] in _TYPECODES and isinstance(item[2], int) and item[2] >= 0):
            raise BadIndexFile(f"bad array entry {item!r:.60}")
        name, code, count = item
        if code != "B" and array(code).itemsize != _TYPECODES[code]:
            raise BadIndexFile(f"array {name}: typecode {code} has another size here")
        size = count * _TYPECODES[code]
        if pos + size > len(data):
            raise BadIndexFile(f"array {name} runs past the end")
        if code == "B":
            arrays[name] = data[pos: pos + size]
        else:
            arr = array(code)
            arr.frombytes(view[pos: pos + size])  # one copy, not two (a libLLVM's is 21 MB)
            arrays[name] = arr if sys.byteorder == "little" else _swapped(arr)
        pos += size + _pad(size)
    if pos != len(data):
        raise BadIndexFile(f"{len(data) - pos} bytes after the last array")
    if zlib.crc32(view[first:]) != head.get("crc32"):
        raise BadIndexFile("its arrays do not match their checksum (damaged)")
    return head, arrays


def _swapped(values: array[int]) -> array[int]:
    out = array(values.typecode, values)
    out.byteswap()
    return out


def _parts(head: dict[str, Any], arrays: dict[str, Any]) -> StoredParts:
    """StoredParts from a decoded file, every cross-reference bounds-checked."""
    def get(name: str, kind: type) -> Any:
        value = arrays.get(name)
        if not isinstance(value, kind):
            raise BadIndexFile(f"missing or mistyped array {name}")
        return value

    starts, ends = get("plain.starts", array), get("plain.ends", array)
    names, strings = get("plain.names", array), get("plain.strings", bytes)
    if not len(starts) == len(ends) == len(names):
        raise BadIndexFile("plain function arrays differ in length")
    if names and max(names) >= max(len(strings), 1):
        raise BadIndexFile("a function name points past the strings")
    plain = PlainFunctions(starts, ends, names, strings)
    scan = None
    if "bat.addresses" in arrays:
        cols = [get(f"bat.{n}", array)
                for n in ("addresses", "offsets", "cursors", "hot_indices", "parents")]
        n = len(cols[0])
        hot_count = head.get("bat_hot_count")
        if not isinstance(hot_count, int) or not 0 <= hot_count <= n:
            raise BadIndexFile("bad BAT hot count")
        if len(cols[1]) != n + 1 or any(len(c) != n for c in (cols[2], cols[3], cols[4])):
            raise BadIndexFile("BAT arrays differ in length")
        scan = BatScan(cols[0], cols[1], cols[2], cols[3], cols[4], hot_count)
        lookup = Lookup(*(get(f"bat.lookup.{k}", array) for k in Lookup._fields))
        if any(len(c) != n for c in lookup[:3]) or len(lookup[3]) != len(lookup[4]) or \
                (n and max(lookup.order) >= n):
            raise BadIndexFile("BAT lookup columns do not fit the scan")
        scan.with_lookup(lookup)
    order = arrays.get("bat.symbol_order")
    if order is not None and not isinstance(order, array):
        raise BadIndexFile("mistyped array bat.symbol_order")
    return StoredParts(scan, plain, _procedures(head.get("procedures")), order)


def _procedures(raw: Any) -> list[Procedure]:
    if not isinstance(raw, list):
        raise BadIndexFile("bad procedure list")
    out = []
    for item in raw:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                and isinstance(item[1], list) and item[1]):
            raise BadIndexFile("bad procedure entry")
        name, frags = item
        out.append(Procedure(name, [_fragment(name, f) for f in frags]))
    return out


def _fragment(procedure: str, raw: Any) -> Fragment:
    # name, start, end, symbol, logical start, source; each checked inline (a later session
    # reads every stored fragment of a module: a generator per fragment cost more than the rest)
    if not (isinstance(raw, list) and len(raw) == 6):
        raise BadIndexFile(f"bad fragment entry of {procedure}")
    name, start, end, symbol, logical, source = raw
    if not (isinstance(name, str) and isinstance(start, int) and isinstance(end, int)
            and (symbol is None or isinstance(symbol, str)) and isinstance(logical, int)
            and isinstance(source, str)):
        raise BadIndexFile(f"bad fragment entry of {procedure}")
    return Fragment(procedure, name, start, end, symbol, logical, source)
