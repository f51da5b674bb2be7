"""What `bb debuginfo [on|off|status]` prints, in both debuggers: whether split modules without
DWARF get unsplit's debug file from now on, what they get instead when not, and the modules
given one (whose files stay loaded whatever the switch says now)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DebugInfoState:
    """One debugger's answer: `otherwise` is what a module gets when the switch is off, and
    `kept` what becomes of files given before it was turned off; `inactive` says why the
    switch does nothing now (LLDB: `bb exact-frames off` gives modules nothing at all)."""

    on: bool
    otherwise: str
    kept: str
    inactive: str | None = None


def status_text(state: DebugInfoState, given: list[tuple[str, str]],
                not_given: list[tuple[str, str]] | None = None, turned_off: bool = False) -> str:
    """The head line, then `  module: file` for each module given a file and `  module: why`
    for each one that could not be (`not_given`)."""
    switch = "on" if state.on else "off"
    if state.inactive is not None:
        head = (f"debuginfo {switch}, inactive ({state.inactive}): split modules without "
                "DWARF get nothing from unsplit")
    elif state.on:
        head = "debuginfo on: split modules without DWARF get unsplit's debug file"
    else:
        head = f"debuginfo off: split modules without DWARF get {state.otherwise}"
    if turned_off and given:
        head += f"; {state.kept}"
    still = "" if state.on and state.inactive is None else " (given before: still loaded)"
    return "\n".join([head, *(f"  {module}: {what}{still}" for module, what in given),
                      *(f"  {module}: {why}" for module, why in not_given or [])])
