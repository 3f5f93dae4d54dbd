"""The writer x reader matrix: every reader of the core, checked on a conversation that a
writer made, against exactly what that writer must have written.

A writer lives in its framework's environment (crewai and openai-agents cannot share one), so
each package's tests hold a ``test_matrix.py`` that runs its writer(s), describes what it wrote
as a ``Written`` and calls ``check(store, written, reader)`` for every reader of ``READERS``
on SQLite and PostgreSQL. Converter output is compared with the expected turns and validated by
the ``anthropic`` and ``openai`` SDKs' own request types (their TypedDicts, through pydantic),
which every test environment installs.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from convostore import (
    ConversationManagedError,
    ConversationOwnershipError,
    ConversationStore,
    Message,
)
from pydantic import TypeAdapter

READERS = [
    "list_conversations",
    "get_conversation",
    "get_messages",
    "get_history",
    "to_anthropic_messages",
    "to_openai_input",
    "fork_conversation",
    "delete_conversation",
]


@dataclass
class Written:
    """What a writer put in the store, written out by the writer's test."""

    conversation_id: str
    user_id: str | None
    # (role, content, metadata) of each message, in order, exactly
    messages: list[tuple[str, Any, dict[str, Any] | None]]
    anthropic: list[dict[str, Any]]  # to_anthropic_messages, exactly
    openai: list[dict[str, Any]]  # to_openai_input, exactly
    system: str | None = None  # to_anthropic_system
    # each message's id where the writer names it (None: any id, unique and stable)
    ids: list[str | None] | None = None
    title: str | None = None
    # metadata keys the writer keeps on the conversation (beyond the title)
    metadata_keys: set[str] = field(default_factory=set)
    managed: bool = False  # the core refuses other writers of its messages
    # after delete_conversation: checks that the writer's own data of it went too
    gone: Callable[[], None] | None = None


def rows(messages: list[Message]) -> list[tuple[str, Any, dict[str, Any] | None]]:
    return [(m.role, m.content, m.metadata) for m in messages]


def _ids_match(written: Written, messages: list[Message]) -> None:
    ids = [m.message_id for m in messages]
    assert len(set(ids)) == len(ids), "message ids are unique in a conversation"
    if written.ids is not None:
        assert len(written.ids) == len(ids)
        for want, got in zip(written.ids, ids, strict=True):
            if want is not None:
                assert got == want


def check(store: ConversationStore, written: Written, reader: str) -> None:
    """One cell of the matrix: ``reader`` on the conversation ``written`` describes."""
    assert reader in READERS
    {
        "list_conversations": _list_conversations,
        "get_conversation": _get_conversation,
        "get_messages": _get_messages,
        "get_history": _get_history,
        "to_anthropic_messages": _to_anthropic,
        "to_openai_input": _to_openai,
        "fork_conversation": _fork,
        "delete_conversation": _delete,
    }[reader](store, written)


# -- the readers -----------------------------------------------------------------------------


def _walk(store: ConversationStore, order: Any) -> tuple[list[Any], Any]:
    """Every conversation, one page of one at a time; and the last page."""
    page = store.list_conversations(limit=1, order=order)
    seen = list(page.items)
    while page.next_cursor is not None:
        page = store.list_conversations(limit=1, order=order, after=page.next_cursor)
        seen += page.items
    return seen, page


def _list_conversations(store: ConversationStore, written: Written) -> None:
    cid, owner = written.conversation_id, written.user_id
    meta = store.get_conversation(conversation_id=cid)
    assert meta is not None
    seen, last = _walk(store, "desc")
    assert [c for c in seen if c.conversation_id == cid] == [meta]
    assert (meta.message_count, meta.user_id) == (len(written.messages), owner)
    assert (meta.metadata or {}).get("title") == written.title
    returned = list(last.items)
    page = last
    while page.previous_cursor is not None:  # back from the last page to the first
        page = store.list_conversations(limit=1, before=page.previous_cursor)
        returned = page.items + returned
    assert returned == seen
    assert _walk(store, "asc")[0] == seen[::-1]
    if owner is not None:
        mine = store.list_conversations(user_id=owner, limit=100).items
        assert meta in mine and all(c.user_id == owner for c in mine)
        others = store.list_conversations(user_id="mallory", limit=100).items
        assert cid not in {c.conversation_id for c in others}


def _get_conversation(store: ConversationStore, written: Written) -> None:
    meta = store.get_conversation(conversation_id=written.conversation_id, user_id=written.user_id)
    assert meta is not None
    assert meta.conversation_id == written.conversation_id
    assert meta.message_count == len(written.messages)
    assert meta.user_id == written.user_id
    assert meta.created_at <= meta.last_message_at
    metadata = meta.metadata or {}
    assert metadata.get("title") == written.title
    assert written.metadata_keys <= set(metadata)
    if written.user_id is not None:
        with pytest.raises(ConversationOwnershipError):
            store.get_conversation(conversation_id=written.conversation_id, user_id="mallory")


def _get_messages(store: ConversationStore, written: Written) -> None:
    cid, owner = written.conversation_id, written.user_id
    forward: list[Message] = []
    page = store.get_messages(conversation_id=cid, limit=2, user_id=owner)
    while page:
        forward += page
        page = store.get_messages(
            conversation_id=cid, limit=2, after=page[-1].message_id, user_id=owner
        )
    assert rows(forward) == written.messages
    _ids_match(written, forward)
    backward: list[Message] = []
    page = store.get_messages(conversation_id=cid, limit=2, order="desc", user_id=owner)
    while page:
        backward += page
        page = store.get_messages(
            conversation_id=cid, limit=2, order="desc", before=page[-1].message_id, user_id=owner
        )
    assert backward == forward[::-1]
    middle = forward[len(forward) // 2].message_id
    before = store.get_messages(conversation_id=cid, limit=100, before=middle, user_id=owner)
    after = store.get_messages(conversation_id=cid, limit=100, after=middle, user_id=owner)
    assert [*before, forward[len(forward) // 2], *after] == forward


def _get_history(store: ConversationStore, written: Written) -> None:
    history = store.get_history(conversation_id=written.conversation_id, user_id=written.user_id)
    assert rows(history) == written.messages
    _ids_match(written, history)
    assert [m.created_at for m in history] == sorted(m.created_at for m in history)
    last = store.get_history(conversation_id=written.conversation_id, last=2)
    assert last == history[-2:]


def _materialize(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ValidatorIterator":
        return [_materialize(v) for v in value]
    return value


def accepted_by(request_type: Any, value: Any) -> None:
    """``value`` is an instance of the SDK's request type: pydantic validates it against the
    TypedDicts and gives back exactly what it was given (no key left over, none converted)."""
    adapter = TypeAdapter(request_type)  # kept alive while its lazy iterables are read
    assert _materialize(adapter.validate_python(value)) == json.loads(json.dumps(value))


def _to_anthropic(store: ConversationStore, written: Written) -> None:
    from anthropic.types import MessageParam

    history = store.get_history(conversation_id=written.conversation_id)
    out = store.to_anthropic_messages(history)
    assert out == written.anthropic
    assert store.to_anthropic_system(history) == written.system
    accepted_by(list[MessageParam], out)
    # the Messages API's own rules: user first, roles alternating, every tool_use answered
    roles = [m["role"] for m in out]
    assert roles[:1] == ["user"] and all(a != b for a, b in itertools.pairwise(roles))
    for i, message in enumerate(out):
        blocks = message["content"] if isinstance(message["content"], list) else []
        calls = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        if calls:
            following = out[i + 1]["content"]
            answered = {b["tool_use_id"] for b in following if b.get("type") == "tool_result"}
            assert calls == answered


def _to_openai(store: ConversationStore, written: Written) -> None:
    from openai.types.chat import ChatCompletionMessageParam

    history = store.get_history(conversation_id=written.conversation_id)
    out = store.to_openai_input(history)
    assert out == written.openai
    accepted_by(list[ChatCompletionMessageParam], out)
    asked: set[str] = set()
    for message in out:  # every tool message answers a call made just before it
        if message["role"] == "assistant":
            asked = {c["id"] for c in message.get("tool_calls", [])}
        elif message["role"] == "tool":
            assert message["tool_call_id"] in asked
        else:
            asked = set()


def _fork(store: ConversationStore, written: Written) -> None:
    cid = written.conversation_id
    history = store.get_history(conversation_id=cid)
    cut = history[len(history) // 2]
    whole = store.fork_conversation(conversation_id=cid, new_conversation_id=f"{cid}/whole")
    part = store.fork_conversation(
        conversation_id=cid,
        new_conversation_id=f"{cid}/part",
        up_to=cut.message_id,
        metadata={"branch": "b"},
    )
    assert store.get_history(conversation_id=f"{cid}/whole") == history
    assert store.get_history(conversation_id=f"{cid}/part") == history[: len(history) // 2 + 1]
    assert (whole.message_count, part.message_count) == (len(history), len(history) // 2 + 1)
    assert whole.user_id == part.user_id == written.user_id
    assert part.metadata is not None
    assert part.metadata["forkedFrom"] == {"conversationId": cid, "messageId": cut.message_id}
    assert part.metadata["branch"] == "b" and "managedBy" not in part.metadata
    # later writes to either side never show in the other
    store.append_message(
        conversation_id=f"{cid}/part", role="user", content="only in the fork", user_id=None
    )
    store.update_message(
        conversation_id=f"{cid}/part", message_id=history[0].message_id, content="changed"
    )
    assert store.get_history(conversation_id=cid) == history
    if written.managed:
        with pytest.raises(ConversationManagedError):
            store.append_message(conversation_id=cid, role="user", content="x")
    else:
        store.append_message(conversation_id=cid, role="user", content="only in the source")
        forked = store.get_history(conversation_id=f"{cid}/part")
        assert "only in the source" not in [m.content for m in forked]
        assert len(forked) == len(history) // 2 + 2
    store.delete_conversation(conversation_id=f"{cid}/whole")
    store.delete_conversation(conversation_id=f"{cid}/part")
    if written.managed:
        assert store.get_history(conversation_id=cid) == history  # deleting forks left it


def _delete(store: ConversationStore, written: Written) -> None:
    cid, owner = written.conversation_id, written.user_id
    if owner is not None:
        with pytest.raises(ConversationOwnershipError):
            store.delete_conversation(conversation_id=cid, user_id="mallory")
    store.delete_conversation(conversation_id=cid, user_id=owner)
    assert store.get_conversation(conversation_id=cid) is None
    assert store.get_history(conversation_id=cid) == []
    assert cid not in {c.conversation_id for c in store.list_conversations(limit=100).items}
    if written.gone is not None:
        written.gone()
