"""What every part of the glue shares: opening a store and reporting a failed write."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import TypeAlias

from convostore.spi import StoreLike, open_store

__all__ = ["ErrorHandler", "RecordingFailedWarning", "StoreLike", "open_store", "report"]

ErrorHandler: TypeAlias = Callable[[BaseException], object]

logger = logging.getLogger("convostore_crewai")


class RecordingFailedWarning(UserWarning):
    """A write to the conversation store failed; the crew's run went on unchanged."""


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
