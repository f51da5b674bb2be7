"""debug.cfi against llvm-dwarfdump-22 --eh-frame: every FDE of a few zoo binaries (and glibc,
for GNU_args_size, remember/restore_state and expressions), cold fragments especially; the
expression evaluator; corrupt CFI only ever raises DecodeError."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unsplit.debug.cfi import unwind_step
from unsplit.elf.binary import Binary
from unsplit.elf.cfi_table import CfiTable, table_for
from unsplit.errors import DecodeError, ExpressionError, MemoryReadError
from unsplit.formats.dwarf_expr import (
    describe_expression,
    evaluate,
    operations,
    register_name,
)
from unsplit.formats.eh_frame import EntryReader, FrameDescription, Row

from ...conftest import ROOT, facts

DWARFDUMP = "llvm-dwarfdump-22"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
VARIANTS = ["gcc-pgo", "clang-mfs-nodebug", "bolt-all"]
PROGRAMS = ["loop", "recurse", "switch", "except", "crash"]

pytestmark = pytest.mark.skipif(shutil.which(DWARFDUMP) is None, reason=f"no {DWARFDUMP}")

_FDE = re.compile(r"^[0-9a-f]{8} [0-9a-f]{8} [0-9a-f]{8} FDE cie=[0-9a-f]+ "
                  r"pc=([0-9a-f]+)\.\.\.([0-9a-f]+)$")
_ROW = re.compile(r"^  0x([0-9a-f]+): CFA=(.*)$")

Table = dict[int, tuple[str, dict[str, str]]]


def dwarfdump_fdes(path: str) -> dict[tuple[int, int], Table]:
    """(start, end) -> {row address: (CFA rule, {register: rule})} as llvm-dwarfdump prints."""
    out = subprocess.run([DWARFDUMP, "--eh-frame", path], capture_output=True, text=True,
                         check=True).stdout
    fdes: dict[tuple[int, int], Table] = {}
    current: Table | None = None
    for line in out.splitlines():
        m = _FDE.match(line)
        if m:
            current = fdes.setdefault((int(m.group(1), 16), int(m.group(2), 16)), {})
            continue
        m = _ROW.match(line)
        if m and current is not None:
            cfa, _, regs = m.group(2).partition(": ")
            rules = dict(r.split("=", 1) for r in re.split(r", (?=[A-Z][A-Z0-9]*=)", regs) if r)
            current[int(m.group(1), 16)] = (cfa, rules)
        elif line and not line.startswith(" "):  # a CIE or the next section
            current = None
    return fdes


def ours(row: Row) -> tuple[str, dict[str, str]]:
    return row.cfa.describe(), {register_name(r): rule.describe()
                                for r, rule in row.rules.items()}


def _compare(path: str) -> int:
    fdes = dwarfdump_fdes(path)
    with closing(Binary(path)) as binary:
        return _compare_fdes(path, fdes, table_for(binary))


def _compare_fdes(path: str, fdes: dict[tuple[int, int], Table], table: CfiTable) -> int:
    assert sorted(a for s, a in table.fde_starts() if s == ".eh_frame") == \
        sorted(start for start, end in fdes if end > start)
    for (start, end), rows in fdes.items():
        if end == start:
            continue
        fd = table.fde_at(start)
        assert fd is not None, f"{path}: no FDE found at {start:#x}"
        assert (fd.start, fd.end) == (start, end)
        assert {r.address: ours(r) for r in fd.rows} == rows, f"{path}: FDE at {start:#x}"
        assert table.fde_at(end - 1) is fd
    return len(fdes)


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_fde_matches_dwarfdump(zoo: dict[str, Any], variant: str, program: str) -> None:
    f = facts(zoo, variant, program)
    assert _compare(str(ROOT / f["binary"])) > 3


@pytest.mark.parametrize("variant", VARIANTS)
def test_cold_fragments_have_their_own_fde(zoo: dict[str, Any], variant: str) -> None:
    """Each moved fragment is covered by an FDE of its own; at the crash frames' pcs (all in
    cold fragments) the rules in effect are not those of a function entry (CFA=RSP+8, only RIP
    saved), which is what LLDB's assembly profiler assumes."""
    f = facts(zoo, variant, "crash")
    with closing(Binary(str(ROOT / f["binary"]))) as binary:
        _check_cold_fragments(f, table_for(binary))


def _check_cold_fragments(f: dict[str, Any], table: CfiTable) -> None:
    checked = 0
    for proc in ("transfer", "run", "main"):
        for frag in f["split_functions"][proc]["fragments"]:
            if frag["fragment"] == "hot":
                continue
            start, end = int(frag["start"], 16), int(frag["end"], 16)
            fd = table.fde_at(start)
            assert fd is not None and fd.start <= start and end <= fd.end, frag["symbol"]
            checked += 1
    assert checked >= 3
    for k, frame in enumerate(f["crash"]["frames"][:3]):
        assert frame["fragment"] != "hot"
        address = int(frame["link_pc"], 16) - (k > 0)
        fd = table.fde_at(address)
        assert fd is not None
        row = fd.row_at(address)
        assert row is not None
        assert row.cfa.describe() != "RSP+8" or set(row.rules) != {16}, frame


@pytest.mark.skipif(not Path(LIBC).exists(), reason="no glibc")
def test_glibc_matches_dwarfdump() -> None:
    assert _compare(LIBC) > 1000


def test_plt_expression() -> None:
    plt = bytes([0x77, 0x08, 0x80, 0x00, 0x3F, 0x1A, 0x3B, 0x2A, 0x33, 0x24, 0x22])
    assert describe_expression(plt) == ("DW_OP_breg7 RSP+8, DW_OP_breg16 RIP+0, DW_OP_lit15, "
                                        "DW_OP_and, DW_OP_lit11, DW_OP_ge, DW_OP_lit3, "
                                        "DW_OP_shl, DW_OP_plus")

    def no_memory(address: int, size: int) -> bytes:
        return b""

    # before the PLT entry's jmp (offset < 11): CFA = rsp + 8; after the push: rsp + 16
    assert evaluate(plt, {7: 0x1000, 16: 0x4010}, no_memory) == 0x1008
    assert evaluate(plt, {7: 0x1000, 16: 0x401B}, no_memory) == 0x1010


def test_unknown_expression_is_one_line() -> None:
    """An operation the unwinder does not know is a DecodeError at its offset; a register it
    was not given, an ExpressionError."""
    with pytest.raises(DecodeError) as e:
        evaluate(bytes([0x77, 0x00, 0x96]), {7: 0}, lambda a, n: b"")  # DW_OP_nop
    assert str(e.value) == "DWARF expression: at offset 0x2: unsupported operation 0x96"
    with pytest.raises(ExpressionError, match="reads RAX, which is unknown"):
        evaluate(bytes([0x70, 0x00]), {7: 0}, lambda a, n: b"")
    with pytest.raises(MemoryReadError):
        evaluate(bytes([0x77, 0x00, 0x06]), {7: 0x1000}, lambda a, n: b"")


@given(st.binary(max_size=24))
def test_random_expressions_raise_only_our_errors(expr: bytes) -> None:
    memory = struct.pack("<Q", 0x1234)
    try:
        evaluate(expr, {r: 0x1000 + r for r in range(17)}, lambda a, n: memory[:n])
    except (DecodeError, ExpressionError, MemoryReadError):
        pass


@given(st.binary(max_size=24))
def test_random_expressions_decode_or_raise_decode_error(expr: bytes) -> None:
    try:
        operations(expr)
    except DecodeError:
        pass


def test_unwind_step_in_a_cold_fragment(zoo: dict[str, Any]) -> None:
    """From the first instruction of run.cold (gcc-pgo): rsp + CFA offset, RA from the stack."""
    f = facts(zoo, "gcc-pgo", "crash")
    with closing(Binary(str(ROOT / f["binary"]))) as binary:
        _step_from_run_cold(f, binary)


def _step_from_run_cold(f: dict[str, Any], binary: Binary) -> None:
    frag = next(x for x in f["split_functions"]["run"]["fragments"] if x["fragment"] == "cold")
    start = int(frag["start"], 16)
    fd = table_for(binary).fde_at(start)
    assert isinstance(fd, FrameDescription)
    offset = fd.rows[0].cfa.offset
    stack = {0x7000 + k: 0x1111 * (k // 8 + 1) for k in range(0, offset + 8, 8)}

    def read(address: int, size: int) -> bytes:
        return struct.pack("<Q", stack[address]) if address in stack else b""

    caller = unwind_step(binary, start, 0, {7: 0x7000, 16: start, 3: 5}, read, True)
    assert caller is not None
    assert caller[7] == 0x7000 + offset
    assert caller[16] == stack[0x7000 + offset - 8]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_corrupt_eh_frame_raises_only_decode_error(
        tmp_path_factory: pytest.TempPathFactory, zoo: dict[str, Any], data: st.DataObject) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    original = ROOT / f["binary"]
    with closing(Binary(str(original))) as clean:
        sec = clean.section(".eh_frame")
        assert sec is not None
        offset, size = sec["sh_offset"], sec["sh_size"]
    raw = bytearray(original.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        k = data.draw(st.integers(0, size - 1))
        raw[offset + k] = data.draw(st.integers(0, 255))
    path = tmp_path_factory.mktemp("cfi") / "crash"
    path.write_bytes(bytes(raw))
    binary = Binary(str(path))
    try:
        table = table_for(binary)
        for _, start in table.fde_starts():
            for address in (start, start + 1):
                fd = table.fde_at(address)
                if fd is not None:
                    fd.row_at(address)
    except DecodeError as e:
        assert "\n" not in str(e) and str(e).startswith(".eh_frame")
    finally:
        binary.close()


class _FieldByField(EntryReader):
    """The reader without its one-struct path for the usual FDE."""

    def _usual_head(self, offset: int) -> None:
        return None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_usual_fde_heads_read_as_field_by_field(zoo: dict[str, Any], data: st.DataObject) -> None:
    """fde_head's one-struct path gives what reading each field gives (or the same error), on a
    BOLT output's `.eh_frame` with some bytes damaged, at every entry the section holds."""
    f = facts(zoo, "bolt-all", "crash")
    with closing(Binary(str(ROOT / f["binary"]))) as binary:
        sec = binary.section(".eh_frame")
        assert sec is not None
        raw, address = bytearray(sec.data()), sec["sh_addr"]
    damaged = data.draw(st.integers(0, 6))
    for _ in range(damaged):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    fast, slow = (kind(".eh_frame", bytes(raw), address, True, 8)
                  for kind in (EntryReader, _FieldByField))
    heads = 0
    for offset in range(0, len(raw), 4):
        answers = []
        for reader in (slow, fast):  # slow first: the CIE is read, then the fast path may run
            try:
                answers.append(reader.fde_head(offset))
            except DecodeError as e:
                answers.append(str(e))
        assert answers[0] == answers[1], offset
        heads += isinstance(answers[0], tuple)
    assert heads > 10 or damaged  # a damaged CIE takes its FDEs with it
