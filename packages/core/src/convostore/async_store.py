"""``AsyncConversationStore``: every ``ConversationStore`` method, awaited, through one bridge
(``run_sync``); no method body is written twice."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Self, TypeVar

from .ids import now_ms
from .store import ConversationStore
from .threads import run_in_thread, run_sync
from .validation import Limits
from .views import Views

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

P = ParamSpec("P")
R = TypeVar("R")


def _bounded_last(limits: Limits, kwargs: Mapping[str, Any]) -> bool:
    last = kwargs.get("last")
    return isinstance(last, int) and last <= limits.max_page_size


def _bridge(
    method: Callable[Concatenate[ConversationStore, P], R],
    inline: bool | Callable[[Limits, Mapping[str, Any]], bool] = True,
) -> Callable[Concatenate[AsyncConversationStore, P], Coroutine[Any, Any, R]]:
    """The async form of a ``ConversationStore`` method: the same call through ``run_sync``.

    ``inline`` says whether the call is small enough to try on the event loop: calls that may
    touch a whole conversation or many (unbounded reads, bulk deletes) always take a thread.
    """

    async def run(self: AsyncConversationStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        call = functools.partial(method, self.sync, *args, **kwargs)
        small = inline(self.sync.limits, kwargs) if callable(inline) else inline
        return await run_sync(call, self.sync.backend, inline=self.inline and small)

    functools.update_wrapper(run, method)
    return run


class AsyncConversationStore(Views):
    """The async twin of ``ConversationStore`` (asyncio and trio): same methods, awaited.

    ``sync`` is the blocking store it runs on; both share one database connection.
    On SQLite a small call whose locks are free runs on the event loop (``run_sync``);
    ``inline=False`` sends every call to a worker thread instead.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        limits: Limits | None = None,
        clock: Callable[[], int] = now_ms,
        sync: ConversationStore | None = None,
        inline: bool = True,
        replicas: Sequence[str] | None = None,
        max_replica_lag: float | None = None,
    ) -> None:
        self._views = {}
        self.sync = sync or ConversationStore(
            url,
            pool=pool,
            limits=limits,
            clock=clock,
            replicas=replicas,
            max_replica_lag=max_replica_lag,
        )
        self.inline = inline

    append_message = _bridge(ConversationStore.append_message)
    append_messages = _bridge(ConversationStore.append_messages)
    get_messages = _bridge(ConversationStore.get_messages)
    get_message = _bridge(ConversationStore.get_message)
    get_history = _bridge(ConversationStore.get_history, _bounded_last)
    get_contents = _bridge(ConversationStore.get_contents, _bounded_last)
    pop_message = _bridge(ConversationStore.pop_message)
    update_message = _bridge(ConversationStore.update_message)
    delete_message = _bridge(ConversationStore.delete_message)
    clear_messages = _bridge(ConversationStore.clear_messages, inline=False)
    sync_messages = _bridge(
        ConversationStore.sync_messages, lambda _, kwargs: kwargs.get("after") is not None
    )
    get_conversation = _bridge(ConversationStore.get_conversation)
    list_conversations = _bridge(ConversationStore.list_conversations)
    update_conversation = _bridge(ConversationStore.update_conversation)
    fork_conversation = _bridge(ConversationStore.fork_conversation, inline=False)
    delete_conversation = _bridge(ConversationStore.delete_conversation, inline=False)
    delete_user_data = _bridge(ConversationStore.delete_user_data, inline=False)
    find_conversations = _bridge(ConversationStore.find_conversations, inline=False)
    find_conversation_briefs = _bridge(ConversationStore.find_conversation_briefs, inline=False)
    delete_conversations = _bridge(ConversationStore.delete_conversations, inline=False)
    existing_message_ids = _bridge(ConversationStore.existing_message_ids)
    get_changes = _bridge(ConversationStore.get_changes)
    enable_change_notifications = _bridge(
        ConversationStore.enable_change_notifications, inline=False
    )
    wait_for_change = _bridge(ConversationStore.wait_for_change, inline=False)
    attach_memory_stores = _bridge(ConversationStore.attach_memory_stores)
    detach_memory_stores = _bridge(ConversationStore.detach_memory_stores)
    attached_memory_stores = _bridge(ConversationStore.attached_memory_stores)
    create_memory_store = _bridge(ConversationStore.create_memory_store)
    get_memory_store = _bridge(ConversationStore.get_memory_store)
    list_memory_stores = _bridge(ConversationStore.list_memory_stores)
    delete_memory_store = _bridge(ConversationStore.delete_memory_store, inline=False)
    create_memory = _bridge(ConversationStore.create_memory)
    list_memories = _bridge(ConversationStore.list_memories)
    get_memory = _bridge(ConversationStore.get_memory)
    get_memory_by_path = _bridge(ConversationStore.get_memory_by_path)
    update_memory = _bridge(ConversationStore.update_memory)
    delete_memory = _bridge(ConversationStore.delete_memory)
    list_memory_versions = _bridge(ConversationStore.list_memory_versions)
    get_memory_version = _bridge(ConversationStore.get_memory_version)
    redact_memory_version = _bridge(ConversationStore.redact_memory_version)
    search_messages = _bridge(ConversationStore.search_messages, inline=False)
    search_memories = _bridge(ConversationStore.search_memories, inline=False)
    reindex = _bridge(ConversationStore.reindex, inline=False)
    vacuum = _bridge(ConversationStore.vacuum, inline=False)
    ready = _bridge(ConversationStore.ready, inline=False)
    read_after = _bridge(ConversationStore.read_after, inline=False)

    def on_primary(self) -> AsyncConversationStore:
        """``ConversationStore.on_primary``: this store with every read on the primary."""
        pinned = self.sync.on_primary()
        return (
            self if pinned is self.sync else AsyncConversationStore(sync=pinned, inline=self.inline)
        )

    def replica_position(self) -> str | None:
        """``ConversationStore.replica_position`` (it asks no server: not awaited)."""
        return self.sync.replica_position()

    async def aclose(self) -> None:
        """``close()`` on a worker thread."""
        await run_in_thread(self.sync.close)

    @property
    def limits(self) -> Limits:
        return self.sync.limits

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
