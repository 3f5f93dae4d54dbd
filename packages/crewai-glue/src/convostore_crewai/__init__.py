"""Record CrewAI crews into convostore conversations, continue them, and give
``crewai.Memory`` a store that needs no vector database."""

from ._common import RecordingFailedWarning, StoreLike
from .history import CHAT_MESSAGES_KEY, agent_messages, crew_history_inputs, history_messages
from .memory import ConvostoreMemoryStorage, convostore_memory, keyword_embedder
from .recording import CrewRecorder, TaskCallback, add_task_callback, record, task_output_message

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
