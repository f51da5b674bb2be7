"""The README and the guides in docs/ as a user copies from them: each console example, run from
the checkout's root with the README's init lines in ~/.gdbinit and ~/.lldbinit, prints what the
page shows; each `unsplit` and `bb` command a page names exists with the options it shows.

The oracle for an example is the page itself, written from a real run (tests/docs_text.py);
what differs between machines (paths, process ids, stack addresses, build-ids) is normalized
on both sides."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest
from unsplit.cli import build_parser
from unsplit.commands import COMMANDS

from .. import docs_text
from ..docs_text import Example

pytestmark = pytest.mark.e2e

def _console_blocks() -> list[list[Example]]:
    found: dict[tuple[Path, int], list[Example]] = {}
    for path in docs_text.documents():
        for example in docs_text.examples(path):
            found.setdefault((example.path, example.block), []).append(example)
    return list(found.values())


BLOCKS = _console_blocks()


@pytest.fixture(scope="module")
def user_env(tmp_path_factory: pytest.TempPathFactory, zoo: dict[str, Any]) -> dict[str, str]:
    return docs_text.environment(tmp_path_factory.mktemp("home"))


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b[0].id)
def test_example_prints_what_the_page_shows(block: list[Example],
                                            user_env: dict[str, str]) -> None:
    """Each command of a console block, in order, prints what the page shows under it."""
    debuggers = {m.group(0) for e in block
                 for m in re.finditer(r"\.debuggers/bin/[\w-]+", e.command)}
    if missing := [d for d in sorted(debuggers) if not (docs_text.ROOT / d).exists()]:
        pytest.skip(f"{', '.join(missing)} not installed (make debuggers)")
    cache = user_env.get("UNSPLIT_CACHE")
    for example in block:
        printed = docs_text.normalized(docs_text.run(example, user_env), cache)
        shown = docs_text.normalized(example.output, cache)
        assert docs_text.matches(shown, printed), \
            f"{example.id}: $ {example.command}\n--- shown\n{shown}\n--- printed\n{printed}"


def _subcommand_options() -> dict[str, set[str]]:
    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    known = {"": set(parser._option_string_actions)}
    for name, p in sub.choices.items():
        known[name] = set(p._option_string_actions)
        # `unsplit cache info|clear|warm`: the options of its own subcommands count too
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    known[name] |= set(child._option_string_actions)
    return known


def _unknown(tool: str, name: str, shown: list[str]) -> str | None:
    if tool == "unsplit":
        known = _subcommand_options()
        if name not in known:
            return f"no subcommand `unsplit {name}`"
        missing = [o for o in shown if o not in known[name]]
    else:
        if name not in COMMANDS:
            return f"no command `bb {name}`"
        missing = [o for o in shown if o not in COMMANDS[name].parser()._option_string_actions]
    return f"`{tool} {name}` has no {', '.join(missing)}" if missing else None


@pytest.mark.parametrize("path", docs_text.documents(),
                         ids=lambda p: str(p.relative_to(docs_text.ROOT)))
def test_every_command_named_exists_with_its_options(path: Path) -> None:
    named = docs_text.named_commands(path)
    wrong = []
    for line, tool, name, rest in named:
        if (problem := _unknown(tool, name, docs_text.options(rest))) is not None:
            wrong.append(f"{path.name}:{line}: {problem} ({tool} {name}{rest})")
    assert wrong == []


def test_the_guides_name_the_commands() -> None:
    """Every `bb` command and `unsplit` subcommand is shown somewhere a user reads."""
    named = {f"{tool} {name}" for path in docs_text.documents()
             for _, tool, name, _ in docs_text.named_commands(path)}
    expected = {f"bb {name}" for name in COMMANDS} | {f"unsplit {name}"
                                                     for name in _subcommand_options() if name}
    assert sorted(expected - named) == []


def test_every_guide_has_a_real_example() -> None:
    """The task guides show output, not only commands."""
    guides = [p for p in docs_text.documents()
              if p.name not in ("benchmarks.md", "fuzzing.md", "toolchain-notes.md",
                                "cfi-check.md", "development.md")]
    assert [p.name for p in guides if not docs_text.examples(p)] == []


@pytest.mark.parametrize("path", docs_text.documents(),
                         ids=lambda p: str(p.relative_to(docs_text.ROOT)))
def test_every_link_leads_to_a_page_and_heading(path: Path) -> None:
    wrong = []
    for line, target in docs_text.links(path):
        file, _, anchor = target.partition("#")
        page = (path.parent / file).resolve() if file else path
        if not page.exists():
            wrong.append(f"{path.name}:{line}: no {file}")
        elif anchor and page.suffix == ".md" and anchor not in docs_text.anchors(page):
            wrong.append(f"{path.name}:{line}: no heading #{anchor} in {page.name}")
    assert wrong == []
