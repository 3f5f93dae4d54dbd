"""Helpers of the command-line tests: the ``convostore`` command, run as installed (the script
beside this interpreter), and a store filled with what must survive a copy."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def on_a_terminal(*args: str, cwd: Path | None = None) -> tuple[int, str]:
    """``convostore ARGS`` with a pseudo-terminal as its stdin, stdout and stderr: its exit
    status and everything it wrote there."""
    main, side = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "CONVOSTORE_URL"}
    env.update({"TERM": "xterm-256color", "COLUMNS": "160", "LINES": "50"})
    proc = subprocess.Popen(
        [CONVOSTORE, *args], stdin=side, stdout=side, stderr=side, env=env, cwd=cwd
    )
    os.close(side)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: the process and its terminal are gone
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    return proc.wait(timeout=600), b"".join(chunks).decode("utf-8", "replace")


DEEP: object = "bottom"
for _ in range(200):
    DEEP = {"d": [DEEP]}


def fill(store: ConversationStore) -> None:
    """Conversations with what must survive a round trip: NUL, 5 MB, deep metadata, owners,
    updated and deleted messages (a gap in seq), tool calls, a summary, an empty one; memory
    stores with updated, moved, deleted entries and a redacted version."""
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
    notes = store.create_memory_store(
        "notes", user_id="u1", description="what u1 said", metadata={"deep": DEEP}
    ).memory_store_id
    kept = store.create_memory(notes, "people/ünï.md", "a\u0000b")
    gone = store.create_memory(notes, "gone.md", "to delete")
    store.update_memory(notes, kept.entry_id, "second", 1)
    store.update_memory(notes, kept.entry_id, None, 2, path="moved/ünï.md")
    store.delete_memory(notes, gone.entry_id)
    store.create_memory(notes, "big.md", "y" * (1024 * 1024))
    first = store.list_memory_versions(notes).items[0]
    store.redact_memory_version(notes, first.version_id)
    store.create_memory_store("nobody's")


def tables(url: str) -> dict[str, tuple[int, str]]:
    """Each registered table the database holds: its row count and checksum (every column but
    the derived ones, each database's own search index, every byte, in key order)."""
    from convostore.backends import transfer as sql
    from convostore.commands import migrate
    from convostore.components import registered_components

    with ConversationStore(url) as store:
        backend = store.backend
        present = backend.read(lambda tx: sql.table_names(tx, backend.dialect))
        result = {}
        for component in registered_components():
            for table in component.tables:
                if table.name in present:
                    columns = [
                        c
                        for c in backend.read(
                            lambda tx, t=table: sql.table_columns(tx, backend.dialect, t.name)
                        )
                        if c not in table.derived
                    ]
                    result[table.name] = migrate.digest_table(backend, table, columns)
        return result


COUNTED = {
    "conversation": "conversations",
    "message": "messages",
    "memory_store": "memory_stores",
    "memory_version": "memory_versions",
    "memory_entry": "memory_entries",
}


def write_export(path: Path, records: list[dict[str, Any]], *, version: int = 2) -> None:
    """An export file of ``records``, with its header and a valid end line and checksum (as
    a tool other than convostore might write one)."""
    header = {"format": "convostore-export", "version": version, "exported_at": 1}
    body = "".join(json.dumps(r) + "\n" for r in [header, *records]).encode()
    counts = {"conversations": 0, "messages": 0}
    if version >= 2:
        counts |= {"memory_stores": 0, "memory_versions": 0, "memory_entries": 0}
    for r in records:
        key = COUNTED.get(r["type"], "")
        if key in counts:
            counts[key] += 1
    end = {"type": "end", **counts, "sha256": hashlib.sha256(body).hexdigest()}
    path.write_bytes(body + json.dumps(end).encode() + b"\n")


def end_line(path: Path, **fields: Any) -> None:
    """Replace the end line of the export at ``path`` with its own fields and ``fields``
    (the checksum kept valid)."""
    data = path.read_bytes()
    cut = data.rindex(b"\n", 0, len(data) - 1) + 1
    end = {**json.loads(data[cut:]), **fields}
    path.write_bytes(data[:cut] + json.dumps(end).encode() + b"\n")


def rewrite(path: Path, change: Any) -> None:
    """Apply ``change(lines)`` to an export's lines between its header and its end line, and
    write it again with a valid checksum and end line (counts as the end line had them)."""
    lines = path.read_bytes().splitlines(keepends=True)
    body = [lines[0], *change(lines[1:-1])]
    end = json.loads(lines[-1])
    end["sha256"] = hashlib.sha256(b"".join(body)).hexdigest()
    path.write_bytes(b"".join(body) + json.dumps(end).encode() + b"\n")
