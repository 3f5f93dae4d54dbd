"""Errors raised by convostore. Every message names the argument, the limit and the value."""

from __future__ import annotations


class ConvostoreError(Exception):
    """Base class of every error convostore raises."""


class MemoryValidationError(ConvostoreError, ValueError):
    """An argument is malformed or outside its limit; nothing was written.

    ``argument`` names it (``"content"``, ``"limit"``, ...) where one is at fault, ``index`` is
    its item's position when the call took a batch, and ``label`` is how the message names it
    (``"content"``, ``"messages[2].content"``); ``detail`` is the rest of the message, so an
    adapter can name the item in its own words (``f"items[{e.index}]{e.detail}"``).
    """

    def __init__(
        self,
        message: str,
        *,
        argument: str | None = None,
        index: int | None = None,
        label: str | None = None,
    ) -> None:
        super().__init__(message)
        self.argument = argument
        self.index = index
        self.label = label if label is not None else (argument or "")

    @property
    def detail(self) -> str:
        """The message after its ``label``."""
        text = str(self)
        return text[len(self.label) :] if text.startswith(self.label) else f" {text}"

    def in_batch(self, items: str, index: int) -> MemoryValidationError:
        """This error for the ``index``-th item of the batch argument ``items``."""
        own = "" if self.argument in (None, "message") else f".{self.argument}"
        label = f"{items}[{index}]{own}"
        return type(self)(label + self.detail, argument=self.argument, index=index, label=label)


class ContentTooLargeError(MemoryValidationError):
    """Content or metadata (of a message, a conversation, a memory entry) is over its size
    limit: the HTTP API's 413. Nothing was written."""


class MemoryQuotaExceededError(ConvostoreError):
    """A write would pass a quota (messages per conversation, entries per memory store);
    nothing was written."""


class NotFoundError(ConvostoreError, LookupError):
    """The conversation or message named does not exist."""


class ConversationNotFoundError(NotFoundError):
    """The conversation named does not exist."""


class MessageNotFoundError(NotFoundError):
    """The message named does not exist in that conversation."""


class ConflictError(ConvostoreError):
    """The write contradicts what is stored; nothing was written."""


class OwnershipError(ConflictError):
    """The conversation or memory store belongs to another user than the ``user_id`` given."""


class ConversationOwnershipError(OwnershipError):
    """The conversation belongs to another user."""


class MemoryStoreOwnershipError(OwnershipError):
    """The memory store belongs to another user."""


class MemoryStoreNotFoundError(NotFoundError):
    """The memory store named does not exist."""


class MemoryEntryNotFoundError(NotFoundError):
    """The memory entry named does not exist in that memory store (or was deleted)."""


class MemoryVersionNotFoundError(NotFoundError):
    """The memory version named does not exist in that memory store."""


class MemoryPathConflictError(ConflictError):
    """A live entry of the memory store already has that path."""


class MemoryVersionConflictError(ConflictError):
    """The entry is no longer at the version the caller read (an optimistic-concurrency
    conflict, the HTTP API's 409): read it again, then retry. ``current_version`` is the
    entry's version now."""

    def __init__(self, message: str, *, current_version: int) -> None:
        super().__init__(message)
        self.current_version = current_version


class ConversationExistsError(ConflictError):
    """A conversation with that id already exists (a fork needs a new id)."""


class ConversationManagedError(ConflictError):
    """The conversation is managed by a component (its messages follow a LangGraph thread):
    only that component writes its messages; nothing was written."""


class MessageIdConflictError(ConflictError):
    """A caller-supplied message id is already used by a different message."""


class ClosedError(ConvostoreError, RuntimeError):
    """The store (or a session on it) was used after ``close()``; nothing was done. A
    ``RuntimeError`` too, as the frameworks' own closed sessions raise."""


class StorageError(ConvostoreError):
    """The database failed; the driver's exception is chained as ``__cause__``."""
