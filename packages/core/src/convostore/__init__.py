"""convostore: a conversation store for AI agents."""

from .convert import (
    responses_item_role,
    to_anthropic_messages,
    to_anthropic_system,
    to_openai_input,
)
from .errors import (
    ConflictError,
    ConversationOwnershipError,
    ConvostoreError,
    MemoryQuotaExceededError,
    MemoryValidationError,
    MessageIdConflictError,
    MessageNotFoundError,
    NotFoundError,
    StorageError,
)
from .models import ConversationMeta, ListConversationsResult, Message, Order, Role
from .store import AsyncConversationStore, ConversationStore, MessageInput
from .summary import PromptContext, afold_summary, aprompt_context, fold_summary, prompt_context
from .threads import run_in_thread, run_sync
from .validation import Limits

__all__ = [
    "AsyncConversationStore",
    "ConflictError",
    "ConversationMeta",
    "ConversationOwnershipError",
    "ConversationStore",
    "ConvostoreError",
    "Limits",
    "ListConversationsResult",
    "MemoryQuotaExceededError",
    "MemoryValidationError",
    "Message",
    "MessageIdConflictError",
    "MessageInput",
    "MessageNotFoundError",
    "NotFoundError",
    "Order",
    "PromptContext",
    "Role",
    "StorageError",
    "afold_summary",
    "aprompt_context",
    "fold_summary",
    "prompt_context",
    "responses_item_role",
    "run_in_thread",
    "run_sync",
    "to_anthropic_messages",
    "to_anthropic_system",
    "to_openai_input",
]
