"""An OpenAI Agents SDK Session on convostore: a session is a conversation; and
``search_history_tool``, with which an agent searches a user's past conversations."""

from .recall import search_history_tool
from .session import SESSION_FIELD, ConvostoreSession, item_role

__all__ = ["SESSION_FIELD", "ConvostoreSession", "item_role", "search_history_tool"]
