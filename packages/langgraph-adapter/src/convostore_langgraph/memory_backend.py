"""``ConvostoreMemoryBackend``: a DeepAgents file backend over one convostore memory store.

Route it under ``/memories/`` with ``CompositeBackend(default=..., routes={"/memories/":
ConvostoreMemoryBackend(db, memory_store_id)})`` and an agent's memory files are entries of the
memory store: every write, edit and delete is a version, kept and auditable (and redactable)
with the core's API, and an edit never overwrites a change made concurrently.

Paths: DeepAgents hands a backend absolute paths (``CompositeBackend`` strips its route prefix,
so ``/memories/notes/a.md`` arrives as ``/notes/a.md``); the backend drops the leading ``/``
and the rest is the entry's path in the store (``notes/a.md``), checked by the core's path
rules and normalized to NFC. A relative path is taken as a key, as ``StoreBackend`` takes it,
so ``notes/a.md`` and ``/notes/a.md`` name one entry. Paths it returns are absolute
(``/notes/a.md``). Directories are implied by the
paths: ``ls("/notes")`` lists the entries and sub-directories directly under ``notes/``.

Input from the model (a bad path, too much content, a stale ``old_string``) comes back as the
result's ``error``, as the protocol asks; the store's own failures (``StorageError``) and a
misconfigured backend (a missing memory store, another user's) raise.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TypeVar

from convostore import (
    MemoryEntry,
    MemoryEntryNotFoundError,
    MemoryPathConflictError,
    MemoryQuotaExceededError,
    MemoryValidationError,
    MemoryVersionConflictError,
)
from convostore.spi import MemoryStoreBinding, StoreLike, normalize_memory_path, run_in_thread
from deepagents.backends.protocol import (
    BackendProtocol,
    DeleteResult,
    EditResult,
    FileData,
    FileDownloadResponse,
    FileInfo,
    FileUploadResponse,
    GlobResult,
    GrepResult,
    LsResult,
    ReadResult,
    WriteResult,
)
from deepagents.backends.utils import (
    InvalidGlobPatternError,
    _get_backend_read_file_type,
    _glob_search_files,
    grep_matches_from_files,
    perform_string_replacement,
    slice_read_response,
)

__all__ = ["DEFAULT_MAX_ATTEMPTS", "ConvostoreMemoryBackend"]

DEFAULT_MAX_ATTEMPTS = 5
"""How many times ``edit`` (and ``write``) reads the file and tries its update before giving
up on a file that keeps changing under it."""

_INPUT_ERRORS = (MemoryValidationError, MemoryQuotaExceededError)
T = TypeVar("T")


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def _file_data(entry: MemoryEntry, content: str) -> FileData:
    return FileData(
        content=content,
        encoding="utf-8",
        created_at=_iso(entry.created_at),
        modified_at=_iso(entry.updated_at),
    )


def _file_info(entry: MemoryEntry) -> FileInfo:
    return FileInfo(
        path="/" + entry.path, is_dir=False, size=entry.size, modified_at=_iso(entry.updated_at)
    )


def _redacted(file_path: str) -> str:
    return f"Error: the current version of '{file_path}' was redacted; its content is gone"


def _key(path: object, argument: str) -> str:
    """The store path of a protocol path: one leading ``/`` dropped (a relative path is taken
    as it is, as ``StoreBackend`` takes any key), in NFC as the store keeps paths."""
    if not isinstance(path, str):
        raise MemoryValidationError(
            f"{argument} must be a str, got {type(path).__name__}", argument=argument
        )
    if not path:
        raise MemoryValidationError(
            f"{argument} must not be empty ('/' is the root)", argument=argument
        )
    return normalize_memory_path(path.removeprefix("/"))


def _text(path: str, data: object) -> str:
    """An uploaded file's bytes as text; a memory store holds text only."""
    if not isinstance(data, bytes):
        raise MemoryValidationError(f"content of {path!r} must be bytes", argument="content")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise MemoryValidationError(
            f"content of {path!r} is not UTF-8 text; a memory store holds text",
            argument="content",
        ) from None


def _query_of(pattern: str) -> str | None:
    """A search query every text holding ``pattern`` matches: its pieces between double
    quotes, each quoted (a term); the core refuses it if it is empty or over its limits. None
    when it holds a capital sigma, whose lower case depends on the letters around it (so the
    pattern's may differ from the text's)."""
    query = " ".join(f'"{piece}"' for piece in pattern.split('"') if piece)
    return None if "\u03a3" in pattern else query


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class ConvostoreMemoryBackend(BackendProtocol, MemoryStoreBinding):
    """A DeepAgents ``BackendProtocol`` whose files are the entries of one memory store.

    ``store`` is a ``ConversationStore``, an ``AsyncConversationStore``, a URL or None (the
    default database); a store opened here is closed by ``close()``. ``user_id`` binds the
    backend to a user: every call passes it, so another user's memory store is refused
    (``MemoryStoreOwnershipError``, raised here at construction). ``max_attempts`` bounds how
    many times an edit re-reads a file that changed under it before failing cleanly.
    """

    def __init__(
        self,
        store: StoreLike,
        memory_store_id: str,
        *,
        user_id: str | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        self._bind(store, memory_store_id, user_id=user_id, max_attempts=max_attempts)

    # -- the core calls, bound to the store and the user ---------------------------------------

    def _get(self, key: str, *, deciding: bool = False) -> MemoryEntry | None:
        """The live entry at ``key``; ``deciding``: read on the primary, for a write."""
        store = self._deciding if deciding else self._store
        return store.get_memory_by_path(self.memory_store_id, key, user_id=self.user_id)

    def _entries(self, prefix: str, *, deciding: bool = False) -> Iterator[MemoryEntry]:
        """Every live entry whose path starts with ``prefix`` (all of them for ``""``), by path,
        without content; ``deciding``: read on the primary, for a write."""
        store = self._deciding if deciding else self._store
        after = None
        while True:
            page = store.list_memories(
                self.memory_store_id,
                path_prefix=prefix or None,
                limit=self._store.limits.max_page_size,
                after=after,
                user_id=self.user_id,
            )
            yield from page.items
            if page.next_cursor is None:
                return
            after = page.next_cursor

    def _contents(self, prefix: str) -> dict[str, FileData]:
        """``{"/path": FileData}`` of the entries under ``prefix`` that can be read (a redacted
        current version is left out: its content is gone)."""
        files = {}
        for listed in self._entries(prefix):
            entry = self._store.get_memory(
                self.memory_store_id, listed.entry_id, user_id=self.user_id
            )
            if entry is not None and entry.content is not None:
                files["/" + entry.path] = _file_data(entry, entry.content)
        return files

    def _candidates(self, prefix: str, pattern: str) -> dict[str, FileData]:
        """``_contents(prefix)`` narrowed by the search index to the entries that may hold
        ``pattern`` (each of its pieces between double quotes is a term the entry's text must
        hold, case ignored); every entry when the pattern cannot be a query (empty, over the
        query's limits, or holding a character a query may not)."""
        query = _query_of(pattern)
        if query is None:
            return self._contents(prefix)
        files = {}
        after = None
        while True:
            try:
                page = self._store.search_memories(
                    memory_store_id=self.memory_store_id,
                    query=query,
                    path_prefix=prefix or None,
                    user_id=self.user_id,
                    limit=self._store.limits.max_page_size,
                    after=after,
                )
            except MemoryValidationError as exc:
                if exc.argument != "query":
                    raise
                return self._contents(prefix)
            for hit in page.items:
                entry = self._store.get_memory(
                    self.memory_store_id, hit.entry_id, user_id=self.user_id
                )
                if entry is not None and entry.content is not None:
                    files["/" + entry.path] = _file_data(entry, entry.content)
            if page.next_cursor is None:
                return files
            after = page.next_cursor

    def _put(self, key: str, content: str) -> str | None:
        """Create ``key`` or replace its content (a new version), retrying while it changes
        under us; an error text after ``max_attempts`` tries."""
        if not isinstance(content, str):  # (None would ask update_memory for a move)
            raise MemoryValidationError(
                f"content must be a str, got {type(content).__name__}", argument="content"
            )
        for _ in range(self.max_attempts):
            entry = self._get(key, deciding=True)
            try:
                if entry is None:
                    self._store.create_memory(
                        self.memory_store_id, key, content, user_id=self.user_id
                    )
                else:
                    self._update(entry, content)
            except (MemoryPathConflictError, MemoryVersionConflictError, MemoryEntryNotFoundError):
                continue  # created, updated or deleted concurrently: read it again
            else:
                return None
        return self._kept_changing("/" + key)

    def _kept_changing(self, file_path: str) -> str:
        return (
            f"Error: '{file_path}' changed {self.max_attempts} times while this call tried to"
            " update it; nothing was written. Read it again and retry."
        )

    # -- BackendProtocol ---------------------------------------------------------------------

    def ls(self, path: str) -> LsResult:
        """The files and sub-directories directly under ``path`` (directories end with ``/``
        and have ``is_dir=True``); an empty list for a directory with nothing under it."""
        try:
            prefix = _key(path, "path").strip("/")
            prefix = f"{prefix}/" if prefix else ""
            infos: list[FileInfo] = []
            dirs: set[str] = set()
            for entry in self._entries(prefix):
                head, sep, _ = entry.path[len(prefix) :].partition("/")
                if sep:
                    dirs.add(head)
                else:
                    infos.append(_file_info(entry))
        except _INPUT_ERRORS as exc:
            return LsResult(error=f"Error: {exc}")
        infos += [
            FileInfo(path=f"/{prefix}{d}/", is_dir=True, size=0, modified_at="") for d in dirs
        ]
        return LsResult(entries=sorted(infos, key=lambda info: info["path"]))

    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        """The raw text of lines ``offset`` (0-based) to ``offset + limit`` of the file; a path
        DeepAgents reads as binary (``.png``, ``.pdf``, ``.mkv``...) whole, as its backends do."""
        if not (_is_int(offset) and _is_int(limit)):
            return ReadResult(error="Error: offset and limit must be ints")
        try:
            entry = self._get(_key(file_path, "file_path"))
        except _INPUT_ERRORS as exc:
            return ReadResult(error=f"Error: {exc}")
        if entry is None:
            return ReadResult(error=f"File '{file_path}' not found")
        if entry.content is None:
            return ReadResult(error=_redacted(file_path))
        data = _file_data(entry, entry.content)
        if _get_backend_read_file_type(file_path) != "text":
            return ReadResult(file_data=data)
        return slice_read_response(data, offset, limit)

    def write(self, file_path: str, content: str) -> WriteResult:
        """Create the file, or replace its content entirely (as the protocol says): either way
        a new version of the entry, the replaced text stays in its history."""
        try:
            error = self._put(_key(file_path, "file_path"), content)
        except _INPUT_ERRORS as exc:
            return WriteResult(error=f"Error: {exc}")
        return WriteResult(error=error) if error else WriteResult(path=file_path)

    def edit(
        self,
        file_path: str,
        old_string: str,
        new_string: str,
        replace_all: bool = False,
    ) -> EditResult:
        """Replace ``old_string`` (which must be unique unless ``replace_all``) by
        ``new_string``, as an update of the version read. When the file changed in between,
        it is read again and the replacement applied to what is there now (or refused if
        ``old_string`` no longer matches), at most ``max_attempts`` times: a concurrent change
        is never overwritten."""
        if not (isinstance(old_string, str) and isinstance(new_string, str)):
            return EditResult(error="Error: old_string and new_string must be str")
        try:
            key = _key(file_path, "file_path")
            for _ in range(self.max_attempts):
                entry = self._get(key, deciding=True)
                if entry is None:
                    return EditResult(error=f"Error: File '{file_path}' not found")
                if entry.content is None:
                    return EditResult(error=_redacted(file_path))
                replaced = perform_string_replacement(
                    entry.content, old_string, new_string, bool(replace_all)
                )
                if isinstance(replaced, str):
                    return EditResult(error=replaced)
                new_content, occurrences = replaced
                try:
                    self._update(entry, new_content)
                except (MemoryVersionConflictError, MemoryEntryNotFoundError):
                    continue  # changed or deleted since we read it: read it again
                return EditResult(path=file_path, occurrences=occurrences)
        except _INPUT_ERRORS as exc:
            return EditResult(error=f"Error: {exc}")
        return EditResult(error=self._kept_changing(file_path))

    def delete(self, file_path: str) -> DeleteResult:
        """Delete the file, or every file under the directory (``/`` is every file): each
        entry gets a deletion version, its earlier versions stay. Not atomic across entries."""
        try:
            base = _key(file_path, "file_path").rstrip("/")  # "/d/" is the directory d
            exact = self._get(base, deciding=True) if base else None  # checks the path first
            doomed = list(self._entries(f"{base}/" if base else "", deciding=True))
        except _INPUT_ERRORS as exc:
            return DeleteResult(error=f"Error: {exc}")
        if exact is not None:
            doomed.insert(0, exact)
        if not doomed:
            return DeleteResult(error=f"Error: File '{file_path}' not found")
        for entry in doomed:
            self._store.delete_memory(self.memory_store_id, entry.entry_id, user_id=self.user_id)
        return DeleteResult(path=file_path)

    def grep(
        self,
        pattern: str,
        path: str | None = None,
        glob: str | None = None,
        *,
        max_count: int | None = None,
    ) -> GrepResult:
        """Lines containing the literal ``pattern``, in the files under ``path`` (a directory
        or a file) whose path matches ``glob``. The search index finds the files that may
        hold it; each of those is read (one read each)."""
        if not isinstance(pattern, str) or not (glob is None or isinstance(glob, str)):
            return GrepResult(error="Error: pattern (and glob, when given) must be str")
        if not (max_count is None or _is_int(max_count)):
            return GrepResult(error="Error: max_count must be None or an int")
        try:
            root = "/" + ("" if path is None else _key(path, "path"))
            files = self._candidates(root.strip("/"), pattern)
        except _INPUT_ERRORS as exc:
            return GrepResult(error=f"Error: {exc}")
        return grep_matches_from_files(files, pattern, root, glob, max_count=max_count)

    def glob(self, pattern: str, path: str | None = None) -> GlobResult:
        """Files under ``path`` matching ``pattern`` (DeepAgents' glob contract), newest
        first; no content is read."""
        if not isinstance(pattern, str):
            return GlobResult(error="Error: pattern must be a str")
        try:
            root = "/" + ("" if path is None else _key(path, "path"))
            entries = {"/" + e.path: e for e in self._entries(root.strip("/"))}
            found = _glob_search_files(
                {p: {"modified_at": _iso(e.updated_at)} for p, e in entries.items()},
                pattern,
                root,
            )
        except (*_INPUT_ERRORS, InvalidGlobPatternError) as exc:
            return GlobResult(error=f"Error: {exc}")
        if found == "No files found":
            return GlobResult(matches=[])
        return GlobResult(matches=[_file_info(entries[p]) for p in found.split("\n")])

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        """Write each ``(path, UTF-8 bytes)`` as ``write`` does; a memory store holds text, so
        bytes that are not UTF-8 are refused (nothing written for that file)."""
        responses = []
        for path, data in files:
            try:
                error = self._put(_key(path, "path"), _text(path, data))
            except MemoryValidationError as exc:
                error = "invalid_path" if exc.argument == "path" else f"Error: {exc}"
            except MemoryQuotaExceededError as exc:
                error = f"Error: {exc}"
            responses.append(FileUploadResponse(path=path, error=error))
        return responses

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        """Each file's content as UTF-8 bytes, or ``file_not_found`` / ``is_directory`` /
        ``invalid_path`` (or a redaction notice) in ``error``."""
        responses = []
        for path in paths:
            try:
                key = _key(path, "path")
                entry = self._get(key)
                if entry is None:
                    under = self._store.list_memories(
                        self.memory_store_id,
                        path_prefix=f"{key}/",
                        limit=1,
                        user_id=self.user_id,
                    )
                    error = "is_directory" if under.items else "file_not_found"
                    responses.append(FileDownloadResponse(path=path, error=error))
                elif entry.content is None:
                    responses.append(FileDownloadResponse(path=path, error=_redacted(path)))
                else:
                    data = entry.content.encode("utf-8")
                    responses.append(FileDownloadResponse(path=path, content=data))
            except MemoryValidationError:
                responses.append(FileDownloadResponse(path=path, error="invalid_path"))
        return responses

    # -- the async twins: the same calls on a worker thread ----------------------------------

    async def _thread(self, call: Callable[..., T], *args: object, **kwargs: object) -> T:
        return await run_in_thread(functools.partial(call, *args, **kwargs))

    async def als(self, path: str) -> LsResult:
        return await self._thread(self.ls, path)

    async def aread(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        return await self._thread(self.read, file_path, offset, limit)

    async def awrite(self, file_path: str, content: str) -> WriteResult:
        return await self._thread(self.write, file_path, content)

    async def aedit(
        self,
        file_path: str,
        old_string: str,
        new_string: str,
        replace_all: bool = False,
    ) -> EditResult:
        return await self._thread(self.edit, file_path, old_string, new_string, replace_all)

    async def adelete(self, file_path: str) -> DeleteResult:
        return await self._thread(self.delete, file_path)

    async def agrep(
        self,
        pattern: str,
        path: str | None = None,
        glob: str | None = None,
        *,
        max_count: int | None = None,
    ) -> GrepResult:
        return await self._thread(self.grep, pattern, path, glob, max_count=max_count)

    async def aglob(self, pattern: str, path: str | None = None) -> GlobResult:
        return await self._thread(self.glob, pattern, path)

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return await self._thread(self.upload_files, files)

    async def adownload_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        return await self._thread(self.download_files, paths)
