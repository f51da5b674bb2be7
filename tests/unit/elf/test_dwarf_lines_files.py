"""elf.dwarf_lines: `bb break FILE:LINE` reads whole (through pyelftools) only the line tables
that name a file of that base name, as llvm-dwarfdump-22 --debug-line lists their files; every
other unit is passed over from its header's bytes (a libc with debug info has two thousand)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.elf.dwarf_lines import DwarfLines

pytestmark = pytest.mark.skipif(shutil.which("llvm-dwarfdump-22") is None,
                                reason="llvm-dwarfdump-22 is not installed")

TARGET = "volatile int t_sink;\nint target(int n)\n{\n    t_sink = n;\n    return n + 1;\n}\n"
LINE = 4  # t_sink = n;
OTHERS = 8
BUILDS = {"gcc5": ["gcc", "-O0", "-g"], "gcc4": ["gcc", "-O0", "-gdwarf-4"],
          "clang5": ["clang-22", "-O0", "-g"]}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Programs of ten units: target.c, sub/target.c (another file of that name) and eight that
    name neither."""
    work = tmp_path_factory.mktemp("lines-files")
    (work / "sub").mkdir()
    (work / "target.c").write_text(TARGET)
    (work / "sub" / "target.c").write_text(TARGET.replace("target", "sub_target")
                                           .replace("t_sink", "s_sink"))
    calls = "".join(f"int u{i}(int);\n" for i in range(OTHERS))
    body = " + ".join(f"u{i}(c)" for i in range(OTHERS))
    (work / "main.c").write_text(f"int target(int);\nint sub_target(int);\n{calls}"
                                 f"int main(int c, char **v) {{ (void)v; return target(c) + "
                                 f"sub_target(c) + {body}; }}\n")
    for i in range(1, OTHERS):
        (work / f"u{i}.c").write_text(f"int u{i}(int n) {{ return n * {i}; }}\n")
    (work / "u0.c").write_text("int u0(int n) { return n; }\n")
    sources = ["main.c", "target.c", "sub/target.c", *(f"u{i}.c" for i in range(OTHERS))]
    made = []
    for name, compiler in BUILDS.items():
        if shutil.which(compiler[0]) is None:
            continue
        subprocess.run([*compiler, *sources, "-o", name], cwd=work, check=True, timeout=120)
        made.append(work / name)
    return made


def _naming(path: str, base: str) -> set[int]:
    """Offsets in .debug_line of the line tables llvm-dwarfdump-22 lists a file `base` in."""
    text = subprocess.run(["llvm-dwarfdump-22", "--debug-line", path], capture_output=True,
                          text=True, check=True, timeout=300).stdout
    out = set()
    for table in re.split(r"^(?=debug_line\[0x)", text, flags=re.M)[1:]:
        names = re.findall(r'^\s+name: "([^"]*)"', table.split("\nAddress ")[0], re.M)
        if any(os.path.basename(n) == base for n in names):
            out.add(int(table[len("debug_line["):].split("]")[0], 16))
    return out


def _read_whole(binary: Binary, file: str, line: int,
                monkeypatch: pytest.MonkeyPatch) -> tuple[set[int], list[Any]]:
    """(.debug_line offsets of the line tables read whole, from the bytes or through
    pyelftools, the statements found)."""
    read: set[int] = set()
    original = DwarfLines._decode

    def counted(self: DwarfLines, cu_offset: int) -> Any:
        top = self.binary.dwarf.get_CU_at(cu_offset).get_top_DIE()
        read.add(top.attributes["DW_AT_stmt_list"].value)
        return original(self, cu_offset)

    with monkeypatch.context() as m:
        m.setattr(DwarfLines, "_decode", counted)
        found = DwarfLines(binary).statements(file, line)
    return read, found


def _each(paths: list[Path]) -> Iterator[Binary]:
    for path in paths:
        with closing(Binary(str(path))) as b:
            yield b


def test_only_tables_naming_the_file_are_read(built: list[Path],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(built) >= 2
    for binary in _each(built):
        theirs = _naming(binary.path, "target.c")
        assert len(theirs) == 2, binary.path  # target.c's and sub/target.c's
        read, found = _read_whole(binary, "target.c", LINE, monkeypatch)
        assert read == theirs, binary.path
        assert len(found) == 2 and {r.line for r in found} == {LINE}
        read, found = _read_whole(binary, "sub/target.c", LINE, monkeypatch)
        # the file tables, read from the headers' bytes, already tell sub/target.c's apart
        assert read and read <= theirs
        assert [r.path.endswith("sub/target.c") for r in found] == [True]
        assert _read_whole(binary, "u9.c", 1, monkeypatch)[0] == set()  # named by none


def test_libc_tables_naming_loop_c() -> None:
    """glibc's debug file (libc6-dbg) has two thousand units; iconv/loop.c is one's file."""
    with closing(Binary("/lib/x86_64-linux-gnu/libc.so.6")) as libc:
        debug = libc.dwarf_binary
        if debug is None:
            pytest.skip("no libc6-dbg")
        theirs = _naming(debug.path, "loop.c")
        assert theirs
        with pytest.MonkeyPatch.context() as m:
            read = _read_whole(libc, "loop.c", 1, m)[0]
        assert read == theirs
