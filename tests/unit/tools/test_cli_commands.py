"""The command line builds only the subcommand it runs: its table of which tool module
registers which subcommand must match what the modules register."""

from __future__ import annotations

import argparse

import pytest
from unsplit import cli
from unsplit.tools import COMMANDS


def _choices(parser: argparse.ArgumentParser) -> set[str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def test_the_whole_parser_has_exactly_the_listed_subcommands() -> None:
    assert _choices(cli.build_parser()) == {"where", "blocks", *COMMANDS}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_subcommand_alone_comes_from_its_module(command: str) -> None:
    parser = cli.build_parser(command)
    assert command in _choices(parser)
    whole = cli.build_parser()
    sub = next(a for a in whole._actions if isinstance(a, argparse._SubParsersAction))
    alone = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert alone.choices[command].format_help() == sub.choices[command].format_help()


def test_an_unknown_subcommand_gets_the_whole_parser_error(capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    with pytest.raises(SystemExit):
        cli.main(["wher", "--exe", "x", "0x1"])
    err = capsys.readouterr().err
    assert "invalid choice: 'wher'" in err and "symbolize" in err


def test_where_alone_imports_no_tool_module() -> None:
    assert _choices(cli.build_parser("where")) == {"where"}
