"""Time and ids: milliseconds since the epoch, and ids that sort by creation time."""

from __future__ import annotations

import secrets
import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_ids(prefix: str, now: int, count: int = 1) -> list[str]:
    """``prefix`` + 12 hex digits of milliseconds + 20 random hex digits: sortable by time,
    unique (``msg_...`` for messages, ``memstore_...``, ``mem_...``, ``memver_...``)."""
    noise = secrets.token_hex(10 * count)
    return [f"{prefix}{now:012x}{noise[i : i + 20]}" for i in range(0, 20 * count, 20)]
