"""The saver's storage model without a database (``convostore_langgraph._codec``)."""

from __future__ import annotations

import json
import weakref
from typing import Any

import ormsgpack
import pytest
from convostore import MemoryValidationError
from convostore.spi import check_text
from convostore_langgraph._codec import (
    _IN_ROW_KEY,
    _PACK_OPTS,
    _SOLE,
    Codec,
    _BlobRow,
    _common_prefix,
    _exclusive,
    _hand_out,
    _Head,
    _Heads,
    _metadata_matches,
    _metadata_text,
    _namespace,
    _pack_default,
    _private_copies,
    _private_copy,
    _same,
    _serializing,
    _thread_id,
    _unpack_ext,
    unneeded_blobs,
)
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel


def _call(x: int) -> AIMessage:
    return AIMessage("", id="c", tool_calls=[{"name": "f", "args": {"x": x}, "id": "1"}])


def test_a_private_copy_shares_no_mutable_object() -> None:
    original = [HumanMessage("hi", id="h"), _call(1), {"nested": [1, {"a": "b"}]}]
    copied = _private_copy(original)
    assert copied == original and copied is not original
    copied[1].tool_calls[0]["args"]["x"] = 2
    copied[2]["nested"][1]["a"] = "changed"
    assert original[1].tool_calls[0]["args"] == {"x": 1}
    assert original[2] == {"nested": [1, {"a": "b"}]}
    assert _private_copy("text") == "text"


def test_same_sees_nested_edits_and_types() -> None:
    assert _same(_call(1), _call(1))
    assert not _same(_call(1), _call(2))  # the edit LangGraph's docs show
    assert not _same(HumanMessage("x", id="1"), AIMessage("x", id="1"))
    assert not _same(1, 1.0) and _same([1, "a"], [1, "a"])


class _Unequal:
    def __eq__(self, other: object) -> bool:
        raise ValueError("ambiguous")  # as a numpy array's == is in a bool context

    __hash__ = object.__hash__


def test_an_equality_that_fails_is_a_difference() -> None:
    odd = _Unequal()
    assert _same(odd, odd) and not _same(_Unequal(), _Unequal())
    assert _common_prefix([1, _Unequal(), 3], [1, _Unequal(), 3]) == 1


def test_the_common_prefix_of_messages() -> None:
    mine = [HumanMessage("a", id="1"), _call(1), AIMessage("b", id="2")]
    theirs = _private_copy(mine)
    assert _common_prefix(mine, [*theirs, HumanMessage("new")]) == 3
    theirs[1].tool_calls[0]["args"]["x"] = 2  # a nested edit in place
    assert _common_prefix(mine, theirs) == 1
    assert _common_prefix(mine, [mine[0], AIMessage("a", id="1")]) == 1  # another type
    assert _common_prefix([], mine) == 0


def _mutable_ids(value: object) -> set[int]:
    """The ids of every list, dict, set and model inside ``value``."""
    found: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list | dict | set | BaseModel):
            found.add(id(item))
            if isinstance(item, dict):
                stack += list(item.values())
            elif isinstance(item, BaseModel):
                found |= {id(item.__dict__), id(item.__pydantic_fields_set__)}
                stack += [item.__dict__, item.__pydantic_extra__, item.__pydantic_private__]
            else:
                stack += list(item)
    return found


def test_private_copies_share_immutable_leaves_only() -> None:
    items = [HumanMessage("hi", id="h"), _call(1), {"nested": [1, {"a": "b"}]}, ["x", {1, 2}]]
    copies = _private_copies(items)
    assert copies == items
    assert not _mutable_ids(copies) & _mutable_ids(items)
    assert copies[0].content is items[0].content  # text is shared: comparing it is a pointer
    assert copies[1].model_fields_set == items[1].model_fields_set
    assert _common_prefix(copies, items) == 4


def test_what_pickle_cannot_take_is_deep_copied() -> None:
    [copied] = _private_copies([{"f": lambda: 1, "v": [1]}])  # a lambda: not picklable
    assert copied["v"] == [1]
    assert copied["v"] is not _private_copies([copied])[0]["v"]
    odd = {("tuple", "key"): [1], "t": (1, [2])}  # kinds not copied a field at a time
    again = _private_copy(odd)
    assert again == odd and again["t"][1] is not odd["t"][1]
    deep: dict[str, object] = {}
    for _ in range(400):  # deeper than the field-at-a-time copy recurses: pickle copies it
        deep = {"d": deep}
    assert _private_copy(deep) == deep and _private_copies([deep]) == [deep]


def test_reference_counts_tell_what_only_the_saver_holds() -> None:
    assert _SOLE is not None  # CPython: the fast path is on
    fresh = [_call(1), HumanMessage("hi"), {"a": [1, {"b": 2}]}]
    assert _exclusive(fresh)
    for part in (
        lambda r: r[0],
        lambda r: r[0].tool_calls,
        lambda r: r[0].tool_calls[0]["args"],
        lambda r: r[0].__dict__,
        lambda r: r[1].additional_kwargs,
        lambda r: r[2]["a"][1],
    ):
        roots = [_call(1), HumanMessage("hi"), {"a": [1, {"b": 2}]}]
        held = part(roots)
        assert not _exclusive(roots)
        del held
        assert _exclusive(roots)
    roots = [_call(1)]
    ref = weakref.ref(roots[0])
    assert not _exclusive(roots)
    del ref
    assert not _exclusive([(1, [2])])  # a kind not known here
    same = {"x": 1}
    assert not _exclusive([same, same])  # held twice


def test_a_read_gets_the_stored_objects_only_if_nobody_else_holds_them() -> None:
    heads = _Heads(4)

    def head() -> _Head:
        own = _private_copies([HumanMessage("hi", id="1"), _call(1)])
        return _Head("v1", own, shared=[HumanMessage("hi", id="1"), _call(1)])

    h = head()
    shared = h.shared
    assert shared is not None
    handed = _hand_out(heads, h)
    assert handed is not shared  # the test itself still holds the list
    assert handed == shared and all(a is not b for a, b in zip(handed, h.value, strict=True))
    h = head()
    first = h.shared[0] if h.shared else None
    assert _hand_out(heads, h)[0] is not first  # the test holds an item
    del first
    h = head()
    stored = [id(item) for item in h.shared or []]
    handed = _hand_out(heads, h)
    assert [id(item) for item in handed] == stored and h.shared is None  # handed on, once
    again = _hand_out(heads, h)
    assert again == handed and all(a is not b for a, b in zip(again, handed, strict=True))
    h = head()
    assert h.shared is not None
    h.shared[1].tool_calls[0]["args"]["x"] = 2  # changed since it was stored
    assert _hand_out(heads, h)[1].tool_calls[0]["args"] == {"x": 1}


def test_text_and_metadata_rules() -> None:
    assert check_text("task_path", "") == "" and check_text("task_path", "p" * 10_000)
    for bad in ("a\x00", "\ud800", 1):
        with pytest.raises(MemoryValidationError, match="task_path"):
            check_text("task_path", bad)
    text = _metadata_text({"name": "é", "odd": "\ud800"})
    assert "é" in text and "\\ud800" in text  # only the surrogate is escaped


def test_the_head_cache_is_bounded_and_drops_threads() -> None:
    heads = _Heads(2)
    for n in range(3):
        heads.set((f"t{n}", "", "messages"), _Head(str(n), [n]))
    assert heads.get(("t0", "", "messages")) is None
    assert heads.get(("t2", "", "messages")) is not None
    heads.drop(["t2"])
    assert heads.get(("t2", "", "messages")) is None
    _Heads(0).set(("t", "", "c"), _Head("1", [1]))  # size 0 keeps nothing, and does not fail


@pytest.mark.parametrize("bad", ["a\x00", "\ud800", "x" * 257, None])
def test_thread_ids_are_checked(bad: object) -> None:
    with pytest.raises(MemoryValidationError, match="thread_id"):
        _thread_id(bad)


def test_ids_langgraph_gives_are_taken_as_text() -> None:
    assert _thread_id(42) == "42" and _namespace(None) == "" and _namespace("a:b|c") == "a:b|c"


def test_metadata_text_and_filters() -> None:
    text = _metadata_text({"step": 1, "odd": "\ud800"})
    text.encode()  # storable as UTF-8: the surrogate is escaped
    assert json.loads(text) == {"step": 1, "odd": "\ud800"}
    assert _metadata_matches({"step": 1}, {"step": 1, "missing": None})
    assert not _metadata_matches({"step": 1}, {"step": 2})


def test_big_ints_round_trip_through_msgpack() -> None:
    packed = ormsgpack.packb({"n": 2**80}, default=_pack_default, option=_PACK_OPTS)
    assert ormsgpack.unpackb(packed, ext_hook=_unpack_ext) == {"n": 2**80}


def test_a_too_deep_value_is_a_validation_error() -> None:
    deep = pytest.raises(MemoryValidationError, match=r"writes\[0\]: nested too deeply")
    with deep, _serializing("writes[0]"):
        raise RecursionError
    with pytest.raises(MemoryValidationError, match="x: a lone surrogate"), _serializing("x"):
        raise TypeError("string contains surrogates")
    with pytest.raises(TypeError, match="other"), _serializing("x"):
        raise TypeError("other")


# -- the storage model (Codec): rows without a database ---------------------------------------


def _codec(cache_size: int = 16, max_delta_depth: int = 128) -> Codec:
    return Codec(JsonPlusSerializer(), _Heads(cache_size), max_delta_depth)


def _messages(n: int) -> list[AIMessage]:
    return [AIMessage(f"message {i} " + "x" * 300, id=str(i)) for i in range(n)]


def test_a_checkpoint_skeleton_round_trips_with_values_in_the_row() -> None:
    codec = _codec()
    checkpoint = empty_checkpoint()
    checkpoint["channel_versions"] = {"n": "1", "s": "1"}
    ctype, data = codec.encode(checkpoint, {"n": 2**80}, {"s": codec.serde.dumps_typed("small")})
    assert ctype == "skeleton"
    decoded = codec.decode(ctype, data)
    assert decoded[_IN_ROW_KEY] == {"n": 2**80, "s": "small"}
    assert decoded["channel_versions"] == {"n": "1", "s": "1"}
    assert codec.decode(ctype, data, values=False)[_IN_ROW_KEY] == {"n": 2**80}  # typed skipped
    checkpoint["channel_versions"] = {f"channel {i}": f"{i:012}" for i in range(50)}
    assert codec.encode(checkpoint, {}, {})[0] == "skeleton+zlib"  # big: compressed


def test_small_values_stay_in_the_row_and_lists_grow_by_deltas() -> None:
    codec = _codec()
    rows = codec.channel_rows("t", "", {"n": 1, "s": "hi", "m": _messages(2)}, {}, {"m": "1"})
    assert rows.plain == {"n": 1} and rows.typed == {}  # "s" has no version: not stored
    [whole] = rows.blobs
    assert (whole.channel, whole.version, whole.base) == ("m", "1", None)
    codec.written("t", "", rows)
    grown = [*_messages(2), AIMessage("new", id="new")]
    [delta] = codec.channel_rows("t", "", {"m": grown}, {}, {"m": "2"}).blobs
    assert (delta.base, delta.keep, delta.depth) == ("1", 2, 1)
    assert codec.serde.loads_typed((delta.type, delta.data or b"")) == grown[2:]
    codec.snapshot(delta)  # its base was pruned meanwhile: stored whole
    assert delta.base is None and codec.serde.loads_typed((delta.type, delta.data or b"")) == grown


def test_an_item_changed_in_place_is_stored_from_there_on() -> None:
    codec = _codec()
    items = _messages(3)
    codec.written("t", "", codec.channel_rows("t", "", {"m": items}, {}, {"m": "1"}))
    items[1].content = "edited in place"
    [delta] = codec.channel_rows("t", "", {"m": items}, {}, {"m": "2"}).blobs
    assert (delta.base, delta.keep) == ("1", 1)


def test_a_saver_without_the_head_decides_as_the_writer_did() -> None:
    writer, reader = _codec(), _codec()
    small = writer.channel_rows("t", "", {"s": "small"}, {}, {"s": "1"})
    assert small.typed and not small.blobs
    writer.written("t", "", small)
    again = writer.unchanged("t", "", "s", "1", "small")  # known from the head
    assert again is not None and again.in_row
    assert reader.unchanged("t", "", "s", "1", "small") == again  # known from the size
    assert reader.unchanged("t", "", "m", "1", _messages(300)) is None  # long: a blob row


def test_values_are_rebuilt_from_delta_chains() -> None:
    codec = _codec()
    dumps = codec.serde.dumps_typed
    blobs = {
        ("t", "", "m", "1"): _BlobRow(*dumps([1, 2, 3]), None, None, 0, 0, 10),
        ("t", "", "m", "2"): _BlobRow(*dumps([4]), "1", 2, 1, 5, 10),
        ("t", "", "m", "3"): _BlobRow(*dumps([5, 6]), "2", 3, 2, 10, 10),
    }
    memo: dict[Any, Any] = {}
    assert codec.value(("t", "", "m", "3"), blobs, memo) == [1, 2, 4, 5, 6]
    assert memo[("t", "", "m", "2")] == [1, 2, 4]


def test_blobs_no_checkpoint_needs_are_found() -> None:
    checkpoints = [("", {"channel_versions": {"m": "3", "s": "1"}})]
    bases = {("", "m", "1"): None, ("", "m", "2"): "1", ("", "m", "3"): "2", ("", "m", "9"): None}
    bases[("", "old", "1")] = None
    assert sorted(unneeded_blobs("t", checkpoints, bases)) == [
        ("t", "", "m", "9"),
        ("t", "", "old", "1"),
    ]


def test_a_built_tuple_shares_nothing_with_the_cache() -> None:
    codec = _codec()
    items = _messages(3)
    codec.written("t", "", codec.channel_rows("t", "", {"m": items}, {}, {"m": "1"}))
    checkpoint = empty_checkpoint()
    checkpoint["channel_versions"] = {"m": "1"}
    ctype, data = codec.encode(checkpoint, {}, {})
    row = ("t", "", checkpoint["id"], None, ctype, data, "{}")
    memo: dict[Any, Any] = {}
    decoded, keys = codec.blob_keys([row], memo)
    assert keys == set()  # the list is taken from the head, not read
    built = codec.build((row, decoded[0], {}, []), memo)
    got = built.checkpoint["channel_values"]["m"]
    assert got == items and all(a is not b for a, b in zip(got, items, strict=True))
    got[0].content = "changed by the reader"
    again = codec.build((row, codec.blob_keys([row], {})[0][0], {}, []), memo)
    assert again.checkpoint["channel_values"]["m"][0].content == items[0].content
