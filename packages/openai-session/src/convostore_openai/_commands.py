"""What this package registers for the ``convostore`` command:
``convostore import-from openai-sqlite FILE`` (entry-point group ``convostore.importers``)."""

from __future__ import annotations

import os
import sqlite3

import anyio
from convostore import ConflictError, ConversationStore, MemoryValidationError

from .session import ConvostoreSession


def _session_ids(path: str, sessions_table: str) -> list[str]:
    """The sessions an Agents SDK ``SQLiteSession`` database holds (its own table, read)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [sessions_table]
        ).fetchall()
        if not found:
            raise MemoryValidationError(
                f"source {path!r} is not an OpenAI Agents SQLiteSession database"
                f" (no {sessions_table} table)"
            )
        rows = conn.execute(f"SELECT session_id FROM {sessions_table} ORDER BY session_id")
        return [r[0] for r in rows]


def import_openai_sqlite(store: ConversationStore, source: str) -> list[tuple[str, int]]:
    """Copy every session of an OpenAI Agents ``SQLiteSession`` database into a conversation
    of the same id, read through ``SQLiteSession.get_items()`` and written through this
    package's session, so ``ConvostoreSession(session_id)`` continues it. A session already
    imported (the conversation holds the same items) is skipped; one holding other items is a
    ``ConflictError``."""
    from agents import SQLiteSession

    path = source[len("sqlite:///") :] if source.startswith("sqlite:///") else source
    if not os.path.isfile(path):
        raise MemoryValidationError(f"source {source!r}: there is no file {path!r}")
    ids = _session_ids(path, "agent_sessions")

    async def run() -> tuple[int, int]:
        sessions = items_count = 0
        for sid in ids:
            theirs = SQLiteSession(sid, path)
            try:
                items = await theirs.get_items()
            finally:
                theirs.close()
            ours = ConvostoreSession(sid, store=store)
            held = await ours.get_items()
            if held == items:
                continue
            if held:
                raise ConflictError(
                    f"session {sid!r}: conversation {sid!r} already holds other items"
                )
            await ours.add_items(items)
            sessions += 1
            items_count += len(items)
        return sessions, items_count

    sessions, items = anyio.run(run)
    return [("OpenAI Agents sessions", sessions), ("items", items)]
