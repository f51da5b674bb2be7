"""The frame rules every layer uses (unsplit.index.model.frame): which address names a frame, and
which names are signal trampolines. Oracle: the zoo's crash facts, whose callers' return
addresses gdb_probe.py recorded with the procedure GDB named at pc - 1."""

from __future__ import annotations

from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.index.model.frame import at_return_address, is_signal_trampoline, lookup_pc
from unsplit.index.module_index import ModuleIndex

from ...conftest import ROOT, facts


def test_lookup_pc() -> None:
    assert lookup_pc(0x1000, holds_return_address=False) == 0x1000
    assert lookup_pc(0x1000, holds_return_address=True) == 0xFFF


@pytest.mark.parametrize("name", ["__restore_rt", "__kernel_rt_sigreturn", "_sigtramp"])
def test_signal_trampolines(name: str) -> None:
    assert is_signal_trampoline(name)


@pytest.mark.parametrize("name", [None, "", "main", "transfer.cold", "restore"])
def test_not_signal_trampolines(name: str | None) -> None:
    assert not is_signal_trampoline(name)


@pytest.mark.parametrize("variant", ["gcc-pgo", "clang-mfs", "bolt-all"])
def test_callers_are_named_by_their_call(zoo: dict[str, Any], variant: str) -> None:
    """Each caller of the crash chain, looked up by the rule and reported at its pc, is the
    procedure GDB named it by; the reported address and offset are the return address's."""
    f = facts(zoo, variant, "crash")
    index = ModuleIndex(Binary(str(ROOT / f["binary"])))
    bias = int(f["crash"]["load_bias"], 16)
    for frame in f["crash"]["frames"][1:3]:
        pc = int(frame["pc"], 16)
        loc = index.locate(lookup_pc(pc - bias, True), bias)
        shown = at_return_address(loc, pc)
        assert (shown.procedure, shown.fragment) == (frame["procedure"], frame["fragment"])
        assert shown.address == pc and shown.file_address == pc - bias
        if loc.offset is not None:
            assert shown.offset == loc.offset + 1
