"""Helpers of the command-line tests: the ``convostore`` command, run as installed (the script
beside this interpreter), and a store filled with what must survive a copy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from convostore import ConversationStore

BIN = Path(sys.executable).parent
CONVOSTORE = str(BIN / "convostore")
PG_URL = os.environ.get("CONVOSTORE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def run(
    *args: str, code: int = 0, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``convostore ARGS`` in a subprocess; its exit status must be ``code``."""
    environ = {k: v for k, v in os.environ.items() if k != "CONVOSTORE_URL"}
    environ.update(env or {})
    done = subprocess.run(
        [CONVOSTORE, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environ,
        timeout=600,
        check=False,
    )
    assert done.returncode == code, (done.returncode, done.stdout[-3000:], done.stderr[-3000:])
    return done


DEEP: object = "bottom"
for _ in range(200):
    DEEP = {"d": [DEEP]}


def fill(store: ConversationStore) -> None:
    """Conversations with what must survive a round trip: NUL, 5 MB, deep metadata, owners,
    updated and deleted messages (a gap in seq), tool calls, a summary, an empty one."""
    store.append_message(
        conversation_id="c/1 ünï",
        role="user",
        content="a\u0000b",
        user_id="u1",
        metadata={"deep": DEEP},
    )
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    store.append_message(
        conversation_id="c/1 ünï", role="assistant", content="", metadata={"tool_calls": [call]}
    )
    store.append_message(
        conversation_id="c/1 ünï", role="tool", content="8°C", metadata={"tool_call_id": "call_1"}
    )
    big = store.append_message(conversation_id="c2", role="user", content="x" * (5 * 1024 * 1024))
    doomed = store.append_message(conversation_id="c2", role="assistant", content=["gone"])
    store.append_message(conversation_id="c2", role="assistant", content={"k": [1, 2.5, None]})
    store.delete_message(conversation_id="c2", message_id=doomed)
    store.update_message(conversation_id="c2", message_id=big, metadata={"edited": True})
    store.update_conversation(
        conversation_id="c2", metadata={"title": "Big one", "summary": "s", "summarizedUntil": big}
    )
    store.update_conversation(conversation_id="empty", metadata={"title": "nothing yet"})
    for i in range(30):
        store.append_message(
            conversation_id=f"many{i % 3}", role="user", content=f"m{i}", user_id=f"u{i % 3 % 2}"
        )


def tables(url: str) -> dict[str, tuple[int, str]]:
    """Each registered table the database holds: its row count and checksum (every column,
    every byte, in key order)."""
    from convostore import transfer
    from convostore.backends import transfer as sql
    from convostore.components import registered_components

    with ConversationStore(url) as store:
        backend = store.backend
        present = backend.read(lambda tx: sql.table_names(tx, backend.dialect))
        result = {}
        for component in registered_components():
            for table in component.tables:
                if table.name in present:
                    columns = backend.read(
                        lambda tx, t=table: sql.table_columns(tx, backend.dialect, t.name)
                    )
                    result[table.name] = transfer.digest_table(backend, table, columns)
        return result
