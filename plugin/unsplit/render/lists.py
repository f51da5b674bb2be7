"""Lists in a one-line message: a count and the first few, never the whole list (a BOLTed
libLLVM has 89,233 split procedures without lines; one line naming them all is 3 MB)."""

from __future__ import annotations

from collections.abc import Sequence

SHOWN = 5


def summarized(items: Sequence[str], shown: int = SHOWN, whole: str = "--json") -> str:
    """`a, b, c` for a short list; `a, b, c, d, e and 12,345 more (--json lists them all)`
    for a longer one (`whole`: where the whole list is)."""
    if len(items) <= shown:
        return ", ".join(items)
    return (", ".join(items[:shown]) +
            f" and {len(items) - shown:,} more ({whole} lists them all)")
