"""An x86-64 Linux ELF core file read offline: memory, threads' registers, mapped modules.

Specifications: the gABI (ELF header, program headers, notes); Linux's `elf_prstatus` and
`user_regs_struct` (arch/x86/include/asm/user_64.h), `NT_FILE` (fs/binfmt_elf.c,
fill_files_note), `NT_AUXV`; glibc's `r_debug`/`link_map` (elf/link.h) for cores without
`NT_FILE`. Both the kernel's cores and GDB's `generate-core-file` ones (which have `NT_FILE`)
are read; memory a core leaves out (read-only file-backed text) is read from the mapped files.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from functools import cached_property
from typing import NamedTuple

from unsplit.elf.binary import Binary
from unsplit.errors import BinaryError, DecodeError, UnsplitError, reading
from unsplit.host import LoadedModule

NT_PRSTATUS, NT_AUXV, NT_FILE = 1, 6, 0x46494C45
AT_ENTRY, AT_NULL = 9, 0
PT_LOAD, PT_NOTE, PT_DYNAMIC = 1, 4, 2
DT_NULL, DT_DEBUG = 0, 21
NT_GNU_BUILD_ID = 3

# user_regs_struct order -> DWARF register number (x86-64 psABI), None for the rest
_USER_REGS = ("r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx",
              "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base",
              "gs_base", "ds", "es", "fs", "gs")
_DWARF = {"rax": 0, "rdx": 1, "rcx": 2, "rbx": 3, "rsi": 4, "rdi": 5, "rbp": 6, "rsp": 7,
          **{f"r{i}": i for i in range(8, 16)}, "rip": 16}
_PRSTATUS_REGS = 112  # offset of pr_reg in the x86-64 elf_prstatus
_PRSTATUS_PID = 32


class Thread(NamedTuple):
    """One thread of the core: its NT_PRSTATUS note."""

    pid: int
    signal: int
    registers: dict[int, int]  # DWARF register number -> value

    def __hash__(self) -> int:  # the registers are a dict: hashed without them
        return hash((self.pid, self.signal))


class Mapping(NamedTuple):
    """A file mapped at [start, end), from file offset `offset`."""

    start: int
    end: int
    offset: int
    path: str


class _Segment(NamedTuple):
    """A PT_LOAD segment: what of memory the core holds, and where in the file."""

    vaddr: int
    memsz: int
    offset: int
    filesz: int


class Core:
    """One core file, read on demand with one open file.

    `threads_required` (the default): a core whose notes are cut off or that has no thread
    registers raises, since nothing can be unwound; False reads what is there, for a debugger
    that unwinds it. `problems` says, one line each, what is damaged but not fatal (segments
    cut off by a truncated file)."""

    def __init__(self, path: str, threads_required: bool = True,
                 data: bytes | None = None) -> None:
        """`data`: the core's bytes, when they are in memory already (else read from `path`)."""
        self.path = path
        self.threads_required = threads_required
        self.problems: list[str] = []
        if data is None:
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise BinaryError(f"{path}: cannot open: {e.strerror}") from None
        self._data = data
        self._segments: list[_Segment] = []
        self._notes: list[tuple[int, int, bytes]] = []  # (type, offset in file, desc)
        self._file_cache: dict[str, bytes | None] = {}
        self._parse()

    # -- structure -----------------------------------------------------------------------------

    def _error(self, offset: int, message: str) -> DecodeError:
        return DecodeError(os.path.basename(self.path), offset, message)

    def _parse(self) -> None:
        d = self._data
        if len(d) < 64 or d[:4] != b"\x7fELF":
            raise BinaryError(f"{self.path}: not an ELF file")
        if d[4] != 2 or d[5] != 1:
            raise BinaryError(f"{self.path}: not a 64-bit little-endian ELF file")
        e_type, e_machine = struct.unpack_from("<HH", d, 16)
        if e_type != 4:
            raise BinaryError(f"{self.path}: not a core file (ELF type {e_type}, expected ET_CORE)")
        if e_machine != 62:
            raise BinaryError(f"{self.path}: core of machine {e_machine}, expected x86-64 (62)")
        phoff, = struct.unpack_from("<Q", d, 32)
        phentsize, phnum = struct.unpack_from("<HH", d, 54)
        if phentsize != 56 or phoff + phnum * 56 > len(d):
            raise self._error(phoff, f"program headers ({phnum} x {phentsize} bytes) run past "
                              f"the end of the file ({len(d)} bytes): truncated core")
        for i in range(phnum):
            p_type, _, p_offset, p_vaddr, _, p_filesz, p_memsz, _ = \
                struct.unpack_from("<IIQQQQQQ", d, phoff + 56 * i)
            if p_offset + p_filesz > len(d) and not self.problems:
                self.problems.append(f"{self.path}: truncated core: {len(d)} bytes, its "
                                     f"segments reach {p_offset + p_filesz}")
            if p_type == PT_LOAD:
                self._segments.append(_Segment(p_vaddr, p_memsz, p_offset, p_filesz))
            elif p_type == PT_NOTE:
                if p_offset + p_filesz > len(d):
                    if not self.threads_required:
                        continue
                    raise self._error(p_offset, "the notes run past the end of the file: "
                                      "truncated core")
                self._read_notes(p_offset, p_filesz)
        self._segments.sort(key=lambda s: s.vaddr)
        if self.threads_required and not any(t == NT_PRSTATUS for t, _, _ in self._notes):
            raise self._error(0, "no NT_PRSTATUS note: no thread registers in this core")

    def _read_notes(self, start: int, size: int) -> None:
        d, pos, end = self._data, start, start + size
        while pos + 12 <= end:
            namesz, descsz, n_type = struct.unpack_from("<III", d, pos)
            desc_at = pos + 12 + _align4(namesz)
            next_pos = desc_at + _align4(descsz)
            if next_pos > end:
                raise self._error(pos, f"note of type {n_type:#x} ({descsz} bytes) runs past "
                                  "the end of its segment")
            self._notes.append((n_type, desc_at, d[desc_at:desc_at + descsz]))
            pos = next_pos

    # -- threads, auxv, files ------------------------------------------------------------------

    @cached_property
    def threads(self) -> list[Thread]:
        out = []
        for n_type, offset, desc in self._notes:
            if n_type != NT_PRSTATUS:
                continue
            if len(desc) < _PRSTATUS_REGS + 8 * len(_USER_REGS):
                raise self._error(offset, f"NT_PRSTATUS of {len(desc)} bytes, expected 336 "
                                  "(x86-64 elf_prstatus)")
            signal, = struct.unpack_from("<h", desc, 12)
            pid, = struct.unpack_from("<i", desc, _PRSTATUS_PID)
            values = struct.unpack_from(f"<{len(_USER_REGS)}Q", desc, _PRSTATUS_REGS)
            regs = {_DWARF[n]: v for n, v in zip(_USER_REGS, values, strict=True) if n in _DWARF}
            out.append(Thread(pid, signal, regs))
        return out

    @cached_property
    def auxv(self) -> dict[int, int]:
        for n_type, _, desc in self._notes:
            if n_type == NT_AUXV:
                out: dict[int, int] = {}
                for k in range(0, len(desc) - 15, 16):
                    key, value = struct.unpack_from("<QQ", desc, k)
                    if key == AT_NULL:
                        break
                    out.setdefault(key, value)
                return out
        return {}

    @cached_property
    def mappings(self) -> list[Mapping]:
        """NT_FILE: every file-backed mapping (empty when the core has no such note)."""
        for n_type, offset, desc in self._notes:
            if n_type != NT_FILE:
                continue
            if len(desc) < 16:
                raise self._error(offset, "NT_FILE is shorter than its header")
            count, page = struct.unpack_from("<QQ", desc, 0)
            if len(desc) < 16 + 24 * count:
                raise self._error(offset, "NT_FILE is shorter than its entry count says")
            triples = struct.unpack_from(f"<{3 * count}Q", desc, 16)
            names = desc[16 + 24 * count:].split(b"\0")
            if len(names) < count:
                raise self._error(offset, f"NT_FILE has {len(names)} names for {count} entries")
            return [Mapping(triples[3 * k], triples[3 * k + 1], triples[3 * k + 2] * page,
                            os.fsdecode(names[k])) for k in range(count)]
        return []

    @property
    def entry(self) -> int | None:
        """The program's entry point (AT_ENTRY): what places the executable."""
        return self.auxv.get(AT_ENTRY)

    # -- memory --------------------------------------------------------------------------------

    def dumped(self, address: int, size: int) -> bytes | None:
        """`size` bytes at `address` as the core itself holds them (never from a mapped file:
        what a file is compared against), or None."""
        for s in self._segments:
            if s.vaddr <= address and address + size <= s.vaddr + s.filesz:
                at = s.offset + address - s.vaddr
                chunk = self._data[at:at + size]
                return chunk if len(chunk) == size else None
        return None

    def read_memory(self, address: int, size: int) -> bytes:
        """Up to `size` bytes at `address`: from the core, else from the mapped file; shorter
        (possibly empty) where neither has them."""
        out = b""
        while len(out) < size:
            chunk = self._read_some(address + len(out), size - len(out))
            if not chunk:
                break
            out += chunk
        return out

    def _read_some(self, address: int, size: int) -> bytes:
        for s in self._segments:
            if s.vaddr <= address < s.vaddr + s.memsz:
                rel = address - s.vaddr
                n = min(size, s.memsz - rel)
                if rel < s.filesz:
                    at = s.offset + rel
                    return self._data[at:at + min(n, s.filesz - rel)]
                break  # not dumped: try the file it maps
        for m in self.mappings:
            if m.start <= address < m.end:
                data = self._file(m.path)
                if data is None:
                    return b""
                at = m.offset + address - m.start
                return data[at:at + min(size, m.end - address)]
        return b""

    def _file(self, path: str) -> bytes | None:
        if path not in self._file_cache:
            try:
                with open(path, "rb") as f:
                    self._file_cache[path] = f.read()
            except OSError:
                self._file_cache[path] = None
        return self._file_cache[path]

    def read_cstring(self, address: int, limit: int = 4096) -> str:
        data = self.read_memory(address, limit)
        end = data.find(b"\0")
        return os.fsdecode(data[: end if end >= 0 else len(data)])

    # -- modules -------------------------------------------------------------------------------

    def modules(self, exe: str) -> list[LoadedModule]:
        """The executable `exe` (checked against the core) and the shared libraries, biased.

        The executable's bias is AT_ENTRY minus its e_entry; libraries come from NT_FILE,
        else from the dynamic linker's list (DT_DEBUG -> r_debug -> link_map).
        """
        binary = Binary(exe)
        try:
            bias = self.exe_bias(binary)
            self.check_build_id(binary, bias)
            exe_real = os.path.realpath(exe)
            self.check_same_code(binary, exe_real)
        finally:
            binary.close()
        out = [LoadedModule(exe, bias)]
        libs = self._libraries_from_files(exe_real) if self.mappings else \
            self.link_map_modules(exe, bias)
        out.extend(libs)
        return out

    def exe_bias(self, binary: Binary) -> int:
        entry = self.auxv.get(AT_ENTRY)
        if entry is None:
            raise self._error(0, "no AT_ENTRY in NT_AUXV: cannot place the executable")
        e_entry: int = binary.elf["e_entry"]
        bias = entry - e_entry
        if bias % 0x1000 or bias < 0:
            raise BinaryError(f"{self.path} is not a core of {binary.path}: its entry point "
                              f"{entry:#x} does not match the binary's "
                              f"{binary.elf['e_entry']:#x}")
        return bias

    def check_build_id(self, binary: Binary, bias: int) -> None:
        """Raise when the build-id in the core's copy of the executable's notes differs."""
        want = binary.build_id
        if want is None:
            return
        for seg in binary.elf.iter_segments():
            if seg["p_type"] != "PT_NOTE":
                continue
            got = note_build_id(self.read_memory(seg["p_vaddr"] + bias, seg["p_filesz"]))
            if got is not None and got != want:
                raise BinaryError(f"{self.path} is not a core of {binary.path}: build-id "
                                  f"{got.hex()} in the core, {want.hex()} in the binary")
            if got is not None:
                return
        # The first page is not in the core: the entry point check is all there is.

    def check_same_code(self, binary: Binary, exe_real: str) -> None:
        """Raise when the file the core says it ran (NT_FILE, at AT_ENTRY) is still on disk
        and its code differs from `binary`'s: build-ids do not tell BOLT outputs of one input
        apart (shared/NOTES.md), and a stripped copy of the same code is fine."""
        entry = self.auxv.get(AT_ENTRY, -1)
        ran = next((m.path for m in self.mappings if m.start <= entry < m.end), None)
        if ran is None or os.path.realpath(ran) == exe_real or not os.path.isfile(ran):
            return
        try:
            other = Binary(ran)
        except BinaryError:
            return
        try:
            if _code(other) != _code(binary):
                raise BinaryError(f"{self.path} is not a core of {binary.path}: it ran {ran}, "
                                  "whose code differs")
        finally:
            other.close()

    def _libraries_from_files(self, exe_real: str) -> list[LoadedModule]:
        entry = self.auxv.get(AT_ENTRY, -1)
        # The executable, under whatever name it ran as: the file mapped around AT_ENTRY.
        skip = {exe_real} | {os.path.realpath(m.path) for m in self.mappings
                             if m.start <= entry < m.end}
        out: list[LoadedModule] = []
        for m in self.mappings:
            real = os.path.realpath(m.path)
            if real in skip or m.offset or not os.path.isfile(m.path):
                continue
            bias = _bias_of(m)
            if bias is not None:
                skip.add(real)
                out.append(LoadedModule(m.path, bias))
        return out

    def link_map_modules(self, exe: str, bias: int) -> list[LoadedModule]:
        binary = Binary(exe)
        try:
            dynamic = next((s for s in binary.elf.iter_segments()
                            if s["p_type"] == "PT_DYNAMIC"), None)
            if dynamic is None:
                return []  # static executable
            raw = self.read_memory(dynamic["p_vaddr"] + bias, dynamic["p_memsz"])
        finally:
            binary.close()
        r_debug = 0
        for k in range(0, len(raw) - 15, 16):
            tag, value = struct.unpack_from("<qQ", raw, k)
            if tag == DT_NULL:
                break
            if tag == DT_DEBUG:
                r_debug = value
        if not r_debug:
            return []
        out: list[LoadedModule] = []
        data = self.read_memory(r_debug + 8, 8)
        node = struct.unpack("<Q", data)[0] if len(data) == 8 else 0
        seen: set[int] = set()
        while node and node not in seen and len(seen) < 4096:
            seen.add(node)
            entry = self.read_memory(node, 32)
            if len(entry) < 32:
                break
            l_addr, l_name, _, l_next = struct.unpack("<QQQQ", entry)
            name = self.read_cstring(l_name) if l_name else ""
            if name and os.path.isfile(name):
                out.append(LoadedModule(name, l_addr))
            node = l_next
        return out


def _align4(n: int) -> int:
    return (n + 3) & ~3


def note_build_id(notes: bytes) -> bytes | None:
    """The descriptor of the first NT_GNU_BUILD_ID note of owner "GNU" in a run of notes."""
    pos = 0
    while pos + 12 <= len(notes):
        namesz, descsz, n_type = struct.unpack_from("<III", notes, pos)
        name = notes[pos + 12:pos + 12 + namesz]
        desc_at = pos + 12 + _align4(namesz)
        if n_type == NT_GNU_BUILD_ID and name.rstrip(b"\0") == b"GNU":
            return notes[desc_at:desc_at + descsz]
        pos = desc_at + _align4(descsz)
    return None


def _code(binary: Binary) -> list[tuple[int, bytes]]:
    """(vaddr, bytes) of every executable PT_LOAD segment."""
    return [(seg["p_vaddr"], seg.data()) for seg in binary.elf.iter_segments()
            if seg["p_type"] == "PT_LOAD" and seg["p_flags"] & 1]


def _bias_of(m: Mapping) -> int | None:
    """The load bias of the file mapped by `m` (file offset 0): start minus the page-aligned
    vaddr of the PT_LOAD that begins at offset 0."""
    try:
        binary = Binary(m.path)
    except BinaryError:
        return None
    try:
        with reading(m.path, 0, "program headers"):
            for seg in binary.elf.iter_segments():
                if seg["p_type"] == "PT_LOAD" and seg["p_offset"] & ~0xFFF == m.offset:
                    start: int = seg["p_vaddr"]
                    return m.start - (start & ~0xFFF)
    except UnsplitError:  # a mapped file that is not a well-formed ELF: not a module
        return None
    finally:
        binary.close()
    return None


def image_build_id(read: Callable[[int, int], bytes | None], header: int) -> bytes | None:
    """The GNU build-id of the ELF image at `header` in a process's memory, read with `read`
    (None or short where memory cannot be read): from the image's own program headers."""

    def full(address: int, size: int) -> bytes | None:
        data = read(address, size)
        return data if data is not None and len(data) == size else None

    ehdr = full(header, 64)
    if ehdr is None or ehdr[:4] != b"\x7fELF" or ehdr[4] != 2:
        return None
    phoff, = struct.unpack_from("<Q", ehdr, 32)
    phentsize, phnum = struct.unpack_from("<HH", ehdr, 54)
    phdrs = full(header + phoff, phentsize * phnum)
    if phdrs is None:
        return None
    loads, notes = [], []
    for i in range(phnum):
        p_type, _, _, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", phdrs, i * phentsize)
        if p_type == 1:
            loads.append(vaddr)
        elif p_type == 4:
            notes.append((vaddr, filesz))
    if not loads:
        return None
    bias = header - (min(loads) & ~0xFFF)
    for vaddr, size in notes:
        blob = full(bias + vaddr, size)
        if blob is None:
            continue
        found = note_build_id(blob)
        if found is not None:
            return found
    return None
