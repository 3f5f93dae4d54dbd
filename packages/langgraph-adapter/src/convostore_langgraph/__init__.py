"""A LangGraph checkpointer and store on convostore (SQLite by default, PostgreSQL to scale).

``ConvostoreSaver`` is a ``BaseCheckpointSaver`` and ``ConvostoreStore`` a ``BaseStore``; both
serve the sync and the async LangGraph surface. Reach them as ``store.langgraph_checkpointer`` /
``store.langgraph_store`` on a core store, or construct them from a URL or a store.
``ConvostoreMemoryBackend`` (the ``deepagents`` extra) is a DeepAgents file backend over one
memory store. ``search_history_tool`` is a LangChain tool with which an agent searches a
user's past conversations (LangGraph threads among them).
"""

from typing import TYPE_CHECKING, Any

from ._projection import ConversationProjectionWarning
from ._serde import TypeNotAllowedError
from .recall import search_history_tool
from .saver import ConvostoreSaver
from .store import ConvostoreStore

if TYPE_CHECKING:
    from .memory_backend import ConvostoreMemoryBackend

__all__ = [
    "ConversationProjectionWarning",
    "ConvostoreMemoryBackend",
    "ConvostoreSaver",
    "ConvostoreStore",
    "TypeNotAllowedError",
    "search_history_tool",
]


def __getattr__(name: str) -> Any:
    """``ConvostoreMemoryBackend`` is imported on first use: it needs DeepAgents (the
    ``deepagents`` extra), which the checkpointer and the store do not."""
    if name == "ConvostoreMemoryBackend":
        from .memory_backend import ConvostoreMemoryBackend

        return ConvostoreMemoryBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
