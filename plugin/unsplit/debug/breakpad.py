"""Breakpad ``STACK CFI`` records for a module's moved fragments: a symbol file through which LLDB
unwinds a cold fragment with the fragment's own CFI (its symbol file plan comes before its
``.eh_frame`` and assembly plans; docs/architecture.md says why LLDB needs it). Format:
https://chromium.googlesource.com/breakpad/breakpad/+/HEAD/docs/symbol_files.md; addresses
relative to the first ``PT_LOAD``, ``INFO CODE_ID`` the build-id; x86-64 only."""

from __future__ import annotations

import hashlib
import os
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from unsplit.cache_dir import cache_root
from unsplit.debug import breakpad_lines
from unsplit.elf import cfi_table
from unsplit.elf.binary import Binary
from unsplit.errors import DecodeError, Inexpressible, UnsplitError
from unsplit.formats import dwarf_expr, eh_frame
from unsplit.formats.eh_frame import DW_CFA, CfaRule, FrameDescription, Row, Rule
from unsplit.formats.leb128 import leb128

if TYPE_CHECKING:
    from unsplit.index.module_index import ModuleIndex

FORMAT_VERSION = 2  # part of the cache directory's name: a new layout never reads an old file
# (2: the moved fragments' lines and inlined calls besides their CFI)
_NAMES = ("rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
          *(f"r{i}" for i in range(8, 16)))


def module_id(build_id: bytes) -> str:
    """The MODULE line's id: the first 16 bytes as a GUID (first three fields little-endian),
    then the age 0 — what Breakpad's dump_syms writes for ELF."""
    b = (build_id + bytes(16))[:16]
    guid = b[3::-1] + b[5:3:-1] + b[7:5:-1] + b[8:]
    return guid.hex().upper() + "0"


def base_address(binary: Binary) -> int:
    """The file address Breakpad addresses are relative to: the first PT_LOAD's p_vaddr."""
    for seg in binary.elf.iter_segments():
        if seg["p_type"] == "PT_LOAD":
            return int(seg["p_vaddr"])
    return 0


def _register(number: int) -> str:
    if 0 <= number < len(_NAMES):
        return "$" + _NAMES[number]
    raise Inexpressible(f"register {dwarf_expr.register_name(number)}")


def _postfix(expr: bytes, initial: tuple[str, ...] = ()) -> str:
    """A DWARF expression as a Breakpad postfix expression: the operations LLDB's postfix
    parser has (+ - ^, numbers, registers), evaluated symbolically so that the result is one
    expression whatever the stack held (`initial`: the CFA, for register rules)."""
    stack = list(initial)
    try:
        ops = dwarf_expr.operations(expr)
    except DecodeError as e:
        raise Inexpressible(str(e)) from None

    def pop() -> str:
        if not stack:
            raise Inexpressible("a DWARF expression pops an empty stack")
        return stack.pop()

    for op, a, b in ops:
        if 0x70 <= op <= 0x8F:  # DW_OP_breg0..31
            stack.append(f"{_register(op - 0x70)} {a} +")
        elif op == 0x92:  # DW_OP_bregx
            stack.append(f"{_register(a)} {b} +")
        elif 0x30 <= op <= 0x4F:  # DW_OP_lit0..31
            stack.append(str(op - 0x30))
        elif op in (0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11):
            stack.append(str(a))  # DW_OP_const1u … const8s, constu, consts
        elif op == 0x23:  # DW_OP_plus_uconst
            stack.append(f"{pop()} {a} +")
        elif op == 0x06:  # DW_OP_deref
            stack.append(f"{pop()} ^")
        elif op in (0x22, 0x1C):  # DW_OP_plus, DW_OP_minus
            right, left = pop(), pop()
            stack.append(f"{left} {right} {'+' if op == 0x22 else '-'}")
        else:
            raise Inexpressible(f"DWARF operation {op:#04x}")
    if not stack:
        raise Inexpressible("an empty DWARF expression")
    return stack[-1]


def _cfa(rule: CfaRule) -> str:
    if rule.register is None:
        return _postfix(rule.expr)
    return f"{_register(rule.register)} {rule.offset} +"


def _rule(register: int, rule: Rule) -> str | None:
    """The right-hand side for one register (None: nothing to say, "same" at the start)."""
    kind = rule.kind
    if kind == "offset":
        return f".cfa {rule.value} + ^"
    if kind == "val_offset":
        return f".cfa {rule.value} +"
    if kind == "register":
        return _register(rule.value)
    if kind == "same":
        return _register(register)
    if kind == "expression":  # the register is saved at the address it computes (CFA pushed)
        return f"{_postfix(rule.expr, ('.cfa',))} ^"
    if kind == "val_expression":
        return _postfix(rule.expr, (".cfa",))
    raise Inexpressible(f"{kind} rule for {dwarf_expr.register_name(register)}")


# Pure memos (a rule's text depends on the rule alone, whatever the file or session), shared by
# the process: the rules of a big binary's CFI are a few hundred distinct values.
_SAID: dict[tuple[int, Rule, bool], str | None] = {}  # one register's rule, said once
_CFAS: dict[CfaRule, str] = {}


def _said(reg: int, rule: Rule, is_return: bool) -> str | None:
    key = (reg, rule, is_return)
    if key in _SAID:
        return _SAID[key]
    rhs = _rule(reg, rule)
    said = _SAID[key] = None if rhs is None else \
        f"{'.ra' if is_return else _register(reg)}: {rhs}"
    return said


def _rules(row: Row, previous: Row | None, return_register: int) -> str:
    cfa = _CFAS.get(row.cfa)
    if cfa is None:
        cfa = _CFAS[row.cfa] = f".cfa: {_cfa(row.cfa)}"
    parts = [cfa]
    for reg in sorted(row.rules):
        said = _said(reg, row.rules[reg], reg == return_register)
        if said is not None:
            parts.append(said)
    if previous is not None:  # LLDB copies the previous row: say "same" for a dropped rule
        for reg in sorted(set(previous.rules) - set(row.rules)):
            if reg == return_register:
                raise Inexpressible("the return address rule is dropped")
            parts.append(f"{_register(reg)}: {_register(reg)}")
    return " ".join(parts)


def stack_cfi(fds: list[FrameDescription], start: int, end: int, base: int) -> list[str]:
    """The ``STACK CFI INIT`` record and its ``STACK CFI`` rows for LLDB's function
    [start, end): the rows of the FDEs `fds` inside it, in address order."""
    return _lines(_rows_rules(fds, start, end), start, end, base)


def _lines(rows: list[tuple[int, str]], start: int, end: int, base: int) -> list[str]:
    """The records of (row address, rules) rows: the first is the function's INIT."""
    lines = [f"STACK CFI INIT {start - base:x} {end - start:x} {rows[0][1]}"]
    lines += [f"STACK CFI {address - base:x} {rules}" for address, rules in rows[1:]]
    return lines


def _rows_rules(fds: list[FrameDescription], start: int, end: int) -> list[tuple[int, str]]:
    """(address, rules) of each row of the FDEs `fds` in LLDB's function [start, end)."""
    rows: list[Row] = []
    return_register = None
    for fd in fds:
        if fd.signal_frame:
            raise Inexpressible("a signal frame")
        if return_register not in (None, fd.return_register):
            raise Inexpressible("FDEs with different return address registers")
        return_register = fd.return_register
        at_start = fd.row_at(start) if fd.start < start else None  # in effect at the start
        if at_start is not None:
            rows.append(at_start)
        rows += [r for r in fd.rows if max(fd.start, start) <= r.address < min(fd.end, end)
                 and r is not at_start]
    if return_register is None or not rows:
        raise Inexpressible("no FDE rows")
    if return_register not in rows[0].rules:
        raise Inexpressible("no rule for the return address")
    out: list[tuple[int, str]] = []
    previous = None
    for row in rows:
        out.append((max(row.address, start), _rules(row, previous, return_register)))
        previous = row
    return out


class _Records:
    """The records of the functions that are one whole FDE each (BOLT's and the compilers'
    fragments): FDEs with the same CIE and instruction bytes have the same rows at the same
    offsets from their start (set_loc aside), so each distinct FDE body is decoded and
    translated once (a BOLTed libLLVM: 35k distinct bodies for 89k fragments)."""

    def __init__(self, table: cfi_table.CfiTable) -> None:
        self.table = table
        self.memo: dict[tuple[str, int, bytes], list[tuple[int, str]] | None] = {}
        self.cies: dict[tuple[str, int], _CieState | None] = {}
        self.sections: dict[str, cfi_table.CfiSection] = {}

    def whole_fde(self, name: str, offset: int, start: int, end: int, base: int
                  ) -> list[str] | None:
        """The records of the function [start, end), which is the FDE at `offset` of section
        `name`; None when the memo cannot say (set_loc, a rule Breakpad cannot say, CFI that
        does not decode): the general path (stack_cfi) decides those, with their errors."""
        section = self.sections.get(name)
        if section is None:
            section = self.sections[name] = self.table.section_named(name)
        reader = section.reader
        head = section.head(offset)
        if head is None:
            return None
        cie_offset, cie, _, _, body, body_end = head
        key = (name, cie_offset, reader.data[body:body_end])
        if key in self.memo:
            relative = self.memo[key]
        else:
            if (name, cie_offset) not in self.cies:
                self.cies[name, cie_offset] = _cie_state(cie)
            relative = self.memo[key] = _relative(reader, cie, self.cies[name, cie_offset],
                                                  body, body_end)
        rows = [(a + start, r) for a, r in relative or () if a < end - start]
        return _lines(rows, start, end, base) if rows else None


class _Unusual(Exception):
    """An instruction or rule the direct translation leaves to the general path."""


def _direct(data: bytes, i: int, end: int, cie: eh_frame.Cie,
            initial: _CieState) -> list[tuple[int, str]]:
    """The rows of the call frame instructions data[i:end] as (offset from the start, rules),
    straight from the bytes: the shapes compilers and BOLT emit (CFA = register + offset;
    registers saved at CFA + n, in a register, or unchanged; remember/restore state), in the
    words _rows_rules would say them; anything else raises _Unusual (the general path decides).
    tests/unit/debug/test_breakpad_direct.py holds the two to one table."""
    caf, daf, ra = cie.code_alignment_factor, cie.data_alignment_factor, \
        cie.return_address_register
    names = _SAID_NAMES
    cfa, regs = initial[0], dict(initial[1])
    stack: list[_CieState] = []
    rows: list[tuple[int, tuple[int, int] | None, dict[int, str]]] = []
    pc = 0

    def uleb(i: int) -> tuple[int, int]:
        return leb128(data, i, ".eh_frame", False)

    def sleb(i: int) -> tuple[int, int]:
        return leb128(data, i, ".eh_frame", True)

    def said(reg: int, rhs: str) -> str:
        if reg >= len(names) and reg != ra:
            raise _Unusual
        return f"{'.ra' if reg == ra else names[reg]}: {rhs}"

    while i < end:
        op = data[i]
        i += 1
        high = op & 0xC0
        if high == 0x40:  # advance_loc
            rows.append((pc, cfa, dict(regs)))
            pc += (op & 0x3F) * caf
        elif high == 0x80:  # offset
            n, i = uleb(i)
            regs[op & 0x3F] = said(op & 0x3F, f".cfa {n * daf} + ^")
        elif high == 0xC0:  # restore
            reg = op & 0x3F
            if reg in initial[1]:
                regs[reg] = initial[1][reg]
            else:
                regs.pop(reg, None)
        elif op == 0x00:  # nop
            pass
        elif op in (0x02, 0x03, 0x04):  # advance_loc1, 2, 4
            size = 1 << (op - 2)
            if i + size > end:
                raise _Unusual
            rows.append((pc, cfa, dict(regs)))
            pc += int.from_bytes(data[i:i + size], "little") * caf
            i += size
        elif op == 0x0C:  # def_cfa
            reg, i = uleb(i)
            off, i = uleb(i)
            cfa = (reg, off)
        elif op == 0x0D:  # def_cfa_register
            reg, i = uleb(i)
            cfa = (reg, cfa[1] if cfa is not None else 0)
        elif op == 0x0E:  # def_cfa_offset
            off, i = uleb(i)
            if cfa is None:
                raise _Unusual
            cfa = (cfa[0], off)
        elif op == 0x05:  # offset_extended
            reg, i = uleb(i)
            n, i = uleb(i)
            regs[reg] = said(reg, f".cfa {n * daf} + ^")
        elif op == 0x11:  # offset_extended_sf
            reg, i = uleb(i)
            n, i = sleb(i)
            regs[reg] = said(reg, f".cfa {n * daf} + ^")
        elif op == 0x08:  # same_value
            reg, i = uleb(i)
            if reg >= len(names):
                raise _Unusual
            regs[reg] = said(reg, names[reg])
        elif op == 0x09:  # register
            reg, i = uleb(i)
            other, i = uleb(i)
            if other >= len(names):
                raise _Unusual
            regs[reg] = said(reg, names[other])
        elif op == 0x0A:  # remember_state
            stack.append((cfa, dict(regs)))
        elif op == 0x0B:  # restore_state
            if not stack:
                raise _Unusual
            cfa, regs = stack.pop()
        elif op == 0x2E:  # GNU_args_size
            _, i = uleb(i)
        else:
            raise _Unusual
        if i > end:
            raise _Unusual
    rows.append((pc, cfa, regs))
    kept: dict[int, _CieState] = {}
    for pc, cfa, regs in rows:
        kept[pc] = (cfa, regs)
    out: list[tuple[int, str]] = []
    previous: dict[int, str] | None = None
    for pc in sorted(kept):
        cfa, regs = kept[pc]
        if cfa is None or cfa[0] >= len(names):
            raise _Unusual
        parts = [f".cfa: {names[cfa[0]]} {cfa[1]} +"]
        parts += [regs[r] for r in sorted(regs)]
        if previous is None:
            if ra not in regs:
                raise _Unusual
        else:
            for reg in sorted(set(previous) - set(regs)):
                if reg == ra or reg >= len(names):
                    raise _Unusual
                parts.append(f"{names[reg]}: {names[reg]}")
        out.append((pc, " ".join(parts)))
        previous = regs
    return out


_SAID_NAMES = tuple("$" + n for n in _NAMES)
_CieState = tuple[tuple[int, int] | None, dict[int, str]]


def _relative(reader: eh_frame.EntryReader, cie: eh_frame.Cie, initial: _CieState | None, body: int,
              end: int) -> list[tuple[int, str]] | None:
    """An FDE body's (offset from the FDE's start, rules) rows, translated directly when it
    can be (_direct), else as the general path would; None where they are not a function of
    the body alone (set_loc) or cannot be said."""
    if b"S" not in cie.augmentation and cie.code_alignment_factor > 0:
        if initial is not None:
            try:
                return _direct(reader.data, body, end, cie, initial)
            except (_Unusual, DecodeError):
                pass
    return _general(reader, cie, body, end)


def _cie_state(cie: eh_frame.Cie) -> _CieState | None:
    """The state a CIE's initial instructions leave, in _direct's terms (None: one it does
    not take, which leaves the CIE's FDEs to the general path)."""
    try:
        state = eh_frame.initial_state(cie)
        if state.cfa.register is None or state.cfa.register >= len(_NAMES):
            return None
        regs = {}
        for reg, rule in state.rules.items():
            rhs = _rule(reg, rule)
            if rhs is None or (reg >= len(_NAMES) and reg != cie.return_address_register):
                return None
            lhs = ".ra" if reg == cie.return_address_register else _SAID_NAMES[reg]
            regs[reg] = f"{lhs}: {rhs}"
    except UnsplitError:
        return None
    return (state.cfa.register, state.cfa.offset), regs


def _general(reader: eh_frame.EntryReader, cie: eh_frame.Cie, body: int, end: int
             ) -> list[tuple[int, str]] | None:
    """An FDE body's (offset from the FDE's start, rules) rows; None where they are not a
    function of the body alone (set_loc) or cannot be said."""
    try:
        instructions = reader.instructions(body, end, cie.fde_encoding)
        if any(i.opcode == DW_CFA.set_loc for i in instructions):
            return None
        rows = eh_frame.decode_rows(cie, eh_frame.Fde(cie, 0, 0, instructions), 0)
        if b"S" in cie.augmentation:
            return None
        fd = FrameDescription(reader.section, 0, 0, 1 << 62, cie.return_address_register,
                              False, tuple(rows))
        return _rows_rules([fd], 0, 1 << 62)
    except UnsplitError:
        return None


def _function_ranges(binary: Binary, starts: Iterable[int], table: cfi_table.CfiTable
                     ) -> list[tuple[int, int, tuple[str, int, int, int] | None]]:
    """LLDB's function around each start: the sized function symbol that holds it, else the
    FDE that covers it (LLDB makes a symbol of an FDE no symbol covers); (start, end, the
    FDE's CfiTable.head_at when the range is that FDE's)."""
    symbols = sorted((f.value, f.value + f.size) for f in binary.functions if f.size)
    sym_starts = [s for s, _ in symbols]
    ranges: dict[tuple[int, int], tuple[str, int, int, int] | None] = {}
    for start in starts:
        i = bisect_right(sym_starts, start) - 1
        if i >= 0 and start < symbols[i][1]:
            ranges.setdefault(symbols[i], None)
            continue
        head = table.head_at(start)
        if head is not None:
            ranges[head[2], head[3]] = head
    return [(start, end, head) for (start, end), head in sorted(ranges.items())]


def _fdes_in(table: cfi_table.CfiTable, fde_starts: list[int], start: int, end: int
             ) -> list[FrameDescription]:
    out: list[FrameDescription] = []
    first = table.fde_at(start)  # one that begins before `start` and covers it
    if first is not None:
        out.append(first)
    for s in fde_starts[bisect_left(fde_starts, start + 1):bisect_left(fde_starts, end)]:
        fd = table.fde_at(s)
        if fd is not None and fd not in out:
            out.append(fd)
    return out


def symbol_file(binary: Binary, starts: Iterable[int], uuid: str | None = None,
                line_records: Sequence[str] = ()) -> str | None:
    """The Breakpad text for LLDB's functions that hold the file addresses `starts` (the moved
    fragments' starts), or None when there is none to write (no build-id and no `uuid`, not
    x86-64, or no CFI there and no `lines`). `uuid` is the debugger's own UUID of the module
    (LLDB's ``SBModule.GetUUIDString()``), which matches where the build-id cannot (a file with
    none). A function whose rules Breakpad cannot say is left out (LLDB keeps its own plan
    there). `line_records`: the moved fragments' lines and inlined calls (debug.breakpad_lines),
    written before the CFI, as Breakpad's files order them."""
    if binary.elf["e_machine"] != "EM_X86_64":
        return None
    code_id = _code_id(binary, uuid)
    if not code_id:
        return None
    records = cfi_records(binary, starts)
    if not records and not line_records:
        return None
    name = os.path.basename(binary.path)
    ident = module_id(bytes.fromhex(code_id) if len(code_id) % 2 == 0 else b"")
    return "\n".join([f"MODULE Linux x86_64 {ident} {name}", f"INFO CODE_ID {code_id}",
                      generator_line(binary), *line_records, *records]) + "\n"


def cfi_records(binary: Binary, starts: Iterable[int]) -> list[str]:
    """The ``STACK CFI INIT``/``STACK CFI`` records of LLDB's functions that hold the file
    addresses `starts`, in address order ([] unless x86-64); a function whose rules Breakpad
    cannot say is left out."""
    return [record for records in cfi_functions(binary, starts) for record in records]


def cfi_functions(binary: Binary, starts: Iterable[int]) -> Iterator[list[str]]:
    """:func:`cfi_records`, one function's records at a time, each made when asked for (a
    writer keeps none of them: a BOLTed libLLVM's are 136 MB of text)."""
    if binary.elf["e_machine"] != "EM_X86_64":
        return
    table = cfi_table.table_for(binary)
    base = base_address(binary)
    fde_starts = sorted(a for _, a in table.fde_starts())
    whole = _Records(table)
    for start, end, head in _function_ranges(binary, starts, table):
        try:
            head = head or table.head_at(start)
            lines = None
            if head is not None and head[2:] == (start, end) and \
                    bisect_left(fde_starts, start + 1) == bisect_left(fde_starts, end):
                lines = whole.whole_fde(head[0], head[1], start, end, base)
            lines = lines or stack_cfi(_fdes_in(table, fde_starts, start, end), start, end,
                                       base)
        except UnsplitError:  # Inexpressible, or CFI that does not decode
            continue
        yield lines


def _code_id(binary: Binary, uuid: str | None) -> str:
    """The INFO CODE_ID: LLDB's UUID of the module without its dashes, else the build-id."""
    build_id = binary.build_id
    return (uuid or "").replace("-", "").upper() or (build_id.hex().upper() if build_id
                                                     else "")


GENERATOR = f"INFO GENERATOR unsplit lldb-cfi-v{FORMAT_VERSION}"


def generator_line(binary: Binary) -> str:
    """The record that says which file the text was made from (LLDB reads only the first
    INFO record, CODE_ID, and skips this one): a later session that finds the text in the
    cache knows from it, without decoding any CFI, whether it still holds."""
    return f"{GENERATOR} {fingerprint(binary.path)}"


# Pure memo: a file's digest by (real path, size, mtime), which change when its bytes do.
_FINGERPRINTS: dict[tuple[str, int, int], str] = {}


def fingerprint(path: str) -> str:
    """A digest of the file's bytes (BOLT outputs of one input share a build-id)."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    found = _FINGERPRINTS.get(key)
    if found is None:
        with open(path, "rb") as f:
            found = _FINGERPRINTS[key] = hashlib.file_digest(f, "sha1").hexdigest()
    return found


def made_from(text_path: str, binary: Binary) -> bool:
    """Was the symbol file at `text_path` made from `binary`, as it is now?"""
    try:
        with open(text_path, encoding="utf-8", errors="replace") as f:
            head = [f.readline().rstrip("\n") for _ in range(3)]
    except OSError:
        return False
    return head[2] == generator_line(binary)


def cache_dir() -> str:
    """Where generated files live, in the layout LLDB searches (``.build-id/xx/rest.debug``):
    ``lldb-cfi-vN`` under the cache root (unsplit.cache_dir.cache_root: ``$UNSPLIT_CACHE``
    or ``$XDG_CACHE_HOME/unsplit``, ``~/.cache/unsplit``)."""
    return os.path.join(cache_root(), f"lldb-cfi-v{FORMAT_VERSION}")


def cache_path(build_id: bytes, root: str | None = None) -> str:
    hexid = build_id.hex()
    return os.path.join(root or cache_dir(), ".build-id", hexid[:2], hexid[2:] + ".debug")


def write(path: str, text: str) -> None:
    """Write atomically (another debugger may be reading the same cache)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def for_index(index: ModuleIndex, uuid: str | None = None, max_line_code: int | None = None
              ) -> str | None:
    """The symbol file of a module: its moved fragments' CFI, and their lines and inlined
    calls unless (`max_line_code`) they hold more bytes than that (None: nothing to give)."""
    moved = index.moved_starts()
    if not moved:
        return None
    lines = breakpad_lines.line_records(index, base_address(index.binary), max_line_code)
    return symbol_file(index.binary, moved, uuid, lines)


def save(index: ModuleIndex, text: str, uuid: str | None = None, root: str | None = None
         ) -> tuple[str, bool]:
    """Put `text` where LLDB looks for the module's symbol file; (path, whether it was
    written: False when the same text is there already).

    Two BOLT outputs of one input keep its build-id: the later one's text replaces the
    earlier's here (the plugin checks the text of every module LLDB loads, and leaves BOLT
    outputs out: :func:`alone_under_build_id`)."""
    ident = index.binary.build_id or bytes.fromhex((uuid or "").replace("-", "") or "00")
    path = cache_path(ident, root)
    if _same(path, text):
        return path, False
    write(path, text)
    return path, True


def alone_under_build_id(binary: Binary) -> bool:
    """Whether a cache entry by build-id can stand for `binary` alone. Not for a BOLT output
    (``.note.bolt_info``): BOLT gives every output of one input the same build-id, so LLDB
    would load another output's text, and LLDB 19 goes on unwinding with the first symbol
    file it read, whatever replaces it later (measured: bolt-reverse after bolt-randomN)."""
    return not binary.is_bolt_output


def kept_path(binary: Binary, uuid: str | None = None, root: str | None = None) -> str:
    """Where the text made from this very file (a digest of its bytes) for LLDB's UUID `uuid`
    is kept between sessions (`unsplit lldb-cfi` puts it there too): a BOLT output, never
    cached by build-id, is not made again in every session (a BOLTed libLLVM: 76 MB of text,
    seconds). A path per content, as :func:`pinned`: one file and UUID make one text."""
    tag = hashlib.sha1(_code_id(binary, uuid).encode()).hexdigest()[:8]
    return os.path.join(root or cache_dir(), "by-file", f"{fingerprint(binary.path)}-{tag}.sym")


def pinned(text: str, root: str | None = None) -> str:
    """A copy of `text` at a path named by its content, for ``target symbols add``: LLDB
    parses a symbol file once per path, so a changed text needs a path of its own."""
    path = os.path.join(root or cache_dir(), "by-content",
                        hashlib.sha256(text.encode()).hexdigest()[:32] + ".sym")
    if not _same(path, text):
        write(path, text)
    return path


def _same(path: str, text: str) -> bool:
    """Whether the file at `path` holds `text` (it may hold anything: the debug file the plugin
    put at the same build-id path, a damaged file)."""
    try:
        with open(path, "rb") as f:
            return f.read() == text.encode()
    except OSError:
        return False
