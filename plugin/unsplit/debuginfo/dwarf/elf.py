"""The separate debug file's ELF container, shaped as ``objcopy --only-keep-debug`` makes it
(System V gABI, ELF-64): the module's ELF header and program headers, its section headers with
SHT_NOBITS for everything loaded (so each section keeps its address and size, and debuggers
match the file to the module), its SHT_NOTE sections' bytes (the build-id), its symbol table
(LLDB reads one symbol file per module: without the module's symbols there it names `main`
`___lldb_unnamed_symbol_…`, and cannot find a call's callee to evaluate DW_OP_entry_value),
then the new ``.debug_*`` sections. No code, no data."""

from __future__ import annotations

import mmap
import struct
from array import array
from collections.abc import Callable
from typing import NamedTuple

from unsplit.errors import BinaryError

SHT_NOBITS, SHT_NOTE, SHT_PROGBITS, SHT_STRTAB, SHT_SYMTAB, SHT_DYNSYM = 8, 7, 1, 3, 2, 11
SHN_LORESERVE = 0xFF00
STT_FUNC, STB_LOCAL = 2, 0
_SYM = struct.Struct("<IBBHQQ")
SHF_ALLOC = 0x2
PT_NOTE = 4
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_PHDR = struct.Struct("<IIQQQQQQ")


class Renamed(NamedTuple):
    """Function symbols a symbol file gives code the module names otherwise: `added` (name,
    start, size) as local functions, and the module's own function symbols that start at an
    address of `dropped` left out (LLDB names an address by one of the symbols there)."""

    added: list[tuple[str, int, int]]
    dropped: set[int]


def write_debug_file(module: bytes | mmap.mmap, path_for_errors: str,
                     debug_sections: list[tuple[str, bytes]],
                     renamed: Renamed | None = None) -> bytes:
    """A debug file for the ELF image `module` holding `debug_sections` (name, contents);
    with `renamed`, its symbol table is the module's `.symtab` (else its `.dynsym`, which
    LLDB reads only where a file has no `.symtab`) so changed."""
    if module[:4] != b"\x7fELF" or module[4] != 2 or module[5] != 1:
        raise BinaryError(f"{path_for_errors}: not a little-endian ELF-64 file")
    (ident, e_type, e_machine, e_version, e_entry, e_phoff, e_shoff, e_flags, _e_ehsize,
     e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx) = _EHDR.unpack_from(module, 0)
    if e_shoff == 0 or e_shentsize != _SHDR.size or e_shstrndx >= e_shnum:
        raise BinaryError(f"{path_for_errors}: no usable section headers")
    headers = [list(_SHDR.unpack_from(module, e_shoff + i * _SHDR.size)) for i in range(e_shnum)]
    str_off, str_size = headers[e_shstrndx][4], headers[e_shstrndx][5]
    names = module[str_off:str_off + str_size]

    def name_of(h: list[int]) -> str:
        end = names.find(b"\0", h[0])
        return names[h[0]:end].decode("utf-8", "surrogateescape")

    # Keep section 0 and every loaded section (notes with their bytes); drop the rest.
    kept = [0] + [i for i in range(1, e_shnum) if headers[i][2] & SHF_ALLOC]
    new_index = {old: new for new, old in enumerate(kept)}
    out = bytearray(64)
    phdrs = [list(_PHDR.unpack_from(module, e_phoff + i * _PHDR.size)) for i in range(e_phnum)] \
        if e_phoff and e_phentsize == _PHDR.size else []
    ph_offset = len(out)
    out += b"\0" * (len(phdrs) * _PHDR.size)
    shstrtab = bytearray(b"\0")

    def add_name(text: str) -> int:
        at = len(shstrtab)
        shstrtab.extend(text.encode("utf-8", "surrogateescape") + b"\0")
        return at

    sections: list[list[int]] = [[0] * 10]
    note_at: dict[int, int] = {}  # address -> offset of a copied note
    for old in kept[1:]:
        h = list(headers[old])
        name, sh_type, offset, size, align = name_of(h), h[1], h[4], h[5], max(h[8], 1)
        h[0] = add_name(name)
        h[6] = new_index.get(h[6], 0)  # sh_link
        if h[2] & 0x40:  # SHF_INFO_LINK: sh_info is a section index
            h[7] = new_index.get(h[7], 0)
        if sh_type == SHT_NOTE:
            while len(out) % min(align, 8):
                out.append(0)
            h[4] = len(out)
            note_at[h[3]] = h[4]
            out += module[offset:offset + size]
        else:
            h[1], h[4] = SHT_NOBITS, len(out)
        sections.append(h)
    symtab = next((i for i in range(1, e_shnum) if headers[i][1] == SHT_SYMTAB), None)
    if symtab is None and renamed is not None:
        symtab = next((i for i in range(1, e_shnum) if headers[i][1] == SHT_DYNSYM), None)
    if symtab is not None:
        _copy_symbols(module, headers, symtab, new_index, sections, out, name_of, add_name,
                      None if renamed is None else _Renaming(renamed, headers, new_index))
    for name, data in debug_sections:
        sections.append([add_name(name), SHT_PROGBITS, 0, 0, len(out), len(data), 0, 0, 1, 0])
        out += data
    shstrndx = len(sections)
    sections.append([add_name(".shstrtab"), SHT_STRTAB, 0, 0, len(out) + 0, len(shstrtab),
                     0, 0, 1, 0])
    out += shstrtab
    while len(out) % 8:
        out.append(0)
    shoff = len(out)
    for h in sections:
        out += _SHDR.pack(*h)
    for i, p in enumerate(phdrs):
        if p[0] == PT_NOTE and p[3] in note_at:
            p[2] = note_at[p[3]]
        else:
            p[5] = 0  # p_filesz: the bytes are not in this file
        _PHDR.pack_into(out, ph_offset + i * _PHDR.size, *p)
    _EHDR.pack_into(out, 0, ident, e_type, e_machine, e_version, e_entry,
                    ph_offset if phdrs else 0, shoff, e_flags, 64, _PHDR.size if phdrs else 0,
                    len(phdrs), _SHDR.size, len(sections), shstrndx)
    return bytes(out)


def _copy_symbols(module: bytes | mmap.mmap, headers: list[list[int]], symtab: int,
                  new_index: dict[int, int], sections: list[list[int]], out: bytearray,
                  name_of: Callable[[list[int]], str], add_name: Callable[[str], int],
                  renaming: _Renaming | None = None) -> None:
    """Appends the module's symbol table and its string table as they are (fragment symbols
    `foo.cold.1` too: LLDB then sets `breakpoint set -n foo` at the entry alone, as on BOLT's
    own --update-debug-sections output), each symbol's section number made this file's (a
    section not kept here, a debug section, leaves it undefined); `renaming` changes it."""
    h = headers[symtab]
    link = h[6]
    if h[9] != _SYM.size or not 0 < link < len(headers):
        return
    strtab = headers[link]
    names = module[strtab[4]:strtab[4] + strtab[5]]
    table = bytearray(module[h[4]:h[4] + h[5] - h[5] % _SYM.size])
    for at in range(0, len(table), _SYM.size):
        name, info, other, shndx, value, size = _SYM.unpack_from(table, at)
        if 0 < shndx < SHN_LORESERVE:
            _SYM.pack_into(table, at, name, info, other, new_index.get(shndx, 0), value, size)
    first_global = h[7]
    if renaming is not None:
        table, names, first_global = renaming.apply(table, bytes(names), first_global)
    while len(out) % 8:
        out.append(0)
    renamed = renaming is not None
    sections.append([add_name(".symtab" if renamed else name_of(h)), SHT_SYMTAB, 0, 0,
                     len(out), len(table), len(sections) + 1, first_global, 8, _SYM.size])
    out += table
    sections.append([add_name(".strtab" if renamed else name_of(strtab)),
                     SHT_STRTAB, 0, 0, len(out), len(names), 0, 0, 1, 0])
    out += names


class _Renaming:
    """Renamed applied to a copied table whose section numbers are already this file's."""

    def __init__(self, renamed: Renamed, headers: list[list[int]],
                 new_index: dict[int, int]) -> None:
        self.renamed = renamed
        loaded = sorted((h[3], h[3] + h[5], new_index[i]) for i, h in enumerate(headers)
                        if i in new_index and i and h[2] & SHF_ALLOC and h[5])
        self.starts = array("Q", (s for s, _, _ in loaded))
        self.bounds = [(e, i) for _, e, i in loaded]

    def apply(self, table: bytearray, names: bytes, first_global: int
              ) -> tuple[bytearray, bytes, int]:
        """The table (locals first, as ELF wants: the added symbols after the module's
        locals), its strings (each added name once) and its first global's index."""
        first_global = min(max(first_global, 1), len(table) // _SYM.size)
        kept = bytearray(table[:_SYM.size])
        globals_ = bytearray()
        dropped = self.renamed.dropped
        for at in range(_SYM.size, len(table), _SYM.size):
            _, info, _, shndx, value, _ = _SYM.unpack_from(table, at)
            if info & 0xF == STT_FUNC and shndx and value in dropped:
                continue
            (kept if at // _SYM.size < first_global else globals_).extend(
                table[at:at + _SYM.size])
        strings = bytearray(names or b"\0")
        offsets: dict[str, int] = {}
        starts, bounds, last = self.starts, self.bounds, len(self.starts) - 1
        pack, info, k = _SYM.pack, STT_FUNC | STB_LOCAL << 4, 0
        entries = []
        for name, start, size in sorted(self.renamed.added, key=lambda a: a[1]):
            while k < last and starts[k + 1] <= start:  # the sections, walked once
                k += 1
            offset = offsets.get(name)
            if offset is None:
                offset = offsets[name] = len(strings)
                strings += name.encode("utf-8", "surrogateescape") + b"\0"
            inside = starts[k] <= start < bounds[k][0] if starts else False
            entries.append(pack(offset, info, 0, bounds[k][1] if inside else 0, start, size))
        kept += b"".join(entries)
        return kept + globals_, bytes(strings), len(kept) // _SYM.size
