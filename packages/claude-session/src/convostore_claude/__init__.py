"""A Claude Agent SDK ``SessionStore`` on convostore: ``ClaudeAgentOptions(session_store=...)``."""

from __future__ import annotations

from ._keys import MAX_KEY_BYTES
from .store import DEFAULT_MAX_ENTRIES, KEY_FIELD, SUMMARY_FIELD, ConvostoreSessionStore

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "KEY_FIELD",
    "MAX_KEY_BYTES",
    "SUMMARY_FIELD",
    "ConvostoreSessionStore",
]
