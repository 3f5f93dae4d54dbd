"""Small channel values live in the checkpoint row (through the serde), in every checkpoint
that holds them; bigger ones are rows. Also: rows in the previous format still read, and a
database made by the previous schema is upgraded with its data."""

from __future__ import annotations

import datetime
import json
import zlib
from pathlib import Path
from typing import Any

from convostore import ConversationStore
from convostore.backends import Backend
from convostore.backends.sqlite import SqliteBackend
from convostore_langgraph import ConvostoreSaver
from convostore_langgraph._schema import COMPONENT, STEPS
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from test_storage import XorCipher


class Thread:
    """Checkpoints of one thread through the raw saver API, channel versions carried over."""

    def __init__(self, saver: ConvostoreSaver, thread_id: str = "t") -> None:
        self.saver = saver
        self.cfg: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        self.versions: dict[str, Any] = {}

    def put(self, values: dict[str, Any], new: list[str]) -> Any:
        ckpt = empty_checkpoint()
        ckpt["channel_values"] = dict(values)
        bumped = {ch: self.saver.get_next_version(self.versions.get(ch), None) for ch in new}
        self.versions = {**self.versions, **bumped}
        ckpt["channel_versions"] = dict(self.versions)
        self.cfg = self.saver.put(self.cfg, ckpt, {"source": "loop", "step": -1}, bumped)
        return self.cfg


def blob_rows(saver: ConvostoreSaver, channel: str) -> list[tuple[Any, ...]]:
    """(version, base) of the channel's blob rows, oldest first."""
    return saver.backend.read(
        lambda tx: tx.execute(
            "SELECT version, base FROM lg_blobs WHERE channel = ? ORDER BY version", [channel]
        )
    )


def values_at(store: ConversationStore, cfg: Any, **kwargs: Any) -> dict[str, Any]:
    """The checkpoint's values as a saver with nothing in memory reads them."""
    tup = ConvostoreSaver(store, cache_size=0, **kwargs).get_tuple(cfg)
    assert tup is not None
    return dict(tup.checkpoint["channel_values"])


def test_small_values_are_inline_in_every_checkpoint(cstore: ConversationStore) -> None:
    thread = Thread(ConvostoreSaver(cstore))
    one = {"title": "hello", "tags": ["a", "b"], "meta": {"k": 1}, "n": 1}
    first = thread.put(one, new=["title", "tags", "meta", "n"])
    second = thread.put({**one, "n": 2}, new=["n"])  # title, tags and meta unchanged
    for channel in ("title", "tags", "meta"):
        assert blob_rows(thread.saver, channel) == []
    assert values_at(cstore, first) == one
    assert values_at(cstore, second) == {**one, "n": 2}
    # a saver that has no head for them (another process) still inlines them
    other = Thread(ConvostoreSaver(cstore, cache_size=0))
    other.cfg, other.versions = thread.cfg, thread.versions
    third = other.put({**one, "n": 3}, new=["n"])
    assert values_at(cstore, third) == {**one, "n": 3}
    assert blob_rows(thread.saver, "title") == []


def test_a_value_that_grows_past_the_threshold_becomes_a_row(cstore: ConversationStore) -> None:
    thread = Thread(ConvostoreSaver(cstore))
    big = "x" * 1000
    few_long = ["y" * 200] * 3  # short enough to need serializing to tell it is big
    cfgs = [
        thread.put({"notes": "short", "parts": ["y"], "n": 0}, new=["notes", "parts", "n"]),
        thread.put({"notes": big, "parts": few_long, "n": 0}, new=["notes", "parts"]),
        thread.put({"notes": big, "parts": few_long, "n": 1}, new=["n"]),  # both unchanged
    ]
    # unchanged, with no head in memory: not inlined, and its row is not duplicated
    fresh = Thread(ConvostoreSaver(cstore, cache_size=0))
    fresh.cfg, fresh.versions = thread.cfg, thread.versions
    cfgs.append(fresh.put({"notes": big, "parts": few_long, "n": 2}, new=["n"]))
    cfgs.append(
        thread.put({"notes": "short again", "parts": ["z"], "n": 2}, new=["notes", "parts"])
    )
    assert len(blob_rows(thread.saver, "notes")) == 1
    assert len(blob_rows(thread.saver, "parts")) == 1
    expected = [
        {"notes": "short", "parts": ["y"], "n": 0},
        {"notes": big, "parts": few_long, "n": 0},
        {"notes": big, "parts": few_long, "n": 1},
        {"notes": big, "parts": few_long, "n": 2},
        {"notes": "short again", "parts": ["z"], "n": 2},
    ]
    assert [values_at(cstore, c) for c in cfgs] == expected
    listed = thread.saver.list({"configurable": {"thread_id": "t"}})
    assert [t.checkpoint["channel_values"] for t in listed] == expected[::-1]


def test_a_growing_list_is_inline_then_whole_then_deltas(cstore: ConversationStore) -> None:
    thread = Thread(ConvostoreSaver(cstore))
    items: list[str] = []
    cfgs = []
    for i in range(40):
        items = [*items, f"item number {i:02}"]
        cfgs.append(thread.put({"items": items}, new=["items"]))
    rows = blob_rows(thread.saver, "items")
    assert 0 < len(rows) < 40  # the first versions were inline
    assert rows[0][1] is None  # an inline version is no delta base: the first row is whole
    assert all(base is not None for _, base in rows[1:])  # then deltas
    for i in (0, len(cfgs) - len(rows) - 1, len(cfgs) - len(rows), 39):
        assert values_at(cstore, cfgs[i]) == {
            "items": [f"item number {j:02}" for j in range(i + 1)]
        }


def test_encrypted_inline_values_leave_no_plaintext(cstore: ConversationStore) -> None:
    serde = EncryptedSerializer(XorCipher())
    thread = Thread(ConvostoreSaver(cstore, serde=serde))
    cfg = thread.put({"secret": "hunter2", "notes": ["hunter2 again"]}, new=["secret", "notes"])
    thread.put({"secret": "hunter2", "notes": ["hunter2 again"], "n": 1}, new=["n"])
    assert blob_rows(thread.saver, "secret") == []  # inline: what is checked below is the row
    raw = thread.saver.backend.read(
        lambda tx: (
            tx.execute("SELECT checkpoint FROM lg_checkpoints")
            + tx.execute("SELECT data FROM lg_blobs")
        )
    )
    assert not any(b"hunter2" in bytes(r[0]) for r in raw if r[0] is not None)
    backend = cstore.backend
    if isinstance(backend, SqliteBackend) and backend.path != ":memory:":
        files = [Path(backend.path), Path(f"{backend.path}-wal")]
        assert not any(b"hunter2" in f.read_bytes() for f in files if f.exists())
    values = values_at(cstore, cfg, serde=EncryptedSerializer(XorCipher()))
    assert values == {"secret": "hunter2", "notes": ["hunter2 again"]}


def test_plain_data_round_trips_exactly(cstore: ConversationStore) -> None:
    thread = Thread(ConvostoreSaver(cstore))
    values = {"huge": 2**70, "neg": -(2**65), "f": 0.5, "flag": True, "none": None}
    cfg = thread.put(values, new=list(values))
    got = values_at(cstore, cfg)
    assert got == values and type(got["huge"]) is int and type(got["f"]) is float
    # a checkpoint key msgpack does not take as plain data goes through the serde, unchanged
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    ckpt = empty_checkpoint()
    ckpt["channel_values"] = {"s": "v"}
    ckpt["channel_versions"] = {"s": thread.saver.get_next_version(None, None)}
    ckpt["when"] = when  # type: ignore[typeddict-unknown-key]
    cfg = thread.saver.put(cfg, ckpt, {}, dict(ckpt["channel_versions"]))
    tup = ConvostoreSaver(cstore, cache_size=0).get_tuple(cfg)
    assert tup is not None
    assert tup.checkpoint["when"] == when  # type: ignore[typeddict-item]
    assert tup.checkpoint["channel_values"] == {"s": "v"}


def old_format_rows(backend: Backend, serde: SerializerProtocol) -> Any:
    """A checkpoint as the previous version wrote it: a JSON skeleton with only plain values
    inline, every other value a blob row, whatever its size. Returns its config."""
    versions = {"title": "000000000001.0000000a", "n": "000000000001.0000000b"}
    skeleton = {**empty_checkpoint(), "channel_versions": versions}
    del skeleton["channel_values"]
    skeleton["__convostore_inline__"] = {"n": 7}
    text = json.dumps(skeleton, separators=(",", ":")).encode()
    type_, data = serde.dumps_typed("hello")

    def write(tx: Any) -> None:
        tx.execute(
            "INSERT INTO lg_checkpoints (thread_id, ns, checkpoint_id, parent_id, ctype,"
            " checkpoint, metadata, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            ["t", "", skeleton["id"], None, "json+zlib", zlib.compress(text), "{}", "run-1"],
        )
        tx.execute(
            "INSERT INTO lg_blobs (thread_id, ns, channel, version, type, data)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            ["t", "", "title", versions["title"], type_, data],
        )
        tx.execute(
            "INSERT INTO lg_writes (thread_id, ns, checkpoint_id, task_id, idx, task_path,"
            " channel, type, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ["t", "", skeleton["id"], "task", 0, "", "title", type_, data],
        )

    backend.write(write)
    return {
        "configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": skeleton["id"]}
    }


def test_rows_in_the_previous_format_still_read(cstore: ConversationStore) -> None:
    ConvostoreSaver(cstore)  # creates the tables
    old = old_format_rows(cstore.backend, JsonPlusSerializer())
    assert values_at(cstore, old) == {"title": "hello", "n": 7}
    thread = Thread(ConvostoreSaver(cstore))
    thread.cfg = old
    thread.versions = {"title": "000000000001.0000000a", "n": "000000000001.0000000b"}
    new = thread.put({"title": "hello", "n": 8}, new=["n"])  # title: unchanged, now inline
    assert values_at(cstore, new) == {"title": "hello", "n": 8}
    thread.saver.prune(["t"])  # only the new checkpoint stays
    assert values_at(cstore, new) == {"title": "hello", "n": 8}
    assert [t.config for t in thread.saver.list(None)] == [new]


def test_a_database_of_the_previous_schema_is_upgraded(backend_url: str) -> None:
    with ConversationStore(backend_url) as db:
        db.backend.migrate(COMPONENT, STEPS[:1])
        old = old_format_rows(db.backend, JsonPlusSerializer())
        saver = ConvostoreSaver(db)  # upgrades
        tup = saver.get_tuple(old)
        assert tup is not None
        assert tup.checkpoint["channel_values"] == {"title": "hello", "n": 7}
        assert tup.pending_writes == [("task", "title", "hello")]
        saver.delete_for_runs(["run-1"])  # the run index still finds it
        assert saver.get_tuple(old) is None


class ZlibCipher:
    """A 'cipher' that compresses: a serde whose output can be shorter than the value."""

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        return "zlib", zlib.compress(plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        assert ciphername == "zlib"
        return zlib.decompress(ciphertext)


def test_a_compressing_serde_loses_no_unchanged_value(cstore: ConversationStore) -> None:
    """A saver with no head for an unchanged value (another process, ``cache_size=0``) decides
    "row or inline" by the same rule the writer used: a value longer than the threshold is a
    row even when the serde shrinks it below, so it is not taken for a row that is missing."""
    serde = EncryptedSerializer(ZlibCipher())
    thread = Thread(ConvostoreSaver(cstore, serde=serde))
    long_text, long_list = "ab" * 2000, ["same"] * 1000
    values = {"text": long_text, "items": long_list, "n": 0}
    thread.put(values, new=["text", "items", "n"])
    other = Thread(ConvostoreSaver(cstore, serde=serde, cache_size=0))
    other.cfg, other.versions = thread.cfg, thread.versions
    cfg = other.put({**values, "n": 1}, new=["n"])
    assert values_at(cstore, cfg, serde=serde) == {**values, "n": 1}
