"""The queries the core has no method for: conversations of one scope by id range.

Every session key maps to a conversation whose id starts with its scope's prefix (see
``_keys``), so listing a project or a session's subkeys is one range scan of the core's
primary-key index, and a cascading delete is one transaction through the core's ``Tx``.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from convostore.backends import Backend, Tx


class Row(NamedTuple):
    conversation_id: str
    mtime: int
    message_count: int
    metadata_json: str | None

    @property
    def metadata(self) -> dict[str, Any]:
        return json.loads(self.metadata_json) if self.metadata_json else {}


def _upper(prefix: str) -> str:
    """The smallest string greater than every string starting with ``prefix`` (ASCII ``/``)."""
    assert prefix.endswith("/")
    return prefix[:-1] + "0"


def _scan(tx: Tx, prefix: str) -> list[Row]:
    rows = tx.execute(
        "SELECT id, last_message_at, message_count, metadata FROM convostore_conversations"
        " WHERE id >= ? AND id < ? ORDER BY id",
        [prefix, _upper(prefix)],
    )
    return [Row(r[0], int(r[1]), int(r[2]), r[3]) for r in rows]


def scan(backend: Backend, prefix: str) -> list[Row]:
    """Every conversation whose id starts with ``prefix`` (which ends with ``/``)."""
    return backend.read(lambda tx: _scan(tx, prefix))


def delete(backend: Backend, ids: list[str], prefix: str | None) -> None:
    """Delete the conversations ``ids`` and, if ``prefix`` is given, every conversation whose id
    starts with it, with their messages, in one transaction."""

    def write(tx: Tx) -> None:
        doomed = set(ids)
        if prefix is not None:
            doomed.update(row.conversation_id for row in _scan(tx, prefix))
        for cid in sorted(doomed):
            tx.delete_conversation(cid)

    backend.write(write)


def existing_ids(backend: Backend, conversation_id: str, message_ids: list[str]) -> set[str]:
    """Which of ``message_ids`` the conversation already holds."""
    found = backend.read(
        lambda tx: tx.messages_by_id(conversation_id, message_ids), single_statement=True
    )
    return set(found)


def replay_state(
    backend: Backend, conversation_id: str, message_ids: list[str], tail: int
) -> tuple[set[str], list[Any]]:
    """Which of ``message_ids`` the conversation holds, and its newest ``tail`` contents
    (oldest first), in one snapshot."""

    def read(tx: Tx) -> tuple[set[str], list[Any]]:
        present = set(tx.messages_by_id(conversation_id, message_ids)) if message_ids else set()
        rows = (
            tx.page_messages(
                conversation_id, after_seq=None, before_seq=None, newest_first=True, limit=tail
            )
            if tail
            else []
        )
        return present, [json.loads(row.content) for row in reversed(rows)]

    return backend.read(read)
