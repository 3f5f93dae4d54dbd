"""Hostile input at the checkpointer's entry points, on every backend: ids with NUL, lone
surrogates or 1 MiB; huge integers; values nested deeper than Python recurses; another thread's
data in a filter. Each is the documented ``MemoryValidationError`` (a ``ValueError``) before
anything is written, the same on memory, SQLite and PostgreSQL; never a raw driver error or a
``StorageError``. (The store's cases are in ``test_store_hostile.py``.)"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from convostore import ConversationStore, MemoryValidationError
from convostore_langgraph import ConvostoreSaver
from langgraph.checkpoint.base import empty_checkpoint
from lg_graphs import three_node_graph, user

BAD_IDS: list[tuple[Any, str]] = [
    ("a\x00b", "must not contain NUL"),
    ("\ud800", "lone surrogate"),
    ("x" * (1 << 20), "must be 1 to 256 bytes"),
]
BAD_NS: list[tuple[Any, str]] = [
    ("a\x00b", "must not contain NUL"),
    ("\udfff", "lone surrogate"),
    ("n" * 4096, "must be 1 to 2048 bytes"),
]


def _cfg(thread_id: Any = "t", ns: Any = "", checkpoint_id: Any = None) -> Any:
    conf: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def _rows(saver: ConvostoreSaver) -> list[Any]:
    return saver.backend.read(
        lambda tx: (
            tx.execute("SELECT thread_id, ns, checkpoint_id FROM lg_checkpoints")
            + tx.execute("SELECT thread_id, checkpoint_id, task_id FROM lg_writes")
        )
    )


@pytest.fixture
def seeded(saver: ConvostoreSaver) -> ConvostoreSaver:
    graph = three_node_graph().compile(checkpointer=saver)
    graph.invoke(user("hi", 0), {"configurable": {"thread_id": "kept"}})
    return saver


def _every_entry_point(saver: ConvostoreSaver, **cfg: Any) -> list[Any]:
    config = _cfg(**cfg)
    ckpt = empty_checkpoint()
    return [
        lambda: saver.get_tuple(config),
        lambda: list(saver.list(config)),
        lambda: saver.put(config, ckpt, {}, {}),
        lambda: saver.put_writes(
            {**config, "configurable": {**config["configurable"], "checkpoint_id": "c"}},
            [("x", 1)],
            "task",
        ),
    ]


@pytest.mark.parametrize(("value", "message"), BAD_IDS)
def test_bad_thread_ids_are_refused_everywhere(
    seeded: ConvostoreSaver, value: Any, message: str
) -> None:
    before = _rows(seeded)
    for call in _every_entry_point(seeded, thread_id=value):
        with pytest.raises(MemoryValidationError, match=f"thread_id .*{message}"):
            call()
    for call in (
        lambda: seeded.delete_thread(value),
        lambda: seeded.copy_thread("kept", value),
        lambda: seeded.prune([value]),
    ):
        with pytest.raises(MemoryValidationError, match=message):
            call()
    assert _rows(seeded) == before


@pytest.mark.parametrize(("value", "message"), BAD_NS)
def test_bad_namespaces_are_refused(seeded: ConvostoreSaver, value: Any, message: str) -> None:
    before = _rows(seeded)
    for call in _every_entry_point(seeded, ns=value):
        with pytest.raises(MemoryValidationError, match=f"checkpoint_ns .*{message}"):
            call()
    assert _rows(seeded) == before


@pytest.mark.parametrize(("value", "message"), BAD_IDS)
def test_bad_checkpoint_ids_are_refused(seeded: ConvostoreSaver, value: Any, message: str) -> None:
    before = _rows(seeded)
    with pytest.raises(MemoryValidationError, match=message):
        seeded.get_tuple(_cfg(checkpoint_id=value))
    with pytest.raises(MemoryValidationError, match=message):
        list(seeded.list(None, before=_cfg(checkpoint_id=value)))
    ckpt = {**empty_checkpoint(), "id": value}
    with pytest.raises(MemoryValidationError, match=message):
        seeded.put(_cfg(), ckpt, {}, {})  # type: ignore[arg-type]
    assert _rows(seeded) == before


def test_thread_ids_langgraph_accepts_still_work(saver: ConvostoreSaver) -> None:
    """LangGraph configs may carry an int or a UUID: stored as their text, as LangGraph does."""
    graph = three_node_graph().compile(checkpointer=saver)
    tid = uuid.uuid4()
    for thread_id in (42, tid, "é" * 128):
        graph.invoke(user("hi", 0), {"configurable": {"thread_id": thread_id}})
        assert saver.get_tuple({"configurable": {"thread_id": str(thread_id)}}) is not None


@pytest.mark.parametrize("limit", [2**63, 2**70, -(2**70), True, "10"])
def test_huge_or_wrong_limits_are_refused(seeded: ConvostoreSaver, limit: Any) -> None:
    with pytest.raises(MemoryValidationError, match="limit"):
        list(seeded.list(None, limit=limit))


def test_the_largest_limit_lists_everything(seeded: ConvostoreSaver) -> None:
    assert len(list(seeded.list(None, limit=2**63 - 1))) == len(list(seeded.list(None)))


def _deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


def test_values_nested_deeper_than_python_recurses_are_refused(seeded: ConvostoreSaver) -> None:
    before = _rows(seeded)
    ckpt = empty_checkpoint()
    ckpt["channel_values"] = {"deep": _deep(10_000)}
    ckpt["channel_versions"] = {"deep": "1"}
    with pytest.raises(MemoryValidationError, match="nested too deeply"):
        seeded.put(_cfg(), ckpt, {}, {"deep": "1"})
    with pytest.raises(MemoryValidationError, match="nested too deeply"):
        seeded.put(_cfg(), empty_checkpoint(), {"deep": _deep(10_000)}, {})
    with pytest.raises(MemoryValidationError, match=r"writes\[1\]: nested too deeply"):
        seeded.put_writes(_cfg(checkpoint_id="c"), [("a", 1), ("b", _deep(10_000))], "task")
    assert _rows(seeded) == before


def test_one_threads_metadata_never_breaks_another_threads_filter(
    saver: ConvostoreSaver,
) -> None:
    """A NUL or a lone surrogate deep in one thread's metadata: filtering every thread still
    works (PostgreSQL refused to cast such text to JSONB, failing the query for everyone)."""
    ckpt = empty_checkpoint()
    saver.put(_cfg("evil"), ckpt, {"source": "input", "x": {"y": ["nul \x00", "\ud800"]}}, {})
    ckpt2 = empty_checkpoint()
    saver.put(_cfg("good"), ckpt2, {"source": "loop", "step": 1, "who": "a_b%c"}, {})
    found = [
        t.config["configurable"]["thread_id"] for t in saver.list(None, filter={"source": "loop"})
    ]
    assert found == ["good"]
    assert [
        t.config["configurable"]["thread_id"] for t in saver.list(None, filter={"who": "a_b%c"})
    ] == ["good"]
    assert list(saver.list(None, filter={"who": "a_bXc"})) == []  # LIKE's wildcards are escaped
    evil = list(saver.list(None, filter={"x": {"y": ["nul \x00", "\ud800"]}}))
    assert [t.config["configurable"]["thread_id"] for t in evil] == ["evil"]
    assert evil[0].metadata["x"] == {"y": ["nul \x00", "\ud800"]}


def test_a_filter_matches_top_level_keys_only(saver: ConvostoreSaver) -> None:
    saver.put(_cfg("nested"), empty_checkpoint(), {"inner": {"step": 1}}, {})
    saver.put(_cfg("top"), empty_checkpoint(), {"step": 1}, {})
    assert [
        t.config["configurable"]["thread_id"] for t in saver.list(None, filter={"step": 1})
    ] == ["top"]


def _copies(path: Path, marker: str) -> int:
    return sum(f.read_bytes().count(marker.encode()) for f in path.parent.glob(path.name + "*"))


def test_delete_thread_leaves_no_copy_in_the_files(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    marker = uuid.uuid4().hex
    with (
        ConversationStore(f"sqlite:///{db}") as other,
        ConversationStore(f"sqlite:///{db}") as store,
    ):
        saver = ConvostoreSaver(store)
        graph = three_node_graph().compile(checkpointer=saver)
        cfg: Any = {"configurable": {"thread_id": "secret"}}
        graph.invoke(user(f"my code is {marker} " * 20, 0), cfg)
        graph.invoke(user("kept thread", 0), {"configurable": {"thread_id": "kept"}})
        assert _copies(db, marker)
        saver.delete_thread("secret")
        assert _copies(db, marker) == 0
        assert (
            other.backend.read(lambda tx: tx.execute("SELECT count(*) FROM lg_checkpoints"))[0][0]
            > 0
        )
    control = sqlite3.connect(db)
    assert control.execute("PRAGMA secure_delete").fetchone() is not None
