"""The data model: messages, conversation metadata, and a page of conversations."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

Role = Literal["user", "assistant", "system", "tool"]
Order = Literal["asc", "desc"]
ROLES: tuple[Role, ...] = ("user", "assistant", "system", "tool")


class _Model(BaseModel):
    # snake_case in Python, camelCase in JSON (``model_dump(by_alias=True)``); both accepted in.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class Message(_Model):
    """One stored message; ``created_at`` / ``updated_at`` are epoch milliseconds."""

    message_id: str
    role: Role
    content: Any
    created_at: int
    metadata: dict[str, Any] | None = None
    updated_at: int | None = None


class ConversationMeta(_Model):
    """A conversation's bookkeeping and its free-form metadata."""

    conversation_id: str
    created_at: int
    last_message_at: int
    message_count: int
    metadata: dict[str, Any] | None = None
    user_id: str | None = None


ChangeKind = Literal[
    "message.created",
    "message.updated",
    "message.deleted",
    "messages.cleared",
    "conversation.updated",
]


class ConversationChange(_Model):
    """One change of a conversation, in commit order. ``seq`` orders the changes of one
    conversation (use it as a resume cursor); ``message`` is the message as it is now, for
    ``message.created`` and ``message.updated`` (None if it was deleted since)."""

    seq: int
    kind: ChangeKind
    created_at: int
    message_id: str | None = None
    message: Message | None = None


class ConversationChanges(_Model):
    """Changes after a cursor; pass ``cursor`` as ``after`` next time. ``conversation`` is the
    conversation as it is now, None once it is deleted (or never existed)."""

    items: list[ConversationChange]
    cursor: int
    conversation: ConversationMeta | None = None


class ListConversationsResult(_Model):
    """One page of conversations; pass ``next_cursor`` as ``after``, ``previous_cursor`` as ``before``."""

    items: list[ConversationMeta]
    next_cursor: str | None = None
    previous_cursor: str | None = None


MemoryOperation = Literal["create", "update", "delete"]


class MemoryStore(_Model):
    """A memory store: a repository of memory entries (per project or domain).

    ``entry_count`` is the number of live entries and ``total_size`` the bytes (UTF-8) of their
    current contents, both exact at all times.
    """

    memory_store_id: str
    name: str
    description: str | None = None
    metadata: dict[str, Any] | None = None
    user_id: str | None = None
    created_at: int
    updated_at: int
    entry_count: int
    total_size: int


class MemoryEntry(_Model):
    """A live memory entry at its current ``version``; ``content`` is None in listings and
    when the current version is ``redacted``."""

    entry_id: str
    memory_store_id: str
    path: str
    version: int
    size: int
    created_at: int
    updated_at: int
    content: str | None = None
    redacted: bool = False


class MemoryVersion(_Model):
    """One immutable version of an entry, written by a create, an update or a delete.

    ``content`` is given by ``get_memory_version`` only, and never for a redacted version or
    a deletion; ``path`` and ``size`` are those the operation left (a deletion keeps the path
    it deleted, with size 0).
    """

    version_id: str
    memory_store_id: str
    entry_id: str
    version: int
    operation: MemoryOperation
    path: str
    size: int
    created_at: int
    redacted: bool = False
    redacted_at: int | None = None
    content: str | None = None


class ListMemoryStoresResult(_Model):
    """One page of memory stores, oldest first; pass ``next_cursor`` as ``after``."""

    items: list[MemoryStore]
    next_cursor: str | None = None


class ListMemoriesResult(_Model):
    """One page of entries (without content), by path; pass ``next_cursor`` as ``after``."""

    items: list[MemoryEntry]
    next_cursor: str | None = None


class ListMemoryVersionsResult(_Model):
    """One page of versions (without content), oldest first; pass ``next_cursor`` as ``after``."""

    items: list[MemoryVersion]
    next_cursor: str | None = None


class SearchHit(_Model):
    """A message a search found: its conversation, the whole message, and a short excerpt of
    its text around the first match."""

    conversation_id: str
    message: Message
    snippet: str


class SearchResult(_Model):
    """One page of search hits, newest first; pass ``next_cursor`` as ``after``."""

    items: list[SearchHit]
    next_cursor: str | None = None


class MemorySearchHit(_Model):
    """A memory entry a search found (without its content, as in listings): a short excerpt
    of its path and content around the first match."""

    entry_id: str
    path: str
    version: int
    snippet: str


class MemorySearchResult(_Model):
    """One page of memory search hits, by path; pass ``next_cursor`` as ``after``."""

    items: list[MemorySearchHit]
    next_cursor: str | None = None
