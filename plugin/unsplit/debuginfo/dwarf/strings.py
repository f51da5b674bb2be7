"""String sections: .debug_str (DW_FORM_strp) and .debug_line_str (DW_FORM_line_strp), DWARF 5
§7.26 and §7.5.5: NUL-terminated UTF-8 strings addressed by their 4-byte section offset."""

from __future__ import annotations

from itertools import accumulate, filterfalse, repeat


class StringTable:
    """Each distinct string stored once; ``offset`` returns where it begins."""

    def __init__(self, start: int = 0) -> None:
        self.start = start  # where the table goes in its section (after what is there)
        self.data = bytearray()
        self._offsets: dict[str, int] = {}

    def offset(self, text: str) -> int:
        found = self._offsets.get(text)
        if found is None:
            found = self.start + len(self.data)
            self.data += text.encode("utf-8", "surrogateescape") + b"\0"
            self._offsets[text] = found
        return found

    def offsets(self, texts: list[str]) -> list[int]:
        """`offset` of each of `texts`, those not stored yet added in one join (C loops
        over a list: a BOLTed libLLVM's names-only file stores 257k strings)."""
        known = self._offsets
        new = list(filterfalse(known.__contains__, dict.fromkeys(texts)))
        if new:
            encoded = list(map(str.encode, new, repeat("utf-8"), repeat("surrogateescape")))
            # the sums run one past the strings: where the next one would go
            known.update(zip(new, accumulate(map((1).__add__, map(len, encoded)),
                                             initial=self.start + len(self.data)), strict=False))
            self.data += b"\0".join(encoded)
            self.data.append(0)
        return list(map(known.__getitem__, texts))
