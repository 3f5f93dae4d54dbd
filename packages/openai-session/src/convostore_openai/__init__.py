"""An OpenAI Agents SDK Session on convostore: a session is a conversation."""

from .session import ConvostoreSession, item_role

__all__ = ["ConvostoreSession", "item_role"]
