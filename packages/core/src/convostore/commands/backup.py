"""``backup`` and ``restore`` of an SQLite store, through SQLite's online backup API.

A backup reads one snapshot of the source (a read transaction held from its first page to its
last, so writers go on and the copy is the store as it was when the backup began) into a file
beside the destination, renamed when whole. A restore copies the backup beside its target,
runs ``check`` on that copy, and only then writes the target, in one transaction of the
target's own (a server running on it sees the old store or the new one). A failed command
leaves nothing behind. PostgreSQL has better tools of its own, which both commands name.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from ..backends.urls import _sqlite_path
from ..errors import ConflictError, MemoryValidationError, StorageError
from ..store import ConversationStore
from .common import Progress, VerificationError, open_existing, resolve_url
from .maintenance import check

STEP_PAGES = 1024
"""Pages copied per step of the backup API (4 MiB at the default page size): the progress
bar moves after each."""

POSTGRES_BACKUP = (
    "convostore backup copies SQLite stores; back up PostgreSQL with its own tools: pg_dump"
    " -Fc (a logical dump of the database, restored with pg_restore) or base backups with WAL"
    " archiving (pg_basebackup plus archive_command, for point-in-time recovery)"
)
POSTGRES_RESTORE = (
    "convostore restore writes SQLite stores; restore PostgreSQL with its own tools: pg_restore"
    " for a pg_dump archive, or a base backup with its archived WAL (restore_command) for"
    " point-in-time recovery"
)


class ExistingStoreError(ConflictError):
    """``restore`` would replace a store that exists (``force`` allows it)."""


@dataclass(frozen=True)
class Copied:
    """What ``backup`` or ``restore`` wrote: the file and its size."""

    path: str
    pages: int
    bytes: int


def _sqlite_file(url: str, argument: str, refusal: str) -> str:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme != "sqlite":
        if scheme in ("postgresql", "postgres") or scheme.startswith("postgresql+"):
            raise MemoryValidationError(refusal, argument=argument)
        raise MemoryValidationError(
            f"{argument}: {scheme or 'this URL'}:// is not an SQLite store; backup and restore"
            " take sqlite:///file.db",
            argument=argument,
        )
    return _sqlite_path(url, parts.netloc, parts.path)


def _file_argument(path: str, argument: str) -> Path:
    """A file path given on the command line (not a URL); its directory must exist."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise MemoryValidationError(f"{argument} must name a file", argument=argument)
    if "://" in path:
        raise MemoryValidationError(
            f"{argument} is a file path, not a URL: {path!r}", argument=argument
        )
    target = Path(path)
    if not target.parent.is_dir():
        raise MemoryValidationError(
            f"{argument} {path!r}: the directory {str(target.parent)!r} does not exist",
            argument=argument,
        )
    if target.is_dir():
        raise MemoryValidationError(f"{argument} {path!r} is a directory", argument=argument)
    return target


def _connect(path: str | Path, *, read_only: bool = False) -> sqlite3.Connection:
    if read_only:
        uri = f"file:{quote(os.path.abspath(path))}?mode=ro"
        return sqlite3.connect(uri, uri=True, isolation_level=None, timeout=60)
    return sqlite3.connect(path, isolation_level=None, timeout=60)


def _copy(
    source: sqlite3.Connection,
    target: sqlite3.Connection,
    what: str,
    progress: Progress | None,
) -> int:
    """Copy ``source`` into ``target`` a step at a time; the pages copied."""
    pages = 0

    def step(status: int, remaining: int, total: int) -> None:
        nonlocal pages
        pages = total
        if progress is not None:
            progress(what, total - remaining, total)

    source.backup(target, pages=STEP_PAGES, progress=step)
    return pages


def _remove(path: Path) -> None:
    """``path`` and the files SQLite and the store keep beside it."""
    for suffix in ("", "-wal", "-shm", "-journal", "-writers"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


@contextlib.contextmanager
def _partial(beside: Path) -> Iterator[Path]:
    """A new file name in ``beside``'s directory, removed (with SQLite's files) on the way out
    unless it was renamed."""
    fd, name = tempfile.mkstemp(prefix=".convostore-backup-", suffix=".db", dir=beside.parent)
    os.close(fd)
    path = Path(name)
    try:
        yield path
    finally:
        _remove(path)


def backup(
    url: str | None,
    destination: str,
    *,
    force: bool = False,
    progress: Progress | None = None,
) -> Copied:
    """Copy the SQLite store at ``url`` to the file ``destination`` while it is in use: one
    snapshot, taken when the backup begins (every write committed before it is in the copy,
    none after), into a file beside ``destination``, renamed to it when whole. An existing
    ``destination`` is refused unless ``force``. ``progress("pages", done, total)``."""
    url = resolve_url(url)
    path = _sqlite_file(url, "url", POSTGRES_BACKUP)
    target = _file_argument(destination, "destination")
    if os.path.abspath(target) == os.path.abspath(path):
        raise MemoryValidationError(
            "destination is the store itself: name another file", argument="destination"
        )
    if target.exists() and not force:
        raise ExistingStoreError(f"destination {destination!r} exists: --force replaces it")
    open_existing(url).close()  # a missing file is refused here; an old store is migrated
    try:
        with _partial(target) as partial, contextlib.closing(_connect(path)) as source:
            source.execute("BEGIN")
            source.execute("SELECT count(*) FROM sqlite_schema").fetchall()  # the snapshot
            with contextlib.closing(_connect(partial)) as copy:
                pages = _copy(source, copy, "pages", progress)
                copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
            source.execute("COMMIT")
            with open(partial, "rb") as f:
                os.fsync(f.fileno())
            os.replace(partial, target)
    except sqlite3.Error as exc:
        raise StorageError(f"backup of {path}: {exc}") from exc
    return Copied(str(target), pages, target.stat().st_size)


def _readable_backup(source: Path, argument: str) -> sqlite3.Connection:
    """A read-only connection on the backup ``source``, which must be an SQLite database
    holding a convostore store."""
    if not source.is_file():
        raise MemoryValidationError(
            f"{argument} {str(source)!r}: there is no such file", argument=argument
        )
    conn = _connect(source, read_only=True)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema")}
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise MemoryValidationError(
            f"{argument} {str(source)!r} is not an SQLite database ({exc})", argument=argument
        ) from None
    if "convostore_schema" not in tables:
        conn.close()
        raise MemoryValidationError(
            f"{argument} {str(source)!r} is an SQLite database but not a convostore store",
            argument=argument,
        )
    return conn


_CODE = "SELECT type, name, sql FROM sqlite_schema WHERE type IN ('trigger', 'view')"


def _foreign_code(copy: Path) -> list[str]:
    """The triggers and views of the backup that the store's own migrations do not make (a
    trigger would run on the store's writes once restored): each named."""
    with ConversationStore("memory://") as fresh:  # what the store's migrations make
        known = set(fresh.backend.read(lambda tx: tx.execute(_CODE)))
    with contextlib.closing(_connect(copy, read_only=True)) as conn:
        found = conn.execute(_CODE).fetchall()
    return [
        f"the backup holds a {kind} {name!r} that no convostore migration makes"
        for kind, name, sql in found
        if (kind, name, sql) not in known
    ]


def _check(copy: Path, source: str) -> None:
    """No trigger or view but the store's own (looked at before a store opens the copy and
    writes to it), then ``check`` on the copy of the backup ``source``; a problem is a
    ``VerificationError``."""
    problems = _foreign_code(copy)
    if not problems:
        with ConversationStore(f"sqlite:///{copy}") as checked:
            problems = check(checked)
    if problems:
        shown = "; ".join(problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise VerificationError(
            f"the backup {source!r} fails the check, nothing was restored: {shown}{more}"
        )


def restore(
    source: str,
    url: str | None,
    *,
    force: bool = False,
    progress: Progress | None = None,
) -> Copied:
    """Make the SQLite store at ``url`` a copy of the backup file ``source``. The backup is
    copied beside the store and checked there (``convostore check``: a problem raises
    ``VerificationError``, naming the first ones); then it replaces the store in one
    transaction of the store's own. A store that exists is replaced only with ``force``."""
    url = resolve_url(url)
    path = Path(_sqlite_file(url, "url", POSTGRES_RESTORE))
    backup_file = _file_argument(source, "source")
    if os.path.abspath(backup_file) == os.path.abspath(path):
        raise MemoryValidationError(
            "source is the store itself: name a backup file", argument="source"
        )
    existed = path.exists()
    if existed and not force:
        raise ExistingStoreError(
            f"url {url!r}: a store exists there; --force replaces it with the backup"
        )
    try:
        with (
            contextlib.closing(_readable_backup(backup_file, "source")) as reader,
            _partial(path) as partial,
        ):
            with contextlib.closing(_connect(partial)) as copy:
                _copy(reader, copy, "pages read", progress)
            _check(partial, source)
            with contextlib.closing(_connect(partial, read_only=True)) as whole:
                target = _connect(path)
                try:
                    pages = _copy(whole, target, "pages restored", progress)
                finally:
                    target.close()
    except sqlite3.Error as exc:
        if not existed:
            _remove(path)
        raise StorageError(f"restore into {path}: {exc}") from exc
    except BaseException:
        if not existed:
            _remove(path)
        raise
    return Copied(str(path), pages, path.stat().st_size)
