"""`unsplit symbolize` decodes each DIE's address ranges once per run, not once per address
(found by bench/realworld.py: 2000 addresses of Lua's luaV_execute.cold took 20 s, 95% of it
re-reading the same range lists; 1 s now)."""

from __future__ import annotations

import io
from collections import Counter
from typing import Any

import pytest
from unsplit.index import inlines
from unsplit.tools.symbolize import Symbolizer, stream

from ...conftest import ROOT, facts


def test_each_die_ranges_decoded_once(zoo: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    sym = Symbolizer(str(ROOT / f["binary"]))
    addresses = [a for p in sym.index.procedures.values() for fr in p.fragments
                 for a in range(fr.start, fr.end)]
    calls: Counter[int] = Counter()
    real = inlines.die_ranges

    def counting(dwarfinfo: Any, die: Any, base: int) -> Any:
        calls[die.offset] += 1
        return real(dwarfinfo, die, base)

    monkeypatch.setattr(inlines, "die_ranges", counting)
    out = io.StringIO()
    stream(sym, io.StringIO("".join(f"{a:#x}\n" for a in addresses)), out, relative=False,
           inlines=True, as_json=False)
    assert len(addresses) > 100 and calls
    assert max(calls.values()) == 1, calls.most_common(3)
