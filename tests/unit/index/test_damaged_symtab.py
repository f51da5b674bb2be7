"""A damaged .symtab: a function symbol whose value + size passes 2^64 describes no code. It is
left out, with one warning naming the table, and every other function is still named (it once
made `unsplit symbolize` an internal error: OverflowError: int too big to convert). The symbols
are found and damaged with pyelftools, and the expected names are theirs."""

from __future__ import annotations

import io
import json
import shutil
import struct
import sys
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile
from unsplit import cli

from ...conftest import PYTHON_ERROR, ROOT, facts

# gcc-pgo has fragment names (its functions are grouped one by one); the BOLT input has none
# (they are taken as arrays): the two ways plain functions are made.
VARIANTS = ["gcc-pgo", "_bolt-input"]


def _damaged(variant: str, tmp_path: Path) -> tuple[Path, int, str]:
    """A copy whose `main` ends past 2^64; an address in `run` and the name pyelftools gives it."""
    src = ROOT / "fixtures" / "build" / variant / "crash"
    path = tmp_path / "crash"
    shutil.copy(src, path)
    with src.open("rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        assert symtab is not None
        symbols = list(symtab.iter_symbols())
        [main] = [i for i, s in enumerate(symbols) if s.name == "main"]
        [run] = [s for s in symbols if s.name == "run" and s["st_info"]["type"] == "STT_FUNC"]
        size_at = symtab["sh_offset"] + main * symtab["sh_entsize"] + 16  # Elf64_Sym.st_size
    data = bytearray(path.read_bytes())
    data[size_at:size_at + 8] = struct.pack("<Q", (1 << 64) - 1)
    path.write_bytes(bytes(data))
    return path, run["st_value"] + 1, "run"


@pytest.mark.parametrize("variant", VARIANTS)
def test_symbolize_leaves_the_symbol_out(zoo: dict[str, Any], tmp_path: Path, variant: str,
                                         capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    facts(zoo, "gcc-pgo", "crash")  # the zoo is built
    path, address, name = _damaged(variant, tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{address:#x}\n"))
    rc = cli.main(["symbolize", "--exe", str(path)])
    out, err = capsys.readouterr()
    assert rc == 0 and "internal error" not in err, err
    assert out.splitlines()[0] == name, out
    warnings = [w for w in err.splitlines() if "warning" in w]
    assert len(warnings) == 1 and ".symtab" in warnings[0] and "2^64" in warnings[0], err
    assert not PYTHON_ERROR.search(err), err


def test_where_says_it_once(zoo: dict[str, Any], tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    facts(zoo, "gcc-pgo", "crash")
    path, address, name = _damaged("gcc-pgo", tmp_path)
    rc = cli.main(["where", "--exe", str(path), "--json", f"{address:#x}"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    loc = json.loads(out)
    assert loc["procedure"] == name, loc
    assert [w for w in loc["warnings"] if ".symtab" in w] == [
        ".symtab: 1 function symbol(s) whose value + size passes 2^64 ignored"], loc
