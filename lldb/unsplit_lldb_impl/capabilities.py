"""What the running LLDB can do, probed from its SB API and its behaviour, never its version:
:func:`missing_for_naming` (the SB calls the ``${script.frame:…}`` names need) and
:func:`split_function` (whether LLDB takes a function of several DWARF ranges as those ranges;
LLDB 19 takes the whole span and cannot unwind moved code after the entry, docs/versions.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import lldb

# (owner, attribute) the frame names use; an owner of None is the lldb module itself
_NAMING_CALLS = ((None, "SBFormat"), ("SBFrame", "GetDescriptionWithFormat"),
                 ("SBDebugger", "GetSetting"), ("SBDebugger", "SetInternalVariable"))


def missing_for_naming(lldb: Any) -> list[str]:
    """The SB calls frame naming needs that this LLDB lacks (`lldb.SBFormat`, …)."""
    missing = []
    for owner, name in _NAMING_CALLS:
        holder = lldb if owner is None else getattr(lldb, owner, None)
        if holder is None or not hasattr(holder, name):
            missing.append(f"lldb.{owner + '.' if owner else ''}{name}")
    return missing


def split_function(module: lldb.SBModule, procedures: Iterable[str]
                   ) -> tuple[str, bool] | None:
    """The first of `procedures` (those with moved fragments) that `module`'s DWARF gives
    several ranges, and whether LLDB unwinds it as those ranges (True) or as one span (False);
    None when there is no such function."""
    for name in procedures:
        contexts = module.FindFunctions(name)
        for i in range(contexts.GetSize()):
            function = contexts.GetContextAtIndex(i).GetFunction()
            if not function.IsValid():
                continue
            dwarf_ranges = function.GetBlock().GetNumRanges()
            if dwarf_ranges > 1:
                return name, len(function.GetRanges()) == dwarf_ranges
    return None


def split_functions_note(example: str) -> str:
    """The one line that says what an LLDB that unwinds split functions as one span cannot do."""
    return (f"unsplit: this LLDB takes a function whose DWARF has several ranges ({example}) as "
            "one span (SBFunction.GetRanges): its bt may end in any part but the lowest; "
            "`bb bt` shows every frame")
