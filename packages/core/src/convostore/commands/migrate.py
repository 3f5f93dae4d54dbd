"""``convostore migrate``: every component's tables copied from one database to another, a batch
per transaction, resumable, verified by checksums."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..backends import (
    Backend,
    Tx,
)
from ..backends import transfer as sql
from ..components import (
    SCHEMA_TABLE,
    Component,
    Table,
    components_named,
    install_hint,
)
from ..errors import (
    ConvostoreError,
    MemoryValidationError,
)
from ..search import reindex
from ..store import ConversationStore
from ..validation import (
    check_int,
)
from .common import (
    BATCH_BYTES,
    BATCH_ROWS,
    DestinationNotEmptyError,
    Progress,
    VerificationError,
    open_existing,
    redact,
    resolve_url,
)

# -- migrate ---------------------------------------------------------------------------------


@dataclass
class TableReport:
    component: str
    table: str
    rows: int  # rows in the source (and, verified, in the destination)
    copied: int  # rows this run copied (fewer when it continued an interrupted one)
    sha256: str = ""


@dataclass
class MigrateReport:
    tables: list[TableReport] = field(default_factory=list)
    resumed: bool = False
    not_copied: list[str] = field(default_factory=list)  # tables no component describes
    indexed: int = 0  # messages the destination's search index took in


def _row_digest(row: tuple[Any, ...]) -> bytes:
    """A row as hashed: the same bytes for the same values from either database."""
    return repr(row).encode("utf-8", "surrogatepass")


def digest_table(backend: Backend, table: Table, columns: Sequence[str]) -> tuple[int, str]:
    """The row count of ``table`` and a SHA-256 over its rows in key order, comparable
    between SQLite and PostgreSQL (both hand the same Python values back)."""

    def read(tx: Tx) -> tuple[int, str]:
        h, n = hashlib.sha256(), 0
        for row in sql.rows_in_key_order(tx, table.name, columns, table.key, None):
            h.update(_row_digest(row))
            n += 1
        return n, h.hexdigest()

    return backend.read(read)


def _components_of(backend: Backend) -> list[Component]:
    """The registered components whose tables ``backend``'s database holds (only their
    modules are imported: an adapter's import brings its framework, which takes seconds)."""
    versions = backend.read(sql.schema_versions)
    known, missing = components_named(versions)
    if missing:
        raise MemoryValidationError(
            f"the source holds tables of {', '.join(map(repr, missing))}, which no installed"
            f" package registers ({'; '.join(install_hint(name) for name in missing)})",
            argument="source",
        )
    for component in known:
        if versions[component.name] > component.version:
            raise MemoryValidationError(
                f"the source's {component.name!r} tables are at schema version"
                f" {versions[component.name]}; the installed"
                f" {component.package or component.name} knows {component.version}: upgrade it",
                argument="source",
            )
    return known


def uncovered_tables(backend: Backend) -> list[str]:
    """Tables of the database that no component it holds describes (nor the registry's own,
    nor a migration's marker)."""
    held, _ = components_named(backend.read(sql.schema_versions))
    covered = {t.name for c in held for t in c.tables}
    covered |= {SCHEMA_TABLE, sql.MIGRATING}
    names = backend.read(lambda tx: sql.table_names(tx, backend.dialect))
    return [n for n in names if n not in covered and not any(c.derives(n) for c in held)]


def migrate(
    source: str,
    destination: str,
    *,
    force: bool = False,
    progress: Progress | None = None,
    batch_rows: int = BATCH_ROWS,
) -> MigrateReport:
    """Copy every component's tables from ``source`` to ``destination`` (created and
    migrated first), a batch per transaction, then compare each table's row count and
    checksum. Interrupted, it continues where it stopped when run again: the destination
    remembers that a copy from ``source`` is under way, and each table resumes after its
    greatest key. A destination that holds data of its own is refused unless ``force``,
    which empties the copied tables first. ``batch_rows``: rows per destination transaction
    (a batch also ends at 16 MB)."""
    batch_rows = check_int("batch_rows", batch_rows, minimum=1)
    if resolve_url(source) == resolve_url(destination):
        raise MemoryValidationError("source and destination are the same database")
    src = open_existing(source, argument="source")
    try:
        dst = ConversationStore(destination)
        try:
            return _migrate(
                src.backend,
                dst.backend,
                redact(src.url),
                force=force,
                progress=progress,
                batch_rows=batch_rows,
            )
        finally:
            dst.close()
    finally:
        src.close()


def _migrate(
    src: Backend,
    dst: Backend,
    source: str,
    *,
    force: bool,
    progress: Progress | None,
    batch_rows: int,
) -> MigrateReport:
    components = _components_of(src)
    for component in components:
        src.migrate(component)  # as opening it with its adapter would
        dst.migrate(component)
    tables = [(c, t) for c in components for t in c.tables]
    report = MigrateReport(not_copied=uncovered_tables(src))

    under_way = dst.read(lambda tx: sql.migrating_source(tx, dst.dialect))
    report.resumed = under_way == source
    if not report.resumed:
        held = [
            t.name for _, t in tables if dst.read(functools.partial(sql.count_rows, table=t.name))
        ]
        if (held or under_way is not None) and not force:
            if under_way is not None:
                raise DestinationNotEmptyError(
                    f"the destination is an unfinished copy of {under_way}: run that migration"
                    " again to finish it (--force empties the destination's tables first)"
                )
            raise DestinationNotEmptyError(
                f"the destination holds data ({', '.join(held)}); migrate copies into an"
                " empty database (--force empties those tables first)"
            )

        def start(tx: Tx) -> None:
            for _, table in tables:
                sql.delete_all(tx, table.name)
            sql.start_migrating(tx, source)

        dst.write(start)

    for component, table in tables:
        columns = [
            c
            for c in src.read(
                functools.partial(sql.table_columns, dialect=src.dialect, table=table.name)
            )
            if c not in table.derived
        ]
        theirs = dst.read(
            functools.partial(sql.table_columns, dialect=dst.dialect, table=table.name)
        )
        if set(columns) - set(theirs):
            raise ConvostoreError(
                f"{table.name}: the destination lacks the columns"
                f" {sorted(set(columns) - set(theirs))}"
            )
        copied, whole = _copy_table(
            src, dst, table, columns, progress=progress, batch_rows=batch_rows
        )
        # a copy from the first row read the whole table once already: its checksum is taken
        rows, digest = whole or digest_table(src, table, columns)
        their_rows, their_digest = digest_table(dst, table, columns)
        if (rows, digest) != (their_rows, their_digest):
            raise VerificationError(
                f"{table.name}: the source holds {rows} rows, the destination {their_rows}"
                + ("" if rows != their_rows else " with other contents")
            )
        report.tables.append(TableReport(component.name, table.name, rows, copied, digest))

    report.indexed = reindex(
        dst, progress=None if progress is None else functools.partial(progress, "search index")
    )

    def finish(tx: Tx) -> None:
        for _, table in tables:
            sql.analyze(tx, dst.dialect, table.name)
        sql.end_migrating(tx)

    dst.write(finish)
    return report


def _copy_table(
    src: Backend,
    dst: Backend,
    table: Table,
    columns: Sequence[str],
    *,
    progress: Progress | None,
    batch_rows: int,
) -> tuple[int, tuple[int, str] | None]:
    """Copy the rows past the destination's greatest key; how many, and (when that was every
    row) the source's row count and checksum."""
    after = dst.read(lambda tx: sql.last_key(tx, table.name, table.key))
    done = dst.read(lambda tx: sql.count_rows(tx, table.name))
    total = src.read(lambda tx: sql.count_rows(tx, table.name))
    label = table.label or table.name
    if progress is not None:
        progress(label, done, total)

    def copy(tx: Tx) -> tuple[int, tuple[int, str] | None]:
        nonlocal done
        copied = 0
        batch: list[tuple[Any, ...]] = []
        size = 0
        h = hashlib.sha256()

        def flush() -> None:
            nonlocal done, copied, batch, size
            rows = batch
            dst.write(lambda t: t.copy_rows(table.name, columns, rows))
            done += len(rows)
            copied += len(rows)
            batch, size = [], 0
            if progress is not None:
                progress(label, done, total)

        for row in sql.rows_in_key_order(tx, table.name, columns, table.key, after):
            batch.append(row)
            data = repr(row).encode("utf-8", "surrogatepass")  # _row_digest, inlined
            h.update(data)
            size += len(data)  # the row's size, near enough
            if len(batch) >= batch_rows or size >= BATCH_BYTES:
                flush()
        if batch:
            flush()
        return copied, None if after is not None else (copied, h.hexdigest())

    return src.read(copy)
