""".eh_frame entries that do not decode are a DecodeError naming the section and the entry's
offset, in words (never a Python exception type); a bug of ours while decoding them is not
one, and surfaces. Entries are built by hand here (DWARF 5 §6.4.1, LSB 5.0 §10.6)."""

from __future__ import annotations

import struct
from contextlib import closing
from typing import Any

import pytest
from unsplit.debug import breakpad
from unsplit.elf import cfi_table
from unsplit.elf.binary import Binary
from unsplit.errors import DecodeError
from unsplit.formats import eh_frame
from unsplit.formats.eh_frame import EntryReader, decode_rows

from ...conftest import PYTHON_ERROR, ROOT, facts

DEF_CFA_RSP_8 = bytes([0x0C, 7, 8])  # DW_CFA_def_cfa: rsp + 8
RA_AT_CFA_8 = bytes([0x80 | 16, 1])  # DW_CFA_offset: rip at CFA - 8


def _entry(body: bytes) -> bytes:
    body += bytes(-(len(body) + 4) % 8)  # DW_CFA_nop padding
    return struct.pack("<I", len(body)) + body


def _eh_frame(cie_instructions: bytes, fde_instructions: bytes = b"") -> bytes:
    """One CIE ("zR", pc-relative sdata4 FDE pointers, rip in register 16) and one FDE."""
    cie = _entry(struct.pack("<I", 0) + b"\x01zR\x00" + bytes([1, 0x78, 16, 1, 0x1B])
                 + cie_instructions)
    at = len(cie)
    fde = _entry(struct.pack("<Iii", at + 4, 0x100, 0x20) + b"\x00" + fde_instructions)
    return cie + fde


def _decode(data: bytes, address: int = 0x1000) -> list[eh_frame.Row]:
    reader = EntryReader(".eh_frame", data, address, True, 8)
    cie_len = struct.unpack_from("<I", data, 0)[0] + 4
    fde = reader.fde(cie_len)
    assert fde is not None
    return decode_rows(fde.cie, fde, fde.start)


def test_a_well_formed_entry_decodes() -> None:
    rows = _decode(_eh_frame(DEF_CFA_RSP_8 + RA_AT_CFA_8, bytes([0x41, 0x0E, 16])))
    start = 0x1000 + 32 + 0x100  # pc-relative: the address of the FDE's pc_begin field + it
    assert [(r.address, r.cfa.describe()) for r in rows] == [(start, "RSP+8"),
                                                             (start + 1, "RSP+16")]


@pytest.mark.parametrize(("instruction", "name"), [
    (bytes([0x41]), "DW_CFA_advance_loc"), (bytes([0x0A]), "DW_CFA_remember_state"),
    (bytes([0x0B]), "DW_CFA_restore_state")])
def test_a_cie_that_moves_the_location_is_a_decode_error(instruction: bytes, name: str) -> None:
    """Only an FDE's table has rows: a CIE's initial instructions that advance or use the
    state stack are bad input (the rule table once tripped over them with an AttributeError,
    which the CFI reader then reported as 'bad CFI instructions (AttributeError: …)')."""
    with pytest.raises(DecodeError) as e:
        _decode(_eh_frame(DEF_CFA_RSP_8 + instruction + RA_AT_CFA_8))
    assert (e.value.section, e.value.offset) == (".eh_frame", 0), name
    assert "CIE" in e.value.message and not PYTHON_ERROR.search(str(e.value)), e.value


@pytest.mark.parametrize(("cut", "offset"), [(2, 0), (6, 0), (40, 24)])
def test_an_entry_cut_short_is_a_decode_error_at_the_entry(cut: int, offset: int) -> None:
    """The section ends inside an entry's length, its CIE, or its FDE."""
    data = _eh_frame(DEF_CFA_RSP_8 + RA_AT_CFA_8)[:cut]
    reader = EntryReader(".eh_frame", data, 0x1000, True, 8)
    with pytest.raises(DecodeError) as e:
        reader.fde(offset) if offset else reader.header(0)
    assert e.value.section == ".eh_frame" and not PYTHON_ERROR.search(str(e.value)), e.value


def test_an_fde_whose_instructions_run_past_it() -> None:
    """DW_CFA_advance_loc4 with two of its four bytes: the entry's end, not the section's
    (the nops before it make the FDE end right after it)."""
    data = _eh_frame(DEF_CFA_RSP_8 + RA_AT_CFA_8, bytes([0, 0, 0, 0, 0x04, 1, 2]))
    with pytest.raises(DecodeError) as e:
        _decode(data + bytes(8))  # more bytes after the entry: not its own
    assert "DW_CFA_advance_loc4" in e.value.message, e.value
    assert not PYTHON_ERROR.search(str(e.value)), e.value


def _first_fde(zoo: dict[str, Any]) -> tuple[Binary, int]:
    binary = Binary(str(ROOT / facts(zoo, "gcc-pgo", "crash")["binary"]))
    start = next(a for _, a in cfi_table.table_for(binary).fde_starts())
    return binary, start


def test_a_bug_decoding_rows_surfaces(zoo: dict[str, Any],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the rule table is not 'bad CFI instructions' (every exception once was)."""
    def bug(*_args: object) -> Any:
        raise TypeError("unsupported operand type(s) for +: 'int' and 'NoneType'")

    monkeypatch.setattr(eh_frame, "decode_rows", bug)  # cfi_table imports it when decoding
    binary, start = _first_fde(zoo)
    with closing(binary), pytest.raises(TypeError):
        cfi_table.CfiTable(binary).fde_at(start)


def test_a_bug_in_a_cie_s_rules_surfaces_in_the_lldb_cfi_files(
        zoo: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The CFI symbol files for LLDB: a bug applying a CIE's rules is not 'CFI it cannot say'
    (a ValueError there once left every FDE of the CIE out of the file, silently)."""
    def bug(*_args: object) -> Any:
        raise ValueError("a bug")

    monkeypatch.setattr(eh_frame, "apply_instruction", bug)
    binary, start = _first_fde(zoo)
    with closing(binary), pytest.raises(ValueError, match="a bug"):
        breakpad.symbol_file(binary, [start])
