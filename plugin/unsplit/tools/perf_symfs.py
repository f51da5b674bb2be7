"""`unsplit perf-symfs DIR BINARY...`: for ``perf report``/``annotate --symfs DIR``, byte-for-byte
copies of split binaries but for each moved fragment's ``st_name``, pointed at its procedure's
name (already in ``.strtab``)."""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
from typing import Any

from unsplit.errors import UnsplitError, UsageError
from unsplit.index.module_index import ModuleIndex
from unsplit.session import Session

# Elf64_Sym and Elf32_Sym: st_name is the first word of both
_SYM64 = struct.Struct("<IBBHQQ")
_SYM32 = struct.Struct("<IIIBBH")


def renamed(index: ModuleIndex) -> tuple[bytes, int, list[str]]:
    """The binary's bytes with its moved fragments' symbols renamed; how many were, and the
    fragment symbols left as they are (no symbol of their procedure's name to point at)."""
    binary = index.binary
    elf = binary.elf
    if not elf.little_endian:
        raise UnsplitError("a big-endian file (only little-endian is written)")
    with open(binary.path, "rb") as f:
        data = bytearray(f.read())
    symtab = elf.get_section_by_name(".symtab")
    if symtab is None:
        raise UnsplitError("no .symtab: perf names its code from .dynsym, "
                           "which holds no fragment")
    wide = elf.elfclass == 64
    layout = _SYM64 if wide else _SYM32
    start, size = int(symtab["sh_offset"]), int(symtab["sh_size"])
    names: dict[str, int] = {}
    entries: list[tuple[int, str, int]] = []  # (offset in file, name, st_name)
    for k, sym in enumerate(symtab.iter_symbols()):
        at = start + k * layout.size
        if at + layout.size > start + size:
            break
        st_name = int(sym["st_name"])
        names.setdefault(sym.name, st_name)
        entries.append((at, sym.name, st_name))
    procedure_of = {f.symbol: f.procedure for f in index.moved_fragments() if f.symbol}
    count = 0
    left: list[str] = []
    for at, name, _ in entries:
        procedure = procedure_of.get(name)
        if procedure is None:
            continue
        target = names.get(procedure)
        if target is None:
            left.append(name)
            continue
        struct.pack_into("<I", data, at, target)
        count += 1
    return bytes(data), count, left


def symfs_path(root: str, binary: str) -> str:
    """Where ``perf --symfs ROOT`` opens `binary`: ROOT followed by its absolute path."""
    return os.path.join(root, os.path.abspath(binary).lstrip(os.sep))


def _run(args: argparse.Namespace) -> str:
    session = Session()
    records: list[dict[str, Any]] = []
    failed = []
    for path in args.binary:
        try:
            index = session.index(path)
            data, count, left = renamed(index)
        except UnsplitError as e:
            failed.append(f"unsplit: {path}: {e}")
            continue
        out = symfs_path(args.symfs, path)
        try:
            _write(out, data)
        except OSError as e:
            failed.append(f"unsplit: {out}: cannot write it ({e.strerror})")
            continue
        records.append({"binary": path, "path": out, "renamed": count, "left": left})
    for line in failed:
        print(line, file=sys.stderr)
    text = json.dumps(records) if args.json else "\n".join(
        f"{r['binary']}: {r['renamed']} fragment symbols named by their procedure in {r['path']}"
        + (f" ({len(r['left'])} left: no symbol of their procedure's name)" if r["left"] else "")
        for r in records)
    if failed:
        print(text)
        raise UsageError(f"{len(failed)} of {len(args.binary)} binaries failed")
    return text


def _write(path: str, data: bytes) -> None:
    """Write atomically, keeping the executable bit (perf annotate runs objdump on it)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)


def add_cli(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "perf-symfs", help="copies for `perf report --symfs DIR`, fragments named by procedure",
        description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("symfs", metavar="DIR", help="the directory to give perf's --symfs")
    p.add_argument("binary", nargs="+", metavar="BINARY",
                   help="split ELF files, as the profile recorded their paths")
    p.add_argument("--json", action="store_true", help="one JSON list of what was written")
    p.set_defaults(handler=_run)
