"""``search_history_tool``: an OpenAI Agents function tool with which an agent searches one
user's past conversations (the core's ``asearch_history`` bound to a store and a user)."""

from __future__ import annotations

from typing import Annotated

from agents import FunctionTool, function_tool
from convostore import (
    SEARCH_HISTORY_AFTER_HELP,
    SEARCH_HISTORY_DESCRIPTION,
    SEARCH_HISTORY_NAME,
    SEARCH_HISTORY_QUERY_HELP,
    AsyncConversationStore,
    ConversationStore,
    bind_recall,
)


def search_history_tool(
    store: ConversationStore | AsyncConversationStore,
    *,
    user_id: str,
    conversation_id: str | None = None,
    limit: int = 10,
) -> FunctionTool:
    """A ``search_history(query, after=None)`` tool over ``user_id``'s conversations (only
    ``conversation_id``, if given), ``limit`` hits a call. Its answer is text: one line per
    hit (conversation, time, role, excerpt), newest first; a bad query comes back as an
    ``Error: ...`` answer the model can correct."""
    bound = bind_recall(store, user_id=user_id, conversation_id=conversation_id, limit=limit)

    async def search_history(
        query: Annotated[str, SEARCH_HISTORY_QUERY_HELP],
        after: Annotated[str | None, SEARCH_HISTORY_AFTER_HELP] = None,
    ) -> str:
        return await bound.asearch(query, after)

    return function_tool(
        search_history,
        name_override=SEARCH_HISTORY_NAME,
        description_override=SEARCH_HISTORY_DESCRIPTION,
        use_docstring_info=False,
    )
