"""``search_history_tool``: a LangChain tool with which an agent searches one user's past
conversations (the core's ``search_history`` bound to a store and a user). A LangGraph
thread is a conversation too, so an agent finds what was said in its earlier threads."""

from __future__ import annotations

from typing import Annotated

from convostore import (
    SEARCH_HISTORY_AFTER_HELP,
    SEARCH_HISTORY_DESCRIPTION,
    SEARCH_HISTORY_NAME,
    SEARCH_HISTORY_QUERY_HELP,
    AsyncConversationStore,
    ConversationStore,
    bind_recall,
)
from langchain_core.tools import BaseTool, StructuredTool


def search_history_tool(
    store: ConversationStore | AsyncConversationStore,
    *,
    user_id: str,
    conversation_id: str | None = None,
    limit: int = 10,
) -> BaseTool:
    """A ``search_history(query, after=None)`` tool (sync and async) over ``user_id``'s
    conversations (only ``conversation_id``, if given), ``limit`` hits a call. Its answer is
    text: one line per hit (conversation, time, role, excerpt), newest first; a bad query
    comes back as an ``Error: ...`` answer the model can correct."""
    bound = bind_recall(store, user_id=user_id, conversation_id=conversation_id, limit=limit)

    def run(
        query: Annotated[str, SEARCH_HISTORY_QUERY_HELP],
        after: Annotated[str | None, SEARCH_HISTORY_AFTER_HELP] = None,
    ) -> str:
        return bound.search(query, after)

    async def arun(
        query: Annotated[str, SEARCH_HISTORY_QUERY_HELP],
        after: Annotated[str | None, SEARCH_HISTORY_AFTER_HELP] = None,
    ) -> str:
        return await bound.asearch(query, after)

    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=SEARCH_HISTORY_NAME,
        description=SEARCH_HISTORY_DESCRIPTION,
    )
