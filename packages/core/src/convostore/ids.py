"""Time and ids: milliseconds since the epoch, and ids that sort by creation time."""

from __future__ import annotations

import secrets
import threading
import time

_lock = threading.Lock()
_last = [0, 0]  # the millisecond and the 80-bit tail of the last id made in this process


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_ids(prefix: str, now: int, count: int = 1) -> list[str]:
    """``prefix`` + 12 hex digits of ``now`` (milliseconds) + 20 hex digits of a random tail:
    unique, sorted by time, and within one process and millisecond in the order made
    (``msg_...`` for messages, ``memstore_...``, ``mem_...``, ``memver_...``)."""
    with _lock:
        tail = _last[1] if _last[0] == now else secrets.randbits(79)
        _last[0], _last[1] = now, tail + count
    return [f"{prefix}{now:012x}{tail + i + 1:020x}" for i in range(count)]
