"""Damaged DWARF in a real session: GDB's and LLDB's backtraces keep every frame named, the
line our reader cannot read is simply missing, and the plugin says why once (the section and
the offset), never with an internal error or a traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..unit.elf.test_damaged_dwarf import Damaged, _no_file_names
from .conftest import json_lines


def test_damaged_line_table_keeps_the_backtrace(debugger: Callable[..., Any],
                                                zoo: dict[str, Any], tmp_path: Path) -> None:
    d = Damaged("gcc-pgo", zoo, tmp_path)
    said = _no_file_names(d)  # GDB and LLDB still read it; our reader once crashed on it
    session = debugger(d.save(), args=["crash"])
    stopped = session.run()
    crash = d.facts["crash"]
    bt = session.backtrace()
    for frame in crash["frames"][:3]:  # transfer [cold], run [cold], main: named as before
        name = frame["procedure"] if frame["fragment"] == "hot" \
            else f"{frame['procedure']} [{frame['fragment']}]"
        assert name in bt, bt
    everything = stopped + bt
    assert "Traceback" not in everything and "internal error" not in everything, everything
    # Said at most once by the hooks that name frames, and always by `bb where`.
    assert everything.count(said) <= 1, everything
    where = session.command("bb where")
    assert f"warning: crash: {said}" in where and "internal error" not in where, where
    [loc] = json_lines(session.command("bb where --json"))
    assert (loc["procedure"], loc["fragment"]) == (crash["procedure"], crash["fragment"])
    assert loc["line"] is None and any(w.startswith(said) for w in loc["warnings"]), loc
    assert session.alive()
