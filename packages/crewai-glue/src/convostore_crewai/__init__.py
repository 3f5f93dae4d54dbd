"""Record CrewAI crews into convostore conversations, continue them, and give
``crewai.Memory`` a store that needs no vector database.

The names below are imported on first use: importing the package for its component alone
(``convostore migrate``, ``check``, ``prune`` read ``convostore_crewai._memory_sql``) does
not import CrewAI, which takes seconds.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._common import RecordingFailedWarning, StoreLike
    from .history import (
        CHAT_MESSAGES_KEY,
        agent_messages,
        crew_history_inputs,
        history_messages,
    )
    from .memory import ConvostoreMemoryStorage, convostore_memory, keyword_embedder
    from .recording import (
        CrewRecorder,
        TaskCallback,
        add_task_callback,
        record,
        task_output_message,
    )

_MODULES = {
    "RecordingFailedWarning": "._common",
    "StoreLike": "._common",
    "CHAT_MESSAGES_KEY": ".history",
    "agent_messages": ".history",
    "crew_history_inputs": ".history",
    "history_messages": ".history",
    "ConvostoreMemoryStorage": ".memory",
    "convostore_memory": ".memory",
    "keyword_embedder": ".memory",
    "CrewRecorder": ".recording",
    "TaskCallback": ".recording",
    "add_task_callback": ".recording",
    "record": ".recording",
    "task_output_message": ".recording",
}

__all__ = [
    "CHAT_MESSAGES_KEY",
    "ConvostoreMemoryStorage",
    "CrewRecorder",
    "RecordingFailedWarning",
    "StoreLike",
    "TaskCallback",
    "add_task_callback",
    "agent_messages",
    "convostore_memory",
    "crew_history_inputs",
    "history_messages",
    "keyword_embedder",
    "record",
    "task_output_message",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
