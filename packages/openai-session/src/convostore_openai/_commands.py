"""What this package registers for the ``convostore`` command:
``convostore import-from openai-sqlite FILE`` (entry-point group ``convostore.importers``)."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from convostore import (
    ConflictError,
    ConversationStore,
    ConvostoreError,
    MemoryValidationError,
    MessageInput,
)
from convostore.spi import check_optional_id

from .session import ConvostoreSession, item_role

# The Agents SDK's SQLiteSession file, read as stored: text columns as bytes (decoded here,
# so a byte that is not UTF-8 is named with its row), rows in the order the SDK reads them.
_SESSION_IDS = "SELECT DISTINCT CAST(session_id AS BLOB) FROM agent_messages ORDER BY 1"
_ITEMS = (
    "SELECT id, CAST(message_data AS BLOB), created_at FROM agent_messages"
    " WHERE session_id = ? ORDER BY id"
)


class _BadRow(Exception):
    """What is wrong with a row of the file (the caller names the row)."""


def _text(value: object, what: str) -> str:
    if not isinstance(value, bytes):
        raise _BadRow(f"{what} is {type(value).__name__}, not text")
    try:
        return value.decode()
    except UnicodeDecodeError as exc:
        raise _BadRow(f"{what} is not UTF-8 ({exc})") from None


def _ms(value: object) -> int:
    """SQLite's ``CURRENT_TIMESTAMP`` text (UTC) as epoch milliseconds."""
    if not isinstance(value, str):
        raise _BadRow(f"created_at is {type(value).__name__}, not a timestamp")
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise _BadRow(f"created_at {value[:40]!r} is not a timestamp") from None
    ms = int((at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp() * 1000)
    if ms < 0:
        raise _BadRow(f"created_at {value[:40]!r} is before 1970")
    return ms


def _item(data: object, what: str) -> dict[str, Any]:
    text = _text(data, what)
    try:
        item = json.loads(text)
    except RecursionError:
        raise _BadRow(f"{what} is nested too deeply") from None
    except ValueError as exc:
        raise _BadRow(f"{what} is not JSON ({exc})") from None
    if not isinstance(item, dict):
        raise _BadRow(f"{what} is a JSON {type(item).__name__}, not an item (an object)")
    return item


def _rows(conn: sqlite3.Connection, name: str, sid: str) -> Iterator[tuple[int, MessageInput]]:
    """The session's rows: their ids, and their items as messages with their own times; bad
    data is a ``MemoryValidationError`` naming the row."""
    for rowid, data, created_at in conn.execute(_ITEMS, [sid]):
        try:
            item = _item(data, "message_data")
            message: MessageInput = {"role": item_role(item), "content": item}
            message["created_at"] = _ms(created_at)
            yield rowid, message
        except _BadRow as exc:
            raise MemoryValidationError(
                f"source {name}: session {sid!r}, agent_messages row {rowid}: {exc}",
                argument="source",
            ) from None


def _session_ids(conn: sqlite3.Connection, name: str) -> list[str]:
    try:
        rows = conn.execute(_SESSION_IDS).fetchall()
    except sqlite3.Error as exc:
        raise MemoryValidationError(
            f"source {name} is not an OpenAI Agents SQLiteSession database ({exc})",
            argument="source",
        ) from None
    ids = []
    for (raw,) in rows:
        try:
            ids.append(_text(raw, "a session_id"))
        except _BadRow as exc:
            raise MemoryValidationError(f"source {name}: {exc}", argument="source") from None
    return ids


def import_openai_sqlite(
    store: ConversationStore,
    source: str,
    *,
    user_id: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[tuple[str, int]]:
    """Copy every session of an OpenAI Agents ``SQLiteSession`` file into a conversation of
    the same id, as this package's session writes it (``ConvostoreSession(session_id)``
    continues it), each item with the time the SDK stored (``created_at``).

    The file is read as it is stored (the SDK's ``get_items`` skips rows it cannot parse and
    drops the times); a row that is not a JSON item is an error naming it. A session is
    written in one transaction; only the items the conversation lacks are written (it holds
    the first ones already: the rest; it holds them all, or more: nothing), so running it
    again resumes. A conversation holding other items is a ``ConflictError``; ``user_id`` owns
    the conversations, and one another user owns is refused."""
    path = source[len("sqlite:///") :] if source.startswith("sqlite:///") else source
    if not os.path.isfile(path):
        raise MemoryValidationError(f"source {source!r}: there is no file {path!r}")
    uid = check_optional_id("user_id", user_id, store.limits)
    name = repr(source)
    sessions = items = 0
    conn = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
    try:
        ids = _session_ids(conn, name)
        for n, sid in enumerate(ids):
            try:
                added = _import_session(store, conn, name, sid, uid)
            except sqlite3.Error as exc:
                raise MemoryValidationError(
                    f"source {name}: session {sid!r} cannot be read ({exc})", argument="source"
                ) from None
            sessions += bool(added)
            items += added
            if progress is not None:
                progress("OpenAI Agents sessions", n + 1, len(ids))
    except ConvostoreError as exc:
        if sessions:
            exc.add_note(
                f"imported before it, whole: {sessions:,} OpenAI Agents sessions ({items:,} items)"
            )
        raise
    finally:
        conn.close()
    return [("OpenAI Agents sessions", sessions), ("items", items)]


def _import_session(
    store: ConversationStore, conn: sqlite3.Connection, name: str, sid: str, uid: str | None
) -> int:
    """Write what the conversation ``sid`` lacks of the session; return how many items."""
    rows = list(_rows(conn, name, sid))
    where = f"source {name}: session {sid!r}"
    try:
        session = ConvostoreSession(sid, store=store, user_id=uid)
        held = store.get_contents(conversation_id=sid, user_id=uid)
    except MemoryValidationError as exc:
        raise MemoryValidationError(f"{where}: {exc}", argument="source") from None
    theirs = [m["content"] for _, m in rows]
    if held != theirs[: len(held)]:
        if theirs == held[: len(theirs)]:
            return 0  # all here, and more written since
        raise ConflictError(f"{where}: conversation {sid!r} already holds other items")
    new = rows[len(held) :]
    try:
        store.append_messages(
            conversation_id=sid, messages=[m for _, m in new], user_id=uid, fold=session._mark
        )
    except MemoryValidationError as exc:
        row = "" if exc.index is None else f", agent_messages row {new[exc.index][0]}"
        raise MemoryValidationError(f"{where}{row}: {exc}", argument="source") from None
    return len(new)
