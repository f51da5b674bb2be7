"""A complete Breakpad symbol file of a split module, for crash servers (`unsplit breakpad`;
format: https://chromium.googlesource.com/breakpad/breakpad/+/HEAD/docs/symbol_files.md): every
fragment a ``FUNC`` named by its procedure, with the lines and inlined calls `unsplit where`
gives (unsplit.index.code_lines), ``PUBLIC`` for symbols no ``FUNC`` covers, and ``STACK CFI``
from unsplit.debug.breakpad; addresses relative to the first ``PT_LOAD``."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from unsplit.debug import breakpad
from unsplit.debug.breakpad_lines import inline_records, line_rows, word
from unsplit.elf import cfi_table
from unsplit.errors import UnsplitError
from unsplit.index.code_lines import CodeWalker
from unsplit.index.model.records import parse_fragment_name
from unsplit.index.names.demangle import GNU, shown

if TYPE_CHECKING:
    from unsplit.elf.binary import Binary
    from unsplit.index.module_index import ModuleIndex

# e_machine -> the CPU name dump_syms writes in MODULE
ARCHITECTURES = {"EM_X86_64": "x86_64", "EM_386": "x86", "EM_AARCH64": "arm64", "EM_ARM": "arm",
                 "EM_MIPS": "mips", "EM_PPC64": "ppc64", "EM_RISCV": "riscv64"}


@dataclass(frozen=True, slots=True)
class Identity:
    """What names a module to a crash server: MODULE's id, INFO CODE_ID (None without a
    build-id) and its file name."""

    module_id: str
    code_id: str | None
    name: str


def identity(binary: Binary) -> Identity:
    """The build-id as dump_syms turns it into an id; without one, dump_syms's own fallback:
    the first page of ``.text`` XORed 16 bytes at a time (Breakpad's FileID)."""
    name = os.path.basename(binary.path)
    build_id = binary.build_id
    if build_id:
        return Identity(breakpad.module_id(build_id), build_id.hex().upper(), name)
    text = binary.section_header(".text")
    if text is None or text.size == 0:
        raise UnsplitError(f"{binary.path}: no build-id and no .text to make an id of")
    page = binary.read_at(text.offset, min(text.size, 4096))
    digest = bytearray(16)
    for i in range(0, len(page), 16):
        for k, b in enumerate(page[i:i + 16]):
            digest[k] ^= b
    return Identity(breakpad.module_id(bytes(digest)), None, name)


class Writer(Protocol):
    """Where the records go: a text file, stdout, a checked wrapper of one."""

    def write(self, text: str, /) -> object: ...


@dataclass(slots=True)
class Counts:
    functions: int = 0
    lines: int = 0
    inlines: int = 0
    publics: int = 0
    stack_cfi: int = 0


def fragments(index: ModuleIndex) -> list[tuple[int, int, str]]:
    """(start, end, procedure linkage name) of every fragment with code, by address; one per
    start (the first source's). From the index's spans: no Procedure is made (a BOLTed
    libLLVM has 129k)."""
    seen: dict[int, tuple[int, int, str]] = {}
    for procedure, _, spans in index.procedure_spans():
        for start, end in spans:
            if end > start:
                seen.setdefault(start, (start, end, procedure))
    return [seen[s] for s in sorted(seen)]


def write_symbol_file(index: ModuleIndex, out: Writer, style: str | None = GNU) -> Counts:
    """Write the module's symbol file to `out`, each function's records as they are made, and
    say how many of each. The ``FILE`` and ``INLINE_ORIGIN`` records come first but are known
    only once every function is walked: the functions go through a temporary file meanwhile,
    so no record is held in memory."""
    binary = index.binary
    machine = binary.elf["e_machine"]
    arch = ARCHITECTURES.get(machine)
    if arch is None:
        raise UnsplitError(f"{binary.path}: {machine} is not an architecture Breakpad names")
    ident = identity(binary)
    base = breakpad.base_address(binary)
    counts = Counts()
    walker = CodeWalker(index)
    files: dict[str, int] = {}
    origins: dict[str, int] = {}
    frags = fragments(index)
    names: dict[str, str] = {}
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
        for start, end, procedure in frags:
            name = names.get(procedure)
            if name is None:
                # BOLT's patched original entry (`foo.org.0`: a jump to foo's new code) is foo's
                name = names[procedure] = word(shown(index.bolt_original(procedure) or procedure,
                                                     style))
            spool.write(f"FUNC {start - base:x} {end - start:x} 0 {name}\n")
            rows, runs = walker.walk(start, end)
            if rows or runs:
                inlines = inline_records(runs, 0, base, files, origins)
                lines = _no_line_said(line_rows(rows, end, base, files), start - base,
                                      end - base)
                spool.write("".join(f"{r}\n" for r in inlines + lines))
                counts.inlines += len(inlines)
                counts.lines += len(lines)
        counts.functions = len(frags)
        out.write(f"MODULE Linux {arch} {ident.module_id} {word(ident.name)}\n")
        if ident.code_id is not None:
            out.write(f"INFO CODE_ID {ident.code_id}\n")
        out.write("".join(f"FILE {n} {word(path)}\n" for path, n in files.items()))
        out.write("".join(f"INLINE_ORIGIN {n} {word(name)}\n" for name, n in origins.items()))
        spool.seek(0)
        shutil.copyfileobj(spool, out)
    ranges = [(start, end) for start, end, _ in frags]
    del frags, names
    publics = _publics(binary, ranges, base, style)
    counts.publics = len(publics)
    out.write("".join(f"{r}\n" for r in publics))
    if machine == "EM_X86_64":
        for records in breakpad.cfi_functions(binary, _cfi_starts(binary, ranges)):
            counts.stack_cfi += 1
            out.write("\n".join(records) + "\n")
    return counts


def _no_line_said(records: list[str], start: int, end: int) -> list[str]:
    """A function's line records with the bytes they leave out (code no source line describes:
    a jump BOLT made, a compiler's line 0) said as line 0 of the file beside them. Sentry's
    symbolic names no function at an address inside a ``FUNC`` that has line records but none
    for that address (measured: 31 of 2,000 moved instructions of a BOLTed Lua); with line 0 it
    names the procedure and no line, as `unsplit where` does there."""
    if not records:
        return records
    out: list[str] = []
    at = start
    file = records[0].rsplit(" ", 1)[1]
    for record in records:
        address, size, _, own = record.split(" ")
        first = int(address, 16)
        if first > at:
            out.append(f"{at:x} {first - at:x} 0 {file if out else own}")
        out.append(record)
        at, file = first + int(size, 16), own
    if at < end:
        out.append(f"{at:x} {end - at:x} 0 {file}")
    return out


def symbol_file(index: ModuleIndex, style: str | None = GNU) -> str:
    """The whole text :func:`write_symbol_file` writes (small modules, tests)."""
    out = io.StringIO()
    write_symbol_file(index, out, style)
    return out.getvalue()


def _cfi_starts(binary: Binary, ranges: list[tuple[int, int]]) -> list[int]:
    """Where the functions with CFI begin: every fragment, and every FDE no fragment holds (a
    stripped binary's functions, which no symbol names: a crash there still unwinds)."""
    starts = [s for s, _ in ranges]
    out = list(starts)
    for _, address in cfi_table.table_for(binary).fde_starts():
        i = bisect_right(starts, address) - 1
        if i < 0 or address >= ranges[i][1]:
            out.append(address)
    return sorted(set(out))


_STT_FUNC, _STT_GNU_IFUNC = 2, 10


def _publics(binary: Binary, ranges: list[tuple[int, int]], base: int, style: str | None
             ) -> list[str]:
    """``PUBLIC address 0 name`` for each defined function symbol no FUNC holds (a moved
    fragment's symbol named by its procedure)."""
    starts = [s for s, _ in ranges]
    out: dict[int, str] = {}
    table = ".symtab" if binary.has_section(".symtab") else ".dynsym"
    cols = binary.symbol_columns(table)
    values, shndx = cols.values, cols.shndx
    for i, info in enumerate(cols.infos):
        if info & 0xF not in (_STT_FUNC, _STT_GNU_IFUNC) or not shndx[i] or not values[i]:
            continue
        address = values[i]
        k = bisect_right(starts, address) - 1
        if (k >= 0 and address < ranges[k][1]) or address < base or address in out:
            continue
        symbol = cols.name(i)
        fragment = parse_fragment_name(symbol)
        out[address] = shown(fragment.base if fragment else symbol, style)
    return [f"PUBLIC {a - base:x} 0 {word(n)}" for a, n in sorted(out.items())]


def store_path(root: str, ident: Identity) -> str:
    """Where a symbol store (what symbolicator, Socorro and minidump-stackwalk read) keeps the
    file: ROOT/NAME/ID/NAME.sym."""
    return os.path.join(root, ident.name, ident.module_id, f"{ident.name}.sym")
