"""The debug file of a split module no source of lines describes (a BOLT output whose pre-BOLT
input is not at hand, a stripped one naming its functions from .dynsym, as a BOLTed Debian
libLLVM does): written over arrays, given to a session whatever the module's size, and said in
one short line however many procedures it lists.

Oracles: the fixtures' facts (each split function's fragments by llvm-readobj-22 on the
unstripped binary), llvm-readelf-22's dynamic symbols, llvm-symbolizer-22 and
llvm-dwarfdump-22 --verify on the file; never unsplit's own output."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ... import bolt_truth
from ...conftest import ROOT, facts


def _unsplit(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "unsplit", *args], capture_output=True,
                          text=True, timeout=600,
                          env={"PYTHONPATH": str(ROOT / "plugin"), "UNSPLIT_CACHE": str(cache)})


def _stripped_copy(f: dict[str, Any], where: Path) -> Path:
    """The module with its .symtab gone (BAT kept), alone in `where`: no pre-BOLT input."""
    where.mkdir()
    out = where / Path(f["binary"]).name
    bolt_truth.run("llvm-objcopy-22", "--strip-all", "--keep-section=.note.bolt_bat",
                   ROOT / f["binary"], out)
    assert ".symtab" not in bolt_truth.run("llvm-readelf-22", "-S", out)
    return out


def _verified(debug: Path) -> None:
    verify = subprocess.run(["llvm-dwarfdump-22", "--verify", str(debug)], capture_output=True,
                            text=True, timeout=120)
    assert verify.returncode == 0 and "No errors." in verify.stdout, verify.stdout[-3000:]


def test_stripped_bolt_output_names_each_procedure_over_its_fragments(
        zoo: dict[str, Any], tmp_path: Path) -> None:
    """A BOLTed shared library stripped to .dynsym: every instruction of every fragment of a
    split function (the unstripped binary's facts) is named, by llvm-symbolizer-22 on the file
    alone, after its procedure: its .dynsym name, or its entry's address where the library
    does not export it (what BAT alone can say), and never with a line."""
    f = facts(zoo, "bolt-dlopen", "libwork")
    lib = _stripped_copy(f, tmp_path / "alone")
    debug = tmp_path / "out.debug"
    run = _unsplit("debuginfo", str(lib), "-o", str(debug), "--json", cache=tmp_path / "cache")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["line_rows"] == 0
    _verified(debug)
    exported = {line.split()[-1].split("@")[0] for line in bolt_truth.run(
        "llvm-readelf-22", "--dyn-syms", "-W", lib).splitlines() if " FUNC " in line}
    blocks, expected = bolt_truth.fragments_symbolized(debug, ROOT / f["binary"],
                                                       f["split_functions"], exported)
    assert [b[0] for b in blocks] == expected
    assert {b[1].rsplit(":", 2)[1] for b in blocks} == {"0"}
    assert sorted(report["split_without_lines"]) == sorted(
        n if n in exported else f"{int(i['fragments'][0]['start'], 16):#x}"
        for n, i in f["split_functions"].items())


def test_a_session_gives_a_names_only_file_whatever_the_size(
        zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of names alone is one pass over the procedures: a session writes it however much
    code the module has. Once the pre-BOLT input (with DWARF) is beside it, the file is that
    DWARF translated, made at any size too, and kept apart from the names-only one."""
    from unsplit.debuginfo.cache import debug_file_for
    from unsplit.index.bolt import prebolt

    monkeypatch.delenv(prebolt.ENV_PATH, raising=False)
    monkeypatch.setenv("DEBUGINFOD_CACHE_PATH", str(tmp_path / "no-debuginfod"))

    f = facts(zoo, "bolt-dlopen", "libwork")
    (tmp_path / "lib").mkdir()
    lib = tmp_path / "lib" / "libwork.so"
    shutil.copy2(ROOT / f["binary"], lib)
    root = str(tmp_path / "cache")
    alone = debug_file_for(str(lib), root=root, max_code=1)
    assert alone.reason == "made" and alone.path is not None
    _verified(Path(alone.path))
    (tmp_path / "lib" / "input").mkdir()
    shutil.copy2(ROOT / f["input"], tmp_path / "lib" / "input" / lib.name)
    with_input = debug_file_for(str(lib), root=root, max_code=1)
    assert with_input.reason == "made" and with_input.path not in (None, alone.path)


def test_the_procedures_without_lines_are_counted_not_listed(zoo: dict[str, Any],
                                                            tmp_path: Path) -> None:
    """The message says how many split procedures have no line and names the first five;
    --json lists every one (12 split functions in the facts of the BOLTed statics, copied
    without their input)."""
    f = facts(zoo, "bolt-statics", "statics")
    (tmp_path / "alone").mkdir()
    binary = tmp_path / "alone" / "statics"
    shutil.copy2(ROOT / f["binary"], binary)
    names = sorted(i["fragments"][0]["symbol"] for i in f["split_functions"].values())
    assert len(names) == 12  # statics of several units share a name
    text = _unsplit("debuginfo", str(binary), "-o", str(tmp_path / "a.debug"),
                    cache=tmp_path / "cache")
    assert text.returncode == 0, text.stderr
    said = [line for line in text.stdout.splitlines() if "no source of lines" in line]
    assert len(said) == 1
    assert "describes 12 split procedures" in said[0]
    assert said[0].endswith(" and 7 more (--json lists them all)")
    listed = said[0].split(": ", 1)[1].split(" and 7 more")[0].split(", ")
    assert len(listed) == 5 and set(listed) <= set(names)
    whole = _unsplit("debuginfo", str(binary), "-o", str(tmp_path / "b.debug"), "--json",
                     cache=tmp_path / "cache")
    assert sorted(json.loads(whole.stdout)["split_without_lines"]) == names


def test_summarized() -> None:
    from unsplit.render.lists import summarized

    assert summarized(["a", "b"]) == "a, b"
    many = [f"f{i}" for i in range(89_233)]
    assert summarized(many) == "f0, f1, f2, f3, f4 and 89,228 more (--json lists them all)"
    assert summarized(many[:6], 5, "`bb x --all`") == \
        "f0, f1, f2, f3, f4 and 1 more (`bb x --all` lists them all)"
