"""One ELF file on disk, opened once: sections by name and type, symbols, build-id, DWARF.

Everything that reads an ELF goes through :class:`Binary` so that a file is opened and each
section read at most once per session, whatever the number of questions.
"""

from __future__ import annotations

import os
import struct
from bisect import bisect_right
from dataclasses import dataclass
from functools import cached_property
from typing import IO, Any

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection, Section, SymbolTableSection

from .errors import BinaryError, DecodeError

_STT_NOTYPE, _STT_FUNC, _STT_FILE, _STB_LOCAL = 0, 2, 4, 0


@dataclass(frozen=True, slots=True)
class FunctionSymbol:
    """A function symbol; `file` is the STT_FILE that precedes a local one (None for globals)."""

    name: str
    value: int
    size: int
    local: bool
    file: str | None


@dataclass(frozen=True, slots=True)
class SymbolEntry:
    """One symbol as stored: `type` and `bind` are the ELF numbers (STT_*, STB_*)."""

    index: int
    name: str
    value: int
    size: int
    type: int
    bind: int
    shndx: int

    @property
    def defined(self) -> bool:
        return self.shndx != 0  # SHN_UNDEF


class Binary:
    """An ELF file, opened lazily; cheap to create."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self._stream: IO[bytes] = open(path, "rb")  # closed by close()
        except OSError as e:
            raise BinaryError(f"{path}: cannot open: {e.strerror}") from None
        try:
            self.elf = ELFFile(self._stream)
        except (ELFError, ValueError) as e:
            self._stream.close()
            raise BinaryError(f"{path}: not an ELF file ({e})") from None
        self._symbol_tables: dict[str, list[SymbolEntry]] = {}
        self._sections: dict[str, Section | None] = {}
        st = os.fstat(self._stream.fileno())
        self.identity = (os.path.realpath(path), st.st_size, st.st_mtime_ns)

    def close(self) -> None:
        self._stream.close()

    @property
    def elf_type(self) -> str:
        return str(self.elf["e_type"])

    @cached_property
    def _section_index(self) -> dict[str, int]:
        # From the headers alone: pyelftools' own name map builds every section object, and
        # building a hash section parses the whole table.
        out: dict[str, int] = {}
        for i in range(self.elf.num_sections()):
            header = self.elf._get_section_header(i)
            out.setdefault(self.elf._get_section_name(header), i)
        return out

    def section(self, name: str) -> Section | None:
        """The section named `name` (made once: pyelftools parses its header per call)."""
        if name not in self._sections:
            i = self._section_index.get(name)
            self._sections[name] = None if i is None else self.elf.get_section(i)
        return self._sections[name]

    def sections_of_type(self, sh_type: int | str) -> list[Section]:
        return [s for s in self.elf.iter_sections() if s["sh_type"] == sh_type]

    def section_data(self, name: str) -> bytes | None:
        """Decompressed contents of the named section, or None when absent."""
        sec = self.section(name)
        return None if sec is None else bytes(sec.data())

    @cached_property
    def functions(self) -> list[FunctionSymbol]:
        """Every sized STT_FUNC of .symtab, read straight from the bytes.

        A stripped file borrows the .symtab of its separate debug file, else makes do with
        .dynsym. pyelftools builds a dict per symbol; a clang-size binary has hundreds of
        thousands, so the table is unpacked with struct in one pass instead.
        """
        if self.section(".symtab") is not None:
            return _read_functions(self, ".symtab")
        companion = self.debug_companion
        if companion is not None and companion.section(".symtab") is not None:
            return companion.functions
        return _read_functions(self, ".dynsym")

    def symbol_entries(self, table: str = ".symtab") -> list[SymbolEntry]:
        """The function, untyped and file symbols of `table` (.symtab or .dynsym), in table
        order, unpacked once with struct: the one reader every symbol question goes through."""
        cached = self._symbol_tables.get(table)
        if cached is None:
            sec = self.section(table)
            cached = _read_symbols(self, sec) if isinstance(sec, SymbolTableSection) else []
            self._symbol_tables[table] = cached
        return cached

    @cached_property
    def dwarf_binary(self) -> Binary | None:
        """This file if it has DWARF, else its separate debug file if that has, else None."""
        if self.has_dwarf:
            return self
        companion = self.debug_companion
        return companion if companion is not None and companion.has_dwarf else None

    @cached_property
    def build_id(self) -> bytes | None:
        for sec in self.elf.iter_sections():
            if not isinstance(sec, NoteSection):
                continue
            for note in sec.iter_notes():
                if note["n_type"] == "NT_GNU_BUILD_ID":
                    return bytes.fromhex(note["n_desc"])
        return None

    @cached_property
    def has_dwarf(self) -> bool:
        return self.section(".debug_info") is not None

    @cached_property
    def dwarf(self) -> Any:
        # BOLT inputs are linked with --emit-relocs: applying .rela.debug_* to an executable
        # fails in pyelftools, and is wrong anyway (the values are final already).
        relocate = self.elf["e_type"] == "ET_REL"
        return self.elf.get_dwarf_info(relocate_dwarf_sections=relocate)

    @cached_property
    def debug_companion(self) -> Binary | None:
        """The separate debug file of a stripped binary (objcopy --only-keep-debug), if any.

        Looked up as GDB does: /usr/lib/debug/.build-id/xx/rest.debug by build-id, then the
        .gnu_debuglink name next to the file, in its .debug/ folder and under /usr/lib/debug.
        """
        candidates = []
        if self.build_id:
            h = self.build_id.hex()
            candidates += [os.path.join(d, ".build-id", h[:2], h[2:] + ".debug")
                           for d in _debug_dirs()]
        link = self.section(".gnu_debuglink")
        if link is not None:
            raw = bytes(link.data())
            name = raw[: raw.find(b"\0")].decode("utf-8", "replace")
            here = os.path.dirname(os.path.realpath(self.path))
            candidates += [os.path.join(here, name), os.path.join(here, ".debug", name)]
            candidates += [os.path.join(d, here.lstrip("/"), name) for d in _debug_dirs()]
        for path in candidates:
            if os.path.isfile(path) and os.path.realpath(path) != self.identity[0]:
                try:
                    return Binary(path)
                except BinaryError:
                    continue
        return None

    def code_byte(self, address: int) -> int | None:
        """The byte at file address `address` of an executable section, or None."""
        i = bisect_right(self._code_sections, (address, 1 << 64)) - 1
        if i < 0:
            return None
        start, end, offset = self._code_sections[i]
        if address >= end:
            return None
        self._stream.seek(offset + address - start)
        data = self._stream.read(1)
        return data[0] if data else None

    @cached_property
    def _code_sections(self) -> list[tuple[int, int, int]]:
        """(start, end, file offset) of each executable SHT_PROGBITS section, by address."""
        return sorted((s["sh_addr"], s["sh_addr"] + s["sh_size"], s["sh_offset"])
                      for s in self.elf.iter_sections()
                      if s["sh_flags"] & 0x4 and s["sh_type"] == "SHT_PROGBITS")

    def function_at(self, name: str, address: int) -> FunctionSymbol | None:
        """The function symbol `name` at `address` (a dict look-up, made once)."""
        return self._functions_by_place.get((name, address))

    @cached_property
    def _functions_by_place(self) -> dict[tuple[str, int], FunctionSymbol]:
        out: dict[tuple[str, int], FunctionSymbol] = {}
        for f in self.functions:
            out.setdefault((f.name, f.value), f)
        return out

    def text_address_ranges(self) -> list[tuple[int, int]]:
        """[start, end) of every allocated executable section, file addresses."""
        return self._text_ranges

    @cached_property
    def _text_ranges(self) -> list[tuple[int, int]]:
        out = []
        for sec in self.elf.iter_sections():
            flags = sec["sh_flags"]
            if flags & 0x2 and flags & 0x4 and sec["sh_type"] != "SHT_NOBITS":  # ALLOC, EXEC
                out.append((sec["sh_addr"], sec["sh_addr"] + sec["sh_size"]))
        return sorted(out)


def _debug_dirs() -> list[str]:
    extra = os.environ.get("UNSPLIT_DEBUG_FILE_DIRECTORY", "")
    return [d for d in extra.split(":") if d] + ["/usr/lib/debug"]


def _read_symbols(binary: Binary, sec: SymbolTableSection) -> list[SymbolEntry]:
    """Every named symbol of one table that is a function, untyped, or a file (STT_FILE)."""
    elf = binary.elf
    data = bytes(sec.data())
    strtab = bytes(elf.get_section(sec["sh_link"]).data())
    endian = "<" if elf.little_endian else ">"
    if elf.elfclass == 64:
        fmt, order = endian + "IBBHQQ", (0, 1, 3, 4, 5)  # name, info, shndx, value, size
    else:
        fmt, order = endian + "IIIBBH", (0, 3, 5, 1, 2)
    entsize = struct.calcsize(fmt)
    if sec["sh_entsize"] not in (0, entsize) or len(data) % entsize:
        raise DecodeError(sec.name, 0, f"symbol table entries are not {entsize} bytes")
    out: list[SymbolEntry] = []
    n, i, x, v, z = order
    for index, entry in enumerate(struct.iter_unpack(fmt, data)):
        info = entry[i]
        kind = info & 0xF
        if kind not in (_STT_NOTYPE, _STT_FUNC, _STT_FILE) or not entry[n]:
            continue
        end = strtab.find(b"\0", entry[n])
        name = strtab[entry[n] : end if end >= 0 else len(strtab)].decode("utf-8", "replace")
        out.append(SymbolEntry(index, name, entry[v], entry[z], kind, info >> 4, entry[x]))
    return out


def _is_split_label(sym: SymbolEntry) -> bool:
    """clang labels the pieces it moves (``foo.cold``, ``foo.__part.1``) as sized STT_NOTYPE
    symbols, not STT_FUNC: without them a clang split built without a bb address map loses
    its cold code (``clang-mfs/crash`` with the map removed: 0x11c6 outside every procedure)."""
    return sym.type == _STT_NOTYPE and (".cold" in sym.name or ".__part." in sym.name)


def _read_functions(binary: Binary, table: str) -> list[FunctionSymbol]:
    out: list[FunctionSymbol] = []
    current_file: str | None = None
    for sym in binary.symbol_entries(table):
        if sym.type == _STT_FILE:
            current_file = sym.name
        elif sym.value and sym.size and (sym.type == _STT_FUNC or _is_split_label(sym)):
            local = sym.bind == _STB_LOCAL
            out.append(FunctionSymbol(sym.name, sym.value, sym.size, local,
                                      current_file if local else None))
    return out
