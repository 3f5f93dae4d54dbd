"""The saver's storage model without a database (``convostore_langgraph._codec``)."""

from __future__ import annotations

import json

import ormsgpack
import pytest
from convostore import MemoryValidationError
from convostore_langgraph._codec import (
    _PACK_OPTS,
    _Head,
    _Heads,
    _metadata_matches,
    _metadata_text,
    _namespace,
    _pack_default,
    _private_copy,
    _same,
    _serializing,
    _thread_id,
    _unpack_ext,
)
from langchain_core.messages import AIMessage, HumanMessage


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
    with pytest.raises(TypeError, match="other"), _serializing("x"):
        raise TypeError("other")
