"""The ``convostore`` command with LangGraph data: ``migrate`` copies the adapter's tables so a
paused graph resumes on the destination; ``import-from langgraph`` brings in a ``SqliteSaver``
or ``PostgresSaver`` database; ``prune`` reaches threads through the checkpointer."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from convostore import ConversationStore
from convostore.commands.migrate import uncovered_tables
from convostore.components import registered_components
from convostore_langgraph import ConvostoreStore
from convostore_langgraph._schema import thread_heads
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
        count = sum(len(h) for h in expected)
    done = run("import-from", "langgraph", str(path), "--url", shared_url)
    assert f"imported 3 LangGraph threads\nimported {count} checkpoints\n" in done.stdout
    again = run("import-from", "langgraph", str(path), "--url", shared_url)  # nothing new
    assert "imported 0 LangGraph threads\nimported 0 checkpoints\n" in again.stdout
    with ConversationStore(shared_url) as store:
        saver = store.langgraph_checkpointer
        assert [_history(saver, c) for c in (PAUSED, DONE, NESTED)] == expected
        assert sorted(t for t, _ in store.backend.read(thread_heads)) == [
            "done",
            "nested",
            "paused",
        ]
        _resumes(saver)


def test_import_from_langgraph_resumes_with_what_is_new(tmp_path: Path, shared_url: str) -> None:
    """The source's thread went on after an import: importing again adds its new
    checkpoints only (the thread as the source has it), and says how many."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "checkpoints.sqlite"
    _sqlite_saver_file(path)
    run("import-from", "langgraph", str(path), "--url", shared_url)
    with SqliteSaver.from_conn_string(str(path)) as theirs:
        before = len(list(theirs.list(PAUSED)))
        three_node_graph().compile(checkpointer=theirs).invoke(Command(resume="yes"), PAUSED)
        expected = _history(theirs, PAUSED)
    more = run("import-from", "langgraph", str(path), "--url", shared_url).stdout
    assert f"imported 1 LangGraph threads\nimported {len(expected) - before} checkpoints" in more
    with ConversationStore(shared_url) as store:
        assert _history(store.langgraph_checkpointer, PAUSED) == expected
        shown = store.get_history(conversation_id="paused")
        assert [m.content for m in shown][-2:] == ["acted (yes)", "reflected"]


def test_import_from_langgraph_for_a_user(tmp_path: Path, shared_url: str) -> None:
    """``--user`` owns the threads' conversations; a thread whose conversation here another
    user owns, or whose metadata names another owner, is refused (exit 5)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "checkpoints.sqlite"
    _sqlite_saver_file(path)
    run("import-from", "langgraph", str(path), "--url", shared_url, "--user", "alice")
    with ConversationStore(shared_url) as store:
        owners = {store.get_conversation(conversation_id=t).user_id for t in ("done", "paused")}  # type: ignore[union-attr]
        assert owners == {"alice"}
    refused = run(
        "import-from", "langgraph", str(path), "--url", shared_url, "--user", "bob", code=5
    )
    assert "conversation_id 'done' belongs to another user, not to user_id 'bob'" in refused.stderr
    with SqliteSaver.from_conn_string(str(path)) as theirs:
        graph = three_node_graph().compile(checkpointer=theirs)
        graph.invoke(
            user("mine", 0), {"configurable": {"thread_id": "carol's", "user_id": "carol"}}
        )
    other = f"sqlite:///{tmp_path / 'other.db'}"
    named = run("import-from", "langgraph", str(path), "--url", other, "--user", "alice", code=5)
    assert 'thread "carol\'s"' in named.stderr
    assert "its metadata names 'carol' as the owner, not --user 'alice'" in named.stderr


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


def test_import_from_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    """On a terminal (a pseudo-terminal here) a Rich bar counts threads and checkpoints; in a
    pipe only the report is printed."""
    path = tmp_path / "checkpoints.sqlite"
    _sqlite_saver_file(path)
    args = [CONVOSTORE, "import-from", "langgraph", str(path)]
    piped = run(*args[1:], "--url", f"sqlite:///{tmp_path / 'piped.db'}")
    assert piped.stderr == "" and piped.stdout.startswith("imported 3 LangGraph threads\n")
    controller, terminal = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "CONVOSTORE_URL"}
    with subprocess.Popen(
        [*args, "--url", f"sqlite:///{tmp_path / 'tty.db'}"],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env={**env, "COLUMNS": "120", "TERM": "xterm"},
    ) as proc:
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal's last holder exited
                break
            if not chunk:
                break
            shown += chunk
        assert proc.wait(timeout=600) == 0
    os.close(controller)
    text = shown.decode(errors="replace")
    assert "LangGraph threads" in text and "3/3" in text and "\x1b[" in text
    assert "imported 3 LangGraph threads" in text
