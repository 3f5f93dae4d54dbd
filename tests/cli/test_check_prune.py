"""``convostore check`` finds what is wrong and exits 1; ``convostore prune`` removes what is
old or long, keeps the summary convention, and ``--dry-run`` deletes nothing."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

from cli_helpers import CONVOSTORE, fill, run, tables
from convostore import ConversationStore, prompt_context

DAY = 86_400_000


def _sql(url: str, statement: str) -> None:
    with ConversationStore(url) as store:
        store.backend.write(lambda tx: tx.execute(statement))


def test_check_passes_on_a_sound_store_and_names_each_broken_invariant(shared_url: str) -> None:
    with ConversationStore(shared_url) as store:
        fill(store)
    assert "ok: no problem found" in run("check", "--url", shared_url).stdout
    _sql(shared_url, "UPDATE convostore_conversations SET message_count = 7 WHERE id = 'many0'")
    _sql(shared_url, "UPDATE convostore_conversations SET next_seq = 2 WHERE id = 'c2'")
    _sql(
        shared_url,
        "INSERT INTO convostore_messages (conversation_id, seq, id, role, content, created_at)"
        " VALUES ('ghost', 1, 'msg_ghost', 'user', '\"boo\"', 1)",
    )
    out = run("check", "--url", shared_url, code=1).stdout
    assert "conversation 'many0': message_count is 7 but it holds 10 messages" in out
    assert "conversation 'c2', message seq 3" in out and "next_seq is 2 but it holds seq 3" in out
    assert "1 messages of conversation 'ghost', which does not exist" in out


def test_check_finds_every_row_the_rules_refuse_and_the_readers_name_it(
    shared_url: str,
) -> None:
    """Rows written by hand or by a broken tool: stored JSON that is not JSON (or not an
    object), an unknown role, an id longer than the rules allow, a memory version of an
    unknown operation, a memory store whose counters lie. ``check`` names each; ``ls`` and
    ``show`` name the row they cannot read instead of crashing."""
    with ConversationStore(shared_url) as store:
        fill(store)
        with_metadata = store.get_history(conversation_id="many2")[0].message_id
    long_id = "x" * 300
    for statement in (
        "UPDATE convostore_conversations SET metadata = '{not json' WHERE id = 'c2'",
        "UPDATE convostore_messages SET content = 'oops' WHERE conversation_id = 'many0'"
        " AND seq = 1",
        "UPDATE convostore_messages SET role = 'wizard' WHERE conversation_id = 'many1'"
        " AND seq = 2",
        "UPDATE convostore_messages SET metadata = '[1]' WHERE conversation_id = 'many2'"
        " AND seq = 1",
        "INSERT INTO convostore_conversations (id, user_id, created_at, last_message_at,"
        f" message_count, next_seq, metadata) VALUES ('{long_id}', NULL, 1, 1, 0, 1, NULL)",
        "UPDATE convostore_memory_versions SET operation = 'explode' WHERE seq = 2",
        "UPDATE convostore_memory_stores SET metadata = 'nope' WHERE name = 'nobody''s'",
    ):
        _sql(shared_url, statement)
    out = run("check", "--url", shared_url, code=1).stdout
    assert "conversation 'c2', its row: its metadata is not valid JSON" in out
    assert "conversation 'many0', message seq 1" in out
    assert "its content is not valid JSON" in out
    assert "conversation 'many1', message seq 2" in out and "role must be one of" in out
    assert "conversation 'many2', message seq 1" in out and "metadata must be a dict" in out
    assert f"conversation '{long_id}', its row: id must be 1 to 256 bytes" in out
    assert "version seq 2" in out and "operation must be one of create, update, delete" in out
    assert "its row: its metadata is not valid JSON" in out.split("memory store", 1)[1]
    assert len([line for line in out.splitlines() if line.startswith("problem:")]) == 7
    # the readers name the row they cannot read
    listed = run("ls", "--url", shared_url, code=4).stderr
    assert "conversation 'c2': its stored metadata is not valid JSON" in listed
    assert "convostore check" in listed and "Traceback" not in listed
    shown = run("show", "many0", "--url", shared_url, code=4).stderr
    assert "message 'msg_" in shown and "its stored content is not valid JSON" in shown
    shown = run("show", "many2", "--url", shared_url, code=4).stderr
    assert f"message {with_metadata!r}: its stored metadata is a JSON list" in shown
    assert "── wizard" in run("show", "many1", "--url", shared_url).stdout


def test_check_finds_a_damaged_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'd.db'}"
    with ConversationStore(url) as store:
        for i in range(300):
            store.append_message(conversation_id=f"c{i}", role="user", content="x" * 300)
        store.backend.truncate_wal()  # type: ignore[attr-defined]
    data = bytearray((tmp_path / "d.db").read_bytes())
    page = 4096
    for number in (3, 4, 5):  # their b-tree page headers: no valid page type any more
        data[(number - 1) * page : (number - 1) * page + 8] = b"\xff" * 8
    (tmp_path / "d.db").write_bytes(bytes(data))
    result = subprocess.run(
        [CONVOSTORE, "check", "--url", url], capture_output=True, text=True, check=False
    )
    # found by integrity_check (exit 1), or by SQLite itself on opening it (exit 4)
    assert result.returncode in (1, 4), result
    assert "problem" in result.stdout or "malformed" in result.stderr


def test_prune_older_than(shared_url: str) -> None:
    now = time.time_ns() // 1_000_000
    with ConversationStore(shared_url, clock=lambda: now - 40 * DAY) as old:
        old.append_message(conversation_id="old-u1", role="user", content="x", user_id="u1")
        old.append_message(conversation_id="old-u2", role="user", content="x", user_id="u2")
    with ConversationStore(shared_url, clock=lambda: now - 2 * DAY) as recent:
        recent.append_message(conversation_id="new", role="user", content="x", user_id="u1")
    before = tables(shared_url)
    dry = run("prune", "--url", shared_url, "--older-than", "30d", "--dry-run").stdout
    assert "would delete 2 conversations" in dry
    assert tables(shared_url) == before
    mine = run("prune", "--url", shared_url, "--older-than", "30d", "--user", "u2").stdout
    assert "deleted 1 conversations" in mine
    everything = run("prune", "--url", shared_url, "--older-than", "1h").stdout
    assert "deleted 2 conversations" in everything
    with ConversationStore(shared_url) as store:
        assert store.list_conversations().items == []
    bad = run("prune", "--url", shared_url, "--older-than", "soon", code=2)
    assert "use a number and a unit" in bad.stderr
    nothing = run("prune", "--url", shared_url, code=2)
    assert "--older-than" in nothing.stderr


def test_prune_keep_last_keeps_the_summary_convention(shared_url: str) -> None:
    with ConversationStore(shared_url) as store:
        ids = [
            store.append_message(conversation_id="long", role="user", content=f"m{i}")
            for i in range(10)
        ]
        store.update_conversation(
            conversation_id="long", metadata={"summary": "first four", "summarizedUntil": ids[3]}
        )
        kept = [
            store.append_message(conversation_id="kept", role="user", content=f"k{i}")
            for i in range(5)
        ]
        store.update_conversation(
            conversation_id="kept", metadata={"summary": "two", "summarizedUntil": kept[3]}
        )
    dry = run("prune", "--url", shared_url, "--keep-last", "3", "--dry-run").stdout
    assert "would delete 9 messages" in dry
    done = run("prune", "--url", shared_url, "--keep-last", "3").stdout
    assert "deleted 9 messages" in done
    with ConversationStore(shared_url) as store:
        long = store.get_conversation(conversation_id="long")
        assert long is not None and long.message_count == 3
        assert long.metadata == {"summary": "first four"}  # its marker named a trimmed message
        context = prompt_context(store, conversation_id="long")
        assert [m.content for m in context.messages] == ["m7", "m8", "m9"]
        short = store.get_conversation(conversation_id="kept")
        assert short is not None and short.metadata == {
            "summary": "two",
            "summarizedUntil": kept[3],
        }
        assert [m.content for m in prompt_context(store, conversation_id="kept").messages] == ["k4"]
        # live views learn which messages went
        trimmed = store.get_changes(conversation_id="long", after=len(ids) + 1).items
        assert [(c.kind, c.message_id) for c in trimmed] == [
            ("message.deleted", mid) for mid in ids[:7]
        ]
    assert "ok" in run("check", "--url", shared_url).stdout


def test_prune_on_a_missing_database(tmp_path: Path) -> None:
    done = run("prune", "--url", f"sqlite:///{tmp_path}/none.db", "--keep-last", "1", code=3)
    assert "there is no database file" in done.stderr
    done = run("check", "--url", f"sqlite:///{tmp_path}/none.db", code=3)
    assert "there is no database file" in done.stderr


def test_prune_leaves_managed_conversations_to_their_component(shared_url: str) -> None:
    """A conversation a component manages mirrors what the component keeps (a LangGraph
    thread): trimming or deleting it alone would make it lie, so the component's own retention
    removes it with its data."""
    now = time.time_ns() // 1_000_000
    with ConversationStore(shared_url, clock=lambda: now - 40 * DAY) as old:
        old.as_component("thing").sync_messages(
            conversation_id="mirror",
            messages=[
                {"role": "user", "content": f"m{i}", "message_id": f"m{i}"} for i in range(6)
            ],
        )
        old.append_message(conversation_id="plain", role="user", content="x")
    assert (
        "would delete 1 conversations"
        in run("prune", "--url", shared_url, "--older-than", "30d", "--dry-run").stdout
    )
    assert "deleted 0 messages" in run("prune", "--url", shared_url, "--keep-last", "2").stdout
    assert (
        "deleted 1 conversations" in run("prune", "--url", shared_url, "--older-than", "30d").stdout
    )
    with ConversationStore(shared_url) as store:
        mirror = store.get_conversation(conversation_id="mirror")
        assert mirror is not None and mirror.message_count == 6
        assert store.get_conversation(conversation_id="plain") is None


def test_prune_vacuum_leaves_no_copy_in_the_table_files(pg_schema_url: str) -> None:
    """PostgreSQL keeps deleted rows as dead tuples until VACUUM: ``--vacuum`` runs it."""
    import psycopg
    from pg_files import table_copies, wait_for_older_snapshots

    marker = f"secret-{uuid.uuid4().hex}"
    now = time.time_ns() // 1_000_000
    with ConversationStore(pg_schema_url, clock=lambda: now - 40 * DAY) as old:
        old.append_message(conversation_id="old", role="user", content=marker)
    messages = ["convostore_messages"]
    with psycopg.connect(pg_schema_url, autocommit=True) as conn:
        assert table_copies(conn, messages, marker) >= 1  # the file read sees what is stored
        run("prune", "--url", pg_schema_url, "--older-than", "30d")
        assert table_copies(conn, messages, marker) >= 1  # deleted, still in the file
        wait_for_older_snapshots(conn)
        done = run("prune", "--url", pg_schema_url, "--older-than", "30d", "--vacuum").stdout
        assert "tables rewritten without the deleted rows" in done
        assert table_copies(conn, messages, marker) == 0
    dry = run("prune", "--url", pg_schema_url, "--keep-last", "1", "--dry-run", "--vacuum")
    assert "rewritten" not in dry.stdout  # a dry run rewrites nothing


def test_prune_vacuum_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/v.db"
    with ConversationStore(url) as store:
        store.append_messages(
            conversation_id="c", messages=[{"role": "user", "content": "x" * 10_000}] * 100
        )
    before = (tmp_path / "v.db").stat().st_size
    run("prune", "--url", url, "--keep-last", "1", "--vacuum")
    assert (tmp_path / "v.db").stat().st_size < before / 5  # the file rebuilt, smaller
    with ConversationStore(url) as store:
        assert store.get_contents(conversation_id="c") == ["x" * 10_000]


def test_prune_help_says_keep_last_cuts_langgraph_history() -> None:
    helped = " ".join(run("prune", "--help").stdout.split())
    assert "--keep-last N Trim each conversation to its newest N messages." in helped
    assert "It also cuts every LangGraph thread's checkpoint history to its latest" in helped
