"""The summary convention: summary + summarizedUntil in conversation metadata."""

from __future__ import annotations

import pytest
from convostore import (
    AsyncConversationStore,
    ConversationStore,
    Message,
    afold_summary,
    fold_summary,
    prompt_context,
)


def summarize(previous: str | None, messages: list[Message]) -> str:
    return " ".join(filter(None, [previous, *(str(m.content) for m in messages)]))


def test_fold_then_prompt_context(store: ConversationStore) -> None:
    ids = [
        store.append_message(conversation_id="c", role="user", content=f"m{i}") for i in range(250)
    ]
    assert fold_summary(store, conversation_id="c", summarize=summarize, keep_last=20) is not None
    meta = store.get_conversation(conversation_id="c")
    assert meta is not None and meta.metadata is not None
    assert meta.metadata["summarizedUntil"] == ids[229]
    assert meta.metadata["summary"] == " ".join(f"m{i}" for i in range(230))
    context = prompt_context(store, conversation_id="c")
    assert context.summary == meta.metadata["summary"]
    assert [m.content for m in context.messages] == [f"m{i}" for i in range(230, 250)]
    # nothing new beyond the kept tail: no call to the summarizer
    assert fold_summary(store, conversation_id="c", summarize=summarize, keep_last=20) is None
    store.append_message(conversation_id="c", role="user", content="m250")
    fold_summary(store, conversation_id="c", summarize=summarize, keep_last=20)
    assert prompt_context(store, conversation_id="c").summary.endswith("m229 m230")  # type: ignore[union-attr]


def test_prompt_context_without_a_summary_is_the_newest_messages(store: ConversationStore) -> None:
    for i in range(5):
        store.append_message(conversation_id="c", role="user", content=f"m{i}")
    context = prompt_context(store, conversation_id="c", max_messages=2)
    assert context.summary is None
    assert [m.content for m in context.messages] == ["m3", "m4"]


@pytest.mark.anyio
async def test_async_fold_takes_an_async_summarizer(astore: AsyncConversationStore) -> None:
    for i in range(3):
        await astore.append_message(conversation_id="c", role="user", content=f"m{i}")

    async def asummarize(previous: str | None, messages: list[Message]) -> str:
        return summarize(previous, messages)

    meta = await afold_summary(astore, conversation_id="c", summarize=asummarize, keep_last=1)
    assert meta is not None and meta.metadata == {
        "summary": "m0 m1",
        "summarizedUntil": (await astore.get_messages(conversation_id="c"))[1].message_id,
    }
