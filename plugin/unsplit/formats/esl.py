"""`.opt_table` TLV streams and Extended Source Location (ESL) line programs
(shared/specs/split-info-and-esl.md §2-§3). A program's pc is a logical offset (§1):
:func:`map_rows` turns rows into addresses through the procedure's logical ranges. An error
inside one program returns the rows so far with it (the procedure's lines partial); an error in
the TLV structure raises DecodeError. :class:`EslWriter`, :func:`encode_rows` and
:func:`encode_opt_table` are the inverse."""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from unsplit.errors import DecodeError, EslError
from unsplit.formats import section_ids
from unsplit.formats.leb128 import encode_sleb128, encode_uleb128, sleb128, uleb128

SECTION = section_ids.ESL_SECTION

# TLV tags (§2)
TAG_END = 0
TAG_FILES = 1
TAG_PROC = 2
TAG_ESL = 3

# Command opcodes and flags (§3)
ADD_PC = 1
ADD_LINE = 2
SET_COL = 3
SET_FILE = 4
SET_DATA_MODE = 5
ADD_PC_LINE = 6
ADD_PC_LINE_COL = 7
MARK = 0x80
RESUME = 0x40
ESCAPE = 0x80  # a data byte whose high nibble is 1000b (-8) and low nibble 0

_OPERANDS = {  # "s" SLEB, "u" ULEB
    ADD_PC: "s",
    ADD_LINE: "s",
    SET_COL: "u",
    SET_FILE: "u",
    SET_DATA_MODE: "u",
    ADD_PC_LINE: "ss",
    ADD_PC_LINE_COL: "ssu",
}


@dataclass(frozen=True, slots=True)
class EslRow:
    """A row in logical order: code from logical offset `pc` on is file:line:column."""

    pc: int
    file: int  # 1-based index into the procedure's file table
    line: int
    column: int = 0


@dataclass(frozen=True, slots=True)
class OptProc:
    """One PROC of the Optimization Table with what followed it up to its END."""

    entry: int
    file: int
    start_line: int
    min_insn_length: int
    files: tuple[str, ...]  # the FILES table in force at the PROC
    esl: bytes | None  # None: no ESL entry (a warning, §2)
    offset: int = field(default=0, compare=False)  # of the PROC entry in the section
    esl_offset: int = field(default=0, compare=False)  # of the ESL value in the section


@dataclass(frozen=True, slots=True)
class EslResult:
    """Rows of one program; `error` set when decoding stopped early (rows kept: partial)."""

    rows: tuple[EslRow, ...]
    error: EslError | None = None

    @property
    def partial(self) -> bool:
        return self.error is not None


# --- TLV stream (§2) ---------------------------------------------------------------------------


def decode_opt_table(data: bytes, section: str = SECTION) -> list[OptProc]:
    """Every PROC of an `.opt_table`, skipping entries whose tag is unknown."""
    procs: list[OptProc] = []
    files: tuple[str, ...] = ()
    cur: dict[str, int] | None = None  # the open PROC's fields
    esl: tuple[bytes, int] | None = None
    pos = 0
    while pos < len(data):
        entry_at = pos
        tag, pos = uleb128(data, pos, section)
        length, pos = uleb128(data, pos, section)
        if length > len(data) - pos:
            raise DecodeError(
                section,
                entry_at,
                f"entry of tag {tag} needs {length} bytes, {len(data) - pos} left",
            )
        value = data[pos : pos + length]
        value_at = pos
        pos += length
        if tag == TAG_FILES:
            files = _decode_files(value, value_at, section)
        elif tag == TAG_PROC:
            if cur is not None:
                raise DecodeError(section, entry_at, "PROC before the END of the previous one")
            cur = _decode_proc(value, value_at, section)
            cur["offset"] = entry_at
            esl = None
        elif tag == TAG_ESL:
            if cur is None:
                raise DecodeError(section, entry_at, "ESL outside a PROC")
            if esl is None:  # readers stop at the first ESL entry (seed 1.4)
                esl = (value, value_at)
        elif tag == TAG_END:
            if cur is None:
                raise DecodeError(section, entry_at, "END outside a PROC")
            procs.append(
                OptProc(
                    cur["entry"],
                    cur["file"],
                    cur["line"],
                    cur["unit"],
                    files,
                    None if esl is None else esl[0],
                    cur["offset"],
                    0 if esl is None else esl[1],
                )
            )
            cur = None
        # Any other tag: skipped by its length, the point of TLV.
    if cur is not None:
        raise DecodeError(section, cur["offset"], "PROC not closed by END")
    return procs


def _decode_files(value: bytes, base: int, section: str) -> tuple[str, ...]:
    count, pos = uleb128(value, 0, section)
    out = []
    for _ in range(count):
        nul = value.find(b"\0", pos)
        if nul < 0:
            raise DecodeError(section, base + pos, "file name not NUL-terminated")
        try:
            out.append(value[pos:nul].decode("utf-8"))
        except UnicodeDecodeError:
            raise DecodeError(section, base + pos, "file name is not UTF-8") from None
        pos = nul + 1
    return tuple(out)


def _decode_proc(value: bytes, base: int, section: str) -> dict[str, int]:
    if len(value) < 8:
        raise DecodeError(section, base, f"PROC value of {len(value)} bytes, expected >= 8")
    (entry,) = struct.unpack_from("<Q", value, 0)
    try:
        file, pos = uleb128(value, 8, section)
        line, pos = uleb128(value, pos, section)
        unit, pos = uleb128(value, pos, section)
    except DecodeError as e:  # offsets inside the value -> offsets in the section
        raise DecodeError(section, base + e.offset, e.message) from None
    if unit == 0:
        raise DecodeError(section, base + 8, "min_insn_length 0")
    # Bytes after min_insn_length are left for later versions: ignored.
    return {"entry": entry, "file": file, "line": line, "unit": unit}


# --- the ESL program (§3) ---------------------------------------------------------------------


def run_program(
    proc: OptProc, logical_size: int | None = None, section: str = SECTION
) -> EslResult:
    """Rows of `proc`'s ESL program; never raises for errors inside the program (§3)."""
    if proc.esl is None:
        return EslResult(())
    rows: list[EslRow] = []
    try:
        _interpret(proc, logical_size, section, rows)
    except EslError as e:
        return EslResult(tuple(rows), e)
    return EslResult(tuple(rows))


def _interpret(proc: OptProc, logical_size: int | None, section: str, rows: list[EslRow]) -> None:
    prog = proc.esl or b""
    unit = proc.min_insn_length
    nfiles = len(proc.files)
    pc, line, file, column = 0, proc.start_line, proc.file, 0
    mode, prev_mode = 1, 1
    pos = 0

    def fail(at: int, msg: str) -> EslError:
        return EslError(section, proc.entry, proc.esl_offset, at, msg)

    def leb(signed: bool) -> int:
        nonlocal pos
        try:
            v, pos = (sleb128 if signed else uleb128)(prog, pos, section)
        except DecodeError as e:
            raise fail(e.offset, e.message) from None
        return v

    def set_pc(v: int, at: int) -> None:
        nonlocal pc
        if v < 0:
            raise fail(at, f"pc goes negative ({v})")
        if logical_size is not None and v > logical_size:
            raise fail(at, f"pc {v:#x} past the logical size {logical_size:#x}")
        pc = v

    def set_line(v: int, at: int) -> None:
        nonlocal line
        if v < 1:
            raise fail(at, f"line {v} below 1")
        line = v

    def emit(at: int) -> None:
        if not 1 <= file <= nfiles:
            raise fail(at, f"file {file} outside the file table (1..{nfiles})")
        if line < 1:
            raise fail(at, f"line {line} below 1")
        rows.append(EslRow(pc, file, line, column))

    while pos < len(prog):
        at = pos
        byte = prog[pos]
        pos += 1
        if mode in (1, 2):
            delta = (byte >> 4) - 16 if byte & 0x80 else byte >> 4
            if delta == -8:
                if byte & 0x0F:
                    raise fail(at, f"ESCAPE with low nibble {byte & 0x0F} (must be 0)")
                prev_mode, mode = mode, 0
                continue
            set_line(line + delta, at)
            if mode == 2:
                column = leb(False)
            emit(at)
            set_pc(pc + ((byte & 0x0F) + 1) * unit, at)
            continue
        # Command mode: one opcode byte, flags in its top bits, then LEB operands.
        opcode = byte & 0x3F
        kinds = _OPERANDS.get(opcode)
        if kinds is None:
            raise fail(at, f"unknown command opcode {opcode}")
        ops = [leb(k == "s") for k in kinds]
        if opcode in (ADD_PC, ADD_PC_LINE, ADD_PC_LINE_COL):
            set_pc(pc + ops[0] * unit, at)
        if opcode == ADD_LINE:
            set_line(line + ops[0], at)
        elif opcode in (ADD_PC_LINE, ADD_PC_LINE_COL):
            set_line(line + ops[1], at)
        if opcode == SET_COL:
            column = ops[0]
        elif opcode == ADD_PC_LINE_COL:
            column = ops[2]
        elif opcode == SET_FILE:
            if not 1 <= ops[0] <= nfiles:
                raise fail(at, f"file {ops[0]} outside the file table (1..{nfiles})")
            file = ops[0]
        elif opcode == SET_DATA_MODE:
            if ops[0] not in (1, 2):
                raise fail(at, f"data mode {ops[0]} (only 1 and 2 exist)")
            prev_mode = ops[0]
        if byte & MARK:
            emit(at)
        if byte & RESUME:
            mode = prev_mode


# --- logical rows -> addresses -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AddressRow:
    """An ESL row placed at an address (file still a number into the procedure's table)."""

    address: int
    row: EslRow


def map_rows(
    rows: Sequence[EslRow],
    ranges: Sequence[tuple[int, int, int]],
    branches: Sequence[tuple[int, int, int]] = (),
) -> list[AddressRow]:
    """Place logical rows at addresses, in address order (stable: the later row wins).

    `ranges` are (start, end, logical_start) in logical order. A row covers logical code up to
    the next row; where that code continues in another range, the row is repeated at that
    range's start, else an address look-up there would find an unrelated row. Likewise each
    branch in `branches` (branch_addr, branch_end, logical offset) gets the row of the moved
    code it stands for.
    """
    if not rows:
        return []
    order = sorted(range(len(rows)), key=lambda i: rows[i].pc)  # stable: ties keep order
    pcs = [rows[i].pc for i in order]
    lstarts = [r[2] for r in ranges]
    out: list[tuple[int, int, AddressRow]] = []  # (address, sequence, row)
    seq = 0

    def put(address: int, row: EslRow) -> None:
        nonlocal seq
        out.append((address, seq, AddressRow(address, row)))
        seq += 1

    def address_of(pc: int) -> int | None:
        i = bisect.bisect_right(lstarts, pc) - 1
        if i < 0:
            return None
        start, end, lstart = ranges[i]
        return start + pc - lstart if pc - lstart < end - start else None

    for k, i in enumerate(order):
        row = rows[i]
        addr = address_of(row.pc)
        if addr is not None:
            put(addr, row)
        # Repeat only for the last of equal-pc rows: the one a look-up finds.
        if k + 1 < len(order) and pcs[k + 1] == row.pc:
            continue
        next_pc = pcs[k + 1] if k + 1 < len(order) else None
        for start, end, lstart in ranges:
            if row.pc < lstart and (next_pc is None or lstart < next_pc) and end > start:
                put(start, row)
    for lo, _hi, logical in branches:
        k = bisect.bisect_right(pcs, logical) - 1
        if k >= 0:
            put(lo, rows[order[k]])
    out.sort(key=lambda t: (t[0], t[1]))
    return [t[2] for t in out]


# --- encoders (the inverse) --------------------------------------------------------------------


class EslWriter:
    """Assembles an ESL program byte by byte, tracking the mode as a reader would."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.mode = 1  # 0 is command mode
        self.prev_mode = 1

    def data(self, line_delta: int, pc_units: int, column: int | None = None) -> EslWriter:
        """One data-mode row: line += line_delta, row, pc += pc_units (1..16) code units."""
        if self.mode == 0:
            raise ValueError("data byte in command mode")
        if not -7 <= line_delta <= 7 or not 1 <= pc_units <= 16:
            raise ValueError(f"data byte out of range: line {line_delta}, pc {pc_units}")
        if (self.mode == 2) != (column is not None):
            raise ValueError(f"data mode {self.mode}: column {column!r}")
        self.out.append(((line_delta & 0x0F) << 4) | (pc_units - 1))
        if column is not None:
            self.out += encode_uleb128(column)
        return self

    def escape(self) -> EslWriter:
        if self.mode == 0:
            raise ValueError("ESCAPE in command mode")
        self.out.append(ESCAPE)
        self.prev_mode, self.mode = self.mode, 0
        return self

    def command(
        self, opcode: int, *operands: int, mark: bool = False, resume: bool = False
    ) -> EslWriter:
        if self.mode != 0:
            raise ValueError("command in data mode")
        kinds = _OPERANDS[opcode]
        if len(kinds) != len(operands):
            raise ValueError(f"opcode {opcode} takes {len(kinds)} operands")
        self.out.append(opcode | (MARK if mark else 0) | (RESUME if resume else 0))
        for kind, v in zip(kinds, operands, strict=True):
            self.out += encode_sleb128(v) if kind == "s" else encode_uleb128(v)
        if opcode == SET_DATA_MODE:
            self.prev_mode = operands[0]
        if resume:
            self.mode = self.prev_mode
        return self

    def getvalue(self) -> bytes:
        return bytes(self.out)


def encode_rows(
    rows: Iterable[EslRow], start_line: int, file: int, min_insn_length: int = 1
) -> bytes:
    """A program that a reader turns back into exactly `rows` (pcs in code units' multiples).

    Data bytes where the row fits one (the next row 1..16 units on, a small line delta, mode 2
    for a column change), else command mode with MARK; the last row is always a MARK so that
    the program never advances pc past the procedure's end.
    """
    rows = list(rows)
    w = EslWriter()
    pc, line, cur_file, column = 0, start_line, file, 0
    for i, row in enumerate(rows):
        nxt = rows[i + 1].pc if i + 1 < len(rows) else None
        units, rem = divmod((nxt - row.pc) if nxt is not None else 0, min_insn_length)
        if (row.pc - pc) % min_insn_length:
            raise ValueError(f"pc {row.pc} not a multiple of {min_insn_length}")
        dline = row.line - line
        fits = (
            nxt is not None
            and row.pc == pc
            and row.file == cur_file
            and rem == 0
            and 1 <= units <= 16
            and -7 <= dline <= 7
        )
        if fits and (column == row.column or w.mode == 2 or (w.mode == 0 and w.prev_mode == 2)):
            want = w.mode if w.mode else w.prev_mode
            if w.mode == 0:
                w.command(ADD_PC, 0, resume=True)
            w.data(dline, units, row.column if want == 2 else None)
        elif fits:  # only the column changed: switch to data mode 2
            if w.mode:
                w.escape()
            w.command(SET_DATA_MODE, 2, resume=True)
            w.data(dline, units, row.column)
        else:
            if w.mode:
                w.escape()
            if row.file != cur_file:
                w.command(SET_FILE, row.file)
            dpc = (row.pc - pc) // min_insn_length
            w.command(ADD_PC_LINE_COL, dpc, dline, row.column, mark=True)
            pc = row.pc
        if w.mode and fits:
            pc = nxt if nxt is not None else pc
        line, cur_file, column = row.line, row.file, row.column
    return w.getvalue()


def encode_opt_table(procs: Iterable[OptProc]) -> bytes:
    """An `.opt_table` for `procs`; a FILES entry is written whenever the table changes."""
    out = bytearray()
    files: tuple[str, ...] | None = None
    for p in procs:
        if p.files != files:
            value = bytearray(encode_uleb128(len(p.files)))
            for name in p.files:
                value += name.encode("utf-8") + b"\0"
            out += _tlv(TAG_FILES, bytes(value))
            files = p.files
        proc = struct.pack("<Q", p.entry) + b"".join(
            encode_uleb128(v) for v in (p.file, p.start_line, p.min_insn_length)
        )
        out += _tlv(TAG_PROC, proc)
        if p.esl is not None:
            out += _tlv(TAG_ESL, p.esl)
        out += _tlv(TAG_END, b"")
    return bytes(out)


def _tlv(tag: int, value: bytes) -> bytes:
    return encode_uleb128(tag) + encode_uleb128(len(value)) + value
