"""The LLDB adapter's rewriting of frame-format strings (lldb/unsplit_lldb_impl/formats.py): pure
string functions, no debugger (the e2e tests drive the formats in real LLDB sessions)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lldb"))
from unsplit_lldb_impl.formats import rewrite  # noqa: E402  (pure: no lldb import)

FUNCTION_ENTRY = "${script.frame:unsplit_lldb.frame_function}"
LINE_ENTRY = "${script.frame:unsplit_lldb.frame_line}"
DEFAULT_FRAME_FORMAT = (
    "frame #${frame.index}: {${ansi.fg.cyan}${frame.pc}${ansi.normal} }"
    "{${module.file.basename}{\\`}}{${function.name-with-args}{${frame.no-debug}"
    "${function.pc-offset}}}{ at ${ansi.fg.cyan}${line.file.basename}${ansi.normal}:"
    "${ansi.fg.yellow}${line.number}${ansi.normal}{:${ansi.fg.yellow}${line.column}"
    "${ansi.normal}}}${frame.kind}{${function.is-optimized} [opt]}\\n"
)


def test_rewrite_default_frame_format() -> None:
    done = rewrite(DEFAULT_FRAME_FORMAT, FUNCTION_ENTRY, LINE_ENTRY)
    assert done is not None
    assert done.function_part == ("${function.name-with-args}{${frame.no-debug}"
                                  "${function.pc-offset}}")
    assert "{" + FUNCTION_ENTRY + "}" in done.text
    # The line entry follows the whole ` at file:line:col` scope, outside it.
    assert ("${line.column}${ansi.normal}}}" + LINE_ENTRY + "${frame.kind}") in done.text
    assert rewrite(done.text, FUNCTION_ENTRY, LINE_ENTRY) is None  # already ours


def test_rewrite_leaves_formats_without_a_function_alone() -> None:
    assert rewrite("thread #${thread.index}{, stop reason = ${thread.stop-reason}}\\n",
                   FUNCTION_ENTRY) is None


def test_rewrite_respects_escapes_and_bare_entries() -> None:
    text = "\\{ ${function.name} \\} ${line.number}"
    done = rewrite(text, FUNCTION_ENTRY, LINE_ENTRY)
    assert done is not None
    assert done.function_part == "${function.name}"
    assert done.text == "\\{ " + FUNCTION_ENTRY + " \\} ${line.number}"  # no scope: no line entry
