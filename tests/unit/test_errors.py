"""The one line a bug is reported by (errors.internal_error, shared by the command line and both
adapters), and where the core catches broadly around a library call, the rule that tells the
library's error on bad input from a bug of ours (errors.raised_by_reader: where it was
raised)."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.elf.core import Mapping, _bias_of
from unsplit.errors import BinaryError, internal_error
from unsplit.render.breaks import locate

from ..conftest import ROOT, facts


def test_internal_error_names_the_type_on_one_line() -> None:
    assert internal_error(KeyError("x")) == \
        "unsplit: internal error: KeyError: 'x' (set UNSPLIT_DEBUG=1 for the traceback)"
    assert internal_error(ValueError("two\nlines")) == \
        "unsplit: internal error: ValueError: two lines (set UNSPLIT_DEBUG=1 for the traceback)"


@pytest.fixture
def program(zoo: dict[str, Any]) -> Path:
    return ROOT / facts(zoo, "gcc-pgo", "crash")["binary"]


def _damaged_elf(program: Path, tmp_path: Path) -> Path:
    """A real ELF whose program headers start 10 bytes before its end (pyelftools reads past
    it: `ELFParseError: expected 8, found 2`)."""
    path = tmp_path / "damaged"
    shutil.copy(program, path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<Q", data, 0x20, len(data) - 10)  # e_phoff
    path.write_bytes(data)
    return path


def test_a_mapped_file_pyelftools_cannot_read_is_no_module(program: Path,
                                                          tmp_path: Path) -> None:
    path = _damaged_elf(program, tmp_path)
    assert _bias_of(Mapping(0x400000, 0x401000, 0, str(path))) is None


def test_a_bug_beside_pyelftools_is_not_taken_for_bad_input(
        program: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It used to be: `except Exception` made any bug "not a module"."""

    class Broken:
        def iter_segments(self) -> Any:
            return iter([{}])  # a segment without p_type: a KeyError in _bias_of itself

    monkeypatch.setattr(Binary, "elf", property(lambda self: Broken()))
    with pytest.raises(KeyError):
        _bias_of(Mapping(0x400000, 0x401000, 0, str(program)))


class _Session:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def index(self, path: str) -> Any:
        raise self.error


def test_a_break_message_without_a_line_only_for_an_unreadable_module() -> None:
    """`bb break`'s message goes on without a line when the module cannot be read; a bug in
    locating the site is not hidden behind a message without a line."""
    unreadable: Any = _Session(BinaryError("x: not an ELF file"))
    assert locate(unreadable, "x", 0, 0) is None
    buggy: Any = _Session(KeyError("x"))
    with pytest.raises(KeyError):
        locate(buggy, "x", 0, 0)


def _exception_classes() -> set[tuple[str, str]]:
    """(file, class) of every exception class defined in the core or an adapter outside
    errors.py: a class whose base is a builtin exception or one of errors.py's."""
    import ast
    import builtins

    from unsplit import errors

    ours = {n for n, v in vars(errors).items() if isinstance(v, type)}
    found = set()
    for path in sorted([*(ROOT / "plugin").rglob("*.py"), *(ROOT / "gdb").rglob("*.py"),
                        *(ROOT / "lldb").rglob("*.py")]):
        if path == Path(errors.__file__):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            for base in node.bases:
                name = ast.unparse(base).split(".")[-1]
                builtin = getattr(builtins, name, None)
                if name in ours or (isinstance(builtin, type)
                                    and issubclass(builtin, BaseException)):
                    found.add((str(path.relative_to(ROOT)), node.name))
    return found


def test_one_error_family() -> None:
    """Every error a user can see is declared in errors.py under UnsplitError; elsewhere only a
    module's private control flow (`_Stop`, caught where it is raised) and `--help`'s answer."""
    from unsplit import errors

    for value in vars(errors).values():
        if isinstance(value, type) and issubclass(value, BaseException):
            assert issubclass(value, errors.UnsplitError), value
    public = {(f, c) for f, c in _exception_classes() if not c.startswith("_")}
    assert public == {("plugin/unsplit/commands.py", "HelpRequested")}
