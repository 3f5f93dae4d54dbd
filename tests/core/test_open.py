"""Opening stores: URLs, the default, migrations, and the lazy framework entry points."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from convostore import (
    AsyncConversationStore,
    ClosedError,
    ConversationStore,
    ConvostoreError,
    MemoryValidationError,
    StorageError,
)
from convostore.backends import open_backend
from convostore.backends.schema import MIGRATIONS
from convostore.spi import Tx


def test_default_url_is_a_file_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONVOSTORE_URL", raising=False)
    with ConversationStore() as store:
        store.append_message(conversation_id="c", role="user", content="x")
    assert (tmp_path / "convostore.db").exists()
    monkeypatch.setenv("CONVOSTORE_URL", f"sqlite:///{tmp_path / 'other.db'}")
    with ConversationStore() as store:
        assert store.get_messages(conversation_id="c") == []
    assert (tmp_path / "other.db").exists()


def test_sqlite_file_uses_wal_and_reopens_with_its_data(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    with ConversationStore(url) as store:
        store.append_message(conversation_id="c", role="user", content="kept")
    with ConversationStore(url) as store:
        assert [m.content for m in store.get_messages(conversation_id="c")] == ["kept"]
    raw = sqlite3.connect(tmp_path / "a.db")
    assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert raw.execute("SELECT component, version FROM convostore_schema").fetchall() == [
        ("core", len(MIGRATIONS))
    ]


def test_full_durability_can_be_asked_for(tmp_path: Path) -> None:
    with ConversationStore(f"sqlite:///{tmp_path / 'a.db'}?synchronous=full") as store:
        store.append_message(conversation_id="c", role="user", content="x")
    with pytest.raises(ValueError, match="synchronous must be"):
        ConversationStore(f"sqlite:///{tmp_path / 'b.db'}?synchronous=sometimes")


def test_an_older_schema_is_upgraded_in_place(backend_url: str) -> None:
    """Opening runs the pending steps of every component, once."""
    with ConversationStore(backend_url) as store:
        steps = [["CREATE TABLE demo_items (id INTEGER PRIMARY KEY)"]]
        store.backend.migrate("demo", steps)
        store.backend.migrate("demo", steps)  # already at version 1: nothing runs
        steps.append(["ALTER TABLE demo_items ADD COLUMN note TEXT"])
        store.backend.migrate("demo", steps)
        store.backend.write(
            lambda tx: tx.execute("INSERT INTO demo_items (id, note) VALUES (?, ?)", [1, "n"])
        )
        rows = store.backend.read(
            lambda tx: tx.execute("SELECT component, version FROM convostore_schema")
        )
        assert sorted(rows) == [("core", len(MIGRATIONS)), ("demo", 2)]


def test_a_database_of_the_previous_schema_gains_memory_stores(shared_url: str) -> None:
    """A database written before memory stores existed (core schema 2) opens, keeps its
    conversations and gets every later step (memory stores, the change feed, search)."""
    backend = open_backend(shared_url)
    backend.migrate("core", MIGRATIONS[:2])

    def written_then(tx: Tx) -> None:
        tx.execute(
            "INSERT INTO convostore_conversations (id, user_id, created_at, last_message_at,"
            " message_count, next_seq, metadata) VALUES ('c', NULL, 1, 1, 1, 2, NULL)"
        )
        tx.execute(
            "INSERT INTO convostore_messages (conversation_id, seq, id, role, content,"
            " metadata, created_at) VALUES ('c', 1, 'msg_1', 'user', '\"before\"', NULL, 1)"
        )

    backend.write(written_then)
    backend.close()
    with ConversationStore(shared_url) as store:
        assert [m.content for m in store.get_history(conversation_id="c")] == ["before"]
        sid = store.create_memory_store("new").memory_store_id
        store.create_memory(sid, "a.md", "works")
        rows = store.backend.read(
            lambda tx: tx.execute("SELECT version FROM convostore_schema WHERE component = 'core'")
        )
        assert rows == [(len(MIGRATIONS),)]
        assert [h.message.content for h in store.search_messages(query="efor").items] == ["before"]
        store.update_conversation(conversation_id="c", metadata={"k": 1})
        assert [c.kind for c in store.get_changes(conversation_id="c", after=0).items] == [
            "message.created",
            "conversation.updated",
        ]


def test_a_store_that_cannot_connect_says_so() -> None:
    from convostore.backends.postgres import PostgresBackend

    with pytest.raises(StorageError, match="cannot connect to PostgreSQL"):
        PostgresBackend("postgresql://postgres@127.0.0.1:1/none?connect_timeout=1", timeout=2)


def test_closed_store_refuses_work(tmp_path: Path) -> None:
    store = ConversationStore(f"sqlite:///{tmp_path / 'a.db'}")
    store.close()
    with pytest.raises(Exception, match="closed"):
        store.get_messages(conversation_id="c")


def test_a_callers_pool_is_used(pg_schema_url: str) -> None:
    from psycopg_pool import ConnectionPool

    with ConnectionPool(pg_schema_url, min_size=1, max_size=2, open=True) as pool:
        store = ConversationStore(pool=pool)
        store.append_message(conversation_id="c", role="user", content="pooled")
        store.close()  # the caller's pool stays open
        assert not pool.closed
        with pool.connection() as conn:
            assert conn.execute("SELECT count(*) FROM convostore_messages").fetchone() == (1,)


def test_a_callers_pool_gets_its_connections_back_as_they_were(pg_schema_url: str) -> None:
    """A read in one snapshot (BEGIN READ ONLY, REPEATABLE READ) leaves the connection's
    settings as the caller's pool had them: the caller's own transactions may write."""
    from psycopg_pool import ConnectionPool

    with ConnectionPool(pg_schema_url, min_size=1, max_size=1, open=True) as pool:
        with pool.connection() as conn:
            settings = (conn.autocommit, conn.read_only, conn.isolation_level)
        with ConversationStore(pool=pool) as store:
            store.append_message(conversation_id="c", role="user", content="x", user_id="u")
            assert [m.content for m in store.get_messages(conversation_id="c", user_id="u")] == [
                "x"
            ]  # the owner checked and the page read in one snapshot
            with pool.connection() as conn:
                assert (conn.autocommit, conn.read_only, conn.isolation_level) == settings
                conn.execute("CREATE TEMP TABLE mine (a int)")
                conn.commit()


@pytest.mark.parametrize(
    ("attribute", "package"),
    [
        ("langgraph_checkpointer", "convostore-langgraph"),
        ("langgraph_store", "convostore-langgraph"),
        ("openai_session", "convostore-openai"),
        ("claude_session_store", "convostore-claude"),
        ("crewai_memory", "convostore-crewai"),
    ],
)
def test_entry_points_name_the_package_to_install(attribute: str, package: str) -> None:
    """In the core's own environment no adapter is installed: the error says what to install."""
    calls = {"openai_session": ("c",), "claude_session_store": (), "crewai_memory": ()}
    for store in (ConversationStore("memory://"), AsyncConversationStore("memory://")):
        with pytest.raises(ImportError, match=f"pip install {package}"):  # noqa: PT012
            entry = getattr(store, attribute)  # the LangGraph entry points are attributes
            if attribute in calls:
                entry(*calls[attribute])


def test_postgres_reads_are_read_only_and_writes_follow_on_the_same_pool(
    pg_schema_url: str,
) -> None:
    with ConversationStore(pg_schema_url) as store:
        with pytest.raises(StorageError, match="read-only transaction"):
            store.backend.read(lambda tx: tx.execute("CREATE TABLE nope (a int)"))
        store.append_message(conversation_id="c", role="user", content="written after a read")
        assert store.get_messages(conversation_id="c")[0].content == "written after a read"


def test_an_unregistered_view_is_an_import_error() -> None:
    with ConversationStore("memory://") as store, pytest.raises(ImportError, match="no_such_view"):
        store.view("no_such_view")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite:", "is not an SQLite URL this store reads; use sqlite:///relative"),
        ("sqlite:rel.db", "is not an SQLite URL"),
        ("sqlite://rel.db", "is not an SQLite URL"),  # two slashes: a host, not a path
        ("sqlite:///", "names no file"),
        ("sqlite:///a/directory/", "names no file"),
        ("sqlite:///no/such/dir/x.db", "the directory 'no/such/dir' does not exist"),
        ("mysql://x/y", "url scheme 'mysql' is not supported"),
        ("postgresql://[::1", "is not a valid URL"),
    ],
)
def test_bad_urls_name_the_url_and_the_accepted_forms(
    url: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MemoryValidationError, match=message):
        ConversationStore(url)
    assert list(tmp_path.iterdir()) == []  # nothing created, not even the writers' lock file


def test_a_closed_store_says_so_on_every_backend(backend_url: str) -> None:
    store = ConversationStore(backend_url)
    store.close()
    for call in (
        lambda: store.append_message(conversation_id="c", role="user", content="x"),
        lambda: store.append_messages(conversation_id="c", messages=[]),
        lambda: store.get_messages(conversation_id="c"),
        lambda: store.get_contents(conversation_id="c", last=0),
        store.list_conversations,
    ):
        with pytest.raises(ClosedError, match="the store is closed") as caught:
            call()
        assert not isinstance(caught.value, StorageError)
        assert isinstance(caught.value, ConvostoreError)
        assert isinstance(caught.value, RuntimeError)  # as the Agents SDK's closed sessions
