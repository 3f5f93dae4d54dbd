"""A LangGraph checkpointer and store on convostore (SQLite by default, PostgreSQL to scale).

``ConvostoreSaver`` is a ``BaseCheckpointSaver`` and ``ConvostoreStore`` a ``BaseStore``; both
serve the sync and the async LangGraph surface. Reach them as ``store.langgraph_checkpointer`` /
``store.langgraph_store`` on a core store, or construct them from a URL or a store.
"""

from .saver import ConvostoreSaver
from .store import ConvostoreStore

__all__ = ["ConvostoreSaver", "ConvostoreStore"]
