"""Damaged DWARF through the CLI: each crasher the fuzz campaign (bench/fuzz.py) found, rebuilt
here from a zoo binary by damaging the one structure it hit. Every one must answer (exit 0),
give no line where it cannot read one, and say so in one warning naming the section and offset
(never a Python exception type); none may be an internal error. The structures are found with a
hand parser of the DWARF 5 line header and pyelftools' attribute offsets, never through unsplit.
A bug of ours in those readers (put there by monkeypatching) must surface, never as a warning."""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile
from unsplit import cli
from unsplit.elf import dwarf_lines
from unsplit.elf.binary import Binary
from unsplit.formats import die_scan, unit_ranges
from unsplit.index.inlines import InlineChains

from ...conftest import PYTHON_ERROR, ROOT, facts

FAR = b"\xf0\xff\xff\xff"  # an offset into a string section far past its end


def _uleb(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


_FIXED = {0x0B: 1, 0x05: 2, 0x06: 4, 0x07: 8, 0x1E: 16, 0x1F: 4, 0x0E: 4, 0x17: 4}


def _entries(data: bytes, at: int) -> tuple[int, list[list[tuple[int, int]]], int,
                                           list[tuple[int, int]]]:
    """A DWARF 5 entry list (§6.2.4.1: format count, (content, form) pairs, ULEB count, the
    entries): (where its count is, per entry the (content type, offset) of each field, end,
    per format its (content type, offset of its form))."""
    nformats = data[at]
    at += 1
    formats = []
    form_at = []
    for _ in range(nformats):
        content, at = _uleb(data, at)
        form_at.append((content, at))
        form, at = _uleb(data, at)
        formats.append((content, form))
    count_at = at
    count, at = _uleb(data, at)
    entries = []
    for _ in range(count):
        fields = []
        for content, form in formats:
            fields.append((content, at))
            if form == 0x0F:  # udata
                _, at = _uleb(data, at)
            elif form == 0x08:  # string
                at = data.index(0, at) + 1
            else:
                at += _FIXED[form]
        entries.append(fields)
    return count_at, entries, at, form_at


def _line_header(data: bytes, at: int) -> dict[str, Any]:
    """Offsets of one DWARF 5 line program header's parts (32-bit DWARF)."""
    version, = struct.unpack_from("<H", data, at + 4)
    assert version == 5
    opcode_base = data[at + 17]
    dirs_count, dirs, after, _ = _entries(data, at + 18 + opcode_base - 1)
    files_count, files, _, file_forms = _entries(data, after)
    return {"dirs_count": dirs_count, "dirs": dirs, "files_count": files_count, "files": files,
            "file_forms": file_forms}


class Damaged:
    """A copy of a zoo binary to damage in place, with pyelftools' view of the original."""

    def __init__(self, variant: str, zoo: dict[str, Any], tmp_path: Path) -> None:
        self.facts = facts(zoo, variant, "crash")
        self.path = tmp_path / "crash"
        shutil.copy(ROOT / self.facts["binary"], self.path)
        self.data = bytearray(self.path.read_bytes())
        self._file = open(ROOT / self.facts["binary"], "rb")  # closed by save()
        self.elf = ELFFile(self._file)
        self.dwarf = self.elf.get_dwarf_info(relocate_dwarf_sections=False)
        crash = self.facts["crash"]["frames"][0]
        self.address = crash["link_pc"]
        self.line = crash["line"]

    def section(self, name: str) -> tuple[int, bytes]:
        sec = self.elf.get_section_by_name(name)
        assert sec is not None, name
        return sec["sh_offset"], bytes(sec.data())

    def patch(self, section: str, at: int, new: bytes) -> None:
        base, _ = self.section(section)
        self.data[base + at:base + at + len(new)] = new

    def cu(self) -> Any:
        """The CU of crash.c (the one that covers the crash address)."""
        for cu in self.dwarf.iter_CUs():
            name = cu.get_top_DIE().attributes["DW_AT_name"].value
            if name.endswith(b"crash.c"):
                return cu
        raise AssertionError("no CU for crash.c")

    def line_header(self) -> tuple[int, dict[str, Any]]:
        stmt_list = self.cu().get_top_DIE().attributes["DW_AT_stmt_list"].value
        return stmt_list, _line_header(self.section(".debug_line")[1], stmt_list)

    def save(self) -> Path:
        """Write the damaged copy (and let go of the original)."""
        self._file.close()
        self.path.write_bytes(bytes(self.data))
        return self.path

    def where(self, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
        self.save()
        rc = cli.main(["where", "--exe", str(self.path), "--json", self.address])
        out, err = capsys.readouterr()
        assert "internal error" not in out + err and rc == 0, out + err
        loc = json.loads(out)
        assert loc["procedure"] == self.facts["crash"]["frames"][0]["procedure"]  # names stay
        return loc


def _one_warning(loc: dict[str, Any], section: str) -> str:
    warnings = [w for w in loc.get("warnings", []) if section in w]
    assert len(warnings) == 1, loc
    assert warnings[0].startswith(f"{section}: at offset 0x"), warnings
    assert not PYTHON_ERROR.search(warnings[0]), warnings  # pyelftools' words, not a type
    return warnings[0]


Damage = Callable[[Damaged], str]


def _no_file_names(d: Damaged) -> str:
    """file_names_count 0: pyelftools leaves file_entry None (was: 'NoneType' object is not
    iterable)."""
    stmt_list, header = d.line_header()
    d.patch(".debug_line", header["files_count"], b"\x00")
    return f".debug_line: at offset {stmt_list:#x}"


def _line_range_zero(d: Damaged) -> str:
    """line_range 0 (was: ZeroDivisionError: integer division or modulo by zero)."""
    stmt_list, _ = d.line_header()
    d.patch(".debug_line", stmt_list + 16, b"\x00")  # DWARF 5 §6.2.4: line_range
    return ".debug_line: at offset 0x"


def _file_name_as_strx(d: Damaged) -> str:
    """File names in DW_FORM_strx1, which pyelftools does not resolve in a line table header
    (was: NotImplementedError)."""
    stmt_list, header = d.line_header()
    [(_, form_at)] = [f for f in header["file_forms"] if f[0] == 1]  # DW_LNCT_path
    d.patch(".debug_line", form_at, b"\x25")  # DW_FORM_strx1
    return f".debug_line: at offset {stmt_list:#x}"


def _file_name_past_the_strings(d: Damaged) -> str:
    """Every file's DW_LNCT_path (line_strp) far past .debug_line_str: names None (was:
    'NoneType' object has no attribute 'decode')."""
    return _paths_past_the_strings(d, "files")


def _directory_past_the_strings(d: Damaged) -> str:
    """Every directory far past .debug_line_str: the directory of a relative name is None (was:
    'NoneType' object has no attribute 'decode')."""
    return _paths_past_the_strings(d, "dirs")


def _paths_past_the_strings(d: Damaged, table: str) -> str:
    """Every DW_LNCT_path (line_strp) of the line table header's `table` ("files", "dirs")
    far past .debug_line_str."""
    stmt_list, header = d.line_header()
    for fields in header[table]:
        for content, at in fields:
            if content == 1:  # DW_LNCT_path
                d.patch(".debug_line", at, FAR)
    return f".debug_line: at offset {stmt_list:#x}"


def _comp_dir_unreadable(d: Damaged) -> str:
    """.debug_str_offsets all 0xff: DW_AT_comp_dir (strx) is None (was: 'NoneType' object has no
    attribute 'decode')."""
    _, data = d.section(".debug_str_offsets")
    d.patch(".debug_str_offsets", 8, b"\xff" * (len(data) - 8))
    stmt_list = d.cu().get_top_DIE().attributes["DW_AT_stmt_list"].value
    return f".debug_line: at offset {stmt_list:#x}"


def _range_past_2_64(d: Damaged) -> str:
    """A .debug_aranges length of 2^64 - 1 (was: OverflowError: int too big to convert)."""
    d.patch(".debug_aranges", 16 + 8, b"\xff" * 8)  # the first tuple's length (header: 16)
    return ".debug_aranges: at offset 0x10"


def _addresses_past_2_64(d: Damaged) -> str:
    """.debug_addr all 0xff: the CU's low_pc (addrx) near 2^64, its range past it (was:
    OverflowError: int too big to convert)."""
    _, data = d.section(".debug_addr")
    d.patch(".debug_addr", 8, b"\xff" * (len(data) - 8))
    return f".debug_info: at offset {d.cu().cu_offset:#x}"


def _rnglists_base_far(d: Damaged) -> str:
    """DW_AT_rnglists_base far past .debug_rnglists: pyelftools seeks past 2^63 (was:
    OverflowError: Python int too large to convert to C ssize_t)."""
    cu = d.cu()
    attr = cu.get_top_DIE().attributes["DW_AT_rnglists_base"]
    assert attr.form == "DW_FORM_sec_offset"
    d.patch(".debug_info", attr.offset, b"\xff\xff\xff\x7f")
    return f".debug_info: at offset {cu.cu_offset:#x}"


def _set_address_too_wide(d: Damaged) -> str:
    """The first DW_LNE_set_address of the program told 16 bytes long: an address past 2^64
    (was: OverflowError: int too big to convert, found by bench/fuzz.py)."""
    stmt_list, _ = d.line_header()
    data = d.section(".debug_line")[1]
    header_length, = struct.unpack_from("<I", data, stmt_list + 8)  # DWARF 5, 32-bit
    at = data.index(b"\x00\x09\x02", stmt_list + 12 + header_length)
    d.patch(".debug_line", at + 1, b"\x11")
    return ".debug_line: at offset 0x"


CASES: list[tuple[str, Damage]] = [
    ("gcc-pgo", _no_file_names), ("clang-mfs", _no_file_names),
    ("gcc-pgo", _line_range_zero), ("clang-mfs", _line_range_zero),
    ("gcc-pgo", _file_name_as_strx),
    ("gcc-pgo", _file_name_past_the_strings), ("clang-mfs", _file_name_past_the_strings),
    ("gcc-pgo", _directory_past_the_strings), ("clang-mfs", _directory_past_the_strings),
    ("clang-mfs", _comp_dir_unreadable),
    ("gcc-pgo", _range_past_2_64),
    ("clang-mfs", _addresses_past_2_64),
    ("clang-mfs", _rnglists_base_far),
    ("gcc-pgo", _set_address_too_wide), ("clang-mfs", _set_address_too_wide),
]


@pytest.mark.parametrize(("variant", "damage"), CASES,
                         ids=[f"{v}-{d.__name__.strip('_')}" for v, d in CASES])
def test_damaged_dwarf_warns_once_and_answers(zoo: dict[str, Any], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              variant: str, damage: Damage) -> None:
    d = Damaged(variant, zoo, tmp_path)
    said = damage(d)
    loc = d.where(capsys)
    section = said.split(":")[0]
    warning = _one_warning(loc, section)
    assert warning.startswith(said), (warning, said)
    # What is left readable still answers: aranges fall back to the CU's own ranges.
    assert loc["line"] in (None, d.line), loc


@pytest.mark.parametrize(("variant", "damage"), [
    ("gcc-pgo", _file_name_past_the_strings), ("clang-mfs", _rnglists_base_far)])
def test_symbolize_damaged_dwarf(zoo: dict[str, Any], tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch, variant: str,
                                 damage: Damage) -> None:
    """`symbolize --inlines`: the function is still named; the warning goes to stderr, once."""
    d = Damaged(variant, zoo, tmp_path)
    said = damage(d)
    d.save()
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{d.address}\n{d.address}\n"))
    rc = cli.main(["symbolize", "--exe", str(d.path), "--inlines"])
    out, err = capsys.readouterr()
    assert rc == 0 and "internal error" not in out + err, out + err
    procedure = d.facts["crash"]["frames"][0]["procedure"]
    assert out.split("\n")[0] == procedure, out
    warnings = [w for w in err.splitlines() if w.startswith("unsplit: warning: ")]
    assert len(warnings) == 1 and said in warnings[0], err
    assert not PYTHON_ERROR.search(err), err


def test_lines_on_damaged_dwarf(zoo: dict[str, Any], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """`unsplit lines --json`: the CU it cannot read has no rows, and stderr says why once."""
    d = Damaged("gcc-pgo", zoo, tmp_path)
    said = _no_file_names(d)
    rc = cli.main(["lines", str(d.save()), "--json"])
    out, err = capsys.readouterr()
    assert rc == 0 and "internal error" not in out + err, out + err
    assert json.loads(out) == []  # its one CU is the damaged one
    warnings = [w for w in err.splitlines() if w.startswith("warning: ")]
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: {said}"), err
    assert not PYTHON_ERROR.search(err), err


# -- a bug of ours in the DWARF readers surfaces ------------------------------------------------


def _bug(*_args: object, **_kwargs: object) -> Any:
    raise AttributeError("'NoneType' object has no attribute 'a bug'")


def _crash_pc(zoo: dict[str, Any], variant: str) -> tuple[str, int]:
    f = facts(zoo, variant, "crash")
    return str(ROOT / f["binary"]), int(f["crash"]["frames"][0]["link_pc"], 16)


def test_a_bug_in_the_subprogram_scan_surfaces(zoo: dict[str, Any],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """die_scan.offsets_with failing as a bug fails the inline chain (it once became the
    warning 'DIEs of the CU at …: AttributeError: …' and the frame lost its inlined calls)."""
    path, pc = _crash_pc(zoo, "gcc-pgo")
    monkeypatch.setattr(die_scan, "offsets_with", _bug)
    with closing(Binary(path)) as b:
        chains = InlineChains(dwarf_lines.DwarfLines(b))
        with pytest.raises(AttributeError, match="a bug"):
            chains.chain(pc)
        assert chains.lines.warnings == []


def test_a_bug_in_the_subprogram_scan_is_an_internal_error(
        zoo: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """What the user sees of it: `unsplit symbolize --inlines` says internal error (status 2)."""
    path, pc = _crash_pc(zoo, "gcc-pgo")
    monkeypatch.setattr(die_scan, "offsets_with", _bug)
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{pc:#x}\n"))
    monkeypatch.delenv("UNSPLIT_DEBUG", raising=False)
    rc = cli.main(["symbolize", "--exe", path, "--inlines"])
    _, err = capsys.readouterr()
    assert rc == 2 and "internal error: AttributeError" in err, err
    assert "warning" not in err, err


@pytest.mark.parametrize("variant", ["gcc-pgo", "clang-mfs"])
def test_a_bug_in_the_line_program_reader_surfaces(zoo: dict[str, Any], variant: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path, pc = _crash_pc(zoo, variant)
    monkeypatch.setattr(dwarf_lines, "_run_program", _bug)
    with closing(Binary(path)) as b:
        lines = dwarf_lines.DwarfLines(b)
        with pytest.raises(AttributeError, match="a bug"):
            lines.lookup(pc)
        assert lines.warnings == []


def test_a_bug_in_the_file_name_reader_surfaces(zoo: dict[str, Any],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A line table header's file names: a bug joining them (os.path as the reader sees it)."""
    path, pc = _crash_pc(zoo, "gcc-pgo")
    broken = SimpleNamespace(path=SimpleNamespace(isabs=os.path.isabs, join=os.path.join,
                                                  normpath=_bug))
    monkeypatch.setattr(dwarf_lines, "os", broken)
    with closing(Binary(path)) as b:
        lines = dwarf_lines.DwarfLines(b)
        cu = lines.cu_offset_at(pc)
        assert cu is not None
        with pytest.raises(AttributeError, match="a bug"):
            lines.file_paths(cu)
        assert lines.warnings == []


def test_a_bug_in_the_cu_ranges_reader_surfaces(zoo: dict[str, Any],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """clang writes no .debug_aranges: each CU's own ranges are read, where a bug of ours must
    not become 'ranges of the CU at …' and a missing line."""
    path, pc = _crash_pc(zoo, "clang-mfs")
    monkeypatch.setattr(unit_ranges, "_ranges", _bug)
    with closing(Binary(path)) as b:
        assert b.section_data(".debug_aranges") is None
        lines = dwarf_lines.DwarfLines(b)
        with pytest.raises(AttributeError, match="a bug"):
            lines.lookup(pc)
        assert lines.warnings == []
