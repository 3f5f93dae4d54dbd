"""Framework entry points on a store (``store.langgraph_checkpointer``...), registered by
adapter packages under the entry-point group ``convostore.views``."""

from __future__ import annotations

import functools
import importlib.metadata
from typing import Any

from . import convert

VIEWS_GROUP = "convostore.views"
"""The entry-point group under which adapter packages register framework entry points."""


@functools.cache
def _registered() -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=VIEWS_GROUP)}


class _View:
    """A documented framework entry point (``store.langgraph_checkpointer``...): resolved through
    the adapter's registration, so the core never imports an adapter by name."""

    def __init__(self, dist: str, doc: str) -> None:
        self.dist = dist
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, store: Views | None, owner: type | None = None) -> Any:
        if store is None:
            return self
        return store.view(self.name, dist=self.dist)


class Views:
    """What both facades offer beyond storage: converters and framework entry points."""

    _views: dict[str, Any]

    to_anthropic_messages = staticmethod(convert.to_anthropic_messages)
    to_anthropic_system = staticmethod(convert.to_anthropic_system)
    to_openai_input = staticmethod(convert.to_openai_input)

    def view(self, name: str, *, dist: str | None = None) -> Any:
        """The framework entry point ``name`` that an installed adapter package registers
        (entry-point group ``convostore.views``), made once per store; ``dist`` names the
        package to suggest when none does."""
        try:
            return self._views[name]
        except KeyError:
            pass
        entry = _registered().get(name)
        if entry is None:
            hint = f"the {dist} package: pip install {dist}" if dist else "an adapter package"
            raise ImportError(f"{name} needs {hint} (no installed package registers it)")
        made = self._views[name] = entry.load()(self)
        return made

    langgraph_checkpointer = _View(
        "convostore-langgraph",
        "A LangGraph ``BaseCheckpointSaver`` on this store, the same object on every access"
        " (``pip install convostore-langgraph``).",
    )
    langgraph_store = _View(
        "convostore-langgraph",
        "A LangGraph ``BaseStore`` on this store, the same object on every access"
        " (``pip install convostore-langgraph``).",
    )
    openai_session = _View(
        "convostore-openai",
        "``openai_session(conversation_id, *, max_items=None, **options)``: an OpenAI Agents"
        " ``Session`` over a conversation (``pip install convostore-openai``).",
    )
    claude_session_store = _View(
        "convostore-claude",
        "``claude_session_store(**options)``: a Claude Agent SDK ``SessionStore``"
        " (``pip install convostore-claude``).",
    )
    crewai_memory = _View(
        "convostore-crewai",
        "``crewai_memory(**options)``: a ``crewai.Memory`` whose storage is this store"
        " (``pip install convostore-crewai``).",
    )
