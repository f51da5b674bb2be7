"""The LLDB adapter's rewriting of frame-format strings (lldb/unsplit_lldb_impl/formats.py): pure
string functions, no debugger (the e2e tests drive the formats in real LLDB sessions)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lldb"))
from unsplit_lldb_impl.formats import (  # noqa: E402  (pure: no lldb import)
    FACTS,
    FACTS_END,
    FRAME_MARK,
    LINE_MARK,
    PART_END,
    PART_MARK,
    mark,
    merge,
    rewrite,
)

FUNCTION_ENTRY = "${script.frame:unsplit_lldb.frame_function}"
LINE_ENTRY = "${script.frame:unsplit_lldb.frame_line}"
MERGED_ENTRY = "${script.frame:unsplit_lldb.frame_function_line}"
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


FUNCTION_SCOPE = "{${function.name-with-args}{${frame.no-debug}${function.pc-offset}}}"
LINE_SCOPE = ("{ at ${ansi.fg.cyan}${line.file.basename}${ansi.normal}:${ansi.fg.yellow}"
              "${line.number}${ansi.normal}{:${ansi.fg.yellow}${line.column}${ansi.normal}}}")


def test_merge_default_frame_format() -> None:
    """LLDB's default: the function scope and the line scope side by side, one entry for both."""
    assert FUNCTION_SCOPE + LINE_SCOPE in DEFAULT_FRAME_FORMAT  # the case this is about
    done = merge(DEFAULT_FRAME_FORMAT, MERGED_ENTRY)
    assert done is not None
    assert done.span == FUNCTION_SCOPE + LINE_SCOPE
    assert done.tail == LINE_SCOPE
    assert done.function_part == FUNCTION_SCOPE[1:-1]
    assert done.text == DEFAULT_FRAME_FORMAT.replace(FUNCTION_SCOPE + LINE_SCOPE, MERGED_ENTRY)
    assert merge(done.text, MERGED_ENTRY) is None  # already ours


def test_merge_takes_what_lies_between_and_bare_entries() -> None:
    text = "#${frame.index} ${function.name} in {${module.file.basename}}{ at ${line.number}} X"
    done = merge(text, MERGED_ENTRY)
    assert done is not None
    assert done.span == "${function.name} in {${module.file.basename}}{ at ${line.number}}"
    assert done.tail == " in {${module.file.basename}}{ at ${line.number}}"
    assert done.text == "#${frame.index} " + MERGED_ENTRY + " X"


def test_merge_leaves_scopes_of_different_depths_to_rewrite() -> None:
    """LLDB's thread-format nests the function inside the module's scope: no span of its own."""
    thread_format = ("thread #${thread.index}{, ${frame.pc}}{ ${module.file.basename}"
                     "{`${function.name-with-pc-offset}}}" + LINE_SCOPE + "\\n")
    assert merge(thread_format, MERGED_ENTRY) is None
    assert rewrite(thread_format, FUNCTION_ENTRY, LINE_ENTRY) is not None
    assert merge(LINE_SCOPE + FUNCTION_SCOPE, MERGED_ENTRY) is None  # the line first
    assert merge(FUNCTION_SCOPE + " ${script.frame:m.f} " + LINE_SCOPE, MERGED_ENTRY) is None
    assert merge("${function.name} ${line.number}", MERGED_ENTRY) is None  # no line scope


def test_mark_default_frame_format() -> None:
    """`bt`'s format (backtrace.py): the facts first, then LLDB's own text with its function
    part between marks and a mark after the line scope, nothing else changed."""
    marked = mark(DEFAULT_FRAME_FORMAT)
    assert marked is not None
    head = FRAME_MARK + FACTS + FACTS_END
    assert marked.startswith(head)
    inside = FUNCTION_SCOPE[1:-1]
    assert marked[len(head):] == DEFAULT_FRAME_FORMAT.replace(
        FUNCTION_SCOPE + LINE_SCOPE, "{" + PART_MARK + inside + PART_END + "}" + LINE_SCOPE
        + LINE_MARK)
    assert "${frame.pc}" in FACTS and "${line.number}" in FACTS and "${frame.index}" in FACTS


def test_mark_without_a_line_scope_or_a_function() -> None:
    marked = mark("#${frame.index} ${function.name} MINE\\n")
    assert marked is not None
    assert marked.endswith(PART_MARK + "${function.name}" + PART_END + LINE_MARK + " MINE\\n")
    assert mark("#${frame.index} ${frame.pc}\\n") is None
