"""Bad input gets the documented error, naming the argument and the limit, and writes nothing."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from convostore import (
    ContentTooLargeError,
    ConversationOwnershipError,
    ConversationStore,
    Limits,
    MemoryQuotaExceededError,
    MemoryValidationError,
)
from convostore.validation import _check_json, encode_json, loads
from hypothesis import given
from hypothesis import strategies as st

OK = {"conversation_id": "c", "role": "user", "content": "hello"}


class Opaque:
    pass


BAD_APPENDS: list[tuple[dict[str, Any], str]] = [
    ({"conversation_id": ""}, r"conversation_id must be 1 to 256 bytes of UTF-8, got 0 bytes"),
    (
        {"conversation_id": "x" * 257},
        r"conversation_id must be 1 to 256 bytes of UTF-8, got 257 bytes",
    ),
    ({"conversation_id": "é" * 129}, r"got 258 bytes"),
    ({"conversation_id": 42}, r"conversation_id must be a str, got int"),
    ({"conversation_id": "a\x00b"}, r"conversation_id must not contain NUL"),
    ({"role": "robot"}, r"role must be one of user, assistant, system, tool; got 'robot'"),
    ({"content": None}, r"content must be a str, a list or a dict, got NoneType"),
    ({"content": 12}, r"content must be a str, a list or a dict, got int"),
    ({"content": {"x": math.nan}}, r"content\['x'\]: nan is not valid JSON"),
    ({"content": [math.inf]}, r"content\[0\]: inf is not valid JSON"),
    ({"content": {"s": {1, 2}}}, r"content\['s'\]: set is not JSON-serializable"),
    ({"content": {"o": Opaque()}}, r"content\['o'\]: Opaque is not JSON-serializable"),
    ({"content": {1: "int key"}}, r"content: keys must be str, got int"),
    ({"content": {"a": [{None: 1}]}}, r"content\['a'\]\[0\]: keys must be str, got NoneType"),
    ({"content": {"a": ({True: 1},)}}, r"content\['a'\]\[0\]: keys must be str, got bool"),
    ({"metadata": ["not", "a", "dict"]}, r"metadata must be a dict, got list"),
    ({"metadata": {"n": math.nan}}, r"metadata\['n'\]: nan is not valid JSON"),
    ({"user_id": ""}, r"user_id must be 1 to 256 bytes"),
    ({"message_id": "m" * 257}, r"message_id must be 1 to 256 bytes of UTF-8, got 257 bytes"),
]


@pytest.fixture
def seeded(store: ConversationStore) -> ConversationStore:
    store.append_message(conversation_id="c", role="user", content="kept", user_id="alice")
    store.update_conversation(conversation_id="c", metadata={"title": "t"})
    return store


@pytest.mark.parametrize(("override", "message"), BAD_APPENDS)
def test_bad_append_is_refused_before_writing(
    snapshot: Any, seeded: ConversationStore, override: dict[str, Any], message: str
) -> None:
    before = snapshot(seeded)
    with pytest.raises(MemoryValidationError, match=message):
        seeded.append_message(**{**OK, **override})
    assert snapshot(seeded) == before


def test_deeper_than_json_can_nest_is_refused(snapshot: Any, seeded: ConversationStore) -> None:
    deep: Any = "bottom"
    for _ in range(2000):
        deep = [deep]
    before = snapshot(seeded)
    with pytest.raises(MemoryValidationError, match="nested deeper than 900 levels"):
        seeded.append_message(**{**OK, "content": deep})
    assert snapshot(seeded) == before


def nested(levels: int, leaf: Any) -> Any:
    for _ in range(levels):
        leaf = [leaf]
    return leaf


@pytest.mark.parametrize(
    ("levels", "leaf", "ok"), [(900, "x", True), (900, [], True), (901, "x", False)]
)
def test_the_depth_limit_is_exact(
    store: ConversationStore, levels: int, leaf: Any, ok: bool
) -> None:
    """A value may sit at most 900 levels down: a scalar or an empty container, not more."""
    content = nested(levels, leaf)
    if ok:
        store.append_message(**{**OK, "content": content})
        assert store.get_history(conversation_id="c")[-1].content == content
    else:
        with pytest.raises(MemoryValidationError, match="nested deeper than 900 levels"):
            store.append_message(**{**OK, "content": content})


def test_a_circular_value_is_refused(store: ConversationStore) -> None:
    loop: list[Any] = []
    loop.append({"again": loop})
    with pytest.raises(MemoryValidationError, match="content"):
        store.append_message(**{**OK, "content": loop})
    assert store.get_conversation(conversation_id="c") is None


JSON_KEYS = st.one_of(st.text(max_size=3), st.integers(0, 3), st.booleans(), st.none())
JSON_LIKE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.tuples(inner), st.dictionaries(JSON_KEYS, inner, max_size=3)
    ),
    max_leaves=20,
)


@given(JSON_LIKE)
def test_the_fast_shape_check_agrees_with_the_explaining_walk(value: Any) -> None:
    """encode_json trusts ``_keeps_shape`` and ``json.dumps``; ``_check_json`` explains a refusal.
    Both must refuse the same values, or a refusal would come without its reason."""
    try:
        _check_json(value, "content")
        explained = True
    except MemoryValidationError:
        explained = False
    try:
        encode_json("content", value, 1 << 20)
        encoded = True
    except MemoryValidationError:
        encoded = False
    assert encoded == explained


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"limit": 0}, "limit must be between 1 and 100, got 0"),
        ({"limit": 101}, "limit must be between 1 and 100, got 101"),
        ({"limit": True}, "limit must be an int, got bool"),
        ({"order": "sideways"}, "order must be 'asc' or 'desc'"),
        ({"after": "a", "before": "b"}, "after and before are mutually exclusive"),
        ({"after": "msg_unknown"}, "after: no message 'msg_unknown'"),
    ],
)
def test_bad_get_messages_arguments(
    seeded: ConversationStore, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(MemoryValidationError, match=message):
        seeded.get_messages(conversation_id="c", **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"limit": 0}, "limit must be between 1 and 100, got 0"),
        ({"limit": 101}, "limit must be between 1 and 100, got 101"),
        ({"order": "up"}, "order must be 'asc' or 'desc'"),
        ({"after": "x", "before": "y"}, "after and before are mutually exclusive"),
        ({"after": "not-a-cursor"}, "after: 'not-a-cursor' is not a cursor"),
        ({"user_id": "u" * 300}, "user_id must be 1 to 256 bytes"),
    ],
)
def test_bad_list_conversations_arguments(
    seeded: ConversationStore, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(MemoryValidationError, match=message):
        seeded.list_conversations(**kwargs)


def test_content_over_the_size_limit_is_refused(
    snapshot: Any, small_store: ConversationStore
) -> None:
    small_store.append_message(**OK)
    before = snapshot(small_store)
    with pytest.raises(
        MemoryValidationError, match=r"content is 1002 bytes serialized; the limit is 1000 bytes"
    ):
        small_store.append_message(**{**OK, "content": "x" * 1000})
    with pytest.raises(MemoryValidationError, match=r"metadata is .* the limit is 500 bytes"):
        small_store.update_conversation(conversation_id="c", metadata={"big": "y" * 600})
    assert snapshot(small_store) == before


def test_the_default_content_limit_is_50_mb(store: ConversationStore) -> None:
    with pytest.raises(MemoryValidationError, match=r"the limit is 52428800 bytes"):
        store.append_message(**{**OK, "content": "x" * (50 * 1024 * 1024)})
    assert store.get_messages(conversation_id="c") == []


def test_merged_metadata_over_the_limit_is_refused_atomically(
    snapshot: Any, small_store: ConversationStore
) -> None:
    small_store.update_conversation(conversation_id="c", metadata={"a": "x" * 300})
    before = snapshot(small_store)
    with pytest.raises(MemoryValidationError, match="the limit is 500 bytes"):
        small_store.update_conversation(conversation_id="c", metadata={"b": "y" * 300})
    assert snapshot(small_store) == before


def test_the_message_past_the_quota_is_refused(
    snapshot: Any, small_store: ConversationStore
) -> None:
    for i in range(5):
        small_store.append_message(**{**OK, "content": f"m{i}"})
    before = snapshot(small_store)
    with pytest.raises(
        MemoryQuotaExceededError, match="holds 5 messages; appending 1 would pass the limit of 5"
    ):
        small_store.append_message(**OK)
    with pytest.raises(MemoryQuotaExceededError):
        small_store.append_messages(
            conversation_id="c", messages=[{"role": "user", "content": "x"}]
        )
    assert snapshot(small_store) == before
    small_store.delete_message(
        conversation_id="c", message_id=small_store.get_messages(conversation_id="c")[0].message_id
    )
    small_store.append_message(**OK)  # room again after a delete


def test_the_10001st_message_is_refused(store: ConversationStore) -> None:
    batch = [{"role": "user", "content": f"m{i}"} for i in range(1000)]
    for _ in range(10):
        store.append_messages(conversation_id="big", messages=batch)  # type: ignore[arg-type]
    with pytest.raises(MemoryQuotaExceededError, match=r"holds 10000 messages; .* limit of 10000"):
        store.append_message(conversation_id="big", role="user", content="one too many")
    meta = store.get_conversation(conversation_id="big")
    assert meta is not None and meta.message_count == 10_000
    newest = store.get_messages(conversation_id="big", order="desc", limit=1)
    assert newest[0].content == "m999"


def test_another_users_conversation_writes_nothing(
    snapshot: Any, seeded: ConversationStore
) -> None:
    before = snapshot(seeded)
    with pytest.raises(ConversationOwnershipError, match="user_id 'mallory'"):
        seeded.append_message(**{**OK, "user_id": "mallory"})
    assert snapshot(seeded) == before


def test_update_message_bad_input_leaves_the_message(
    snapshot: Any, seeded: ConversationStore
) -> None:
    mid = seeded.get_messages(conversation_id="c")[0].message_id
    before = snapshot(seeded)
    with pytest.raises(MemoryValidationError, match="content"):
        seeded.update_message(conversation_id="c", message_id=mid, content={"bad": math.nan})
    with pytest.raises(MemoryValidationError, match="metadata must be a dict"):
        seeded.update_message(conversation_id="c", message_id=mid, metadata=[1])  # type: ignore[arg-type]
    assert snapshot(seeded) == before


def test_bad_urls_are_refused() -> None:
    with pytest.raises(MemoryValidationError, match="url scheme 'mysql'"):
        ConversationStore("mysql://x")
    with pytest.raises(MemoryValidationError, match="names no file"):
        ConversationStore("sqlite:///")


def test_errors_name_their_argument_and_batch_position(store: ConversationStore) -> None:
    """Adapters build their own wording from ``argument``, ``index`` and ``detail``."""
    with pytest.raises(MemoryValidationError) as single:
        store.append_message(conversation_id="c", role="user", content={"x": math.nan})
    assert (single.value.argument, single.value.index) == ("content", None)
    assert single.value.label + single.value.detail == str(single.value)
    assert single.value.detail == "['x']: nan is not valid JSON (NaN and Infinity)"

    batch = [{"role": "user", "content": "ok"}, {"role": "user", "content": {"x": math.nan}}]
    with pytest.raises(MemoryValidationError) as second:
        store.append_messages(conversation_id="c", messages=batch)  # type: ignore[list-item]
    assert (second.value.argument, second.value.index) == ("content", 1)
    assert str(second.value) == "messages[1].content['x']: nan is not valid JSON (NaN and Infinity)"
    assert second.value.detail == single.value.detail

    with pytest.raises(MemoryValidationError) as not_a_dict:
        store.append_messages(conversation_id="c", messages=["text", "more"])  # type: ignore[list-item]
    assert str(not_a_dict.value) == "messages[0] must be a dict, got str"

    with pytest.raises(MemoryValidationError) as limit:
        store.get_messages(conversation_id="c", limit=0)
    assert (limit.value.argument, limit.value.detail) == (
        "limit",
        " must be between 1 and 100, got 0",
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a\x00b", "must not contain NUL"),
        ("\ud800", r"is not valid UTF-8 \(lone surrogate\)"),
        (b"bytes", "must be a str, got bytes"),
        (None, "must be a str, got NoneType"),
    ],
)
def test_check_text_is_the_id_rule_without_a_length(value: object, message: str) -> None:
    from convostore.spi import check_text

    with pytest.raises(MemoryValidationError, match=f"note {message}"):
        check_text("note", value)
    assert check_text("note", "") == "" and len(check_text("note", "x" * (1 << 20))) == 1 << 20


def test_a_size_error_is_a_content_too_large_error(small_store: ConversationStore) -> None:
    """Over a size limit is ``ContentTooLargeError`` (the HTTP API's 413), still a
    ``MemoryValidationError``; other bad input is not."""
    with pytest.raises(ContentTooLargeError, match="content is 1002 bytes"):
        small_store.append_message(**{**OK, "content": "x" * 1000})
    with pytest.raises(ContentTooLargeError, match=r"messages\[1\].metadata is"):
        small_store.append_messages(
            conversation_id="c",
            messages=[
                {"role": "user", "content": "ok"},
                {"role": "user", "content": "ok", "metadata": {"big": "y" * 600}},
            ],
        )
    with pytest.raises(ContentTooLargeError, match="metadata is"):
        small_store.update_conversation(conversation_id="c", metadata={"big": "y" * 600})
    with pytest.raises(MemoryValidationError) as refused:
        small_store.append_message(**{**OK, "content": 12})
    assert not isinstance(refused.value, ContentTooLargeError)
    with ConversationStore("memory://", limits=Limits(max_memory_content_bytes=10)) as store:
        sid = store.create_memory_store("s").memory_store_id
        with pytest.raises(ContentTooLargeError, match="content is 11 bytes"):
            store.create_memory(sid, "a.md", "x" * 11)
    assert small_store.get_messages(conversation_id="c") == []


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


def _answer(decode: Any, text: Any) -> tuple[str, str]:
    try:
        return "value", repr(decode(text))
    except Exception as exc:  # the two must fail alike
        return type(exc).__name__, str(exc)


@given(JSON_VALUES, st.booleans())
def test_the_read_paths_json_decoder_answers_as_json_loads(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert _answer(loads, text) == _answer(json.loads, text)


@given(st.text(max_size=40) | st.sampled_from([" {}", "{} ", "[1,", "1 2", "NaN", "\ud800", ""]))
def test_any_text_is_answered_as_json_loads_answers_it(text: str) -> None:
    assert _answer(loads, text) == _answer(json.loads, text)
    assert _answer(loads, text.encode("utf-8", "surrogatepass")) == _answer(
        json.loads, text.encode("utf-8", "surrogatepass")
    )
