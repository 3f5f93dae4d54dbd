"""A Claude Agent SDK ``SessionStore`` on convostore: ``ClaudeAgentOptions(session_store=...)``.

``ConvostoreMemoryTool`` / ``AsyncConvostoreMemoryTool`` (the ``memory-tool`` extra) are
Anthropic's memory tool (``memory_20250818``) for the ``anthropic`` SDK's tool runner, on a
memory store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._keys import MAX_KEY_BYTES
from .store import DEFAULT_MAX_ENTRIES, KEY_FIELD, SUMMARY_FIELD, ConvostoreSessionStore

if TYPE_CHECKING:
    from .memory_tool import AsyncConvostoreMemoryTool, ConvostoreMemoryTool

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "KEY_FIELD",
    "MAX_KEY_BYTES",
    "SUMMARY_FIELD",
    "AsyncConvostoreMemoryTool",
    "ConvostoreMemoryTool",
    "ConvostoreSessionStore",
]


def __getattr__(name: str) -> Any:
    """The memory tools are imported on first use: they need the ``anthropic`` SDK (the
    ``memory-tool`` extra), which the session store does not."""
    if name in ("ConvostoreMemoryTool", "AsyncConvostoreMemoryTool"):
        from . import memory_tool

        return getattr(memory_tool, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
