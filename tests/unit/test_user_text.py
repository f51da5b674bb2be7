"""What a user reads never speaks of this project's issues: every `unsplit` and `bb` help, the
documentation, and every string the plugin, the adapters and the benchmarks can print."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest
from unsplit.cli import build_parser
from unsplit.commands import COMMANDS

from ..conftest import ROOT

ISSUE = re.compile(r"\bissues?\b", re.IGNORECASE)


def _subcommand_helps() -> dict[str, str]:
    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {"unsplit": parser.format_help()}
    helps.update({f"unsplit {name}": p.format_help() for name, p in sub.choices.items()})
    helps.update({f"bb {name}": c.help for name, c in COMMANDS.items()})
    return helps


def test_no_help_speaks_of_issues() -> None:
    helps = _subcommand_helps()
    assert {"unsplit lines", "unsplit ranges", "bb break"} <= set(helps)
    assert {name: ISSUE.findall(text) for name, text in helps.items()
            if ISSUE.search(text)} == {}


def _documents() -> list[Path]:
    return [ROOT / "README.md", ROOT / "fixtures" / "README.md",
            *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_document_speaks_of_issues(path: Path) -> None:
    hits = [line for line in path.read_text().splitlines() if ISSUE.search(line)]
    assert hits == []


def _strings(path: Path) -> list[str]:
    """Every string constant of a Python file: its messages, help texts and docstrings."""
    tree = ast.parse(path.read_text(), str(path))
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def _in_bench_cache(path: Path) -> bool:
    """Whether `path` is in a benchmark's git-ignored cache (the sources of real programs that
    bench/realprog.py builds, not ours)."""
    return any(part == "cache" or part.endswith("-cache") for part in path.parts)


def test_no_message_speaks_of_issues() -> None:
    files = [p for folder in ("plugin", "gdb", "lldb", "bench")
             for p in sorted((ROOT / folder).rglob("*.py")) if not _in_bench_cache(p)]
    assert len(files) > 100
    hits = {str(p.relative_to(ROOT)): found for p in files
            if (found := [s for s in _strings(p) if ISSUE.search(s)])}
    assert hits == {}
