"""Anthropic's memory tool (``memory_20250818``) on a convostore memory store.

``ConvostoreMemoryTool`` (and ``AsyncConvostoreMemoryTool``) subclass the ``anthropic`` SDK's
``BetaAbstractMemoryTool``, so they run in its tool runner
(``client.beta.messages.tool_runner(tools=[ConvostoreMemoryTool(db, memory_store_id)], ...)``).
The model's files under ``/memories`` are the entries of one memory store: ``/memories/a/b.md``
is the entry at ``a/b.md``. Every create, edit, rename and delete is a version of the store (a
rename keeps the entry, its id and its history); edits are optimistic updates that re-read the
file when it changed under them, so a concurrent change is never overwritten.

A path must be ``/memories`` or under ``/memories/``, and is taken literally: nothing is
URL-decoded, a percent-encoded ``.``, ``/`` or ``\\`` is refused, and the core's path rules
refuse ``..``, ``.``, empty segments, backslashes, control and invisible formatting
characters; a path is normalized to Unicode NFC as the store keeps it. Whatever the model
gets wrong comes back as a ``ToolError`` (the runner sends it as an ``is_error`` result);
a missing store or another user's raises at construction.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from anthropic.lib.tools import (
    BetaAbstractMemoryTool,
    BetaAsyncAbstractMemoryTool,
    BetaFunctionToolResultType,
    ToolError,
)
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)
from convostore import (
    MemoryEntry,
    MemoryEntryNotFoundError,
    MemoryPathConflictError,
    MemoryQuotaExceededError,
    MemoryValidationError,
    MemoryVersionConflictError,
)
from convostore.spi import MemoryStoreBinding, StoreLike, normalize_memory_path, run_in_thread

__all__ = ["ROOT", "AsyncConvostoreMemoryTool", "ConvostoreMemoryTool"]

ROOT = "/memories"
"""The directory the memory tool's paths live in; the store's paths are relative to it."""
LINE_NUMBER_WIDTH = 6
MAX_LINES = 999_999
"""The most lines ``view`` shows of a file (the line numbers' width): the SDK's own limit."""
_ENCODED = re.compile(r"%(2e|2f|5c)", re.IGNORECASE)
_STALE = (MemoryVersionConflictError, MemoryEntryNotFoundError)
P = ParamSpec("P")
T = TypeVar("T")


def _tool_errors(method: Callable[P, T]) -> Callable[P, T]:
    """The core's refusals of the model's input, as the ``ToolError`` the runner reports."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(*args, **kwargs)
        except (MemoryValidationError, MemoryQuotaExceededError) as exc:
            raise ToolError(f"Error: {exc}") from exc

    return wrapper


def _text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise ToolError(f"{name} must be a string, got {type(value).__name__}")
    return value


def _size(size: int) -> str:
    """A size as the SDK's own memory tool shows it (``512B``, ``1.5K``, ``2M``)."""
    unit = min(max(size.bit_length() - 1, 0) // 10, 3)
    value = size / 1024**unit
    shown = f"{int(value)}" if value == int(value) else f"{value:.1f}"
    return f"{shown}{'BKMG'[unit]}"


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(
        f"{str(n).rjust(LINE_NUMBER_WIDTH)}\t{line}" for n, line in enumerate(lines, first)
    )


class ConvostoreMemoryTool(BetaAbstractMemoryTool, MemoryStoreBinding):
    """The memory tool's commands on one memory store (blocking; the runner's sync flavour).

    ``store`` is a ``ConversationStore``, an ``AsyncConversationStore``, a URL or None (the
    default database); one opened here is closed by ``close()``. ``user_id`` binds the tool to
    a user (every call passes it). ``max_attempts`` bounds how many times an edit re-reads a
    file that changed under it before giving up with a ``ToolError``.
    """

    def __init__(
        self,
        store: StoreLike,
        memory_store_id: str,
        *,
        user_id: str | None = None,
        max_attempts: int = 5,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self._bind(store, memory_store_id, user_id=user_id, max_attempts=max_attempts)

    # -- paths and the core calls ------------------------------------------------------------

    @staticmethod
    def _relative(path: object, *, directory: bool = False) -> str:
        """The store path of a tool path (``""`` for ``/memories`` itself); where a directory
        may be named, one trailing ``/`` is allowed (``/memories/notes/``)."""
        text = _text(path, "path")
        if text != ROOT and not text.startswith(ROOT + "/"):
            raise ToolError(f"Path must start with {ROOT}, got: {text[:200]}")
        if _ENCODED.search(text):
            raise ToolError(
                f"Path {text[:200]} holds a percent-encoded '.', '/' or '\\': paths are taken"
                " literally and such names are refused"
            )
        relative = normalize_memory_path(text[len(ROOT) + 1 :])  # as the store keeps paths
        return relative.removesuffix("/") if directory else relative

    def _get(self, path: str, relative: str, *, deciding: bool = False) -> MemoryEntry | None:
        """The live entry at ``relative`` (which the core checks), or None; ``deciding``: read
        on the primary, for a write."""
        store = self._deciding if deciding else self._store
        try:
            return store.get_memory_by_path(self.memory_store_id, relative, user_id=self.user_id)
        except MemoryValidationError as exc:
            raise ToolError(f"Invalid path {path[:200]}: {exc}") from exc

    def _file(self, path: str, *, deciding: bool = False) -> MemoryEntry:
        """The readable file at ``path``; a ``ToolError`` if there is none."""
        relative = self._relative(path)
        if not relative:
            raise ToolError(f"The path {path} is a directory, not a file.")
        entry = self._get(path, relative, deciding=deciding)
        if entry is None:
            if (
                (self._deciding if deciding else self._store)
                .list_memories(
                    self.memory_store_id, path_prefix=f"{relative}/", limit=1, user_id=self.user_id
                )
                .items
            ):
                raise ToolError(f"The path {path} is not a file.")
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        if entry.content is None:
            raise ToolError(f"The file {path} cannot be read: its current version was redacted.")
        return entry

    def _under(self, relative: str, *, deciding: bool = False) -> list[MemoryEntry]:
        """Every live entry under the directory ``relative`` (``""``: all), by path;
        ``deciding``: read on the primary, for a write."""
        store = self._deciding if deciding else self._store
        found: list[MemoryEntry] = []
        after = None
        while True:
            page = store.list_memories(
                self.memory_store_id,
                path_prefix=f"{relative}/" if relative else None,
                limit=self._store.limits.max_page_size,
                after=after,
                user_id=self.user_id,
            )
            found += page.items
            if page.next_cursor is None:
                return found
            after = page.next_cursor

    def _edit(self, path: str, change: Callable[[str], str]) -> str:
        """Apply ``change`` to the file's content as an update of the version read; when the
        file changed in between, read it again and apply ``change`` to what is there now."""
        for _ in range(self.max_attempts):
            entry = self._file(path, deciding=True)
            new_content = change(entry.content or "")
            try:
                self._update(entry, new_content)
            except _STALE:
                continue
            return new_content
        raise ToolError(
            f"The file {path} changed {self.max_attempts} times while this edit was made;"
            " nothing was written. View it again and retry."
        )

    def _move(self, entry: MemoryEntry, to: str, new_path: str) -> None:
        """Move one entry (same id, same history), re-reading it while it changes."""
        for _ in range(self.max_attempts):
            try:
                self._update(entry, None, path=to)
            except MemoryPathConflictError as exc:
                raise ToolError(f"The destination {new_path} already exists") from exc
            except MemoryVersionConflictError:
                fresh = self._deciding.get_memory(
                    self.memory_store_id, entry.entry_id, user_id=self.user_id
                )
                if fresh is None:
                    break
                entry = fresh
                continue
            return
        raise ToolError(f"/{entry.path} kept changing (or was deleted) while it was renamed")

    # -- the commands ------------------------------------------------------------------------

    @_tool_errors
    def view(self, command: BetaMemoryTool20250818ViewCommand) -> BetaFunctionToolResultType:
        """A directory: its files and directories two levels deep; a file: its numbered lines
        (``view_range`` ``[first, last]``, 1-based, ``-1`` for the end)."""
        relative = self._relative(command.path, directory=True)
        if relative and self._get(command.path, relative) is not None:
            return self._view_file(command)
        shown = f"{ROOT}/{relative}" if relative else ROOT
        entries = self._under(relative)
        if relative and not entries:
            raise ToolError(f"The path {command.path} does not exist. Please provide a valid path.")
        sizes: dict[tuple[str, ...], int] = {}
        files: set[tuple[str, ...]] = set()
        start = len(relative) + 1 if relative else 0
        for entry in entries:
            parts = tuple(entry.path[start:].split("/"))
            if any(p.startswith(".") for p in parts[:2]):
                continue  # hidden items, as the SDK's own memory tool hides them
            for depth in range(1, min(len(parts), 2) + 1):
                sizes[parts[:depth]] = sizes.get(parts[:depth], 0) + entry.size
            if len(parts) <= 2:
                files.add(parts)
        lines = [f"{_size(sum(e.size for e in entries))}\t{shown}"]
        for parts in sorted(sizes):
            slash = "" if parts in files else "/"
            lines.append(f"{_size(sizes[parts])}\t{shown}/{'/'.join(parts)}{slash}")
        header = (
            f"Here're the files and directories up to 2 levels deep in {shown},"
            " excluding hidden items:"
        )
        return header + "\n" + "\n".join(lines)

    def _view_file(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        lines = (self._file(command.path).content or "").split("\n")
        if len(lines) > MAX_LINES:  # counted before any range, as the SDK's own tool does
            raise ToolError(
                f"File {command.path} exceeds maximum line limit of {MAX_LINES:,} lines."
            )
        first = 1
        window = command.view_range
        if window is not None:
            if not (
                isinstance(window, list)
                and len(window) == 2
                and all(isinstance(n, int) and not isinstance(n, bool) for n in window)
            ):
                raise ToolError("view_range must be a list of two integers: [first, last]")
            first = max(1, window[0])
            lines = lines[first - 1 : None if window[1] == -1 else max(window[1], 0)]
        return f"Here's the content of {command.path} with line numbers:\n" + _numbered(
            lines, first
        )

    @_tool_errors
    def create(self, command: BetaMemoryTool20250818CreateCommand) -> BetaFunctionToolResultType:
        """A new file (an existing one is refused, as the SDK's own memory tool does)."""
        relative = self._relative(command.path)
        if not relative:
            raise ToolError(f"The path {command.path} is a directory, not a file.")
        text = _text(command.file_text, "file_text")
        if self._get(command.path, relative, deciding=True) is not None:
            raise ToolError(f"File {command.path} already exists")
        try:
            self._store.create_memory(self.memory_store_id, relative, text, user_id=self.user_id)
        except MemoryPathConflictError as exc:
            raise ToolError(f"File {command.path} already exists") from exc
        return f"File created successfully at: {command.path}"

    @_tool_errors
    def str_replace(
        self, command: BetaMemoryTool20250818StrReplaceCommand
    ) -> BetaFunctionToolResultType:
        """Replace ``old_str``, which must occur exactly once, by ``new_str``."""
        old, new = _text(command.old_str, "old_str"), _text(command.new_str, "new_str")
        changed = 0  # the line (0-based) of the replacement, for the snippet

        def change(content: str) -> str:
            nonlocal changed
            count = content.count(old)
            if count == 0:
                raise ToolError(
                    f"No replacement was performed, old_str `{old}` did not appear verbatim"
                    f" in {command.path}."
                )
            if count > 1:
                lines = []
                at = content.find(old)
                while at != -1:
                    lines.append(str(content.count("\n", 0, at) + 1))
                    at = content.find(old, at + 1)
                raise ToolError(
                    f"No replacement was performed. Multiple occurrences of old_str `{old}` in"
                    f" lines: {', '.join(lines)}. Please ensure it is unique"
                )
            changed = content.count("\n", 0, content.find(old))
            return content.replace(old, new)

        lines = self._edit(command.path, change).split("\n")
        first = max(0, changed - 2)
        return (
            "The memory file has been edited. Here is the snippet showing the change (with line"
            " numbers):\n" + _numbered(lines[first : changed + 3], first + 1)
        )

    @_tool_errors
    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> BetaFunctionToolResultType:
        """Insert ``insert_text`` after line ``insert_line`` (0: at the top)."""
        text = _text(command.insert_text, "insert_text")
        at = command.insert_line
        if isinstance(at, bool) or not isinstance(at, int):
            raise ToolError(f"insert_line must be an integer, got {type(at).__name__}")

        def change(content: str) -> str:
            lines = content.split("\n")
            if lines[-1] == "":
                lines.pop()
            if not 0 <= at <= len(lines):
                raise ToolError(
                    f"Invalid `insert_line` parameter: {at}. It should be within the range"
                    f" [0, {len(lines)}]."
                )
            lines.insert(at, text.rstrip("\n"))
            return "\n".join(lines) + "\n"

        self._edit(command.path, change)
        return f"The file {command.path} has been edited."

    @_tool_errors
    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> BetaFunctionToolResultType:
        """Delete a file, or a directory with everything under it (each a deletion version;
        the history stays). Not atomic across the files of a directory."""
        relative = self._relative(command.path, directory=True)
        if not relative:
            raise ToolError(f"Cannot delete the {ROOT} directory itself")
        entry = self._get(command.path, relative, deciding=True)
        doomed = [entry] if entry is not None else self._under(relative, deciding=True)
        if not doomed:
            raise ToolError(f"The path {command.path} does not exist")
        for each in doomed:
            self._store.delete_memory(self.memory_store_id, each.entry_id, user_id=self.user_id)
        return f"Successfully deleted {command.path}"

    @_tool_errors
    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> BetaFunctionToolResultType:
        """Move a file (the same entry: its id and history go with it) or a directory (each
        file under it). Not atomic across the files of a directory."""
        old = self._relative(command.old_path, directory=True)
        new = self._relative(command.new_path, directory=True)
        if not old:
            raise ToolError(f"Cannot rename the {ROOT} directory itself")
        if not new:
            raise ToolError(f"The destination {command.new_path} already exists")
        entry = self._get(command.old_path, old, deciding=True)
        if self._get(command.new_path, new, deciding=True) is not None or self._under(
            new, deciding=True
        ):
            raise ToolError(f"The destination {command.new_path} already exists")
        if entry is not None:
            self._move(entry, new, command.new_path)
        else:
            if new.startswith(old + "/"):
                raise ToolError(f"Cannot move {command.old_path} into itself")
            moving = self._under(old, deciding=True)
            if not moving:
                raise ToolError(f"The path {command.old_path} does not exist")
            for each in moving:
                self._move(each, new + each.path[len(old) :], command.new_path)
        return f"Successfully renamed {command.old_path} to {command.new_path}"

    @_tool_errors
    def clear_all_memory(self) -> BetaFunctionToolResultType:
        """Delete every file of the store (each a deletion version; the history stays)."""
        for entry in self._under("", deciding=True):
            self._store.delete_memory(self.memory_store_id, entry.entry_id, user_id=self.user_id)
        return "All memory cleared"


class AsyncConvostoreMemoryTool(BetaAsyncAbstractMemoryTool):
    """``ConvostoreMemoryTool`` for the SDK's async tool runner: each command runs the blocking
    one on a worker thread (asyncio or trio). Same arguments; ``sync`` is the blocking tool."""

    def __init__(
        self,
        store: StoreLike,
        memory_store_id: str,
        *,
        user_id: str | None = None,
        max_attempts: int = 5,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.sync = ConvostoreMemoryTool(
            store,
            memory_store_id,
            user_id=user_id,
            max_attempts=max_attempts,
            cache_control=cache_control,
        )

    @property
    def memory_store_id(self) -> str:
        return self.sync.memory_store_id

    async def aclose(self) -> None:
        """Close the store (on a worker thread) if this tool opened it."""
        await run_in_thread(self.sync.close)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> BetaFunctionToolResultType:
        return await run_in_thread(functools.partial(self.sync.view, command))

    async def create(
        self, command: BetaMemoryTool20250818CreateCommand
    ) -> BetaFunctionToolResultType:
        return await run_in_thread(functools.partial(self.sync.create, command))

    async def str_replace(
        self, command: BetaMemoryTool20250818StrReplaceCommand
    ) -> BetaFunctionToolResultType:
        return await run_in_thread(functools.partial(self.sync.str_replace, command))

    async def insert(
        self, command: BetaMemoryTool20250818InsertCommand
    ) -> BetaFunctionToolResultType:
        return await run_in_thread(functools.partial(self.sync.insert, command))

    async def delete(
        self, command: BetaMemoryTool20250818DeleteCommand
    ) -> BetaFunctionToolResultType:
        return await run_in_thread(functools.partial(self.sync.delete, command))

    async def rename(
        self, command: BetaMemoryTool20250818RenameCommand
    ) -> BetaFunctionToolResultType:
        return await run_in_thread(functools.partial(self.sync.rename, command))

    async def clear_all_memory(self) -> BetaFunctionToolResultType:
        return await run_in_thread(self.sync.clear_all_memory)
