"""An OpenAI Agents SDK Session on convostore: a session is a conversation."""

from .session import SESSION_FIELD, ConvostoreSession, item_role

__all__ = ["SESSION_FIELD", "ConvostoreSession", "item_role"]
