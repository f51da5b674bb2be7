"""One ELF file on disk, opened once: sections by name and type, symbols, build-id, DWARF.

Everything that reads an ELF goes through :class:`Binary` so that a file is opened and each
section read at most once per session, whatever the number of questions.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from bisect import bisect_right
from functools import cached_property
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from unsplit.errors import BinaryError, DecodeError, reader_errors

if TYPE_CHECKING:
    from elftools.elf.sections import Section

# pyelftools is imported when a question needs it (DWARF, section objects): importing it
# costs more than a warm `unsplit where` answer, which reads headers, notes and symbols alone.

_STT_NOTYPE, _STT_FUNC, _STT_FILE, _STB_LOCAL = 0, 2, 4, 0
_SHT_PROGBITS, _SHT_SYMTAB, _SHT_NOTE, _SHT_NOBITS, _SHT_DYNSYM = 1, 2, 7, 8, 11
_SHF_COMPRESSED = 0x800
_NT_GNU_BUILD_ID = 3


class RawSection(NamedTuple):
    """A section header as stored (numbers, not pyelftools' names), and its name."""

    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    addralign: int
    entsize: int


class _RawElf(NamedTuple):
    """The ELF header fields and section headers, read with struct."""

    wide: bool
    little: bool
    type: int
    machine: int
    sections: list[RawSection]


def _read_raw_elf(stream: IO[bytes]) -> _RawElf | None:
    """Headers of an ordinary ELF file; None for anything else (pyelftools then decides,
    and says what is wrong): a bad magic, extended section numbering, truncation."""
    stream.seek(0)
    head = stream.read(64)
    if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in (1, 2) or \
            head[5] not in (1, 2):
        return None
    wide, end = head[4] == 2, "<" if head[5] == 1 else ">"
    if wide and len(head) < 64:
        return None
    e_type, machine = struct.unpack_from(end + "HH", head, 16)
    (shoff,) = struct.unpack_from(end + ("Q" if wide else "I"), head, 0x28 if wide else 0x20)
    shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", head, 0x3A if wide else 0x2E)
    fmt = end + ("IIQQQQIIQQ" if wide else "IIIIIIIIII")
    if not shoff or not shnum:
        return _RawElf(wide, end == "<", e_type, machine, []) if not shoff and not shnum \
            else None
    if shstrndx >= shnum or shentsize < struct.calcsize(fmt):
        return None
    stream.seek(shoff)
    table = stream.read(shentsize * shnum)
    if len(table) < shentsize * shnum:
        return None
    rows = [struct.unpack_from(fmt, table, i * shentsize) for i in range(shnum)]
    names_row = rows[shstrndx]
    stream.seek(names_row[4])
    names = stream.read(names_row[5])
    out = []
    for name_at, sh_type, flags, addr, offset, size, link, info, align, entsize in rows:
        stop = names.find(b"\0", name_at)
        name = names[name_at: stop if stop >= 0 else len(names)].decode("utf-8", "replace")
        out.append(RawSection(name, sh_type, flags, addr, offset, size, link, info, align,
                              entsize))
    return _RawElf(wide, end == "<", e_type, machine, out)


class FunctionSymbol(NamedTuple):
    """A function symbol; `file` is the STT_FILE that precedes a local one (None for globals)."""

    name: str
    value: int
    size: int
    local: bool
    file: str | None


class SymbolEntry:
    """One symbol as stored: `type` and `bind` are the ELF numbers (STT_*, STB_*)."""

    __slots__ = ("bind", "index", "name", "shndx", "size", "type", "value")

    def __init__(self, index: int, name: str, value: int, size: int, type: int, bind: int,
                 shndx: int) -> None:
        self.index, self.name, self.value, self.size = index, name, value, size
        self.type, self.bind, self.shndx = type, bind, shndx

    @property
    def defined(self) -> bool:
        return self.shndx != 0  # SHN_UNDEF


class _StrtabNames:
    """Names of a columns record, decoded from its string table when asked for (both symbol
    column records keep ``values``, ``name_offsets`` and ``strtab``)."""

    __slots__ = ()
    values: array[int]
    name_offsets: array[int]
    strtab: bytes

    def __len__(self) -> int:
        return len(self.values)

    def name_at(self, offset: int) -> str:
        end = self.strtab.find(b"\0", offset)
        return self.strtab[offset: end if end >= 0 else len(self.strtab)].decode(
            "utf-8", "replace")

    def name(self, i: int) -> str:
        return self.name_at(self.name_offsets[i])


class SymbolColumns(_StrtabNames):
    """Every symbol of one table as arrays, in table order (STT_* in the low nibble of
    ``infos``, STB_* in the high one); names decoded from ``strtab`` when asked for."""

    __slots__ = ("infos", "name_offsets", "shndx", "sizes", "strtab", "values")

    def __init__(self, values: array[int], sizes: array[int], name_offsets: array[int],
                 infos: bytes, shndx: array[int], strtab: bytes) -> None:
        self.values, self.sizes, self.name_offsets = values, sizes, name_offsets
        self.infos, self.shndx, self.strtab = infos, shndx, strtab


class FunctionColumns(_StrtabNames):
    """The sized STT_FUNC symbols of one table as arrays, in table order: what
    :attr:`Binary.functions` holds, without a Python object per symbol (a stripped libLLVM's
    .dynsym has 129k). Names are decoded from ``strtab`` when asked for."""

    __slots__ = ("files", "locals", "name_offsets", "past_end", "sizes", "strtab", "table",
                 "values")

    def __init__(self, values: array[int], sizes: array[int], name_offsets: array[int],
                 locals: bytes, files: array[int], strtab: bytes, table: str = ".symtab",
                 past_end: int = 0) -> None:
        self.values, self.sizes, self.name_offsets = values, sizes, name_offsets
        self.locals = locals  # 1 for STB_LOCAL
        self.files = files  # name offset of the STT_FILE before a local one, else -1
        self.strtab, self.table = strtab, table
        self.past_end = past_end  # function symbols left out: value + size passes 2^64

    def symbol(self, i: int) -> FunctionSymbol:
        file = self.files[i]
        return FunctionSymbol(self.name(i), self.values[i], self.sizes[i], bool(self.locals[i]),
                              None if file < 0 else self.name_at(file))


class Binary:
    """An ELF file, opened lazily; cheap to create."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self._stream: IO[bytes] = open(path, "rb")  # closed by close()
        except OSError as e:
            raise BinaryError(f"{path}: cannot open: {e.strerror}") from None
        st = os.fstat(self._stream.fileno())
        self.identity = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
        try:
            self._raw = _read_raw_elf(self._stream)
        except OSError as e:
            self._stream.close()
            raise BinaryError(f"{path}: cannot read: {e.strerror}") from None
        if self._raw is None:  # pyelftools says what is wrong, or reads what we do not
            try:
                self.__dict__["elf"] = self._pyelftools()
                # pyelftools reads the section headers when first asked: a table past the end
                # of a truncated file (a core cut short) is said here, as a file we cannot read.
                with reader_errors(lambda said: BinaryError(
                        f"{path}: cannot read its section headers ({said})")):
                    _ = self.section_headers
            except BinaryError:
                self._stream.close()
                raise
        self._symbol_tables: dict[str, list[SymbolEntry]] = {}
        self._sections: dict[str, Section | None] = {}
        self._symbol_columns: dict[str, SymbolColumns] = {}
        # What other layers work out from this file (unsplit.elf.derived.PerFile keys).
        self.derived: dict[object, object] = {}

    def close(self) -> None:
        self._stream.close()

    @cached_property
    def elf(self) -> Any:
        """The pyelftools ELFFile, made when first asked for."""
        return self._pyelftools()

    def _pyelftools(self) -> Any:
        from elftools.elf.elffile import ELFFile

        with reader_errors(lambda said: BinaryError(f"{self.path}: not an ELF file ({said})")):
            return ELFFile(self._stream)

    @property
    def elf_type(self) -> str:
        return str(self.elf["e_type"])

    @property
    def machine(self) -> int:
        """e_machine (62: x86-64)."""
        if self._raw is not None:
            return self._raw.machine
        self._stream.seek(18)
        return int.from_bytes(self._stream.read(2), "little" if self.elf.little_endian else "big")

    def load_addresses(self) -> list[int]:
        """p_vaddr of every PT_LOAD, in program-header order (read with struct)."""
        if self._raw is None:
            return [s["p_vaddr"] for s in self.elf.iter_segments() if s["p_type"] == "PT_LOAD"]
        end = "<" if self._raw.little else ">"
        head = self.read_at(0, 64)
        wide = self._raw.wide
        (phoff,) = struct.unpack_from(end + ("Q" if wide else "I"), head, 0x20 if wide else 0x1C)
        phentsize, phnum = struct.unpack_from(end + "HH", head, 0x36 if wide else 0x2A)
        fmt = end + ("IIQQ" if wide else "IIII")  # p_type, then p_flags/p_offset, p_vaddr
        if phnum == 0xFFFF or phentsize < struct.calcsize(fmt):
            return [s["p_vaddr"] for s in self.elf.iter_segments() if s["p_type"] == "PT_LOAD"]
        table = self.read_at(phoff, phentsize * phnum)
        out = []
        for i in range(len(table) // phentsize):
            row = struct.unpack_from(fmt, table, i * phentsize)
            if row[0] == 1:  # PT_LOAD
                out.append(row[3] if wide else row[2])
        return out

    @cached_property
    def raw_sections(self) -> list[RawSection]:
        """Every section header, read with struct (pyelftools is not needed for them)."""
        if self._raw is not None:
            return self._raw.sections
        return [RawSection(self.elf._get_section_name(h), *_raw_header_fields(h))
                for h in self.section_headers]

    def section_header(self, name: str) -> RawSection | None:
        i = self._section_index.get(name)
        return None if i is None else self.raw_sections[i]

    def has_section(self, name: str) -> bool:
        return name in self._section_index

    @property
    def is_bolt_output(self) -> bool:
        """BOLT writes ``.note.bolt_info`` into every file it makes."""
        return self.has_section(".note.bolt_info")

    @cached_property
    def _section_index(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for i, header in enumerate(self.raw_sections):
            out.setdefault(header.name, i)
        return out

    @cached_property
    def section_headers(self) -> list[Any]:
        """Every section header, without making the sections (iter_sections parses a
        .gnu.hash whole)."""
        return [self.elf._get_section_header(i) for i in range(self.elf.num_sections())]

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
        i = self._section_index.get(name)
        return None if i is None else self.data_of(i)

    def data_of(self, index: int) -> bytes:
        """Decompressed contents of section number ``index``: read straight from the file
        unless compressed (pyelftools inflates those)."""
        raw = self.raw_sections[index]
        if not raw.flags & _SHF_COMPRESSED and raw.type != _SHT_NOBITS:
            return self.read_at(raw.offset, raw.size)
        return bytes(self.elf.get_section(index).data())

    @cached_property
    def functions(self) -> list[FunctionSymbol]:
        """Every sized STT_FUNC of .symtab, read straight from the bytes.

        A stripped file borrows the .symtab of its separate debug file, else makes do with
        .dynsym. pyelftools builds a dict per symbol; a clang-size binary has hundreds of
        thousands, so the table is unpacked with struct in one pass instead.
        """
        if self.has_section(".symtab"):
            return _read_functions(self, ".symtab")
        companion = self.debug_companion
        if companion is not None and companion.has_section(".symtab"):
            return companion.functions
        return _read_functions(self, ".dynsym")

    @cached_property
    def function_columns(self) -> FunctionColumns:
        """:attr:`functions` as arrays, from the same table."""
        if self.has_section(".symtab"):
            return _function_columns(self, ".symtab")
        companion = self.debug_companion
        if companion is not None and companion.has_section(".symtab"):
            return companion.function_columns
        return _function_columns(self, ".dynsym")

    @cached_property
    def function_files(self) -> bool:
        """Whether a symbol of :attr:`function_columns` can name its source file: their table
        has an STT_FILE symbol (a .dynsym never does). Answered without making the columns."""
        if self.has_section(".symtab"):
            return _has_file_symbol(self.symbol_columns(".symtab"))
        companion = self.debug_companion
        if companion is not None and companion.has_section(".symtab"):
            return companion.function_files
        return _has_file_symbol(self.symbol_columns(".dynsym"))

    def symbol_columns(self, table: str = ".symtab") -> SymbolColumns:
        """Every symbol of `table` as arrays sliced from its bytes (made once per table)."""
        cached = self._symbol_columns.get(table)
        if cached is None:
            cached = self._symbol_columns[table] = _symbol_columns(self, table)
        return cached

    def read_at(self, offset: int, size: int) -> bytes:
        """``size`` bytes of the file from ``offset`` (fewer at its end). One pread, not a
        seek and a buffered read: that fills an 8 KB buffer for each small read (a stripped
        library's fragments have 142k padding runs to look at)."""
        size = min(size, self.identity[1] - offset)  # a damaged size: no huge buffer
        return os.pread(self._stream.fileno(), size, offset) if size > 0 and offset >= 0 else b""

    def symbol_entries(self, table: str = ".symtab") -> list[SymbolEntry]:
        """The function, untyped and file symbols of `table` (.symtab or .dynsym), in table
        order, unpacked once with struct: the one reader every symbol question goes through."""
        cached = self._symbol_tables.get(table)
        if cached is None:
            i = self._section_index.get(table)
            is_table = i is not None and self.raw_sections[i].type in (_SHT_SYMTAB, _SHT_DYNSYM)
            cached = _read_symbols(self, i) if is_table and i is not None else []
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
        end = "<" if self._little else ">"
        for header in self.raw_sections:
            if header.type != _SHT_NOTE or header.flags & _SHF_COMPRESSED:
                continue
            data = self.read_at(header.offset, header.size)
            align = 8 if header.addralign == 8 else 4  # as pyelftools walks notes
            pos = 0
            while pos + 12 <= len(data):
                namesz, descsz, ntype = struct.unpack_from(end + "III", data, pos)
                name_at = pos + 12
                desc_at = name_at + -(-namesz // align) * align
                if desc_at + descsz > len(data):
                    break
                if ntype == _NT_GNU_BUILD_ID and \
                        data[name_at: name_at + namesz].rstrip(b"\0") == b"GNU":
                    return data[desc_at: desc_at + descsz]
                pos = desc_at + -(-descsz // align) * align
        return None

    @property
    def address_size(self) -> int:
        """8 for ELFCLASS64, else 4."""
        return 8 if self._wide else 4

    @property
    def _little(self) -> bool:
        return self._raw.little if self._raw is not None else bool(self.elf.little_endian)

    @property
    def little_endian(self) -> bool:
        """The file's byte order (ELF header), read without pyelftools where it can be."""
        return self._little

    @property
    def _wide(self) -> bool:
        return self._raw.wide if self._raw is not None else self.elf.elfclass == 64

    @cached_property
    def has_dwarf(self) -> bool:
        return self.has_section(".debug_info")

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
        raw = self.section_data(".gnu_debuglink")
        if raw is not None:
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

    def code_bytes(self, address: int, size: int) -> bytes:
        """The bytes from file address `address` of an executable section, up to `size` and no
        further than the section's end (b"" outside code)."""
        i = bisect_right(self._code_sections, (address, 1 << 64)) - 1
        if i < 0 or address >= self._code_sections[i][1]:
            return b""
        start, end, offset = self._code_sections[i]
        return self.read_at(offset + address - start, min(size, end - address))

    def code_window(self) -> CodeWindow:
        """A reader of code at ascending addresses, a window of the file at a time."""
        return CodeWindow(self)

    @cached_property
    def _code_sections(self) -> list[tuple[int, int, int]]:
        """(start, end, file offset) of each executable SHT_PROGBITS section, by address."""
        return sorted((s.addr, s.addr + s.size, s.offset) for s in self.raw_sections
                      if s.flags & 0x4 and s.type == _SHT_PROGBITS)

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
        for sec in self.raw_sections:
            if sec.flags & 0x2 and sec.flags & 0x4 and sec.type != _SHT_NOBITS:  # ALLOC, EXEC
                out.append((sec.addr, sec.addr + sec.size))
        return sorted(out)


class CodeWindow:
    """Code read a window at a time, for questions about many short runs in address order
    (the padding after 142k fragments of a stripped library): one read per window, not one
    per run, and the window's bytes matched in place (`bytes, start, end`)."""

    WINDOW = 1 << 20

    def __init__(self, binary: Binary) -> None:
        self.binary = binary
        self.data, self.start, self.end = b"", 0, 0

    def at(self, address: int, size: int) -> tuple[bytes, int, int]:
        """`data, pos, endpos`: data[pos:endpos] are Binary.code_bytes(address, size)."""
        if not (self.start <= address and address + size <= self.end):
            self.data = self.binary.code_bytes(address, max(size, self.WINDOW))
            self.start, self.end = address, address + len(self.data)
        pos = address - self.start
        return self.data, pos, min(pos + size, len(self.data))


def _raw_header_fields(h: Any) -> tuple[int, ...]:
    """A pyelftools section header as numbers (for files only pyelftools reads)."""
    from elftools.elf import enums

    sh_type = h["sh_type"]
    if isinstance(sh_type, str):
        for name in ("ENUM_SH_TYPE_BASE", "ENUM_SH_TYPE_AMD64", "ENUM_SH_TYPE_ARM",
                     "ENUM_SH_TYPE_AARCH64", "ENUM_SH_TYPE_MIPS", "ENUM_SH_TYPE_RISCV"):
            table = getattr(enums, name, {})
            if sh_type in table:
                sh_type = table[sh_type]
                break
    return (sh_type if isinstance(sh_type, int) else -1, h["sh_flags"], h["sh_addr"],
            h["sh_offset"], h["sh_size"], h["sh_link"], h["sh_info"], h["sh_addralign"],
            h["sh_entsize"])


def allocated_sections(path: str) -> dict[str, int] | None:
    """sh_addr of every SHF_ALLOC section of the ELF file at `path`, by name, read with
    struct from its headers alone (a process maps dozens, too many for pyelftools).
    None when the file needs pyelftools (extended section numbering) or is not ELF."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in (1, 2):
                return None
            wide, end = head[4] == 2, "<" if head[5] == 1 else ">"
            (shoff,) = struct.unpack_from(end + ("Q" if wide else "I"), head,
                                          0x28 if wide else 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", head,
                                                            0x3A if wide else 0x2E)
            fmt = end + ("IIQQQQIIQQ" if wide else "IIIIIIIIII")
            if not shnum or shstrndx >= shnum or shentsize < struct.calcsize(fmt):
                return None
            f.seek(shoff)
            table = f.read(shentsize * shnum)
            if len(table) < shentsize * shnum:
                return None
            headers = [struct.unpack_from(fmt, table, i * shentsize) for i in range(shnum)]
            f.seek(headers[shstrndx][4])
            names = f.read(headers[shstrndx][5])
    except OSError:
        return None
    out: dict[str, int] = {}
    for name_at, _, flags, addr, *_ in headers:
        if flags & 0x2:  # SHF_ALLOC
            stop = names.find(b"\0", name_at)
            out.setdefault(names[name_at: stop if stop >= 0 else len(names)].decode(
                "utf-8", "replace"), addr)
    return out


def _debug_dirs() -> list[str]:
    extra = os.environ.get("UNSPLIT_DEBUG_FILE_DIRECTORY", "")
    return [d for d in extra.split(":") if d] + ["/usr/lib/debug"]


def _read_symbols(binary: Binary, index: int) -> list[SymbolEntry]:
    """Every named symbol of table number `index` that is a function, untyped, or a file
    (STT_FILE), read from the section headers with struct (no pyelftools: a short command
    spares its import)."""
    sec = binary.raw_sections[index]
    data = binary.data_of(index)
    if not 0 <= sec.link < len(binary.raw_sections):
        raise DecodeError(sec.name, 0, f"string table index {sec.link} out of range")
    strtab = binary.data_of(sec.link)
    endian = "<" if binary._little else ">"
    if binary._wide:
        fmt, order = endian + "IBBHQQ", (0, 1, 3, 4, 5)  # name, info, shndx, value, size
    else:
        fmt, order = endian + "IIIBBH", (0, 3, 5, 1, 2)
    entsize = struct.calcsize(fmt)
    if sec.entsize not in (0, entsize) or len(data) % entsize:
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


def _symbol_columns(binary: Binary, table: str) -> SymbolColumns:
    """Columns sliced straight out of the table's bytes: strided array slices, done in C."""
    i = binary._section_index.get(table)
    sec = None if i is None else binary.raw_sections[i]
    if sec is None or sec.type not in (_SHT_SYMTAB, _SHT_DYNSYM):
        return SymbolColumns(array("Q"), array("Q"), array("L"), b"", array("H"), b"")
    assert i is not None
    data = binary.data_of(i)
    if not 0 <= sec.link < len(binary.raw_sections):
        raise DecodeError(sec.name, 0, f"string table index {sec.link} out of range")
    strtab = binary.data_of(sec.link)
    wide = binary._wide
    entsize = 24 if wide else 16
    if sec.entsize not in (0, entsize) or len(data) % entsize:
        raise DecodeError(sec.name, 0, f"symbol table entries are not {entsize} bytes")
    swap = binary._little != (sys.byteorder == "little")
    words, halves = array(_U32, data), array("H", data)
    if swap:
        words.byteswap()
        halves.byteswap()
    if wide:
        quads = array("Q", data)
        if swap:
            quads.byteswap()
        return SymbolColumns(quads[1::3], quads[2::3], words[0::6], data[4::24], halves[3::12],
                             strtab)
    return SymbolColumns(array("Q", words[1::4]), array("Q", words[2::4]), words[0::4],
                         data[12::16], halves[7::8], strtab)


_U32 = "I" if array("I").itemsize == 4 else "L"
_ADDRESS_END = (1 << 64) - 1  # the last end an array("Q") of ends holds


def _function_columns(binary: Binary, table: str) -> FunctionColumns:
    """The sized functions of the symbol columns; the one Python loop left walks the symbols
    only to pick them and their STT_FILE."""
    cols = binary.symbol_columns(table)
    values, sizes, names = cols.values, cols.sizes, cols.name_offsets
    out_values, out_sizes, out_names = array("Q"), array("Q"), array("L")
    out_files = array("q")
    local_flags = bytearray()
    current_file = -1
    past_end = 0
    for i, info in enumerate(cols.infos):
        kind = info & 0xF
        if kind == _STT_FUNC or (kind == _STT_NOTYPE and _is_split_label_at(cols.strtab,
                                                                           names[i])):
            if values[i] and sizes[i] and names[i]:
                if values[i] + sizes[i] > _ADDRESS_END:
                    past_end += 1
                    continue
                local = info >> 4 == _STB_LOCAL
                out_values.append(values[i])
                out_sizes.append(sizes[i])
                out_names.append(names[i])
                local_flags.append(local)
                out_files.append(current_file if local else -1)
        elif kind == _STT_FILE and names[i]:
            current_file = names[i]
    return FunctionColumns(out_values, out_sizes, out_names, bytes(local_flags), out_files,
                           cols.strtab, table, past_end)


_IS_FILE = bytes(int(info & 0xF == _STT_FILE) for info in range(256))


def _has_file_symbol(cols: SymbolColumns) -> bool:
    return b"\x01" in cols.infos.translate(_IS_FILE)


def _is_split_label(sym: SymbolEntry) -> bool:
    """clang labels the pieces it moves (``foo.cold``, ``foo.__part.1``) as sized STT_NOTYPE
    symbols, not STT_FUNC: without them a clang split built without a bb address map loses
    its cold code (``clang-mfs/crash`` with the map removed: 0x11c6 outside every procedure)."""
    return sym.type == _STT_NOTYPE and (".cold" in sym.name or ".__part." in sym.name)


def _is_split_label_at(strtab: bytes, offset: int) -> bool:
    """The same test on a name still in the string table (no str made for other symbols)."""
    end = strtab.find(b"\0", offset)
    name = strtab[offset : end if end >= 0 else len(strtab)]
    return b".cold" in name or b".__part." in name


def _read_functions(binary: Binary, table: str) -> list[FunctionSymbol]:
    out: list[FunctionSymbol] = []
    current_file: str | None = None
    for sym in binary.symbol_entries(table):
        if sym.type == _STT_FILE:
            current_file = sym.name
        elif sym.value and sym.size and (sym.type == _STT_FUNC or _is_split_label(sym)) \
                and sym.value + sym.size <= _ADDRESS_END:  # else damaged: FunctionColumns
            local = sym.bind == _STB_LOCAL
            out.append(FunctionSymbol(sym.name, sym.value, sym.size, local,
                                      current_file if local else None))
    return out
