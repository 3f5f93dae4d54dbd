"""The read path builds its models from known-good rows without pydantic's validator: the
models are the validator's own, and any other row still goes through it and is named."""

from __future__ import annotations

from typing import Any

import pytest
from convostore import ConversationMeta, ConversationStore, Message, StorageError
from convostore.backends import ConversationRow, MessageRow
from convostore.engine import messages_of, metas_of


def _same(built: Any, validated: Any) -> None:
    assert built == validated
    assert built.model_fields_set == validated.model_fields_set
    assert built.model_dump(by_alias=True) == validated.model_dump(by_alias=True)
    assert built.model_dump_json() == validated.model_dump_json()
    assert repr(built) == repr(validated)
    assert built.model_copy(update={"metadata": {"k": 1}}).metadata == {"k": 1}
    assert built.model_fields_set == validated.model_fields_set  # the copy took its own set


@pytest.mark.parametrize("metadata", [None, '{"a":[1,{"b":null}]}'])
@pytest.mark.parametrize("updated_at", [None, 7])
def test_a_sound_row_gives_the_validators_model(
    metadata: str | None, updated_at: int | None
) -> None:
    row = MessageRow(3, "msg_1", "tool", '{"x":"é"}', metadata, 5, updated_at)
    validated = Message.model_validate(
        {
            "message_id": "msg_1",
            "role": "tool",
            "content": {"x": "é"},
            "created_at": 5,
            "metadata": None if metadata is None else {"a": [1, {"b": None}]},
            "updated_at": updated_at,
        }
    )
    _same(messages_of([tuple(row)])[0], validated)
    conversation = ConversationRow("c", "u", 1, 2, 3, 4, metadata)
    meta = ConversationMeta.model_validate(
        {
            "conversation_id": "c",
            "created_at": 1,
            "last_message_at": 2,
            "message_count": 3,
            "metadata": None if metadata is None else {"a": [1, {"b": None}]},
            "user_id": "u",
        }
    )
    _same(metas_of([tuple(conversation)])[0], meta)


@pytest.mark.parametrize(
    ("column", "value", "error"),
    [
        ("content", "'oops'", "its stored content is not valid JSON"),
        ("metadata", "'[1]'", "its stored metadata is a JSON list"),
        ("metadata", "'{bad'", "its stored metadata is not valid JSON"),
        ("metadata", "'\"text\"'", "its stored metadata is a JSON str"),
    ],
)
def test_a_damaged_message_is_named_by_a_page(
    store: ConversationStore, column: str, value: str, error: str
) -> None:
    mid = store.append_message(conversation_id="c", role="user", content="hi")
    store.append_message(conversation_id="c", role="user", content="there")
    # SQLite indexes for search in batches (at the latest on close): index them first
    getattr(store.backend, "index_pending", lambda: None)()
    store.backend.write(
        lambda tx: tx.execute(
            f"UPDATE convostore_messages SET {column} = {value} WHERE id = ?", [mid]
        )
    )
    for order in ("asc", "desc"):
        with pytest.raises(StorageError, match=error):
            store.get_messages(conversation_id="c", order=order)  # type: ignore[arg-type]
    with pytest.raises(StorageError, match=f"message '{mid}'"):
        store.get_history(conversation_id="c")


def test_a_stored_unknown_role_is_shown_as_stored(store: ConversationStore) -> None:
    store.append_message(conversation_id="c", role="user", content="hi")
    getattr(store.backend, "index_pending", lambda: None)()
    store.backend.write(lambda tx: tx.execute("UPDATE convostore_messages SET role = 'wizard'"))
    [message] = store.get_messages(conversation_id="c")
    assert (message.role, message.content) == ("wizard", "hi")


def test_a_damaged_conversation_is_named_by_a_listing(store: ConversationStore) -> None:
    store.update_conversation(conversation_id="c", metadata={"a": 1}, user_id="u")
    store.update_conversation(conversation_id="d", metadata={"a": 2}, user_id="u")
    store.backend.write(
        lambda tx: tx.execute("UPDATE convostore_conversations SET metadata = '[2]' WHERE id = 'd'")
    )
    for listing in (
        lambda: store.list_conversations(user_id="u"),
        lambda: store.find_conversation_briefs(id_prefix="d"),
        lambda: store.find_conversation_briefs(id_prefix="d", metadata="a"),
    ):
        with pytest.raises(
            StorageError, match="conversation 'd': its stored metadata is a JSON list"
        ):
            listing()
    # a listing without the metadata does not read it
    assert [b[0] for b in store.find_conversation_briefs(id_prefix="d", metadata=False)] == ["d"]
    assert store.get_conversation(conversation_id="c").metadata == {"a": 1}  # type: ignore[union-attr]


@pytest.mark.parametrize("metadata", [True, False])
def test_a_conversation_row_of_wrong_types_is_named_by_a_brief_listing(
    store: ConversationStore, metadata: bool
) -> None:
    if store.backend.dialect != "sqlite":
        pytest.skip("PostgreSQL keeps a column's type: only SQLite can hold such a row")
    store.update_conversation(conversation_id="c", metadata={"a": 1})
    store.backend.write(
        lambda tx: tx.execute("UPDATE convostore_conversations SET message_count = 'many'")
    )
    with pytest.raises(
        StorageError, match="conversation 'c': its stored row is not a conversation"
    ):
        store.find_conversation_briefs(id_prefix="c", metadata=metadata)


def test_a_key_cut_off_in_the_metadata_is_named(store: ConversationStore) -> None:
    store.update_conversation(conversation_id="c", metadata={"a": 1})
    store.backend.write(
        lambda tx: tx.execute("UPDATE convostore_conversations SET metadata = '{\"a\":[1'")
    )
    with pytest.raises(StorageError, match="conversation 'c': its stored metadata is not valid"):
        store.find_conversation_briefs(id_prefix="c", metadata="a")
