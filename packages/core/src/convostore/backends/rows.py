"""The rows of the core's conversation tables, as the statements read and write them."""

from __future__ import annotations

from typing import NamedTuple


class ConversationRow(NamedTuple):
    id: str
    user_id: str | None
    created_at: int
    last_message_at: int
    message_count: int
    next_seq: int
    metadata: str | None


class ChangeRow(NamedTuple):
    seq: int
    kind: str
    message_id: str | None
    created_at: int


class MessageRow(NamedTuple):
    seq: int
    id: str
    role: str
    content: str
    metadata: str | None
    created_at: int
    updated_at: int | None
