"""`unsplit symbolize --exe BINARY`: llvm-symbolizer's output, answered line by line as a crash
pipeline's co-process, with moved code named by its logical procedure (``foo``, not
``foo.cold``) and BOLTed code's lines from the pre-BOLT input through BAT; everywhere else
byte-identical to ``llvm-symbolizer-22 --obj=BINARY`` (tests/unit/tools/test_symbolize.py).
docs/command-line.md lists what it reads and where it differs (``--no-inlines``, ``--relative``)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from array import array
from bisect import bisect_right
from dataclasses import dataclass
from typing import IO, Any

from unsplit.elf.binary import Binary, FunctionSymbol
from unsplit.errors import UnsplitError, UsageError
from unsplit.index.cache.store import IndexStore
from unsplit.index.inlines import UNKNOWN, DwarfFrames
from unsplit.index.model.records import BOLT_PSEUDO_UNIT, LineInfo, Location
from unsplit.index.module_index import IndexCache, ModuleIndex
from unsplit.index.names.demangle import LLVM

PAGE = 0x1000


def _progress(text: str) -> None:
    """What a first index build says while it runs (as a debugging session says it)."""
    print(text, file=sys.stderr, flush=True)


# --- the symbolizer --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    """Everything said about one address."""

    address: int  # file address
    frames: list[LineInfo]  # innermost first; never empty
    location: Location | None


class Symbolizer:
    """Symbolizes file addresses of one binary (and its pre-BOLT input, for BOLTed code)."""

    def __init__(self, exe: str, input_path: str | None = None, fragments: bool = False,
                 demangle: bool = True, index: ModuleIndex | None = None) -> None:
        # the persistent index, as a debugging session opens it (without a session's imports)
        self.index = IndexCache(IndexStore(), _progress).open(exe) if index is None else index
        self.binary = self.index.binary
        self.fragments = fragments
        self.style = LLVM if demangle else None  # llvm-symbolizer's wording, or --no-demangle
        self.base = _lowest_load(self.binary)
        self._functions: dict[str, int] | None = None
        self._symbol_order: array[int] | None = None  # function columns by address
        self._symbol_starts = array("Q")
        from unsplit.index.bolt import bat_translate, prebolt

        found: Binary | None = None
        if bat_translate.has_bat(self.binary):
            found = (prebolt.set_input(self.binary, input_path) if input_path
                     else prebolt.input_for(self.binary))
        elif input_path:
            raise UsageError(f"{exe} has no BOLT address translation: --input is for BOLTed "
                             "binaries")
        self._input = found
        self._dwarf = DwarfFrames(self.index, found, self.style)

    # -- reading input ------------------------------------------------------------------------

    def parse(self, text: str, relative: bool) -> int | None:
        """The file address one input line asks about, or None."""
        line = text.strip()
        words = line.split()
        if len(words) == 2 and words[0] == "CODE":
            line = words[1]
        value = _number(line)
        if value is not None:
            return value + self.base if relative else value
        name = os.path.basename(self.binary.path)
        for m in _MODULE_OFFSET.finditer(text):  # glibc: `./crash(+0x1119) [0x5555…]`
            if os.path.basename(m["module"]) == name:
                return self.base + int(m["offset"], 16)
        for m in _NAME_OFFSET.finditer(text):
            offset = int(m["offset"], 16)
            if os.path.basename(m["name"]) == name:
                return self.base + offset
            start = self._function_address(m["name"])
            if start is not None:
                return start + offset
        hexa = _HEX.search(text)
        if hexa is not None:
            value = int(hexa[0], 16)
            return value + self.base if relative else value
        return None

    def _function_address(self, name: str) -> int | None:
        if self._functions is None:
            self._functions = {}
            for f in self.binary.functions:
                self._functions.setdefault(f.name, f.value)
        return self._functions.get(name)

    # -- answering ----------------------------------------------------------------------------

    def answer(self, address: int, inlines: bool, offsets: bool = True) -> Answer:
        """What to print of `address`; `offsets=False` leaves the location's offset and BOLT
        facts out (only --json prints them; in BOLTed code they decode a BAT map). The lines
        and inlined frames are DWARF's, asked below: the location names the code."""
        loc = self.index.locate(address, lines=False, blocks=False, offsets=offsets)
        frames = self.dwarf_frames(address)
        if not inlines:
            frames = frames[-1:]  # the procedure at its own line (the outermost call's)
        if not frames:
            frames = [LineInfo(UNKNOWN, self._symbol_file(address), 0, 0)]
        name, start = self._outer_name(loc)
        outer = frames[-1]
        frames[-1] = LineInfo(name if name is not None else outer.function, outer.path,
                           outer.line, outer.column, outer.start_line,
                           start if name is not None else outer.start_address)
        return Answer(address, frames, loc if loc.procedure is not None else None)

    def dwarf_frames(self, address: int, inlines: bool = True) -> list[LineInfo]:
        """What DWARF says of `address` (unsplit.index.inlines.DwarfFrames)."""
        return self._dwarf.frames(address, inlines)

    def _symbol_file(self, address: int) -> str | None:
        """The file llvm-symbolizer names where no CU covers `address`: the STT_FILE of the
        local function symbol around it (none in a table without STT_FILE: .dynsym), but not
        the one BOLT files its own symbols under, which names no source."""
        if not self.binary.function_files:
            return None
        sym = self._symbol_at(address)
        file = sym.file if sym is not None and sym.local and sym.file else None
        return None if file == BOLT_PSEUDO_UNIT and self.binary.is_bolt_output else file

    def _symbol_at(self, address: int) -> FunctionSymbol | None:
        cols = self.binary.function_columns
        if self._symbol_order is None:
            self._symbol_order = array("L", sorted(range(len(cols)),
                                                   key=cols.values.__getitem__))
            self._symbol_starts = array("Q", (cols.values[k] for k in self._symbol_order))
        i = bisect_right(self._symbol_starts, address) - 1
        while i >= 0 and address - self._symbol_starts[i] < 1 << 20:
            k = self._symbol_order[i]
            if address < cols.values[k] + cols.sizes[k]:
                return cols.symbol(k)
            i -= 1
        return None

    def _outer_name(self, loc: Location) -> tuple[str | None, int | None]:
        """The name llvm-symbolizer takes from the symbol table, with moved code renamed."""
        if loc.procedure is None:
            return None, None
        name = loc.name(self.style)
        assert name is not None
        if loc.in_moved_code:
            proc = self.index.procedure_at(loc.file_address) or \
                self.index.procedures[loc.procedure]
            if self.fragments:
                name = f"{name} [{loc.fragment}]"
            return name, proc.entry
        return name, loc.fragment_start

    # -- printing -----------------------------------------------------------------------------

    def text(self, answer: Answer) -> str:
        out = []
        for f in answer.frames:
            where = f"{f.path}:{f.line}:{f.column}" if f.path else f"{UNKNOWN}:0:0"
            out.append(f"{f.function}\n{where}\n")
        return "".join(out) + "\n"

    def json(self, answer: Answer, shown: int) -> str:
        symbols = [{
            "Column": f.column, "Discriminator": 0, "FileName": f.path or "",
            "FunctionName": "" if f.function == UNKNOWN else f.function, "Line": f.line,
            "StartAddress": "" if f.start_address is None else hex(f.start_address),
            "StartFileName": "", "StartLine": f.start_line,
        } for f in answer.frames]
        loc = answer.location
        obj: dict[str, Any] = {"Address": hex(shown), "ModuleName": self.binary.path,
                               "Symbol": symbols}
        obj["procedure"] = None if loc is None else loc.name(self.style)
        obj["linkage_name"] = None if loc is None else loc.procedure
        obj["fragment"] = None if loc is None else loc.fragment
        obj["fragment_symbol"] = None if loc is None else loc.fragment_symbol
        obj["offset"] = None if loc is None else loc.offset
        return json.dumps(obj, separators=(",", ":")) + "\n"


_NUMBER = re.compile(r"^(0[xX][0-9a-fA-F]+|[0-9]+)$")
_HEX = re.compile(r"(?<![\w+])0[xX][0-9a-fA-F]+\b")
# `module+0xOFF` (sanitizers, Breakpad-style) or `symbol+0xOFF`; glibc's `module(+0xOFF)`.
_NAME_OFFSET = re.compile(r"(?P<name>[^\s()\[\]<>'\"+,;]+)\+0x(?P<offset>[0-9a-fA-F]+)\b")
_MODULE_OFFSET = re.compile(r"(?P<module>[^\s()\[\]<>'\"]+)\(\+0x(?P<offset>[0-9a-fA-F]+)\)")


def _number(word: str) -> int | None:
    if not _NUMBER.match(word):
        return None
    return int(word, 16) if word[:2].lower() == "0x" else int(word, 10)


def _lowest_load(binary: Binary) -> int:
    """Page of the lowest PT_LOAD: the module base that `MODULE+0xOFF` offsets count from."""
    vaddrs = binary.load_addresses()
    return min(vaddrs) & ~(PAGE - 1) if vaddrs else 0


def stream(symbolizer: Symbolizer, lines: IO[str], out: IO[str], *, relative: bool,
           inlines: bool, as_json: bool) -> int:
    """Answer every line of `lines` on `out`, flushing after each; returns how many. What the
    binary's DWARF could not say (damaged sections) goes to stderr, each warning once."""
    count = 0
    warned = 0
    while True:
        warnings = symbolizer.index.warnings
        for w in warnings[warned:]:
            print(f"unsplit: warning: {w}", file=sys.stderr)
        warned = len(warnings)
        text = lines.readline()
        if not text:
            return count
        address = symbolizer.parse(text, relative)
        if address is None:
            answer = Answer(0, [LineInfo(UNKNOWN, None, 0, 0)], None)
            shown = 0
        else:
            answer = symbolizer.answer(address, inlines, offsets=as_json)
            shown = address - symbolizer.base if relative else address
        out.write(symbolizer.json(answer, shown) if as_json else symbolizer.text(answer))
        out.flush()
        count += 1


def _run(args: argparse.Namespace) -> str:
    symbolizer = Symbolizer(args.exe, args.input, args.fragments, not args.no_demangle)
    try:
        stream(symbolizer, sys.stdin, sys.stdout, relative=args.relative, inlines=args.inlines,
               as_json=args.json)
    except BrokenPipeError:
        sys.stderr.close()
    except UnicodeDecodeError as e:
        raise UnsplitError(f"stdin: not text ({e.reason})") from None
    return ""


def add_cli(subparsers: Any) -> None:
    """Register `unsplit symbolize`; answers stream to stdout, the handler returns ""."""
    p = subparsers.add_parser(
        "symbolize", help="llvm-symbolizer for split code: addresses on stdin",
        description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--exe", required=True, metavar="BINARY", help="the ELF file")
    p.add_argument("--input", metavar="PRE_BOLT",
                   help="the pre-BOLT binary of a BOLTed BINARY (default: found by build-id)")
    p.add_argument("--relative", action="store_true",
                   help="addresses are offsets from the binary's lowest PT_LOAD page")
    p.add_argument("--inlines", "-i", dest="inlines", action="store_true", default=True,
                   help="print inlined frames too (the default, as llvm-symbolizer's)")
    p.add_argument("--no-inlines", dest="inlines", action="store_false",
                   help="the procedure alone, at its own line (where code is inlined, the line "
                        "of the outermost inlined call)")
    p.add_argument("--json", action="store_true",
                   help="one JSON object per address (llvm-symbolizer's keys plus procedure, "
                        "linkage_name, fragment, fragment_symbol, offset)")
    p.add_argument("--fragments", action="store_true",
                   help="name moved code `foo [cold]` rather than `foo`")
    p.add_argument("--no-demangle", action="store_true",
                   help="print linkage names (`_Z7processPKii`), as llvm-symbolizer's option")
    p.set_defaults(handler=_run)
