"""Key ranges for prefix scans, the same on both databases."""

from __future__ import annotations

from typing import Any


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


def key_range(
    columns: str,
    head: str,
    *,
    after: Any = None,
    inclusive: bool = False,
    low: Any,
    high: Any = None,
) -> tuple[str, list[Any]]:
    """A WHERE clause for the rows whose first key column is ``head`` and whose second is past
    ``after`` (or at least ``low``) and below ``high`` (or unbounded), written as row values
    over the two columns of an index, ``(head, second)``.

    Why not ``head = ?``: without table statistics (a fresh bulk load, before ANALYZE)
    PostgreSQL takes an equality for a handful of rows, reads all of them and sorts; a range
    on the index key makes it walk the index in order, whatever it knows. Ids hold no NUL, so
    ``head + "\\x01"`` is above every key of ``head`` and below every longer id."""
    op = ">=" if inclusive or after is None else ">"
    where = [f"({columns}) {op} (?, ?)"]
    params: list[Any] = [head, low if after is None else after]
    if high is None:
        where.append(f"({columns}) < (?, ?)")
        params += [head + "\x01", low]
    else:
        where.append(f"({columns}) < (?, ?)")
        params += [head, high]
    return " AND ".join(where), params
