"""Live events of a conversation (Server-Sent Events), from the database's change feed.

Whoever writes (this process, another server, an agent with an adapter), the change lands in
the database; one watcher task per process blocks in ``store.wait_for_change`` (PostgreSQL's
LISTEN/NOTIFY, SQLite's data version) and wakes every open stream, which then reads its own
conversation's changes with ``store.get_changes`` after its cursor.
"""

import asyncio
import contextlib
import logging

import anyio
from convostore import AsyncConversationStore

log = logging.getLogger("convostore_server")


class ChangeHub:
    """Wakes the open event streams when the database may have changed.

    The watcher starts with the first stream (and, on PostgreSQL, installs the trigger that
    makes every write send a NOTIFY) and runs until ``close``.
    """

    def __init__(self, store: AsyncConversationStore, poll_seconds: float = 1.0) -> None:
        self.store = store
        self.poll_seconds = poll_seconds
        self._changed = anyio.Event()
        self._task: asyncio.Task[None] | None = None

    async def next_change(self) -> anyio.Event:
        """An event set at the next change after this call: take it before reading, so a
        change committed meanwhile wakes the reader."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._watch())
        return self._changed

    def _wake(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def _watch(self) -> None:
        enabled = False
        while True:
            try:
                if not enabled:
                    await self.store.enable_change_notifications()
                    enabled = True
                    self._wake()  # writes made before the trigger existed
                if await self.store.wait_for_change(self.poll_seconds):
                    self._wake()
            except Exception:  # the database failed (or worse): log, wake, keep watching
                log.exception("change watcher failed")
                self._wake()  # the streams read again (and end if the store is gone)
                await anyio.sleep(self.poll_seconds)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
