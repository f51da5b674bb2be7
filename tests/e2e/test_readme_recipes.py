"""The init-file lines of docs/gdb.md and docs/lldb.md, read as a user's init file reads them:
plain `next`/`step` (and `n`/`s`) run `bb next`/`bb step`, and GDB asks nothing while it starts.

The oracle is the debugger itself: GDB's `set trace-commands on` echoes the commands a user
command runs (`++bb next`), `show confirm` says the setting is as it was; LLDB's `help n`
says what `n` runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts
from .driver_gdb import PLUGIN, GdbDriver

pytestmark = pytest.mark.e2e


def _block_after(page: str, text: str) -> list[str]:
    """The lines of the first code block after `text` in docs/`page`."""
    doc = (ROOT / "docs" / page).read_text()
    start = doc.index(text)
    m = re.compile(r"^```\n(.*?)^```$", re.S | re.M).search(doc, start)
    assert m is not None, text
    return m.group(1).splitlines()


class _InitFileGdb(GdbDriver):
    """GDB reading `init_file` where ~/.gdbinit is read, with `confirm` as GDB starts (on)."""

    _settings = tuple(s for s in GdbDriver._settings if s != "set confirm off")

    def __init__(self, binary: str, init_file: Path, **kwargs: Any) -> None:
        self.plugin_file = str(init_file)  # `source FILE` where the plugin would be loaded
        super().__init__(binary, **kwargs)


@pytest.mark.parametrize("confirm", ["on", "off"])
def test_gdbinit_recipe(zoo: dict[str, Any], tmp_path: Path, confirm: str) -> None:
    lines = _block_after("gdb.md", "in `~/.gdbinit` after the source line")
    assert "define next" in lines and "define step" in lines
    init = tmp_path / "gdbinit"
    init.write_text("\n".join([f"set confirm {confirm}", f"source {PLUGIN}", *lines]) + "\n")
    f = facts(zoo, "gcc-pgo", "crash")
    log = (tmp_path / "gdb.log").open("w")
    session = _InitFileGdb(str(ROOT / f["binary"]), init, args=["crash"], log=log)
    try:
        assert "Really redefine" not in session.startup and "(y or n)" not in session.startup, \
            session.startup
        assert session.command("show confirm").endswith(f" is {confirm}.")
        session.command("set trace-commands on")
        session.command("break transfer")
        session.run()
        for typed, runs in (("next", "bb next"), ("n", "bb next"), ("step", "bb step"),
                            ("s", "bb step")):
            out = session.command(typed)
            assert f"++{runs}" in out.splitlines(), (typed, out)
            assert "error" not in out.lower(), out
        session.command("set trace-commands off")
        assert session.alive()
    finally:
        session.close()
        log.close()


def test_lldbinit_recipe(lldb: Any, zoo: dict[str, Any]) -> None:
    """Without a process, LLDB's own `n` says it needs one; `bb next` says so in its own name:
    which one `n` runs shows. With one, `n` and `s` step."""
    lines = _block_after("lldb.md", "in `~/.lldbinit` after the import line")
    f = facts(zoo, "gcc-pgo", "crash")
    session = lldb(ROOT / f["binary"], args=["crash"])
    native = session.command("n")
    assert "bb next" not in native, native
    for line in lines:
        out = session.command(line)
        assert not out.startswith("error"), (line, out)
    for typed, runs in (("n", "bb next"), ("s", "bb step")):
        out = session.command(typed)
        assert runs in out and out != native, (typed, out)
    session.command("breakpoint set -n transfer")
    session.run()
    for typed in ("n", "s"):
        out = session.command(typed)
        assert "stop reason" in out and "error" not in out, (typed, out)
