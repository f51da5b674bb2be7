"""A damaged .symtab: a function symbol whose value + size passes 2^64 describes no code. It is
left out, with one warning naming the table, and every other function is still named (it once
made `unsplit symbolize` an internal error: OverflowError: int too big to convert). The symbols
are found and damaged with pyelftools, and the expected names are theirs."""

from __future__ import annotations

import io
import json
import shutil
import struct
import subprocess
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


@pytest.mark.parametrize("past", [True, False], ids=["past-2^64", "past-its-section"])
def test_a_bolt_fragment_past_2_64_is_left_out(zoo: dict[str, Any], tmp_path: Path,
                                               past: bool) -> None:
    """BOLT's fragment symbols give BAT's fragments their ends: a cold fragment whose size
    passes 2^64 once made `unsplit debuginfo` an internal error (OverflowError in the input
    map), and one 40 PB long made it ask for the line of every byte (a hang; both found by the
    CLI fuzz campaign). Its code is still named by BAT."""
    facts(zoo, "bolt-all", "crash")
    build = ROOT / "fixtures" / "build" / "bolt-all"
    path = tmp_path / "crash"
    shutil.copy(build / "crash", path)
    with path.open("rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        assert symtab is not None
        symbols = list(symtab.iter_symbols())
        name = "main.cold.4" if past else "__do_global_dtors_aux.cold.1"
        [(k, cold)] = [(i, s) for i, s in enumerate(symbols) if s.name == name]
        size_at = symtab["sh_offset"] + k * symtab["sh_entsize"] + 16
    data = bytearray(path.read_bytes())
    size = (1 << 64) - cold["st_value"] + 8 if past else 42784196460019713
    data[size_at:size_at + 8] = struct.pack("<Q", size)
    path.write_bytes(bytes(data))
    env = {"PYTHONPATH": str(ROOT / "plugin"), "UNSPLIT_CACHE": str(tmp_path / "cache"),
           "PATH": "/usr/bin:/bin"}
    inp = str(build / "input" / "crash")
    for argv in (["debuginfo", str(path), "--input", inp, "-o", str(tmp_path / "out.debug")],
                 ["where", "--exe", str(path), "--input", inp, f"{cold['st_value'] + 1:#x}"]):
        p = subprocess.run([sys.executable, "-m", "unsplit", *argv], env=env,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and "internal error" not in p.stderr, p.stderr
        assert not PYTHON_ERROR.search(p.stdout + p.stderr), p.stdout + p.stderr
        if argv[0] == "where":
            assert f"is in {name.split('.cold')[0]} [cold" in p.stdout, p.stdout
