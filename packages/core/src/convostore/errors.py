"""Errors raised by convostore. Every message names the argument, the limit and the value."""

from __future__ import annotations


class ConvostoreError(Exception):
    """Base class of every error convostore raises."""


class MemoryValidationError(ConvostoreError, ValueError):
    """An argument is malformed or outside its limit; nothing was written."""


class MemoryQuotaExceededError(ConvostoreError):
    """A write would take a conversation past its message quota; nothing was written."""


class NotFoundError(ConvostoreError, LookupError):
    """The conversation or message named does not exist."""


class MessageNotFoundError(NotFoundError):
    """The message named does not exist in that conversation."""


class ConflictError(ConvostoreError):
    """The write contradicts what is stored; nothing was written."""


class ConversationOwnershipError(ConflictError):
    """The conversation belongs to another user."""


class MessageIdConflictError(ConflictError):
    """A caller-supplied message id is already used by a different message."""


class StorageError(ConvostoreError):
    """The database failed; the driver's exception is chained as ``__cause__``."""
