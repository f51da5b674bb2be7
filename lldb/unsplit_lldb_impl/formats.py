"""Rewriting LLDB format strings (``frame-format``/``thread-format``; grammar:
lldb/source/Core/FormatEntity.cpp): the function part becomes a ``${script.frame:…}`` entry
that renders that same part natively outside moved code, and a second entry after the line scope
gives file:line where LLDB has none; where the two scopes are siblings (LLDB's default), one
entry for both (:func:`merge`). Pure string functions, no lldb import."""

from __future__ import annotations

from dataclasses import dataclass

_FUNCTION_TOKENS = ("${function.name", "${function.mangled-name")
_LINE_TOKENS = ("${line.file", "${line.number")


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A format with our entries in it, and the part they replaced (rendered natively)."""

    text: str
    function_part: str


def _scan(text: str) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """Brace structure: {open index: close index} of scopes, and (start, end) of ${…} entries."""
    scopes: dict[int, int] = {}
    entries: list[tuple[int, int]] = []
    stack: list[int] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "$" and text.startswith("${", i):
            end = text.find("}", i + 2)
            if end < 0:
                break
            entries.append((i, end + 1))
            i = end + 1
            continue
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            scopes[stack.pop()] = i
        i += 1
    return scopes, entries


def _innermost_scope(scopes: dict[int, int], position: int) -> tuple[int, int] | None:
    best: tuple[int, int] | None = None
    for start, end in scopes.items():
        if start < position < end and (best is None or start > best[0]):
            best = (start, end)
    return best


def _first_entry(text: str, entries: list[tuple[int, int]], prefixes: tuple[str, ...]) -> int:
    for start, _ in entries:
        if text.startswith(prefixes, start):
            return start
    return -1


def rewrite(text: str, function_entry: str, line_entry: str | None = None) -> Rewrite | None:
    """`text` with its function part replaced by `function_entry` (None: no function part).

    `line_entry` is inserted after the scope holding the line (when there is one), so the two
    never both print: the callback returns "" whenever LLDB has a line of its own.
    """
    if function_entry in text:
        return None  # already ours
    scopes, entries = _scan(text)
    start = _first_entry(text, entries, _FUNCTION_TOKENS)
    if start < 0:
        return None
    scope = _innermost_scope(scopes, start)
    end = scope[1] if scope is not None else _end_of_top_level_run(text, entries, start)
    part = text[start:end]
    out = text[:start] + function_entry + text[end:]
    if line_entry is not None:
        out = _insert_after_line_scope(out, line_entry)
    return Rewrite(out, part)


@dataclass(frozen=True, slots=True)
class Merged:
    """A format with one entry for its function scope, the line scope after it and what lies
    between (`span`, rendered natively where LLDB's name stands); `function_part` is the
    function scope's inside, `tail` the rest of `span` after the function scope."""

    text: str
    span: str
    function_part: str
    tail: str


def merge(text: str, entry: str) -> Merged | None:
    """`text` with its function scope through the line scope after it replaced by `entry`;
    None unless both exist and have the same enclosing scope (so the span is a format of its
    own), or when `text` holds `entry` already."""
    if entry in text:
        return None
    scopes, entries = _scan(text)
    start = _first_entry(text, entries, _FUNCTION_TOKENS)
    line = _first_entry(text, entries, _LINE_TOKENS)
    if start < 0 or line < 0:
        return None
    scope = _innermost_scope(scopes, start)
    function = scope if scope is not None else \
        (start, _end_of_top_level_run(text, entries, start) - 1)
    holder = _innermost_scope(scopes, line)
    if holder is None or holder[0] <= function[1] or \
            _innermost_scope(scopes, function[0]) != _innermost_scope(scopes, holder[0]):
        return None
    span = text[function[0]:holder[1] + 1]
    if "${script." in span:
        return None
    part = text[start:scope[1]] if scope is not None else text[function[0]:function[1] + 1]
    return Merged(text[:function[0]] + entry + text[holder[1] + 1:], span, part,
                  text[function[1] + 1:holder[1] + 1])


def _end_of_top_level_run(text: str, entries: list[tuple[int, int]], start: int) -> int:
    # A function entry outside any scope: take just that entry.
    for s, e in entries:
        if s == start:
            return e
    return start


def _insert_after_line_scope(text: str, line_entry: str) -> str:
    scopes, entries = _scan(text)
    start = _first_entry(text, entries, _LINE_TOKENS)
    if start < 0:
        return text
    # The innermost scope holding the file name: ` at file:line:col` in LLDB's defaults.
    holders = [(s, e) for s, e in scopes.items() if s < start < e]
    if not holders:
        return text
    s, e = max(holders)
    if "${script.frame:" in text[s:e]:
        return text
    return text[: e + 1] + line_entry + text[e + 1 :]



# `bt`'s own frame-format (backtrace.py): LLDB renders every frame natively, headed by the facts
# the naming reads of the frame, its function part between markers and a marker where its line
# scope ends; control characters no format or name holds.
FRAME_MARK, FIELD, FACTS_END, PART_MARK, PART_END, LINE_MARK = \
    "\x01", "\x1f", "\x05", "\x02", "\x03", "\x04"
FACTS = FIELD.join(("${thread.index}", "${frame.index}", "${frame.pc}",
                    "{${function.is-inlined}i}", "{${line.number}}"))
_PART_ENTRY, _LINE_ENTRY = "${script.frame:_unsplit_part}", "${script.frame:_unsplit_line}"


def mark(text: str) -> str | None:
    """`text` headed by FRAME_MARK, the facts and FACTS_END, its function part (as
    :func:`rewrite` finds it) between PART_MARK and PART_END, and LINE_MARK after its line
    scope (right after PART_END without one); None when it has no function part."""
    done = rewrite(text, _PART_ENTRY, _LINE_ENTRY)
    if done is None:
        return None
    end = PART_END if _LINE_ENTRY in done.text else PART_END + LINE_MARK
    marked = done.text.replace(_PART_ENTRY, PART_MARK + done.function_part + end)
    return FRAME_MARK + FACTS + FACTS_END + marked.replace(_LINE_ENTRY, LINE_MARK)
