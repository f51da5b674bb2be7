"""nops.padding: what sits between functions (nops, zeros, int3 in any mix) against code. The
NOPs are the Intel SDM's recommended multi-byte forms (vol. 2B, "NOP", table 4-12) and the
66.. 2E prefixed 15-byte form GNU as and LLVM emit."""

from __future__ import annotations

import itertools

import pytest
from unsplit.formats import nops

SDM_NOPS = [bytes.fromhex(h) for h in (
    "90", "6690", "0f1f00", "0f1f4000", "0f1f440000", "660f1f440000", "0f1f8000000000",
    "0f1f840000000000", "660f1f840000000000", "66666666662e0f1f840000000000")]


def test_every_mix_of_nops_zeros_and_int3_is_padding() -> None:
    for a, b in itertools.product([*SDM_NOPS, b"\0" * 3, b"\xcc"], repeat=2):
        assert nops.padding(a + b, nops.EM_X86_64), (a + b).hex()


@pytest.mark.parametrize("code", [
    "55",  # push %rbp: a function's first instruction after the padding
    "0f1f84000000",  # a nop cut short
    "0f1f48",  # 0F 1F /1 is not a NOP (reg field 1)
    "66" * 15 + "90",  # more prefixes than an instruction may have
    "90c3",  # ret after a nop
])
def test_code_is_not_padding(code: str) -> None:
    assert not nops.padding(bytes.fromhex(code) + b"\0", nops.EM_X86_64)
    assert not nops.padding(SDM_NOPS[-1] + bytes.fromhex(code), nops.EM_X86_64)


@pytest.mark.parametrize("after, code", [
    ("", "0f1f05"),  # a 7-byte nop cut short after its ModRM
    ("90", "660fefc0"),  # pxor %xmm0,%xmm0: a prefix, then no nop
    ("cc", "2e660f84cc0f41"),  # prefixes, then a jcc
    ("", "2e" + "0f1f48"),  # a prefix, then 0F 1F /1
])
def test_padding_ends_before_code_that_starts_like_a_nop(after: str, code: str) -> None:
    """The padding's end is the last whole nop's: the bytes of an instruction that begins
    with a prefix or 0F 1F are not taken (Python 3.11.2's `(?:…)*+` kept them)."""
    data = bytes.fromhex(after + code)
    assert nops.padding_end(data, nops.EM_X86_64) == len(bytes.fromhex(after))


LLVM_NOP15 = bytes.fromhex("66" * 6 + "2e0f1f840000000000")  # what BOLT pads long gaps with


@pytest.mark.parametrize("runs", [1, 2, 40])
@pytest.mark.parametrize("after", ["55", "cc55", "0f1f4000" + "55", "666666662e0f1f8400", "6655"])
def test_runs_of_llvms_15_byte_nop_end_where_the_last_whole_nop_ends(runs: int, after: str) -> None:
    """A run of 15-byte nops then code, a cut-short nop or a prefix without one: the padding
    is the whole nops (and the int3 or nop after them), as a nop at a time reads it."""
    data = LLVM_NOP15 * runs + bytes.fromhex(after)
    want = len(LLVM_NOP15) * runs + {"cc55": 1, "0f1f400055": 4}.get(after, 0)
    assert nops.padding_end(data, nops.EM_X86_64) == want
    assert nops.padding_end(b"\x90" + data, nops.EM_X86_64, 1) == want + 1
