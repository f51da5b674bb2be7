"""The commands the README and docs/ show, read as a user copies them.

A ```console block holds `$ COMMAND` lines, each followed by what it printed; a ```sh block holds
commands alone. Every `unsplit SUBCOMMAND` and `bb COMMAND` named anywhere in a document, in a
block or in running text, is a command whose options the tests check. In a console block's
output, a line `...` stands for any lines and `...` within a line for any text.

Run as a script (`PYTHONPATH=plugin .venv/bin/python -m tests.docs_text FILE.md...`) it runs each
console block's commands and writes their output in, as the test would compare it; keep any
`...` by hand afterwards."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOWN_ROOT = "/path/to/unsplit"
"""How the documents write the checkout's path."""


def documents() -> list[Path]:
    """The pages a user reads: the README and every guide (docs/ but the architecture)."""
    return [ROOT / "README.md",
            *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "architecture.md")]


@dataclass(frozen=True)
class Example:
    """One `$ COMMAND` of a console block and the output shown under it."""
    path: Path
    block: int  # the line of the block's first command: a block's commands run in order
    line: int
    command: str
    output: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)


def blocks(path: Path, kind: str) -> list[tuple[int, str]]:
    """(first line number, text) of each fenced block of `kind` (its info string)."""
    text = path.read_text()
    return [(text.count("\n", 0, m.start(2)) + 1, m.group(2))
            for m in _FENCE.finditer(text) if m.group(1) == kind]


def examples(path: Path) -> list[Example]:
    found: list[Example] = []
    for first, text in blocks(path, "console"):
        lines = text.splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith("$ ")]
        assert starts and starts[0] == 0, f"{path}:{first}: a console block starts with `$ `"
        for i, start in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else len(lines)
            found.append(Example(path, first, first + start, lines[start][2:],
                                 "\n".join(lines[start + 1:end])))
    return found


def environment(home: Path) -> dict[str, str]:
    """A user's shell at the checkout's root: `unsplit` on PATH, the README's init lines in
    ~/.gdbinit and ~/.lldbinit, no debuginfod server."""
    home.mkdir(parents=True, exist_ok=True)
    for name, marker in ((".gdbinit", "# ~/.gdbinit"), (".lldbinit", "# ~/.lldbinit")):
        (home / name).write_text(init_line(marker).replace(SHOWN_ROOT, str(ROOT)) + "\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("UNSPLIT_", "DEBUGINFOD_", "PYTEST_"))}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT / "plugin"),
               PATH=f"{ROOT / '.venv' / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}")
    # A cache of the examples' own, as a user's: the suite's is shared by tests on other
    # workers, which may clear it between `unsplit cache warm` and `cache info`.
    env["UNSPLIT_CACHE"] = str(home / ".cache" / "unsplit")
    # The pages show sessions with the debug file loaded; a first session's file arrives from
    # a background writer at a moment no page can show, so it is written at load here.
    env["UNSPLIT_DEBUGINFO_BACKGROUND"] = "0"
    return env


def init_line(marker: str) -> str:
    """The line the README puts under `marker` in its init-file block."""
    [(_, text)] = [b for b in blocks(ROOT / "README.md", "") if marker in b[1]]
    lines = text.splitlines()
    return lines[lines.index(marker) + 1]


def run(example: Example, env: dict[str, str], timeout: float = 120) -> str:
    done = subprocess.run(["bash", "-c", example.command], cwd=ROOT, env=env, timeout=timeout,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    return done.stdout


def normalized(text: str, cache: str | None = None) -> str:
    """What may differ between two machines' runs of one command: the checkout's path, the
    cache's, process ids, stack addresses, build-ids and digests; trailing blanks."""
    text = text.replace(str(ROOT), SHOWN_ROOT)
    if cache:
        text = text.replace(cache, "~/.cache/unsplit")
    text = re.sub(r"/[^\s'\"`()]*/fixtures/", "fixtures/", text)
    text = re.sub(r"\b(process|Process|LWP|pid)( =)? \d+", r"\1\2 N", text)
    text = re.sub(r"0x(?:0000)?7ff[0-9a-f]{9}\b", "0x7ff_", text)
    text = re.sub(r"\b[0-9a-f]{16,}\b", "<hex>", text)
    # glibc's own frames: its next point release moves their offsets and lines
    text = re.sub(r"(__libc_start\w*)\+0x[0-9a-f]+", r"\1+0x_", text)
    text = re.sub(r"(libc-start\.c|libc_start_call_main\.h):\d+(?::\d+)?", r"\1:_", text)
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def matches(shown: str, printed: str) -> bool:
    """`printed` as `shown` says, `...` standing for what it leaves out."""
    parts = []
    for line in shown.splitlines():
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*".join(map(re.escape, line.split("..."))) + r"\n")
    return re.fullmatch("".join(parts), printed + "\n") is not None if printed else not shown


# -- what the documents name --------------------------------------------------------------------

_CODE = re.compile(r"`([^`\n]+)`")
_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def named_commands(path: Path) -> list[tuple[int, str, str, str]]:
    """(line, tool, command, the words after it) of every `unsplit SUB …` or `bb CMD …` the page
    shows: each line of a block (of a console block, each command), each code span of the text,
    from the tool's name to the end of the line or span."""
    found: list[tuple[int, str, str, str]] = []
    block: str | None = None  # the info string of the block the line is in
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("```"):
            block = line[3:] if block is None else None
            continue
        if block == "console":  # commands, not their output
            pieces = [line[2:]] if line.startswith("$ ") else []
        else:
            pieces = [line] if block is not None else _CODE.findall(line)
        for piece in pieces:
            piece = piece.split(" # ")[0]
            for m in re.finditer(r"(?:^|(?<=[\s\"'(|]))(unsplit|bb) ([a-z][\w-]*)(.*)", piece):
                found.append((number, m.group(1), m.group(2), m.group(3)))
    return found


def options(words: str) -> list[str]:
    """The options a command line shows (`[--json]`, `(-o FILE | --build-id-dir DIR)` alike),
    up to where a pipe or another command starts."""
    words = re.split(r"\s(?:\|(?! -)|&&|;|>|<)\s|\s-ex\s|\"", words)[0]
    return _OPTION.findall(words)


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every relative link of a page (`file.md`, `file.md#anchor`, `#anchor`),
    outside code blocks."""
    found: list[tuple[int, str]] = []
    in_block = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("```"):
            in_block = not in_block
        elif not in_block:
            found += [(number, t) for t in _LINK.findall(line) if "://" not in t]
    return found


def anchors(path: Path) -> set[str]:
    """The anchors of a page's headings, as GitHub makes them."""
    found = set()
    for line in path.read_text().splitlines():
        if m := re.match(r"#+ (.*)", line):
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            found.add(slug)
    return found


def _update(path: Path) -> None:
    """Write each console example's output, as it runs now, into `path`."""
    import tempfile
    env = environment(Path(tempfile.mkdtemp(prefix="docs-home-")))
    lines = path.read_text().splitlines()
    outputs = [(example, run(example, env)) for example in examples(path)]
    for example, printed in reversed(outputs):
        printed = printed.replace(str(ROOT), SHOWN_ROOT)
        printed = re.sub(r"/[^\s'\"`()]*/fixtures/", SHOWN_ROOT + "/fixtures/", printed)
        if env.get("UNSPLIT_CACHE"):
            printed = printed.replace(env["UNSPLIT_CACHE"], "~/.cache/unsplit")
        printed = re.sub(r"~/.cache/unsplit/[^\s)]+", "~/.cache/unsplit/...", printed)
        start = example.line  # 1-based line of `$ …`: its output starts at index `start`
        end = start + (len(example.output.splitlines()) if example.output else 0)
        lines[start:end] = [line.rstrip() for line in printed.rstrip("\n").splitlines()]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        _update(Path(arg).resolve())
        print(shlex.quote(arg), "updated")
