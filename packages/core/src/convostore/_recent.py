"""``Recent``: the rows this process wrote last, what the one-statement writes compare with."""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")


class Recent(Generic[V]):
    """The newest ``size`` values by key (the least recently put dropped first). Shared by
    threads without a lock: each step is one dict operation, and a value is never trusted for
    more than a guess (the database checks it)."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._values: OrderedDict[str, V] = OrderedDict()

    def get(self, key: str) -> V | None:
        return self._values.get(key)

    def put(self, key: str, value: V) -> None:
        self._values.pop(key, None)  # then it is the newest
        self._values[key] = value
        while len(self._values) > self.size:
            with contextlib.suppress(KeyError):  # another thread took the oldest first
                self._values.popitem(last=False)

    def forget(self, key: str) -> None:
        self._values.pop(key, None)
