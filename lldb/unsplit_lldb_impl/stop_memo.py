"""What the frames of one stop share, for the per-frame name callbacks (naming.py): a frame's
name and line text by the facts the naming rules read of it (its pc, whether it is inlined,
the same of the frame it called, LLDB's function and line for it), so that frames alike (a
recursion: one pc, thousands of frames) are named once. Kept until the process stops again,
a module comes or goes, the locations change (`bb input`) or the demangling style does."""

from __future__ import annotations

from dataclasses import dataclass, field

# pc, inlined, the newer frame's pc (-1 unless it is inlined) and inlined (None, None: frame
# 0), LLDB's function (name, mangled name; None: none), LLDB's line (None: no line entry), and
# the frame's own function name where it is an inlined call
FrameFacts = tuple[int, bool, "int | None", "bool | None", "tuple[str | None, str | None] | None",
                   "int | None", "str | None"]
# process, stop, module count (modules.live_key), location generation, demangling style
MemoKey = tuple[int, int, int, int, "str | None"]
# what `bt` (backtrace.py) reads of a frame from LLDB's text: pc, inlined, the newer frame's pc
# and inlined as in FrameFacts, LLDB's line
BtFacts = tuple[int, bool, "int | None", "bool | None", "int | None"]


@dataclass(frozen=True, slots=True)
class Renamed:
    """A frame in moved code: `label` (``descend [cold]``) goes before LLDB's own arguments
    when LLDB renders its function part as `base` followed by ``(`` (DWARF names the
    procedure); otherwise `text` is the whole function part."""

    label: str
    base: str | None
    text: str


@dataclass
class StopMemo:
    key: MemoKey | None = None
    names: dict[FrameFacts, Renamed | None] = field(default_factory=dict)  # None: LLDB's own
    lines: dict[FrameFacts, str] = field(default_factory=dict)
    # `bt`'s: how a frame is renamed and its line text, by BtFacts, which leave out LLDB's
    # function (a symbol file added within the stop changes it): kept while each module's
    # symbol file stays (`symbols`)
    shown: dict[BtFacts, tuple[Renamed | None, str]] = field(default_factory=dict)
    symbols: tuple[str, ...] | None = None

    def reset(self, key: MemoKey) -> None:
        self.key = key
        self.names.clear()
        self.lines.clear()
        self.shown.clear()

    def follow_symbols(self, symbols: tuple[str, ...]) -> None:
        """Each module's symbol file now: `shown` is dropped when one changed."""
        if symbols != self.symbols:
            self.symbols = symbols
            self.shown.clear()
