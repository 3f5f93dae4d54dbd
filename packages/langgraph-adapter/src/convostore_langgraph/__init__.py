"""A LangGraph checkpointer and store on convostore (SQLite by default, PostgreSQL to scale).

``ConvostoreSaver`` is a ``BaseCheckpointSaver`` and ``ConvostoreStore`` a ``BaseStore``; both
serve the sync and the async LangGraph surface. Reach them as ``store.langgraph_checkpointer`` /
``store.langgraph_store`` on a core store, or construct them from a URL or a store.
``ConvostoreMemoryBackend`` (the ``deepagents`` extra) is a DeepAgents file backend over one
memory store. ``search_history_tool`` is a LangChain tool with which an agent searches a
user's past conversations (LangGraph threads among them).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._projection import ConversationProjectionWarning
    from ._serde import TypeNotAllowedError
    from .memory_backend import ConvostoreMemoryBackend
    from .recall import search_history_tool
    from .saver import ConvostoreSaver
    from .store import ConvostoreStore

__all__ = [
    "ConversationProjectionWarning",
    "ConvostoreMemoryBackend",
    "ConvostoreSaver",
    "ConvostoreStore",
    "TypeNotAllowedError",
    "search_history_tool",
]


# Each name is imported on first use: the command line imports this package's component
# (``_commands``) without LangGraph, and ``ConvostoreMemoryBackend`` needs DeepAgents (the
# ``deepagents`` extra), which the checkpointer and the store do not.
_MODULES = {
    "ConversationProjectionWarning": "._projection",
    "ConvostoreMemoryBackend": ".memory_backend",
    "ConvostoreSaver": ".saver",
    "ConvostoreStore": ".store",
    "TypeNotAllowedError": "._serde",
    "search_history_tool": ".recall",
}


def __getattr__(name: str) -> Any:
    """The public names, imported on first use."""
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
