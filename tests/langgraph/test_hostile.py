"""Hostile input at the checkpointer's entry points, on every backend, by entry point: ids with
NUL, lone surrogates or 1 MiB; huge integers; values nested deeper than Python recurses; another
thread's data in a filter; filter keys shaped like SQL; erasure. Each bad input is the
documented ``MemoryValidationError`` (a ``ValueError``) before anything is written, the same on
memory, SQLite and PostgreSQL; never a raw driver error or a ``StorageError``. Values planted in
the database that name a callable, or are a pickle, are refused by name when read
(``TypeNotAllowedError``) and never constructed. (The store's cases are in
``test_store_hostile.py``.)"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import secrets
import shlex
import shutil
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from click.testing import CliRunner, Result
from convostore import ConversationStore, MemoryValidationError
from convostore.commands.cli import app
from convostore_langgraph import ConvostoreSaver, TypeNotAllowedError, search_history_tool
from convostore_langgraph._codec import CHECKPOINT_NS_MAX_BYTES, THREAD_ID_MAX_BYTES
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from lg_graphs import three_node_graph, user

BAD_IDS: list[tuple[Any, str]] = [
    ("a\x00b", "must not contain NUL"),
    ("\ud800", "lone surrogate"),
    ("x" * (1 << 20), "must be 1 to 256 bytes"),
]
BAD_NS: list[tuple[Any, str]] = [
    ("a\x00b", "must not contain NUL"),
    ("\udfff", "lone surrogate"),
    ("n" * (CHECKPOINT_NS_MAX_BYTES + 1), f"must be 1 to {CHECKPOINT_NS_MAX_BYTES} bytes"),
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
            + tx.execute("SELECT thread_id, channel, version FROM lg_blobs")
        )
    )


def _refused(saver: ConvostoreSaver, calls: list[Callable[[], Any]], message: str) -> None:
    before = _rows(saver)
    for call in calls:
        with pytest.raises(MemoryValidationError, match=message):
            call()
    assert _rows(saver) == before


@pytest.fixture
def seeded(saver: ConvostoreSaver) -> ConvostoreSaver:
    graph = three_node_graph().compile(checkpointer=saver)
    graph.invoke(user("hi", 0), {"configurable": {"thread_id": "kept"}})
    return saver


def _with_channel(channel: str, version: str, value: Any) -> Any:
    ckpt = empty_checkpoint()
    ckpt["channel_values"] = {channel: value}
    ckpt["channel_versions"] = {channel: version}
    return ckpt


# -- ids in a config: every entry point -------------------------------------------------------


def _every_entry_point(saver: ConvostoreSaver, **cfg: Any) -> list[Callable[[], Any]]:
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
        lambda: saver.get_delta_channel_history(config=config, channels=["messages"]),
    ]


@pytest.mark.parametrize(("value", "message"), BAD_IDS)
def test_bad_thread_ids_are_refused_everywhere(
    seeded: ConvostoreSaver, value: Any, message: str
) -> None:
    _refused(seeded, _every_entry_point(seeded, thread_id=value), f"thread_id .*{message}")
    calls: list[Callable[[], Any]] = [
        lambda: seeded.delete_thread(value),
        lambda: seeded.copy_thread("kept", value),
        lambda: seeded.prune([value]),
    ]
    _refused(seeded, calls, message)


@pytest.mark.parametrize(("value", "message"), BAD_NS)
def test_bad_namespaces_are_refused(seeded: ConvostoreSaver, value: Any, message: str) -> None:
    _refused(seeded, _every_entry_point(seeded, ns=value), f"checkpoint_ns .*{message}")


@pytest.mark.parametrize(("value", "message"), BAD_IDS)
def test_bad_checkpoint_ids_are_refused(seeded: ConvostoreSaver, value: Any, message: str) -> None:
    ckpt = {**empty_checkpoint(), "id": value}
    calls: list[Callable[[], Any]] = [
        lambda: seeded.get_tuple(_cfg(checkpoint_id=value)),
        lambda: list(seeded.list(None, before=_cfg(checkpoint_id=value))),
        lambda: seeded.put(_cfg(), ckpt, {}, {}),  # type: ignore[arg-type]
        lambda: seeded.put(_cfg(checkpoint_id=value), empty_checkpoint(), {}, {}),
        lambda: seeded.put_writes(_cfg(checkpoint_id=value), [("x", 1)], "task"),
    ]
    _refused(seeded, calls, message)


def test_thread_ids_langgraph_accepts_still_work(saver: ConvostoreSaver) -> None:
    """LangGraph configs may carry an int or a UUID: stored as their text, as LangGraph's own
    SqliteSaver and PostgresSaver do."""
    graph = three_node_graph().compile(checkpointer=saver)
    tid = uuid.uuid4()
    for thread_id in (42, tid, "é" * 128, "user:chat"):
        graph.invoke(user("hi", 0), {"configurable": {"thread_id": thread_id}})
        assert saver.get_tuple({"configurable": {"thread_id": str(thread_id)}}) is not None


def test_the_widest_keys_fit_every_backend(saver: ConvostoreSaver) -> None:
    """Every id at its documented limit, incompressible: PostgreSQL refused a 2,048-byte
    checkpoint_ns with 256-byte ids ("index row size exceeds btree maximum 2704")."""

    def at_limit(size: int) -> str:
        return secrets.token_hex(size // 2)

    thread_id, ns, cid = (at_limit(n) for n in (256, CHECKPOINT_NS_MAX_BYTES, 256))
    channel, version, task_id = (at_limit(THREAD_ID_MAX_BYTES) for _ in range(3))
    ckpt = {**_with_channel(channel, version, at_limit(2000)), "id": cid}
    run_id = at_limit(256)
    stored = saver.put(
        _cfg(thread_id, ns, at_limit(256)), ckpt, {"run_id": run_id}, ckpt["channel_versions"]
    )  # type: ignore[arg-type]
    saver.put_writes(stored, [(at_limit(256), "value")], task_id, at_limit(5000))
    got = saver.get_tuple(stored)
    assert got is not None and got.checkpoint["channel_values"] == ckpt["channel_values"]
    assert got.pending_writes and got.pending_writes[0][0] == task_id
    saver.delete_for_runs([run_id])
    assert saver.get_tuple(stored) is None


# -- put -----------------------------------------------------------------------------------


def _deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(("value", "message"), BAD_IDS)
def test_put_refuses_bad_channel_names_versions_and_run_ids(
    seeded: ConvostoreSaver, value: Any, message: str
) -> None:
    big = "x" * 1000  # stored in its own row, keyed by channel and version
    calls: list[Callable[[], Any]] = [
        lambda: seeded.put(_cfg(), _with_channel(value, "1", big), {}, {value: "1"}),
        lambda: seeded.put(_cfg(), _with_channel("c", value, big), {}, {"c": value}),
    ]
    _refused(seeded, calls, message)
    if "NUL" not in message:  # LangGraph itself strips NUL from metadata strings
        calls = [lambda: seeded.put(_cfg(), empty_checkpoint(), {"run_id": value}, {})]
        _refused(seeded, calls, f"run_id.*{message}")


def test_put_refuses_a_lone_surrogate_the_serializer_cannot_take(seeded: ConvostoreSaver) -> None:
    """A small value lives in the checkpoint row, packed with msgpack: a channel name with a
    lone surrogate was a raw TypeError."""
    calls: list[Callable[[], Any]] = [
        lambda: seeded.put(_cfg(), _with_channel("c\ud800", "1", 1), {}, {"c\ud800": "1"}),
        lambda: seeded.put(_cfg(), _with_channel("c\ud800", "1", "small"), {}, {"c\ud800": "1"}),
    ]
    _refused(seeded, calls, "checkpoint: a lone surrogate")


def test_values_nested_deeper_than_python_recurses_are_refused(seeded: ConvostoreSaver) -> None:
    ckpt = _with_channel("deep", "1", _deep(10_000))
    calls: list[Callable[[], Any]] = [
        lambda: seeded.put(_cfg(), ckpt, {}, {"deep": "1"}),
        lambda: seeded.put(_cfg(), empty_checkpoint(), {"deep": _deep(10_000)}, {}),
    ]
    _refused(seeded, calls, "nested too deeply")


# -- put_writes ----------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "message"), BAD_IDS)
def test_put_writes_refuses_bad_task_ids_and_channels(
    seeded: ConvostoreSaver, value: Any, message: str
) -> None:
    cfg = _cfg(checkpoint_id="c")
    calls: list[Callable[[], Any]] = [
        lambda: seeded.put_writes(cfg, [("x", 1)], value),
        lambda: seeded.put_writes(cfg, [("x", 1), (value, 2)], "task"),
    ]
    _refused(seeded, calls, message)
    if "bytes" not in message:  # a task path has no length limit, only what both databases hold
        _refused(seeded, [lambda: seeded.put_writes(cfg, [("x", 1)], "task", value)], message)


def test_put_writes_refuses_values_nested_too_deeply(seeded: ConvostoreSaver) -> None:
    call = lambda: seeded.put_writes(  # noqa: E731
        _cfg(checkpoint_id="c"), [("a", 1), ("b", _deep(10_000))], "task"
    )
    _refused(seeded, [call], r"writes\[1\]: nested too deeply")


# -- list ----------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [2**63, 2**70, -(2**70), True, "10"])
def test_huge_or_wrong_limits_are_refused(seeded: ConvostoreSaver, limit: Any) -> None:
    with pytest.raises(MemoryValidationError, match="limit"):
        list(seeded.list(None, limit=limit))


def test_the_largest_limit_lists_everything(seeded: ConvostoreSaver) -> None:
    assert len(list(seeded.list(None, limit=2**63 - 1))) == len(list(seeded.list(None)))


@pytest.mark.parametrize("before", [2**70, "\ud800", "a\x00"])
def test_bad_before_ids_are_refused(seeded: ConvostoreSaver, before: Any) -> None:
    with pytest.raises(MemoryValidationError, match="before"):
        list(seeded.list(None, before={"configurable": {"checkpoint_id": before}}))


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
    saver.put(_cfg("odd"), empty_checkpoint(), {"name": "é\ud800"}, {})  # stored escaped
    odd = [
        t.config["configurable"]["thread_id"] for t in saver.list(None, filter={"name": "é\ud800"})
    ]
    assert odd == ["odd"]


METADATA: dict[str, dict[str, Any]] = {
    "int": {"step": 1, "name": "plain"},
    "float": {"step": 1.0, "name": "é"},
    "bool": {"step": True, "name": "É"},
    "odd": {"step": 2, "name": "é", "bad": "\ud800", "nul": "a\x00b"},
    "obj": {"step": 3, "obj": {"a": 1, "b": [1, 2]}, "name": 'quote " and \\ back'},
    "nested": {"inner": {"step": 1, "name": "é"}},
}
FILTERS: list[dict[str, Any]] = [
    {"step": 1},
    {"step": 1.0},
    {"step": True},
    {"step": 2, "name": "é"},
    {"name": "é"},
    {"name": "e"},
    {"name": "PLAIN"},
    {"name": 'quote " and \\ back'},
    {"obj": {"b": [1, 2], "a": 1}},
    {"nul": "a\x00b"},
    {"missing": None},
    {"step": None},
]


@pytest.mark.parametrize("query", FILTERS, ids=[str(i) for i in range(len(FILTERS))])
def test_filters_match_what_in_memory_saver_matches(saver: ConvostoreSaver, query: Any) -> None:
    """Equality of top-level values with Python's rules (1 == 1.0 == True, objects by
    structure), whatever the stored text (escaped surrogates, NUL) and on every backend."""
    reference = InMemorySaver()
    for name, metadata in METADATA.items():
        for s in (saver, reference):
            s.put(_cfg(name), empty_checkpoint(), metadata, {})  # type: ignore[arg-type]

    def found(s: Any) -> set[str]:
        return {t.config["configurable"]["thread_id"] for t in s.list(None, filter=query)}

    assert found(saver) == found(reference)


def test_huge_integers_in_metadata_and_filters(saver: ConvostoreSaver) -> None:
    """Stored as JSON (InMemorySaver's serde refuses them); a filter compares them exactly."""
    saver.put(_cfg("big"), empty_checkpoint(), {"n": 2**70}, {})
    saver.put(_cfg("near"), empty_checkpoint(), {"n": 2**70 + 1}, {})
    for n, thread in ((2**70, "big"), (2**70 + 1, "near")):
        found = [t.config["configurable"]["thread_id"] for t in saver.list(None, filter={"n": n})]
        assert found == [thread]
    assert list(saver.list(None, filter={"n": 2**200})) == []


def test_a_filter_matches_top_level_keys_only(saver: ConvostoreSaver) -> None:
    saver.put(_cfg("nested"), empty_checkpoint(), {"inner": {"step": 1}}, {})
    saver.put(_cfg("top"), empty_checkpoint(), {"step": 1}, {})
    assert [
        t.config["configurable"]["thread_id"] for t in saver.list(None, filter={"step": 1})
    ] == ["top"]


def test_checkpoint_search_sql_injection_prevention(saver: ConvostoreSaver) -> None:
    """Ported from LangGraph's SqliteSaver tests (libs/checkpoint-sqlite/tests/test_sqlite.py):
    a filter key that can only be an attack on a query is ``ValueError: Invalid filter key``.
    Keys never reach SQL here; one that is merely odd is a field name no row has."""
    metadata_public: Any = {"access": "public", "data": "public information"}
    metadata_private: Any = {
        "access": "private",
        "data": "secret information",
        "password": "secret123",
    }
    saver.put(_cfg("thread-public"), empty_checkpoint(), metadata_public, {})
    saver.put(_cfg("thread-private"), empty_checkpoint(), metadata_private, {})
    normal_results: Any = list(saver.list(None, filter={"access": "public"}))
    assert len(normal_results) == 1
    assert normal_results[0].metadata["access"] == "public"
    malicious_key = "access') = 'public' OR '1'='1' OR json_extract(metadata, '$."
    with pytest.raises(ValueError, match="Invalid filter key"):
        list(saver.list(None, filter={malicious_key: "dummy"}))
    for odd in ("x') OR '1'='1", "x') OR 1=1 --", "'; DROP TABLE lg_checkpoints; --"):
        assert list(saver.list(None, filter={odd: "dummy"})) == []
    assert len(list(saver.list(None))) == 2


def test_metadata_filter_keys_with_hyphens_and_digits(saver: ConvostoreSaver) -> None:
    """Ported from LangGraph's SqliteSaver tests: keys with hyphens or a leading digit, and a
    dotted key read as a path into nested metadata."""
    metadata: Any = {
        "access-level": "public",
        "user": {"access-level": "nested", "123abc": "ok2"},
        "123abc": "ok",
    }
    saver.put(_cfg("thread-hyphen-digit"), empty_checkpoint(), metadata, {})
    for query in (
        {"access-level": "public"},
        {"user.access-level": "nested"},
        {"123abc": "ok"},
        {"user.123abc": "ok2"},
    ):
        assert len(list(saver.list(None, filter=query))) == 1, query


def test_a_dotted_key_reads_the_field_of_that_name_first(saver: ConvostoreSaver) -> None:
    """The store's rule: the field named exactly so when the metadata has one, else the path."""
    both: Any = {"a.b": 1, "a": {"b": 2}}
    path: Any = {"a": {"b": 2, "n": 7}}
    saver.put(_cfg("both"), empty_checkpoint(), both, {})
    saver.put(_cfg("path"), empty_checkpoint(), path, {})

    def found(query: dict[str, Any]) -> set[str]:
        return {t.config["configurable"]["thread_id"] for t in saver.list(None, filter=query)}

    assert found({"a.b": 1}) == {"both"}
    assert found({"a.b": 2}) == {"path"}
    assert found({"a.n": 7}) == {"path"} and found({"a.n": None}) == {"both"}
    assert found({"a.b.c": None}) == {"both", "path"}  # a missing path is None, as a missing key


@pytest.mark.parametrize("key", ["", ".", "a..b", ".a", "a.", "a\x00", "\ud800"])
def test_a_filter_key_that_can_only_be_a_mistake_is_refused(
    seeded: ConvostoreSaver, key: str
) -> None:
    """The store's rule for its filter keys (``test_store_hostile.py``), for the saver's too."""
    with pytest.raises(ValueError, match="Invalid filter key"):
        list(seeded.list(None, filter={key: "x"}))
    with pytest.raises(TypeError, match="must be strings"):
        list(seeded.list(None, filter={1: "x"}))  # type: ignore[dict-item]


def test_a_filter_nested_too_deeply_is_refused(seeded: ConvostoreSaver) -> None:
    with pytest.raises(MemoryValidationError, match="filter: nested too deeply"):
        list(seeded.list(None, filter={"x": _deep(10_000)}))


# -- delete_for_runs, get_delta_channel_history ----------------------------------------------


@pytest.mark.parametrize(("value", "message"), BAD_IDS)
def test_bad_run_ids_and_channel_names_are_refused(
    seeded: ConvostoreSaver, value: Any, message: str
) -> None:
    cfg = _cfg("kept")
    calls: list[Callable[[], Any]] = [
        lambda: seeded.delete_for_runs(["fine", value]),
        lambda: seeded.get_delta_channel_history(config=cfg, channels=["messages", value]),
    ]
    _refused(seeded, calls, message)


# -- stored values the serializer does not construct ----------------------------------------


class _Exploit:
    """A pickle that runs ``command`` when loaded."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.system, (self.command,)


def _planted(kind: str, command: str) -> tuple[str, bytes]:
    """A stored (type, bytes) whose loading by LangGraph's permissive serializer (or by pickle)
    calls ``os.system(command)``: msgpack with the extension type that names a callable."""
    if kind == "pickle":
        return "pickle", pickle.dumps(_Exploit(command))
    return "msgpack", ormsgpack.packb(ormsgpack.Ext(0, ormsgpack.packb(["os", "system", command])))


def _plant(saver: ConvostoreSaver, where: str, stored: tuple[str, bytes], cid: str) -> None:
    """Write ``stored`` into the thread 'kept' with SQL, as whoever could write the database
    could: as the checkpoint row itself, as the messages' values, or as a pending write."""

    def write(tx: Any) -> None:
        if where == "checkpoint row":
            tx.execute(
                "UPDATE lg_checkpoints SET ctype = ?, checkpoint = ? WHERE thread_id = 'kept'",
                list(stored),
            )
        elif where == "channel value":
            assert tx.execute(
                "SELECT count(*) FROM lg_blobs WHERE thread_id = 'kept' AND channel = 'messages'"
            )[0][0]
            tx.execute(
                "UPDATE lg_blobs SET type = ?, data = ?, base = NULL, keep = NULL"
                " WHERE thread_id = 'kept' AND channel = 'messages'",
                list(stored),
            )
        else:
            tx.execute(
                "INSERT INTO lg_writes (thread_id, ns, checkpoint_id, task_id, idx, task_path,"
                " channel, type, data) VALUES ('kept', '', ?, 'planted', 0, '', 'messages', ?, ?)",
                [cid, *stored],
            )

    saver.backend.write(write)


@pytest.mark.parametrize("kind", ["msgpack", "pickle"])
@pytest.mark.parametrize("where", ["checkpoint row", "channel value", "pending write"])
def test_a_planted_callable_is_refused_and_never_run(
    seeded: ConvostoreSaver, tmp_path: Path, where: str, kind: str
) -> None:
    """Someone who can write the database plants a value naming ``os.system`` (or a pickle):
    every read refuses it with ``TypeNotAllowedError``, naming the type and the checkpoint,
    and the command never runs (LangGraph's default serializer would import and call it)."""
    ran = tmp_path / "ran"
    cid = seeded.get_tuple(_cfg("kept")).checkpoint["id"]  # type: ignore[union-attr]
    _plant(seeded, where, _planted(kind, f"touch {shlex.quote(str(ran))}"), cid)
    reader = ConvostoreSaver(seeded.store, cache_size=0)
    graph = three_node_graph().compile(checkpointer=reader)
    reads: list[Callable[[], Any]] = [
        lambda: reader.get_tuple(_cfg("kept")),
        lambda: list(reader.list(_cfg("kept"), limit=1)),
        lambda: asyncio.run(reader.aget_tuple(_cfg("kept"))),
        lambda: graph.invoke(user("more", 1), {"configurable": {"thread_id": "kept"}}),
    ]
    for read in reads:
        with pytest.raises(TypeNotAllowedError) as refused:
            read()
        error = refused.value
        assert error.type_name == ("os.system" if kind == "msgpack" else "pickle")
        assert (error.thread_id, error.checkpoint_id) == ("kept", cid)
        assert error.type_name in str(error) and repr(cid) in str(error)
    assert not ran.exists()


# -- erasure ---------------------------------------------------------------------------------


def _copies(path: Path, marker: str) -> int:
    return sum(f.read_bytes().count(marker.encode()) for f in path.parent.glob(path.name + "*"))


def _secret_thread(db: Path, saver: ConvostoreSaver, marker: str) -> None:
    graph = three_node_graph().compile(checkpointer=saver)
    run: Any = {"configurable": {"thread_id": "secret", "run_id": str(uuid.uuid4())}}
    graph.invoke(user(f"my code is {marker} " * 20, 0), run)
    graph.invoke(user("kept thread", 0), {"configurable": {"thread_id": "kept"}})
    assert _copies(db, marker)


ERASING: dict[str, Callable[[ConvostoreSaver], None]] = {
    "delete_thread": lambda s: s.delete_thread("secret"),
    "prune_delete": lambda s: s.prune(["secret"], strategy="delete"),
    "delete_for_runs": lambda s: s.delete_for_runs(
        [str(t.metadata["run_id"]) for t in s.list(_cfg("secret")) if t.metadata.get("run_id")]
    ),
}


@pytest.mark.parametrize("erase", list(ERASING), ids=list(ERASING))
def test_erasing_leaves_no_copy_in_the_files(tmp_path: Path, erase: str) -> None:
    """No byte of the thread in the database or its WAL, also while another connection to
    the same file is open (it then holds no snapshot that keeps the old pages)."""
    db = tmp_path / "g.db"
    marker = uuid.uuid4().hex
    with (
        ConversationStore(f"sqlite:///{db}") as other,
        ConversationStore(f"sqlite:///{db}") as store,
    ):
        saver = ConvostoreSaver(store)
        _secret_thread(db, saver, marker)
        ERASING[erase](saver)
        assert saver.get_tuple(_cfg("secret")) is None
        assert _copies(db, marker) == 0
        count = other.backend.read(lambda tx: tx.execute("SELECT count(*) FROM lg_checkpoints"))
        assert count[0][0] > 0  # the other thread is still there


def test_the_file_check_can_fail(tmp_path: Path) -> None:
    """The control: the same delete on a connection with secure_delete off (an SQLite build's
    default) leaves the marker in the file, so the check above does look at the bytes."""
    db = tmp_path / "g.db"
    marker = uuid.uuid4().hex
    with ConversationStore(f"sqlite:///{db}") as store:
        _secret_thread(db, ConvostoreSaver(store), marker)
    raw = sqlite3.connect(db)
    try:
        raw.execute("PRAGMA secure_delete=OFF")
        for table in ("lg_checkpoints", "lg_blobs", "lg_writes"):
            raw.execute(f"DELETE FROM {table} WHERE thread_id = 'secret'")
        raw.commit()
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        raw.close()
    assert _copies(db, marker) > 0


# -- import-from langgraph: a file someone else wrote ----------------------------------------


def _cli(*args: str, code: int) -> Result:
    """``convostore ARGS`` through Click's runner (in this process: no start-up per case)."""
    done = CliRunner().invoke(app, list(args), env={"CONVOSTORE_URL": None})
    assert done.exit_code == code, (done.stdout, done.stderr, done.exception)
    return done


class _Touch:
    """Pickles as a call of ``os.system`` (what a pickle row may hold)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def _system_call(marker: Path, kind: str) -> tuple[str, bytes]:
    """A stored value that runs ``touch marker`` when a permissive reader loads it: msgpack
    whose extension type names ``os.system`` (inside a checkpoint-shaped map), or a pickle."""
    if kind == "pickle":
        return "pickle", pickle.dumps(_Touch(marker))
    call = ormsgpack.Ext(1, ormsgpack.packb(["os", "system", [f"touch {marker}"]]))
    return "msgpack", ormsgpack.packb({"v": 4, "channel_values": {"messages": [call]}})


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A SqliteSaver file with threads ``calm`` and ``evil`` (paused at an interrupt, so its
    latest checkpoint has pending writes), and that checkpoint's id."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path_factory.mktemp("saver") / "pristine.sqlite"
    with SqliteSaver.from_conn_string(str(path)) as theirs:
        graph = three_node_graph().compile(checkpointer=theirs)
        graph.invoke(user("hello", 0), {"configurable": {"thread_id": "calm"}})
        graph.invoke(user("please ask me", 0), {"configurable": {"thread_id": "evil"}})
        latest = theirs.get_tuple({"configurable": {"thread_id": "evil"}})
        assert latest is not None and latest.pending_writes
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path, str(latest.config["configurable"]["checkpoint_id"])


def _tamper(pristine: tuple[Path, str], path: Path, statement: str, *args: Any) -> str:
    """A copy of ``pristine`` at ``path`` altered by ``statement`` (its last ``?`` the latest
    checkpoint of thread ``evil``, the others ``args``); returns that checkpoint's id."""
    source, cid = pristine
    shutil.copyfile(source, path)
    with sqlite3.connect(path) as conn:
        conn.execute(statement, [*args, cid])
    return cid


TAMPER = {
    "checkpoint": "UPDATE checkpoints SET type = ?, checkpoint = ? WHERE checkpoint_id = ?",
    "write": "UPDATE writes SET type = ?, value = ? WHERE checkpoint_id = ?",
}


def _evil_postgres_saver(url: str, marker: Path, where: str) -> str:
    """The same in a PostgresSaver database: a channel blob or a pending write."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as theirs:
        theirs.setup()
        graph = three_node_graph().compile(checkpointer=theirs)
        graph.invoke(user("hello", 0), {"configurable": {"thread_id": "calm"}})
        graph.invoke(user("please ask me", 0), {"configurable": {"thread_id": "evil"}})
        latest = theirs.get_tuple({"configurable": {"thread_id": "evil"}})
        assert latest is not None
        cid = str(latest.config["configurable"]["checkpoint_id"])
    _, data = _system_call(marker, "msgpack")
    with psycopg.connect(url, autocommit=True) as conn:
        if where == "checkpoint":
            conn.execute(
                "UPDATE checkpoint_blobs SET type = 'msgpack', blob = %s"
                " WHERE thread_id = 'evil' AND channel = 'messages'",
                [data],
            )
        else:
            conn.execute(
                "UPDATE checkpoint_writes SET type = 'msgpack', blob = %s WHERE checkpoint_id = %s",
                [data, cid],
            )
    return cid


@pytest.mark.parametrize(
    ("source", "where", "kind"),
    [
        ("sqlite", "checkpoint", "msgpack"),
        ("sqlite", "write", "msgpack"),
        ("sqlite", "checkpoint", "pickle"),
        ("sqlite", "write", "pickle"),
        ("postgres", "checkpoint", "msgpack"),
        ("postgres", "write", "msgpack"),
    ],
)
def test_import_from_langgraph_never_runs_what_a_foreign_checkpoint_names(
    source: str, where: str, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """LangGraph's default reader imports and calls whatever a msgpack extension type names
    (and ``pickle_fallback`` would unpickle): the importer reads with an allow-list and
    refuses the rest by name, before it writes anything of that thread."""
    marker = tmp_path / "ran"
    if source == "sqlite":
        path = tmp_path / "theirs.sqlite"
        cid = _tamper(
            request.getfixturevalue("pristine"), path, TAMPER[where], *_system_call(marker, kind)
        )
        src = str(path)
    else:
        src = str(request.getfixturevalue("pg_schema_url"))
        cid = _evil_postgres_saver(src, marker, where)
    dst = f"sqlite:///{tmp_path / 'ours.db'}"
    done = _cli("import-from", "langgraph", src, "--url", dst, code=3)
    assert not marker.exists()
    [line] = done.stderr.strip().splitlines()
    assert "'evil'" in line and "Traceback" not in line
    assert ("it names 'os.system'" if kind == "msgpack" else "stored as 'pickle'") in line
    if not (source == "postgres" and where == "checkpoint"):  # a blob serves several
        assert cid in line
    with ConversationStore(dst) as store:
        saver = store.langgraph_checkpointer
        assert saver.get_tuple(_cfg("evil")) is None
        assert saver.get_tuple(_cfg("calm")) is not None  # written whole before it


DEEP_MSGPACK = b"\x91" * 5000 + b"\xc0"  # [[[...[nil]...]]], 5,000 levels
BROKEN_CHECKPOINTS: dict[str, tuple[str, tuple[Any, ...], str]] = {
    "unknown type": (
        "UPDATE checkpoints SET type = 'x-custom' WHERE checkpoint_id = ?",
        (),
        "stored as 'x-custom', a format import-from never loads",
    ),
    "garbage msgpack": (
        "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
        (b"\xc1\xff\x00garbage",),
        "its msgpack cannot be read",
    ),
    "5,000-deep msgpack": (
        "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
        (DEEP_MSGPACK,),
        "its msgpack cannot be read",
    ),
    "NULL checkpoint": (
        "UPDATE checkpoints SET type = NULL, checkpoint = NULL WHERE checkpoint_id = ?",
        (),
        "its stored value is NULL",
    ),
    "a list for a checkpoint": (
        "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
        (ormsgpack.packb([1, 2]),),
        "its checkpoint is list, not a map",
    ),
    "metadata not UTF-8": (
        "UPDATE checkpoints SET metadata = ? WHERE checkpoint_id = ?",
        (b'{"source": "\xff\xfe"}',),
        "'utf-8' codec can't decode byte 0xff",
    ),
    "metadata not JSON": (
        "UPDATE checkpoints SET metadata = ? WHERE checkpoint_id = ?",
        (b"{not json",),
        "cannot be read: Expecting property name",
    ),
    "metadata a list": (
        "UPDATE checkpoints SET metadata = '[1]' WHERE checkpoint_id = ?",
        (),
        "its metadata is list, not a map",
    ),
    "garbage pending write": (
        "UPDATE writes SET value = ? WHERE checkpoint_id = ?",
        (b"\xc1",),
        "its msgpack cannot be read",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN_CHECKPOINTS), ids=list(BROKEN_CHECKPOINTS))
def test_import_from_langgraph_names_the_checkpoint_it_cannot_read(
    case: str, tmp_path: Path, pristine: tuple[Path, str]
) -> None:
    statement, args, cause = BROKEN_CHECKPOINTS[case]
    path = tmp_path / "theirs.sqlite"
    cid = _tamper(pristine, path, statement, *args)
    dst = f"sqlite:///{tmp_path / 'ours.db'}"
    done = _cli("import-from", "langgraph", str(path), "--url", dst, code=3)
    [line] = done.stderr.strip().splitlines()
    assert f"{str(path)!r}: thread 'evil', checkpoint '{cid}'" in line and cause in line, line
    with ConversationStore(dst) as store:
        assert store.langgraph_checkpointer.get_tuple(_cfg("evil")) is None


def _sqlite_file(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)


BROKEN_FILES: dict[str, tuple[Callable[[Path, Any], object], str]] = {
    "not a database": (
        lambda p, _: p.write_bytes(b"this is not an SQLite file at all" * 100),
        "is not a LangGraph SqliteSaver database (file is not a database)",
    ),
    "empty file": (lambda p, _: p.write_bytes(b""), "(no checkpoints table)"),
    "wrong schema": (
        lambda p, _: _sqlite_file(
            p, "CREATE TABLE checkpoints (a, b)", "INSERT INTO checkpoints VALUES (1, 2)"
        ),
        "is not a LangGraph SqliteSaver database (no such column: thread_id)",
    ),
    "a key that is not text": (
        lambda p, pristine: _tamper(
            pristine, p, "UPDATE checkpoints SET thread_id = X'FF00' WHERE checkpoint_id = ?"
        ),
        "a checkpoint's key (b'\\xff\\x00', ",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN_FILES), ids=list(BROKEN_FILES))
def test_import_from_langgraph_names_the_file_it_cannot_read(
    case: str, tmp_path: Path, pristine: tuple[Path, str]
) -> None:
    make, cause = BROKEN_FILES[case]
    path = tmp_path / "theirs.sqlite"
    make(path, pristine)
    before = path.read_bytes()
    dst = f"sqlite:///{tmp_path / 'ours.db'}"
    done = _cli("import-from", "langgraph", str(path), "--url", dst, code=3)
    [line] = done.stderr.strip().splitlines()
    assert str(path) in line and cause in line, line
    assert path.read_bytes() == before  # the source is only read


def test_import_from_langgraph_reads_the_old_json_format_as_messages_only(
    tmp_path: Path, pristine: tuple[Path, str]
) -> None:
    """Checkpoints LangGraph wrote before msgpack (``type = 'json'``): LangChain messages
    are revived; any other constructor is refused by name."""
    path = tmp_path / "theirs.sqlite"
    human = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "HumanMessage"],
        "kwargs": {"content": "from 2024", "id": "h1"},
    }
    ckpt = {
        "v": 1,
        "ts": "2024-05-01T00:00:00+00:00",
        "channel_values": {"messages": [human]},
        "channel_versions": {"messages": 1},
        "versions_seen": {},
    }
    cid = pristine[1]
    _tamper(pristine, path, TAMPER["checkpoint"], "json", json.dumps({**ckpt, "id": cid}))
    dst = f"sqlite:///{tmp_path / 'ours.db'}"
    _cli("import-from", "langgraph", str(path), "--url", dst, code=0)
    with ConversationStore(dst) as store:
        got = store.langgraph_checkpointer.get_tuple(_cfg("evil", checkpoint_id=cid))
        assert got is not None
        [message] = got.checkpoint["channel_values"]["messages"]
        assert isinstance(message, HumanMessage) and message.content == "from 2024"
    for name in (["langchain", "prompts", "prompt", "PromptTemplate"], ["os", "system"]):
        for lc in (1, 2):
            bad = {**ckpt, "id": cid, "channel_values": {"x": {**human, "lc": lc, "id": name}}}
            with sqlite3.connect(path) as conn:
                conn.execute(
                    "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
                    [json.dumps(bad).encode(), cid],
                )
            dst = f"sqlite:///{tmp_path / f'ours-{lc}-{name[-1]}.db'}"
            done = _cli("import-from", "langgraph", str(path), "--url", dst, code=3)
            assert f"it names {'.'.join(name)!r}, which is not a LangChain message" in done.stderr


HOSTILE_RECALL: list[tuple[dict[str, Any], str]] = [
    ({"query": "a\x00b"}, "Error: query must not contain NUL"),
    ({"query": "\ud800"}, "Error: query "),
    ({"query": "\uffff"}, "Error: query must not contain U+FFFF"),
    ({"query": "x" * 1001}, "Error: query has 1001 characters, over the limit of 1000"),
    ({"query": " ".join("abcdefghijklmnopq")}, "Error: query has 17 terms, over the limit of 16"),
    ({"query": "a", "after": "forged"}, "Error: after: "),
    ({"query": "a", "after": "x" * (1 << 20)}, "Error: after: "),
]


@pytest.mark.parametrize(("args", "answer"), HOSTILE_RECALL)
def test_the_recall_tool_answers_hostile_arguments_with_a_named_error(
    backend_url: str, args: dict[str, Any], answer: str
) -> None:
    """What a model passes search_history is hostile: a named Error answer, no SQL error,
    nothing written, and another user's message never in any answer."""
    with ConversationStore(backend_url) as db:
        db.append_message(conversation_id="theirs", role="user", content="a b", user_id="bob")
        before = db.list_conversations(limit=100).items
        tool = search_history_tool(db, user_id="alice")
        assert tool.invoke(args).startswith(answer)
        assert tool.invoke({"query": "a b"}) == 'No message matches "a b".'
        assert db.list_conversations(limit=100).items == before
