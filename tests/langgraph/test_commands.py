"""The ``convostore`` command with LangGraph data: ``migrate`` copies the adapter's tables so a
paused graph resumes on the destination; ``import-from langgraph`` brings in a ``SqliteSaver``
or ``PostgresSaver`` database; ``prune`` reaches threads through the checkpointer."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from convostore import ConversationStore
from convostore.components import registered_components
from convostore.transfer import uncovered_tables
from convostore_langgraph import ConvostoreStore
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.types import Command
from lg_graphs import graph_with_subgraph, three_node_graph, user

CONVOSTORE = str(Path(sys.executable).parent / "convostore")
PAUSED: Any = {"configurable": {"thread_id": "paused"}}
DONE: Any = {"configurable": {"thread_id": "done"}}
NESTED: Any = {"configurable": {"thread_id": "nested"}}


def run(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CONVOSTORE_URL"}
    done = subprocess.run(
        [CONVOSTORE, *args], capture_output=True, text=True, env=env, check=False, timeout=600
    )
    assert done.returncode == code, (done.stdout, done.stderr)
    return done


def _play(saver: BaseCheckpointSaver[Any]) -> None:
    """A finished thread, a thread paused at an interrupt, and one paused inside a subgraph."""
    graph = three_node_graph().compile(checkpointer=saver)
    graph.invoke(user("hello", 0), DONE)
    graph.invoke(user("and again", 1), DONE)
    graph.invoke(user("hello", 0), PAUSED)
    graph.invoke(user("please ask me", 1), PAUSED)
    graph_with_subgraph().compile(checkpointer=saver).invoke(user("ask inside", 0), NESTED)


def _history(saver: BaseCheckpointSaver[Any], config: Any) -> list[Any]:
    """Everything a saver returns for a thread: each checkpoint, its metadata, its parent and
    its pending writes."""
    return [
        (
            t.config["configurable"],
            t.checkpoint,
            t.metadata,
            t.parent_config and t.parent_config["configurable"],
            sorted(t.pending_writes or [], key=repr),
        )
        for t in saver.list(config)
    ]


def _resumes(saver: BaseCheckpointSaver[Any]) -> None:
    graph = three_node_graph().compile(checkpointer=saver)
    assert graph.get_state(PAUSED).next == ("act",)
    out = graph.invoke(Command(resume="yes"), PAUSED)
    assert [m.content for m in out["messages"]][-2:] == ["acted (yes)", "reflected"]
    nested = graph_with_subgraph().compile(checkpointer=saver)
    out = nested.invoke(Command(resume="inner ok"), NESTED)
    assert [m.content for m in out["messages"]][-2:] == ["acted (inner ok)", "reflected"]


@pytest.mark.parametrize("direction", ["sqlite-postgres", "postgres-sqlite"])
def test_after_migrate_a_paused_graph_resumes_on_the_destination(
    direction: str, tmp_path: Path, pg_schema_url: str
) -> None:
    sqlite = f"sqlite:///{tmp_path / 'lg.db'}"
    src, dst = (
        (sqlite, pg_schema_url) if direction == "sqlite-postgres" else (pg_schema_url, sqlite)
    )
    with ConversationStore(src) as store:
        _play(store.langgraph_checkpointer)
        ConvostoreStore(store).put(("users", "u1"), "prefs", {"tone": "brief", "nul": "a\x00b"})
        store.append_message(conversation_id="chat", role="user", content="kept too")
        expected = [_history(store.langgraph_checkpointer, c) for c in (PAUSED, DONE, NESTED)]
    done = run("migrate", src, dst)
    assert "lg_checkpoints" in done.stdout and "verified" in done.stdout
    with ConversationStore(dst) as store:
        saver = store.langgraph_checkpointer
        assert [_history(saver, c) for c in (PAUSED, DONE, NESTED)] == expected
        item = ConvostoreStore(store).get(("users", "u1"), "prefs")
        assert item is not None and item.value == {"tone": "brief", "nul": "a\x00b"}
        assert store.get_history(conversation_id="chat")[0].content == "kept too"
        _resumes(saver)


def test_every_langgraph_table_is_in_the_component(shared_url: str) -> None:
    with ConversationStore(shared_url) as store:
        _play(store.langgraph_checkpointer)
        ConvostoreStore(store)
        assert "convostore-langgraph" in [c.name for c in registered_components()]
        assert uncovered_tables(store.backend) == []


def _sqlite_saver_file(path: Path) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(str(path)) as theirs:
        _play(theirs)


def test_import_from_a_sqlite_saver(tmp_path: Path, shared_url: str) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "checkpoints.sqlite"
    _sqlite_saver_file(path)
    with SqliteSaver.from_conn_string(str(path)) as theirs:
        expected = [_history(theirs, c) for c in (PAUSED, DONE, NESTED)]
    done = run("import-from", "langgraph", str(path), "--url", shared_url)
    assert "imported 3 LangGraph threads" in done.stdout
    run("import-from", "langgraph", str(path), "--url", shared_url)  # again: the same ids
    with ConversationStore(shared_url) as store:
        saver = store.langgraph_checkpointer
        assert [_history(saver, c) for c in (PAUSED, DONE, NESTED)] == expected
        _resumes(saver)


def test_import_from_a_postgres_saver(pg_schema_url: str, tmp_path: Path) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(pg_schema_url) as theirs:
        theirs.setup()
        _play(theirs)
        expected = [_history(theirs, c) for c in (PAUSED, DONE, NESTED)]
    dst = f"sqlite:///{tmp_path / 'ours.db'}"
    run("import-from", "langgraph", pg_schema_url, "--url", dst)
    with ConversationStore(dst) as store:
        saver = store.langgraph_checkpointer
        assert [_history(saver, c) for c in (PAUSED, DONE, NESTED)] == expected
        _resumes(saver)


def test_import_from_bad_sources(tmp_path: Path) -> None:
    dst = f"sqlite:///{tmp_path / 'ours.db'}"
    missing = run("import-from", "langgraph", str(tmp_path / "none.sqlite"), "--url", dst, code=3)
    assert "there is no file" in missing.stderr
    with ConversationStore(f"sqlite:///{tmp_path / 'not_lg.db'}"):
        pass
    foreign = run("import-from", "langgraph", str(tmp_path / "not_lg.db"), "--url", dst, code=3)
    assert "not a LangGraph SqliteSaver database" in foreign.stderr
    kind = run("import-from", "nothing", "x", "--url", dst, code=3)
    assert "is not an importer" in kind.stderr
    absent = run("import-from", "openai-sqlite", "x", "--url", dst, code=6)
    assert "pip install convostore-openai" in absent.stderr


def _old_checkpoint_id(ms: int) -> str:
    """A UUIDv6 checkpoint id taken at ``ms`` (epoch milliseconds)."""
    ticks = ms * 10_000 + 0x01B21DD213814000
    high, mid, low = ticks >> 28, (ticks >> 12) & 0xFFFF, ticks & 0x0FFF
    value = (high << 96) | (mid << 80) | (0x6 << 76) | (low << 64) | (0b10 << 62) | 1
    return str(uuid.UUID(int=value))


def test_prune_reaches_langgraph_threads(shared_url: str) -> None:
    with ConversationStore(shared_url) as store:
        saver = store.langgraph_checkpointer
        _play(saver)
        old = empty_checkpoint()
        old["id"] = _old_checkpoint_id(1_600_000_000_000)  # 2020
        saver.put({"configurable": {"thread_id": "ancient", "checkpoint_ns": ""}}, old, {}, {})
        before = len(list(saver.list(PAUSED)))
    dry = run("prune", "--url", shared_url, "--older-than", "30d", "--dry-run").stdout
    assert "would delete 1 LangGraph threads" in dry
    out = run("prune", "--url", shared_url, "--older-than", "30d", "--keep-last", "5").stdout
    assert "deleted 1 LangGraph threads" in out
    assert "deleted 3 LangGraph threads cut to their latest checkpoint" in out
    with ConversationStore(shared_url) as store:
        saver = store.langgraph_checkpointer
        assert list(saver.list({"configurable": {"thread_id": "ancient"}})) == []
        assert before > 1 and len(list(saver.list(PAUSED))) == 1
        _resumes(saver)
