"""The saver's head cache: per (thread, namespace, channel), the last version this process
wrote or read, with the saver's own copy of its list (the base of the next delta), and what a
read hands on of it (``_hand_out``). The copies and comparisons are ``_copies``'.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._copies import _common_prefix, _exclusive, _private_copies, _States

_NOVALUE: Any = object()  # a head whose value is not kept in memory
_EMPTY: Any = object()  # a head of a version without a value (a channel emptied): no blob row


@dataclass(slots=True)
class _Head:
    """The last version of a channel this process wrote or read, with its value: a list (the
    base of the next delta), an immutable ``str`` / ``bytes``, ``_NOVALUE`` or ``_EMPTY``. ``in_row`` is
    the serialized value when it lives in checkpoint rows (it then has no blob row).

    A list ``value`` is the saver's own: its items are never handed to a caller, who gets
    fresh copies of them instead (``_private_copy``), or the items of ``shared`` (the list the
    last ``put`` stored, the caller's objects) when they still equal the saver's and nobody
    else holds them any more (see ``_exclusive``)."""

    version: str
    value: Any
    depth: int = 0
    tail: int = 0
    snap: int = 0
    in_row: tuple[str, bytes] | None = None
    shared: list[Any] | None = None
    states: _States | None = None  # _states(value), for _common_prefix


class _Heads:
    """A bounded LRU of ``_Head`` by (thread_id, ns, channel), shared by copies of a saver."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._data: OrderedDict[tuple[str, str, str], _Head] = OrderedDict()

    def get(self, key: tuple[str, str, str]) -> _Head | None:
        with self._lock:
            head = self._data.get(key)
            if head is not None:
                self._data.move_to_end(key)
            return head

    def set(self, key: tuple[str, str, str], head: _Head) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._data[key] = head
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def take_shared(self, head: _Head) -> list[Any] | None:
        """The head's ``shared`` list, to one reader only."""
        with self._lock:
            shared, head.shared = head.shared, None
        return shared

    def drop(self, thread_ids: Sequence[str] | None = None) -> None:
        with self._lock:
            if thread_ids is None:
                self._data.clear()
                return
            gone = set(thread_ids)
            for key in [k for k in self._data if k[0] in gone]:
                del self._data[key]


def _hand_out(heads: _Heads, head: _Head) -> list[Any]:
    """What a read gives the caller for the head's list: the list the last ``put`` stored if
    it still equals the saver's own and only the saver holds it and its items (no copy: a
    graph's next invoke after the last one's result was dropped), else fresh copies."""
    box = [heads.take_shared(head)]  # the list's one holder, so that it is checked too
    own = head.value
    if (
        box[0] is not None
        and len(box[0]) == len(own)
        and _exclusive(box)
        and _common_prefix(own, box[0], head.states) == len(own)
    ):
        return box[0]
    return _private_copies(own)
