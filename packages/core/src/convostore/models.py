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


class ListConversationsResult(_Model):
    """One page of conversations; pass ``next_cursor`` as ``after``, ``previous_cursor`` as ``before``."""

    items: list[ConversationMeta]
    next_cursor: str | None = None
    previous_cursor: str | None = None
