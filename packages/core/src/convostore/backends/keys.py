"""Key ranges for prefix scans, the same on both databases."""

from __future__ import annotations


def prefix_upper(prefix: str) -> str | None:
    """The least string above every string starting with ``prefix`` (None: no bound)."""
    chars = list(prefix)
    while chars:
        last = ord(chars.pop())
        if last < 0x10FFFF:
            nxt = last + 1
            if 0xD800 <= nxt <= 0xDFFF:  # surrogates are not text: skip to the next code point
                nxt = 0xE000
            return "".join(chars) + chr(nxt)
    return None
