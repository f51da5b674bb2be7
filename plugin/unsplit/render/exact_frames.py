"""What `bb exact-frames` says in GDB: whether the plugin's unwinder is on, and per split
module what it does (unsplit.debug.cfi_check.ModulePolicy, counted by the adapter)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ModuleLine:
    name: str
    moved: int  # moved fragments
    contested: int  # address ranges several FDEs cover
    unwound: int  # frames the plugin has unwound there so far
    uncovered: int = 0  # moved fragments with code no FDE describes


def gdb_status(on: bool, modules: list[ModuleLine]) -> str:
    head = ("exact frames on: where FDEs with other rules compete for a split module's code, "
            "GDB unwinds with the one unsplit trusts (the one .eh_frame_hdr lists); where no "
            "FDE describes moved code, with the pre-BOLT input's rules; elsewhere with its own "
            "unwinders" if on else
            "exact frames off: GDB unwinds every frame with its own unwinders")
    lines = [head]
    for m in modules:
        if not m.moved:
            what = "no moved code: GDB's own unwinding"
        elif not m.contested and not m.uncovered:
            what = (f"{m.moved} moved fragments, one FDE for each address: GDB's own "
                    "unwinding is exact")
        else:
            found = [f"{_count(m.contested, 'address range')} where FDEs compete"] \
                if m.contested else []
            if m.uncovered:
                found.append(f"{m.uncovered} without an FDE")
            what = (f"{m.moved} moved fragments, {', '.join(found)}: "
                    f"{_count(m.unwound, 'frame')} unwound by unsplit so far")
        lines.append(f"  {m.name}: {what}")
    return "\n".join(lines)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")
