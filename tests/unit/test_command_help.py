"""The `bb` commands' help kept between sessions (unsplit.commands.helps): the text argparse
formats, read back from the cache root where it was kept under the same key, made afresh for
another width or a damaged file, and made without complaint where the cache cannot be written.

Oracle: argparse's own format_help of each command's parser."""

from __future__ import annotations

from pathlib import Path

import pytest
from unsplit import commands
from unsplit.commands import COMMANDS, helps


def _formatted() -> dict[str, str]:
    return {name: c.parser().format_help() for name, c in COMMANDS.items()}


def _kept(cache: Path) -> list[Path]:
    return sorted(cache.glob("help-v*/*.json"))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "100")
    return tmp_path / "cache"


def test_the_help_is_argparse_s_and_kept(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert helps() == _formatted()
    assert len(_kept(cache)) == 1

    def unformatted(self: commands.Command) -> str:
        raise AssertionError(f"bb {self.name}'s help formatted again")

    monkeypatch.setattr(commands.Command, "help", property(unformatted))
    assert helps() == _formatted()  # read back


def test_another_width_is_formatted_for_it(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wide = helps()
    monkeypatch.setenv("COLUMNS", "60")
    narrow = helps()
    assert narrow == _formatted() and narrow != wide
    assert len(_kept(cache)) == 2


def test_a_damaged_file_is_made_again(cache: Path) -> None:
    helps()
    (kept,) = _kept(cache)
    for damage in (b"\xff\xfe", b'{"key": [', b'{"key": "other", "help": {}}', b"[]"):
        kept.write_bytes(damage)
        assert helps() == _formatted()
        assert kept.read_bytes() != damage


def test_a_cache_that_cannot_be_written_is_no_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("UNSPLIT_CACHE", str(blocker / "cache"))
    assert helps() == {name: c.help for name, c in COMMANDS.items()}


def test_commands_from_no_file_are_formatted_every_time(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commands, "__file__", str(cache / "in.zip" / "commands.py"))
    assert helps() == _formatted()
    assert _kept(cache) == []
