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
        return MemoryValidationError(
            label + self.detail, argument=self.argument, index=index, label=label
        )


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
