"""Docstrings state a contract in a few lines (as GDB's FrameDecorator.py does), and no comment
or docstring quotes a timing: stories and figures live in docs/ (benchmarks.md names the
command behind each figure) and in commit messages, never in the code."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("plugin", "gdb", "lldb")
MAX_LINES = 9  # a docstring of 10 lines or more is an essay
# A duration or a speed-up: "0.3 s", "12 µs", "2-4 s", "1.8x" (not "0x1f", not "%2.2s").
TIMING = re.compile(r"(?<![\w.%])\d+(?:[.,]\d+)?(?:-\d+(?:[.,]\d+)?)? ?"
                    r"(?:ns|us|µs|ms|s|min|seconds|minutes)\b|(?<![\w.])(?!0x)\d+(?:\.\d+)?x\b")


def _docstrings(text: str) -> list[tuple[int, str, str]]:
    """(line, name, docstring) of the module, every class and every function of `text`."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                found.append((node.body[0].lineno, getattr(node, "name", "<module>"), doc))
    return found


def long_docstrings(text: str) -> list[str]:
    return [f"{line}: {name} ({doc.count(chr(10)) + 1} lines)"
            for line, name, doc in _docstrings(text) if doc.count("\n") + 1 > MAX_LINES]


def timings(text: str) -> list[str]:
    """Comments and docstrings of `text` that quote a timing, by line."""
    said = [(tok.start[0], tok.string) for tok in
            tokenize.generate_tokens(io.StringIO(text).readline) if tok.type == tokenize.COMMENT]
    said += [(line + k, part) for line, _, doc in _docstrings(text)
             for k, part in enumerate(doc.splitlines())]
    return [f"{line}: {part.strip()}" for line, part in sorted(said) if TIMING.search(part)]


def _sources() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))


def test_no_docstring_is_an_essay() -> None:
    wrong = [f"{p.relative_to(ROOT)}:{found}" for p in _sources()
             for found in long_docstrings(p.read_text())]
    assert wrong == []


def test_no_comment_or_docstring_quotes_a_timing() -> None:
    wrong = [f"{p.relative_to(ROOT)}:{found}" for p in _sources()
             for found in timings(p.read_text())]
    assert wrong == []


def test_the_checks_catch_an_essay_and_a_figure() -> None:
    essay = '"""' + "\n".join(f"line {k}" for k in range(MAX_LINES + 1)) + '"""\n'
    code = essay + '''
def f() -> None:
    """Fast: measured 12 ms on libLLVM, 1.8x plain."""
    x = 0x1f  # reads 2-4 s of DWARF
    y = "%2.2s"  # a format, not a figure
'''
    assert long_docstrings(code) == [f"1: <module> ({MAX_LINES + 1} lines)"]
    assert timings(code) == [f"{MAX_LINES + 4}: Fast: measured 12 ms on libLLVM, 1.8x plain.",
                             f"{MAX_LINES + 5}: # reads 2-4 s of DWARF"]
    assert long_docstrings('"""One line."""\n') == timings('"""0x10 at crash.c:32"""\n') == []
