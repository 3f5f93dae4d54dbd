"""What the storage model promises: unchanged channels are never rewritten, a growing message
list costs bytes in proportion to what was added, list() and the DeltaChannel history read a
fixed number of statements, values go through the pluggable serde, and a delta whose base
another process deleted falls back to a whole copy."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any, TypedDict

from convostore import ConversationStore
from convostore.backends import Backend, Tx
from convostore_langgraph import ConvostoreSaver
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.graph import START, StateGraph
from langgraph.graph.message import _messages_delta_reducer
from lg_graphs import three_node_graph, user


def messages_bytes(saver: ConvostoreSaver) -> tuple[int, int, int]:
    """(bytes, rows, whole copies) stored for the ``messages`` channel."""
    rows = saver.backend.read(
        lambda tx: tx.execute(
            "SELECT data, base FROM lg_blobs WHERE channel = 'messages' AND thread_id = 't'"
        )
    )
    return sum(len(r[0]) for r in rows), len(rows), sum(r[1] is None for r in rows)


def test_growing_message_list_costs_what_was_added(cstore: ConversationStore) -> None:
    saver = ConvostoreSaver(cstore)
    graph = three_node_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    sizes = []
    for i in range(40):
        graph.invoke(user(f"turn {i} " + "x" * 200, i), cfg)
        if i in (9, 39):
            sizes.append(messages_bytes(saver))
    final = graph.get_state(cfg).values["messages"]
    once = len(saver.serde.dumps_typed(final)[1])
    total, rows, whole = sizes[-1]
    assert rows == 40 * 4  # one row per version: the input and three nodes each turn
    assert whole <= 8  # whole copies grow geometrically; the rest are deltas
    assert total <= 3 * once + 8192  # O(history) in total, not O(history) per checkpoint
    # four times the turns cost about four times the bytes (a full copy per checkpoint: 16x)
    assert sizes[1][0] <= 6 * sizes[0][0]


def test_unchanged_channels_are_not_rewritten(cstore: ConversationStore) -> None:
    saver = ConvostoreSaver(cstore)
    graph = three_node_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke({**user("hi", 0), "messages": []}, cfg)
    before = saver.backend.read(lambda tx: tx.execute("SELECT count(*) FROM lg_blobs"))[0][0]
    graph.update_state(cfg, {"turns": 5})  # only "turns" (inline) changes
    after = saver.backend.read(lambda tx: tx.execute("SELECT count(*) FROM lg_blobs"))[0][0]
    assert after == before


class CountingBackend(Backend):
    """The real backend, counting the statements each call runs (instrumentation only)."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.dialect = inner.dialect
        self.statements = 0

    def _wrap(self, fn: Callable[[Tx], Any]) -> Callable[[Tx], Any]:
        outer = self

        class Counting(Tx):
            def __init__(self, tx: Tx) -> None:
                self.tx = tx
                self.lock_suffix = tx.lock_suffix

            def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
                outer.statements += 1
                return self.tx.execute(sql, params)

            def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
                outer.statements += 1
                self.tx.executemany(sql, rows)

            # each dialect writes messages with their search index: the inner Tx's own
            def insert_messages(self, cid: str, rows: Sequence[Any]) -> None:
                outer.statements += 1
                self.tx.insert_messages(cid, rows)

            def update_message(self, cid: str, row: Any) -> None:
                outer.statements += 1
                self.tx.update_message(cid, row)

            def copy_messages(self, source: str, target: str, max_seq: int | None) -> Any:
                outer.statements += 1
                return self.tx.copy_messages(source, target, max_seq)

        return lambda tx: fn(Counting(tx))

    def write(self, fn: Callable[[Tx], Any], *, single_statement: bool = False) -> Any:
        return self.inner.write(self._wrap(fn), single_statement=single_statement)

    def read(self, fn: Callable[[Tx], Any], *, single_statement: bool = False) -> Any:
        return self.inner.read(self._wrap(fn), single_statement=single_statement)

    def close(self) -> None:
        self.inner.close()


def test_list_runs_a_fixed_number_of_statements(cstore: ConversationStore) -> None:
    saver = ConvostoreSaver(cstore)
    graph = three_node_graph().compile(checkpointer=saver)
    counts = []
    for thread, turns in (("short", 3), ("long", 12)):
        cfg: Any = {"configurable": {"thread_id": thread}}
        for i in range(turns):
            graph.invoke(user(f"turn {i}", i), cfg)
        counting = CountingBackend(saver.backend)
        fresh = ConvostoreSaver(cstore, cache_size=0)  # nothing from memory: all read
        fresh.backend = counting
        got = list(fresh.list(cfg, limit=10))
        assert len(got) == 10
        assert all(t.pending_writes is not None for t in got)
        counts.append(counting.statements)
    assert counts[0] == counts[1] <= 3  # checkpoints, blobs (with delta bases), writes


def test_the_latest_checkpoint_this_saver_wrote_is_one_statement(
    cstore: ConversationStore,
) -> None:
    """The read at each invoke's start: the checkpoint row with its pending writes; its lists
    come from memory and a channel emptied since (``__start__``, the branches) is known to
    have no row, so no second statement looks for one."""
    saver = ConvostoreSaver(cstore)
    graph = three_node_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    for i in range(3):
        graph.invoke(user(f"turn {i}", i), cfg)
    inner, counting = saver.backend, CountingBackend(saver.backend)
    saver.backend = counting
    got = saver.get_tuple(cfg)
    saver.backend = inner
    assert counting.statements == 1
    fresh = ConvostoreSaver(cstore, cache_size=0).get_tuple(cfg)  # everything read
    assert got is not None and fresh is not None
    assert got.checkpoint == fresh.checkpoint
    assert got.pending_writes == fresh.pending_writes


class DeltaState(TypedDict):
    messages: Annotated[
        list[AnyMessage], DeltaChannel(_messages_delta_reducer, snapshot_frequency=7)
    ]


def delta_graph(checkpointer: Any) -> Any:
    def talk(state: DeltaState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"reply {len(state['messages'])}")]}

    graph = StateGraph(DeltaState)
    graph.add_node("talk", talk)
    graph.add_edge(START, "talk")
    return graph.compile(checkpointer=checkpointer)


def test_delta_channel_history_matches_the_parent_walk(cstore: ConversationStore) -> None:
    saver = ConvostoreSaver(cstore, cache_size=0)
    graph = delta_graph(saver)
    cfg: Any = {"configurable": {"thread_id": "d"}}
    for i in range(20):
        graph.invoke({"messages": [("user", f"hi {i}")]}, cfg)
    assert len(graph.get_state(cfg).values["messages"]) == 40
    for snapshot in list(graph.get_state_history(cfg))[::5]:
        mine = saver.get_delta_channel_history(config=snapshot.config, channels=["messages"])
        walk = BaseCheckpointSaver.get_delta_channel_history(
            saver, config=snapshot.config, channels=["messages"]
        )
        assert repr(mine) == repr(walk)
    counting = CountingBackend(saver.backend)
    saver.backend = counting
    saver.get_delta_channel_history(config=cfg, channels=["messages", "missing"])
    assert counting.statements <= 5  # not one get_tuple per ancestor


class XorCipher:
    """A stand-in cipher (stdlib only) for LangGraph's EncryptedSerializer."""

    def _stream(self, n: int) -> bytes:
        out = b""
        counter = 0
        while len(out) < n:
            out += hashlib.sha256(b"key" + counter.to_bytes(8, "big")).digest()
            counter += 1
        return out[:n]

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        return "xor", bytes(
            a ^ b for a, b in zip(plaintext, self._stream(len(plaintext)), strict=True)
        )

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        assert ciphername == "xor"
        return self.encrypt(ciphertext)[1]


def test_encrypted_serde_leaves_no_plaintext(cstore: ConversationStore) -> None:
    saver = ConvostoreSaver(cstore, serde=EncryptedSerializer(XorCipher()))
    graph = three_node_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    for i in range(3):
        graph.invoke(user(f"the secret is hunter2 #{i}", i), cfg)
    raw = saver.backend.read(
        lambda tx: (
            tx.execute("SELECT data FROM lg_blobs")
            + tx.execute("SELECT data FROM lg_writes")
            + tx.execute("SELECT checkpoint FROM lg_checkpoints")
        )
    )
    assert raw
    assert not any(b"hunter2" in bytes(r[0]) for r in raw if r[0] is not None)
    fresh = ConvostoreSaver(cstore, serde=EncryptedSerializer(XorCipher()), cache_size=0)
    state = three_node_graph().compile(checkpointer=fresh).get_state(cfg)
    assert state.values["messages"][-4].content == "the secret is hunter2 #2"


def test_a_delta_whose_base_was_deleted_elsewhere_is_stored_whole(shared_url: str) -> None:
    mine = ConvostoreSaver(shared_url)
    theirs = ConvostoreSaver(shared_url)  # another process's saver on the same database
    graph = three_node_graph().compile(checkpointer=mine)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke(user("one", 0), cfg)
    theirs.delete_thread("t")  # our in-memory head now names a deleted version
    graph.invoke(user("two", 1), cfg)
    reader = ConvostoreSaver(shared_url, cache_size=0)
    state = three_node_graph().compile(checkpointer=reader).get_state(cfg)
    assert [m.content for m in state.values["messages"]][-4:] == [
        "two",
        "plan for: two",
        "acted (auto)",
        "reflected",
    ]
    for s in (mine, theirs, reader):
        s.close()


def test_a_batch_of_pending_writes_is_one_statement(cstore: ConversationStore) -> None:
    """``put_writes`` sends its rows in one insert (no transaction around it on PostgreSQL);
    a key twice in a batch of special channels keeps the last value, a regular key the first,
    as one insert per row did."""
    saver = ConvostoreSaver(cstore)
    cfg: Any = {"configurable": {"thread_id": "w", "checkpoint_ns": ""}}
    cfg = saver.put(cfg, empty_checkpoint(), {}, {})
    inner, counting = saver.backend, CountingBackend(saver.backend)
    saver.backend = counting
    saver.put_writes(cfg, [("a", 1), ("b", 2), ("c", 3)], "task")
    saver.put_writes(cfg, [("__error__", "first"), ("__error__", "last")], "task")
    saver.backend = inner
    assert counting.statements == 2
    saver.put_writes(cfg, [("a", "again")], "task")  # a stored regular write stays
    got = saver.get_tuple(cfg)
    assert got is not None
    assert sorted((w[1], w[2]) for w in got.pending_writes or []) == [
        ("__error__", "last"),
        ("a", 1),
        ("b", 2),
        ("c", 3),
    ]
