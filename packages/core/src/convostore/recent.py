"""The rows this process wrote last: what the one-statement writes compare with (the database
checks them unchanged), for conversations (``LastRows``) and memory stores (``LastMemoryRows``)."""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from typing import Generic, TypeVar

from .backends.memories import MemoryEntryRow, MemoryStoreRow
from .backends.rows import ConversationRow

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


class LastRows(Recent[tuple[ConversationRow, str | None]]):
    """Conversations' rows as this process last wrote them, with the id of their last
    message then (None where not known), the newest 1,024, each with at most 8 KiB of
    metadata (so at most a few megabytes): what a conditional append compares with."""

    max_metadata = 8192

    def row(self, cid: str) -> tuple[ConversationRow | None, str | None]:
        found = self.get(cid)
        return (None, None) if found is None else found

    def remember(self, row: ConversationRow, last_message_id: str | None) -> None:
        if row.metadata is not None and len(row.metadata) > self.max_metadata:
            self.forget(row.id)  # big metadata: the locking path, which does not send it
        else:
            self.put(row.id, (row, last_message_id))


class LastMemoryRows:
    """Memory stores' and entries' rows as this process last wrote them (the newest 1,024 of
    each, without content): what a conditional write compares with."""

    def __init__(self) -> None:
        self.stores: Recent[MemoryStoreRow] = Recent()
        self.entries: Recent[MemoryEntryRow] = Recent()

    def store(self, sid: str) -> MemoryStoreRow | None:
        return self.stores.get(sid)

    def get(self, sid: str, eid: str) -> tuple[MemoryStoreRow | None, MemoryEntryRow | None]:
        entry = self.entries.get(eid)
        return self.stores.get(sid), entry if entry is not None and entry.store_id == sid else None

    def remember(self, store: MemoryStoreRow, entry: MemoryEntryRow | None = None) -> None:
        self.stores.put(store.id, store)
        if entry is not None:
            self.entries.put(entry.id, entry._replace(content=None))

    def forget(self, eid: str) -> None:
        self.entries.forget(eid)
