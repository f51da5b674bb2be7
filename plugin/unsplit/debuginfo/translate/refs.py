"""DW_FORM_ref_addr values (DWARF 5 §7.5.5, class reference: an offset in .debug_info, from
any unit, .debug_types' too) once units are left out: the units after a left-out one move up,
so each value is moved with the unit it names; a value naming a unit left out leaves its own
unit out as well (one line), since a reference to nothing, or to whatever moved into its
place, misleads a debugger."""

from __future__ import annotations

from bisect import bisect_right

from unsplit.debuginfo.translate.units import Rewritten


class _Layout:
    """Where each kept unit of .debug_info is written: kept units one after another."""

    def __init__(self, info: Rewritten) -> None:
        self.starts = [start for start, _ in info.kept]
        self.ends = [end for _, end in info.kept]
        self.new: list[int] = []
        at = 0
        for start, end in info.kept:
            self.new.append(at)
            at += end - start

    def moved(self, target: int) -> int | None:
        """The new offset of .debug_info+`target`; None when no kept unit holds it."""
        i = bisect_right(self.starts, target) - 1
        if i < 0 or target >= self.ends[i]:
            return None
        return self.new[i] + target - self.starts[i]


def settle(info: Rewritten, others: list[Rewritten], left_out: list[str]) -> int:
    """Leaves out of `info` and `others` each unit whose DW_FORM_ref_addr names no kept unit
    of `info`, until none does; says so in `left_out`; how many units it left out."""
    dropped = 0
    changed = True
    while changed:
        changed = False
        layout = _Layout(info)
        for done in (info, *others):
            kept = {start for start, _ in done.kept}
            gone: set[int] = set()
            for unit, place, size in done.refs:
                if unit not in kept or unit in gone:
                    continue
                target = int.from_bytes(done.data[place:place + size], "little")
                if layout.moved(target) is None:
                    gone.add(unit)
                    left_out.append(f"unit at {done.name}+{unit:#x}: its DW_FORM_ref_addr at "
                                    f"{done.name}+{place:#x} names .debug_info+{target:#x}, "
                                    "in no unit written: left out")
            if gone:
                done.kept = [k for k in done.kept if k[0] not in gone]
                done.aranges = [a for a in done.aranges if a[0] not in gone]
                dropped += len(gone)
                changed = True
    return dropped


def patch(info: Rewritten, done: Rewritten) -> None:
    """Moves every DW_FORM_ref_addr of `done`'s kept units to where `info`'s kept units are
    written (settle() first: each then names a kept unit)."""
    layout = _Layout(info)
    kept = {start for start, _ in done.kept}
    for unit, place, size in done.refs:
        if unit in kept:
            new = layout.moved(int.from_bytes(done.data[place:place + size], "little"))
            assert new is not None, "settle() leaves out the units whose references dangle"
            done.data[place:place + size] = new.to_bytes(size, "little")
