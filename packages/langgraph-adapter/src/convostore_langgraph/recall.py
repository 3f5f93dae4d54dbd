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
    MemoryValidationError,
    asearch_history,
    search_history,
)
from convostore.spi import check_id, check_int, check_optional_id
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
    if isinstance(store, AsyncConversationStore):
        blocking, nonblocking = store.sync, store
    elif isinstance(store, ConversationStore):
        blocking, nonblocking = store, AsyncConversationStore(sync=store)
    else:
        raise MemoryValidationError(
            "store must be a ConversationStore or an AsyncConversationStore,"
            f" got {type(store).__name__}",
            argument="store",
        )
    uid = check_id("user_id", user_id, blocking.limits)
    cid = check_optional_id("conversation_id", conversation_id, blocking.limits)
    per_call = check_int("limit", limit, minimum=1, maximum=blocking.limits.max_page_size)

    def run(
        query: Annotated[str, SEARCH_HISTORY_QUERY_HELP],
        after: Annotated[str | None, SEARCH_HISTORY_AFTER_HELP] = None,
    ) -> str:
        return search_history(
            blocking, query, user_id=uid, conversation_id=cid, limit=per_call, after=after
        )

    async def arun(
        query: Annotated[str, SEARCH_HISTORY_QUERY_HELP],
        after: Annotated[str | None, SEARCH_HISTORY_AFTER_HELP] = None,
    ) -> str:
        return await asearch_history(
            nonblocking, query, user_id=uid, conversation_id=cid, limit=per_call, after=after
        )

    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=SEARCH_HISTORY_NAME,
        description=SEARCH_HISTORY_DESCRIPTION,
    )
