"""Binary reads section headers, notes, section bytes and symbol tables with struct, and
makes pyelftools' ELFFile only when asked: both readers must see the same file. pyelftools
is the oracle here (an independent ELF parser), on every fixture and on system binaries."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection
from unsplit.elf.binary import Binary
from unsplit.errors import BinaryError

from ...conftest import ROOT

_FILES = sorted(str(p) for p in (ROOT / "fixtures" / "build").glob("*/*")
                if p.is_file() and p.read_bytes()[:4] == b"\x7fELF")
_FILES += [p for p in ("/usr/lib/x86_64-linux-gnu/libc.so.6", sys.executable)
           if os.path.exists(p)]


def _oracle_build_id(elf: ELFFile) -> bytes | None:
    for sec in elf.iter_sections():
        if isinstance(sec, NoteSection):
            for note in sec.iter_notes():
                if note["n_type"] == "NT_GNU_BUILD_ID":
                    return bytes.fromhex(note["n_desc"])
    return None


@pytest.mark.parametrize("path", _FILES)
def test_struct_reader_agrees_with_pyelftools(path: str) -> None:
    binary = Binary(path)
    with open(path, "rb") as f:
        elf = ELFFile(f)
        sections = list(elf.iter_sections())
        assert [s.name for s in binary.raw_sections] == [s.name for s in sections]
        for raw, sec in zip(binary.raw_sections, sections, strict=True):
            assert (raw.offset, raw.size, raw.addr, raw.flags, raw.link, raw.entsize) == (
                sec["sh_offset"], sec["sh_size"], sec["sh_addr"], sec["sh_flags"],
                sec["sh_link"], sec["sh_entsize"])
            if sec["sh_type"] != "SHT_NOBITS" and sec.name:
                assert binary.section_data(sec.name) == bytes(
                    next(s for s in sections if s.name == sec.name).data())
        assert binary.build_id == _oracle_build_id(elf)
        assert binary.machine == {"EM_X86_64": 62}.get(elf["e_machine"], -1)
        assert binary.load_addresses() == [s["p_vaddr"] for s in elf.iter_segments()
                                           if s["p_type"] == "PT_LOAD"]
    assert "elf" not in binary.__dict__  # none of that made pyelftools' ELFFile


@pytest.mark.parametrize("path", _FILES)
def test_symbol_columns_agree_with_pyelftools(path: str) -> None:
    binary = Binary(path)
    for table in (".symtab", ".dynsym"):
        cols = binary.symbol_columns(table)
        sec = binary.elf.get_section_by_name(table)
        if sec is None:
            assert len(cols) == 0
            continue
        symbols = list(sec.iter_symbols())
        assert [cols.name(i) for i in range(len(cols))] == [s.name for s in symbols]
        assert list(cols.values) == [s["st_value"] for s in symbols]
        assert list(cols.sizes) == [s["st_size"] for s in symbols]


@pytest.mark.parametrize("path", _FILES)
def test_function_files_says_whether_the_table_has_a_file_symbol(path: str) -> None:
    """function_files is read before the function columns are made (symbolize searches no
    symbol without it): it says whether their table has an STT_FILE symbol (pyelftools), and
    without one no function names a file."""
    binary = Binary(path)
    owner = binary
    if not binary.has_section(".symtab") and binary.debug_companion is not None and \
            binary.debug_companion.has_section(".symtab"):
        owner = binary.debug_companion
    table = ".symtab" if owner.has_section(".symtab") else ".dynsym"
    sec = owner.elf.get_section_by_name(table)
    files = sec is not None and any(s["st_info"]["type"] == "STT_FILE"
                                    for s in sec.iter_symbols())
    assert binary.function_files == files
    if not files:
        assert all(f < 0 for f in binary.function_columns.files)


def test_not_an_elf_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x7fELF\x02\x01" + b"\0" * 10)
    with pytest.raises(BinaryError, match="not an ELF file"):
        Binary(str(bad))
    text = tmp_path / "text"
    text.write_text("hello")
    with pytest.raises(BinaryError, match="not an ELF file"):
        Binary(str(text))


def test_a_damaged_size_reads_what_the_file_has() -> None:
    """A size from a damaged header (terabytes) reads to the file's end, as a short read does,
    instead of asking for a buffer that size (MemoryError); offsets outside give nothing."""
    path = _FILES[0]
    data = Path(path).read_bytes()
    binary = Binary(path)
    try:
        assert binary.read_at(len(data) - 10, 1 << 45) == data[-10:]
        assert binary.read_at(4, 8) == data[4:12]
        assert binary.read_at(len(data) + 5, 1 << 45) == b""
        assert binary.read_at(-1, 8) == b""
    finally:
        binary.close()
