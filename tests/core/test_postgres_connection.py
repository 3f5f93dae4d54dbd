"""PostgreSQL connections that fail: a wrong URL, a server that drops pooled connections, a
connection killed mid-statement. Each fails fast with the real cause, or recovers."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from convostore import ConversationStore, MemoryValidationError, StorageError
from convostore.spi import Tx
from psycopg import errors as pg_errors

PG_URL = os.environ.get("CONVOSTORE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture
def named_url(pg_schema_url: str) -> str:
    """The test schema's URL with an application_name that finds this store's connections."""
    return f"{pg_schema_url}&application_name=cs_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def busy_store(named_url: str) -> Iterator[ConversationStore]:
    """A store whose pool has grown past one connection, all idle."""
    with ConversationStore(named_url) as store:
        barrier = threading.Barrier(4)

        def hold() -> None:
            def read(tx: object) -> None:
                barrier.wait()  # four connections checked out at once

            store.backend.read(read)

        threads = [threading.Thread(target=hold) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        yield store


def _terminate(named_url: str) -> int:
    """End this store's server processes, as a restart or an idle timeout would, and wait
    until they are gone (pg_terminate_backend only signals them)."""
    name = named_url.rsplit("application_name=", 1)[1]
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            [name],
        ).fetchall()
        for _ in range(1000):
            left = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [name]
            ).fetchone()
            if left == (0,):
                break
            time.sleep(0.01)
    return len(rows)


def test_idle_connections_the_server_closed_are_replaced(
    busy_store: ConversationStore, named_url: str
) -> None:
    busy_store.append_message(conversation_id="c", role="user", content="before")
    assert _terminate(named_url) >= 4
    for i in range(12):  # every call succeeds: none gets a dead connection
        busy_store.append_message(conversation_id="c", role="user", content=f"after {i}")
        assert busy_store.get_conversation(conversation_id="c") is not None
        busy_store.get_messages(conversation_id="c", limit=1)
    meta = busy_store.get_conversation(conversation_id="c")
    assert meta is not None
    assert meta.message_count == 13


KILL = "SELECT pg_terminate_backend(pg_backend_pid())"


@pytest.mark.parametrize(
    ("kind", "retried"),
    [("read", True), ("read-one-statement", True), ("write", True), ("write-one-statement", False)],
)
def test_a_connection_lost_mid_call_is_run_again_only_where_that_is_safe(
    pg_schema_url: str, kind: str, retried: bool
) -> None:
    """Reads, and writes that had not reached COMMIT, run again once on a new connection; a
    one-statement write (it may have committed) raises with the server's reason."""
    attempts = []

    def call(tx: Tx) -> str:
        attempts.append(1)
        if len(attempts) == 1:
            tx.execute(KILL)
        return "done"

    with ConversationStore(pg_schema_url) as store:
        run = store.backend.read if kind.startswith("read") else store.backend.write
        one = kind.endswith("one-statement")
        if retried:
            assert run(call, single_statement=one) == "done"
            assert len(attempts) == 2
        else:
            with pytest.raises(StorageError, match="terminating connection") as caught:
                run(call, single_statement=one)
            assert isinstance(caught.value.__cause__, pg_errors.AdminShutdown)
            assert len(attempts) == 1
        store.append_message(conversation_id="c", role="user", content="the next call works")


@pytest.mark.parametrize("single_statement", [True, False])
def test_a_connection_lost_twice_reports_the_real_cause(
    pg_schema_url: str, single_statement: bool
) -> None:
    with ConversationStore(pg_schema_url) as store:
        with pytest.raises(StorageError, match="terminating connection") as caught:
            store.backend.read(lambda tx: tx.execute(KILL), single_statement=single_statement)
        assert isinstance(caught.value.__cause__, pg_errors.AdminShutdown)


def test_a_database_that_does_not_exist_fails_with_the_servers_reason(pg_schema_url: str) -> None:
    url = PG_URL.rsplit("/", 1)[0] + f"/nosuchdb_{uuid.uuid4().hex[:8]}"
    with pytest.raises(StorageError, match=r'database "nosuchdb_\w+" does not exist'):
        ConversationStore(url)


def test_a_closed_port_fails_with_the_servers_reason() -> None:
    with pytest.raises(StorageError, match="Connection refused"):
        ConversationStore("postgresql://postgres@127.0.0.1:1/test")


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://postgres@127.0.0.1:5432/test?connect_timeout=soon",
        "postgresql://postgres@127.0.0.1:5432/test?no_such_parameter=1",
        "postgresql://[::1",
    ],
)
def test_a_malformed_url_is_a_validation_error(url: str) -> None:
    with pytest.raises(MemoryValidationError, match="url"):
        ConversationStore(url)


def _prepared(store: ConversationStore) -> int:
    """How many statements the connection a read gets has prepared on the server."""
    rows = store.backend.read(lambda tx: tx.execute("SELECT count(*) FROM pg_prepared_statements"))
    return int(rows[0][0])


def test_statements_are_prepared_on_the_server_only_when_the_url_asks(
    pg_schema_url: str,
) -> None:
    """``?prepare_threshold=N`` is psycopg's setting (the URL's other parameters stay, here
    the test schema's ``options``); without it nothing is prepared, as a transaction-mode
    pooler needs."""
    with ConversationStore(f"{pg_schema_url}&prepare_threshold=0") as store:
        store.append_message(conversation_id="c", role="user", content="x")
        assert store.get_contents(conversation_id="c") == ["x"]
        assert _prepared(store) > 0
    with ConversationStore(pg_schema_url) as store:
        assert store.get_contents(conversation_id="c") == ["x"]  # the same schema
        for _ in range(10):
            store.get_messages(conversation_id="c")
        assert _prepared(store) == 0


@pytest.mark.parametrize(
    "value", ["soon", "-1", "1.5", "", "1" * 10, "9" * 400, "٣", "%00", "5%00", "%ED%A0%80"]
)
def test_a_bad_prepare_threshold_is_refused_before_connecting(value: str) -> None:
    with pytest.raises(MemoryValidationError, match="prepare_threshold must be a whole number"):
        ConversationStore(f"postgresql://postgres@127.0.0.1:1/test?prepare_threshold={value}")
