"""convostore in one screen, on the zero-configuration SQLite default (./convostore.db)."""

from convostore import ConversationStore, Message, fold_summary, prompt_context


def shown(m: Message) -> str:
    """A message in a line: its text, or the tools an assistant message calls."""
    calls = (m.metadata or {}).get("tool_calls") or []
    named = [f"{c['function']['name']}({c['function']['arguments']})" for c in calls]
    return f"calls {', '.join(named)}" if named else str(m.content)


with ConversationStore() as store:  # sqlite:///convostore.db, or $CONVOSTORE_URL
    store.delete_conversation(conversation_id="demo")  # so the demo can run again

    # Append: the conversation is created on first use and owned by user u_123.
    first = store.append_message(
        conversation_id="demo", role="user", content="What's the weather in Oslo?", user_id="u_123"
    )
    store.append_message(
        conversation_id="demo",
        role="assistant",
        content="",
        metadata={
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                }
            ]
        },
    )
    store.append_message(
        conversation_id="demo",
        role="tool",
        content="8°C, light rain",
        metadata={"tool_call_id": "call_1"},
    )
    store.append_message(conversation_id="demo", role="assistant", content="8°C and light rain.")
    print("appended; first message id:", first)

    # Page forwards from the oldest, and backwards from the newest.
    page = store.get_messages(conversation_id="demo", limit=2)
    print("oldest two:", [shown(m) for m in page])
    print(
        "the rest:  ",
        [shown(m) for m in store.get_messages(conversation_id="demo", after=page[-1].message_id)],
    )
    print(
        "newest two:",
        [shown(m) for m in store.get_messages(conversation_id="demo", limit=2, order="desc")],
    )

    # Metadata: an atomic shallow merge; None deletes a key.
    store.update_conversation(conversation_id="demo", metadata={"title": "Weather", "draft": True})
    meta = store.update_conversation(conversation_id="demo", metadata={"draft": None})
    print("metadata:", meta.metadata, "| messages:", meta.message_count)

    # List a user's conversations, newest first, a page at a time.
    result = store.list_conversations(user_id="u_123", limit=10)
    print(
        "u_123's conversations:",
        [c.conversation_id for c in result.items],
        "next:",
        result.next_cursor,
    )

    # Hand the history to a model.
    history = store.get_messages(conversation_id="demo", limit=100)
    print("anthropic:", store.to_anthropic_messages(history))
    print("openai:   ", store.to_openai_input(history))

    # Summaries: fold older messages into metadata with your own summarizer (no model here).
    fold_summary(
        store,
        conversation_id="demo",
        summarize=lambda previous, new: f"{len(new)} earlier messages about the weather in Oslo",
        keep_last=2,
    )
    context = prompt_context(store, conversation_id="demo")
    print("summary:", context.summary, "| then", len(context.messages), "messages verbatim")
    print(f"stored in {store.url} (its tables: packages/core/README.md, 'Looking at the data')")
    if store.url.startswith("sqlite:///"):
        path = store.url.removeprefix("sqlite:///")
        print(
            f"beside it: {path}-wal and {path}-shm (SQLite's write-ahead log) and"
            f" {path}-writers, an empty lock file on which writers queue: never written to,"
            " safe to delete while no store has the database open"
        )
