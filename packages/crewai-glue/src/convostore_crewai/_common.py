"""What every part of the glue shares: opening a store and reporting a failed write."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import TypeAlias

from convostore import AsyncConversationStore, ConversationStore

StoreLike: TypeAlias = ConversationStore | AsyncConversationStore | str
"""A store, its async twin (its blocking ``sync`` store is used), or a URL to open."""

ErrorHandler: TypeAlias = Callable[[BaseException], object]

logger = logging.getLogger("convostore_crewai")


class RecordingFailedWarning(UserWarning):
    """A write to the conversation store failed; the crew's run went on unchanged."""


def open_store(store: StoreLike, argument: str = "store") -> tuple[ConversationStore, bool]:
    """The blocking store for ``store`` and whether it was opened here (and is ours to close)."""
    if isinstance(store, ConversationStore):
        return store, False
    if isinstance(store, AsyncConversationStore):
        return store.sync, False
    if isinstance(store, str):
        return ConversationStore(store), True
    raise TypeError(
        f"{argument} must be a ConversationStore, an AsyncConversationStore or a URL,"
        f" got {type(store).__name__}"
    )


def report(
    what: str,
    error: BaseException,
    errors: list[BaseException],
    on_error: ErrorHandler | None,
) -> None:
    """Make a failed store write visible without letting it reach the crew.

    The error is kept in ``errors``, logged with its traceback, raised as a
    ``RecordingFailedWarning``, and handed to ``on_error`` when one was given.
    """
    errors.append(error)
    logger.error("convostore-crewai: %s failed: %r", what, error, exc_info=error)
    warnings.warn(
        f"convostore-crewai: {what} failed, the crew's run goes on without it:"
        f" {type(error).__name__}: {error}",
        RecordingFailedWarning,
        stacklevel=3,
    )
    if on_error is not None:
        try:
            on_error(error)
        except Exception:
            logger.exception("convostore-crewai: the on_error handler raised")
