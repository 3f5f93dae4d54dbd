"""What a backend offers the store, and the SQL both databases share."""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from .keys import prefix_upper
from .memories import MemoryStatements
from .rows import ChangeRow, ConversationRow, MessageRow
from .search import SearchStatements

T = TypeVar("T")


class WouldBlock(Exception):
    """Raised inside ``Backend.without_waiting`` where a lock is taken: nothing was written."""


SQLITE_ONLY = "-- sqlite only\n"
"""A migration statement starting with this runs on SQLite only."""
POSTGRESQL_ONLY = "-- postgresql only\n"
"""A migration statement starting with this runs on PostgreSQL only."""
_DIALECT_TEXT = {
    # {collate}: byte-order comparison for text keys (prefix range scans, ORDER BY id);
    # {blob}: a column of bytes.
    "sqlite": {"{collate}": "", "{blob}": "BLOB"},
    "postgresql": {"{collate}": 'COLLATE "C"', "{blob}": "BYTEA"},
}

# One conversation's messages between two positions, as a range on the primary key.
_IN_CONVERSATION = "(conversation_id, seq) > (?, ?) AND (conversation_id, seq) < (?, ?)"
MIN_INT64, MAX_INT64 = -(2**63), 2**63 - 1
_CONV = "id, user_id, created_at, last_message_at, message_count, next_seq, metadata"
_MSG = "seq, id, role, content, metadata, created_at, updated_at"

# A page of one conversation's messages: (newest first, limited) -> its statement.
_PAGE = {
    (newest_first, limited): f"SELECT {_MSG} FROM convostore_messages WHERE {_IN_CONVERSATION}"
    f" ORDER BY conversation_id {direction}, seq {direction}" + (" LIMIT ?" if limited else "")
    for newest_first, direction in ((False, "ASC"), (True, "DESC"))
    for limited in (False, True)
}

# The same page with its conversation's owner in front of each message (one row with no message
# when the page is empty, none when the conversation does not exist): an owner's check and the
# page in one statement, one snapshot. The owner only: each column more is decoded on every row.
_OWNED_PAGE = {
    (newest_first, limited): "SELECT c.user_id, p.* FROM convostore_conversations AS c"
    f" LEFT JOIN ({_PAGE[newest_first, limited]}) AS p ON 1 = 1 WHERE c.id = ?"
    f" ORDER BY p.seq {'DESC' if newest_first else 'ASC'}"
    for newest_first, limited in _PAGE
}


@functools.cache
def _listing(by_user: bool, bounded: bool, descending: bool) -> str:
    """The statement of ``Tx.page_conversations`` (its parameters in the order it gives)."""
    direction = "DESC" if descending else "ASC"
    op = "<" if descending else ">"
    where: list[str] = []
    if by_user:
        # One bound each way (a third would make the planner expect too few rows again).
        low = "(user_id, last_message_at) >= (?, ?)"
        high = "(user_id, last_message_at) <= (?, ?)"
        if bounded:
            past = f"(user_id, last_message_at, id) {op} (?, ?, ?)"
            low, high = (low, past) if descending else (past, high)
        where += [low, high]
        order = f"user_id {direction}, last_message_at {direction}, id {direction}"
    else:
        order = f"last_message_at {direction}, id {direction}"
        if bounded:
            where.append(f"(last_message_at, id) {op} (?, ?)")  # a range seek on the index
    return (
        f"SELECT {_CONV} FROM convostore_conversations"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + f" ORDER BY {order} LIMIT ?"
    )


# A conversation's row written back (every column but its id and creation time), and its values.
SAVE_CONVERSATION = (
    "UPDATE convostore_conversations SET user_id = ?, last_message_at = ?, message_count = ?,"
    " next_seq = ?, metadata = ?"
)


def saved_values(row: ConversationRow) -> list[Any]:
    return [row.user_id, row.last_message_at, row.message_count, row.next_seq, row.metadata]


class Tx(MemoryStatements, SearchStatements, ABC):
    """One transaction's statements. Written with ``?`` placeholders; subclasses adapt.
    (The memory stores' statements are in ``memories.py``.)"""

    lock_suffix = ""  # " FOR UPDATE" where rows must be locked explicitly
    single_statement = False  # the caller promised one statement: a second one is refused
    # Set by a statement that turns ``synchronous_commit`` off for its transaction: on
    # PostgreSQL with read replicas its commit may not be flushed when it returns, so the
    # write's position is then taken at the end of the WAL inserted (``replicas.py``).
    relaxed_commit = False
    _ran = False

    def _counted(self, statements: int = 1) -> None:
        """Refuse a second statement where one was promised (on a server database it runs
        outside a transaction, where a second one would not be atomic with the first)."""
        if self.single_statement:
            if self._ran or statements > 1:
                raise RuntimeError("a single_statement call ran a second statement")
            self._ran = True

    def _counted_rows(self, rows: Iterable[Sequence[Any]]) -> Iterable[Sequence[Any]]:
        """``rows`` for ``executemany``, counted as one statement each where one was promised."""
        if not self.single_statement:
            return rows
        rows = list(rows)
        self._counted(len(rows))
        return rows

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement and return its rows (empty when it returns none)."""

    @abstractmethod
    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement for each row of parameters."""

    def execute_batch(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[tuple[Any, ...]]]:
        """Run statements one after the other and return the rows of each: a server database
        sends them together (one round trip), each still seeing what the ones before did."""
        return [self.execute(sql, params) for sql, params in statements]

    def prefetch(self, sql: str, params: Sequence[Any] = ()) -> Callable[[], list[tuple[Any, ...]]]:
        """Run one query whose rows are read later: a server database sends it now and
        gives its rows with the next round trip the transaction makes anyway (the returned
        function waits for one only if none was made since)."""
        rows = self.execute(sql, params)
        return lambda: rows

    def send(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run one statement whose rows nobody reads. A server database may only send it and
        report its error with the next ``execute`` or at COMMIT (saving a round trip)."""
        self.execute(sql, params)

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        """Run one query and yield its rows without holding them all (a cursor read in
        chunks); consume it inside the transaction."""
        yield from self.execute(sql, params)

    def copy_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert ``rows`` into ``table`` as fast as the database takes them (PostgreSQL:
        ``COPY``); names come from a registered ``Component``, never from input."""
        marks = ", ".join("?" for _ in columns)
        self.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)

    def lock_schema(self, component: str) -> None:
        """Keep concurrent migrators of ``component`` apart (SQLite's write lock already does)."""

    def migrate(self, component: str, steps: Sequence[Sequence[str]]) -> None:
        self.lock_schema(component)
        self.execute(
            "CREATE TABLE IF NOT EXISTS convostore_schema"
            " (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
        )
        rows = self.execute(
            "SELECT version FROM convostore_schema WHERE component = ?", [component]
        )
        version = rows[0][0] if rows else 0
        for number, step in enumerate(steps[version:], start=version + 1):
            for statement in step:
                self.execute(statement)
            self.execute(
                "INSERT INTO convostore_schema (component, version) VALUES (?, ?)"
                " ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                [component, number],
            )

    def conversation(self, cid: str, *, lock: bool = False) -> ConversationRow | None:
        return self.conversation_later(cid, lock=lock)()

    def conversation_later(
        self, cid: str, *, lock: bool = False
    ) -> Callable[[], ConversationRow | None]:
        """``conversation``, sent now and read when the returned function is called
        (``prefetch``)."""
        suffix = self.lock_suffix if lock else ""
        rows = self.prefetch(
            f"SELECT {_CONV} FROM convostore_conversations WHERE id = ?{suffix}", [cid]
        )

        def row() -> ConversationRow | None:
            found = rows()
            return ConversationRow(*found[0]) if found else None

        return row

    def create_conversation(
        self, cid: str, user_id: str | None, now: int
    ) -> ConversationRow | None:
        """Insert a conversation; None if it already exists (a concurrent writer won)."""
        rows = self.execute(
            "INSERT INTO convostore_conversations"
            f" ({_CONV}) VALUES (?, ?, ?, ?, 0, 1, NULL) ON CONFLICT (id) DO NOTHING RETURNING {_CONV}",
            [cid, user_id, now, now],
        )
        return ConversationRow(*rows[0]) if rows else None

    def save_conversation(self, row: ConversationRow) -> None:
        self.send(f"{SAVE_CONVERSATION} WHERE id = ?", [*saved_values(row), row.id])

    def delete_conversation(self, cid: str) -> None:
        self.send("DELETE FROM convostore_messages WHERE conversation_id = ?", [cid])
        self.send("DELETE FROM convostore_changes WHERE conversation_id = ?", [cid])
        self.send("DELETE FROM convostore_conversations WHERE id = ?", [cid])

    def delete_user(self, user_id: str) -> int:
        """Delete every conversation of ``user_id`` and its messages; return how many."""
        for table in ("convostore_messages", "convostore_changes"):
            self.send(
                f"DELETE FROM {table} WHERE conversation_id IN"
                " (SELECT id FROM convostore_conversations WHERE user_id = ?)",
                [user_id],
            )
        return len(
            self.execute(
                "DELETE FROM convostore_conversations WHERE user_id = ? RETURNING id", [user_id]
            )
        )

    def page_conversations(
        self, user_id: str | None, bound: tuple[int, str] | None, descending: bool, limit: int
    ) -> list[tuple[Any, ...]]:
        """Up to ``limit`` conversations strictly past ``bound``, walking in one direction, as
        the rows the query returns (``ConversationRow``'s columns). A user's are bounded by
        row values on the whole index key, not ``user_id = ?``: without table statistics (a
        fresh bulk load) PostgreSQL would take the equality for a handful of rows, read all
        of them and sort; a range on the key makes it walk the index."""
        if user_id is None:
            params: list[Any] = [] if bound is None else [*bound]
        elif bound is None:
            params = [user_id, MIN_INT64, user_id, MAX_INT64]
        elif descending:
            params = [user_id, MIN_INT64, user_id, *bound]
        else:
            params = [user_id, *bound, user_id, MAX_INT64]
        return self.execute(
            _listing(user_id is not None, bound is not None, descending), [*params, limit]
        )

    def conversations_by_prefix(
        self, prefix: str, user_id: str | None, *, lock: bool = False
    ) -> list[ConversationRow]:
        """Every conversation whose id starts with ``prefix``, by id: a range seek on the
        primary key (ids compare by code point on both databases)."""
        suffix = self.lock_suffix if lock else ""
        rows = self._by_prefix(_CONV, prefix, user_id, suffix)
        return [ConversationRow(*r) for r in rows]

    def briefs_by_prefix(
        self, prefix: str, user_id: str | None, *, metadata: bool
    ) -> list[tuple[Any, ...]]:
        """``conversations_by_prefix``'s rows as (id, last_message_at, message_count,
        metadata); without ``metadata`` that column is NULL, the text is not even read."""
        columns = "id, last_message_at, message_count, " + ("metadata" if metadata else "NULL")
        return self._by_prefix(columns, prefix, user_id, "")

    def _by_prefix(
        self, columns: str, prefix: str, user_id: str | None, suffix: str
    ) -> list[tuple[Any, ...]]:
        """The ``columns`` of every conversation whose id starts with ``prefix`` (id first),
        with ``user_id`` only that user's, by id, the statement ending in ``suffix``."""
        where, params = "id >= ?", [prefix]
        upper = prefix_upper(prefix)
        if upper is not None:
            where += " AND id < ?"
            params.append(upper)
        if user_id is not None:
            where += " AND user_id = ?"
            params.append(user_id)
        rows = self.execute(
            f"SELECT {columns} FROM convostore_conversations WHERE {where} ORDER BY id{suffix}",
            params,
        )
        return [r for r in rows if r[0].startswith(prefix)]

    def tick(self, now: int) -> int:
        """``now``, or one past the last time taken if that is not earlier: strictly increasing
        in commit order for every writer of the database (the row is locked until commit)."""
        rows = self.execute(
            "INSERT INTO convostore_clock (id, last) VALUES (1, ?) ON CONFLICT (id) DO UPDATE"
            " SET last = CASE WHEN excluded.last > convostore_clock.last THEN excluded.last"
            " ELSE convostore_clock.last + 1 END RETURNING last",
            [now],
        )
        return int(rows[0][0])

    def append_and_save(self, cid: str, rows: Sequence[MessageRow], row: ConversationRow) -> None:
        """Insert messages and save the conversation's row (a server database may do both in
        one statement)."""
        if rows:
            self.insert_messages(cid, rows)
        self.save_conversation(row)

    def append_if_unchanged(
        self,
        seen: ConversationRow,
        rows: Sequence[MessageRow],
        row: ConversationRow,
        *,
        new_ids: bool = False,
    ) -> Callable[[], bool]:
        """Insert ``rows`` and save ``row`` in one statement, sent now (``prefetch``), only if
        the conversation's row is still ``seen`` in every column and, with ``new_ids``, none
        of ``rows``' ids is taken; the returned function tells whether it was (then both are
        written). Where ``Backend.conditional_append`` is True."""
        raise NotImplementedError("this database appends through a locking read")

    def append_counted(
        self,
        seen: ConversationRow,
        rows: Sequence[MessageRow],
        row: ConversationRow,
        *,
        room: int,
        new_ids: bool = False,
    ) -> Callable[[], ConversationRow | None]:
        """Insert ``rows`` (numbered after ``seen``) in one statement, sent now, only if the
        conversation's row still has ``seen``'s owner, creation time and metadata and at most
        ``room`` messages (the quota's bound) and, with ``new_ids``, none of their ids is
        taken: numbered after its messages as they are then, the row counted on (``row``
        gives its new owner and time). The returned function gives the row as written, or
        None (nothing written). Where ``Backend.conditional_append`` is True."""
        raise NotImplementedError("this database appends through a locking read")

    def messages_by_id(self, cid: str, ids: Sequence[str]) -> dict[str, MessageRow]:
        return self.messages_by_id_later(cid, ids)()

    def messages_by_id_later(
        self, cid: str, ids: Sequence[str]
    ) -> Callable[[], dict[str, MessageRow]]:
        """``messages_by_id``, sent now and read when the returned function is called
        (``prefetch``)."""
        if not ids:
            return dict
        marks = ", ".join("?" for _ in ids)
        rows = self.prefetch(
            f"SELECT {_MSG} FROM convostore_messages WHERE conversation_id = ? AND id IN ({marks})",
            [cid, *ids],
        )
        return lambda: {r[1]: MessageRow(*r) for r in rows()}

    def message(self, cid: str, mid: str) -> MessageRow | None:
        return self.messages_by_id(cid, [mid]).get(mid)

    def seq_of(self, cid: str, mid: str) -> int | None:
        rows = self.execute(
            "SELECT seq FROM convostore_messages WHERE conversation_id = ? AND id = ?", [cid, mid]
        )
        return int(rows[0][0]) if rows else None

    def page_messages(
        self,
        cid: str,
        *,
        after_seq: int | None,
        before_seq: int | None,
        newest_first: bool,
        limit: int | None,
    ) -> list[MessageRow]:
        """``limit`` messages (all if None) nearest the cursor, or the oldest/newest, in walk
        order: a range on the primary key (see ``page_conversations`` for why not ``=``)."""
        rows = self.message_page(
            cid, after_seq=after_seq, before_seq=before_seq, newest_first=newest_first, limit=limit
        )
        return [MessageRow(*r) for r in rows]

    def message_page(
        self,
        cid: str,
        *,
        after_seq: int | None,
        before_seq: int | None,
        newest_first: bool,
        limit: int | None,
    ) -> list[tuple[Any, ...]]:
        """``page_messages`` as the rows the query returns (``MessageRow``'s columns), for a
        reader that builds its models from them at once."""
        params: list[Any] = [
            cid,
            after_seq or 0,
            cid,
            MAX_INT64 if before_seq is None else before_seq,
        ]
        if limit is not None:
            params.append(limit)
        return self.execute(_PAGE[newest_first, limit is not None], params)

    def owned_message_page(
        self, cid: str, *, newest_first: bool, limit: int | None
    ) -> tuple[str | None, list[tuple[Any, ...]]] | None:
        """The conversation's owner and its oldest or newest ``limit`` messages (as
        ``message_page``), in one statement; None if the conversation does not exist."""
        params: list[Any] = [cid, 0, cid, MAX_INT64]
        if limit is not None:
            params.append(limit)
        rows = self.execute(_OWNED_PAGE[newest_first, limit is not None], [*params, cid])
        if not rows:
            return None
        return rows[0][0], [r[1:] for r in rows if r[1] is not None]

    def message_contents(self, cid: str, last: int | None) -> list[str]:
        """The stored content text of every message (or the newest ``last``), oldest first."""
        sql = f"SELECT content FROM convostore_messages WHERE {_IN_CONVERSATION}"
        params: list[Any] = [cid, 0, cid, MAX_INT64]
        if last is None:
            return [r[0] for r in self.execute(f"{sql} ORDER BY conversation_id, seq", params)]
        rows = self.execute(
            f"{sql} ORDER BY conversation_id DESC, seq DESC LIMIT ?", [*params, last]
        )
        return [r[0] for r in reversed(rows)]

    def delete_messages(self, cid: str, ids: Sequence[str]) -> None:
        """Delete these messages of the conversation (500 ids a statement)."""
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            self.send(
                "DELETE FROM convostore_messages WHERE conversation_id = ?"
                f" AND id IN ({', '.join('?' for _ in chunk)})",
                [cid, *chunk],
            )

    def insert_changes(self, cid: str, changes: Sequence[ChangeRow]) -> None:
        if len(changes) == 1:
            self.insert_change(cid, changes[0])
        elif changes:
            self.executemany(
                "INSERT INTO convostore_changes (conversation_id, seq, kind, message_id,"
                " created_at) VALUES (?, ?, ?, ?, ?)",
                [(cid, *change) for change in changes],
            )

    def sync_head(
        self, cid: str, anchor: str | None, ids: Sequence[str]
    ) -> Callable[[], tuple[ConversationRow | None, int | None, int | None, int]]:
        """What ``sync_messages`` needs first, in one statement (sent now, read when the
        returned function is called): the conversation (locked), the position of the
        message ``anchor``, the position of its last message, and how many of ``ids`` (at
        most 500) it holds. Every part is an index lookup; the anchor's position is looked
        up only when it is not the last message."""
        marks = ", ".join("?" for _ in ids) or "NULL"
        columns = ", ".join(f"c.{name}" for name in _CONV.split(", "))
        lock = f"{self.lock_suffix} OF c" if self.lock_suffix else ""
        rows = self.prefetch(
            f"SELECT {columns}, last.seq, last.id,"
            " (SELECT count(*) FROM convostore_messages WHERE conversation_id = ?"
            f" AND id IN ({marks}))"
            f" FROM convostore_conversations c LEFT JOIN (SELECT seq, id FROM convostore_messages"
            f" WHERE {_IN_CONVERSATION} ORDER BY conversation_id DESC, seq DESC LIMIT 1) last"
            f" ON TRUE WHERE c.id = ?{lock}",
            [cid, *ids, cid, 0, cid, MAX_INT64, cid],
        )

        def head() -> tuple[ConversationRow | None, int | None, int | None, int]:
            found = rows()
            if not found:
                return None, None, None, 0
            r = found[0]
            last = None if r[7] is None else int(r[7])
            seq = last if anchor is not None and r[8] == anchor else None
            if anchor is not None and seq is None:
                seq = self.seq_of(cid, anchor)
            return ConversationRow(*r[:7]), seq, last, int(r[9])

        return head

    def managed_conversations_of(self, user_id: str) -> list[ConversationRow]:
        """The user's conversations whose metadata may name a managing component (a text
        search narrows them; the caller decodes the metadata)."""
        rows = self.execute(
            f"SELECT {_CONV} FROM convostore_conversations WHERE user_id = ?"
            " AND metadata LIKE '%\"managedBy\"%'",
            [user_id],
        )
        return [ConversationRow(*r) for r in rows]

    def components_present(self) -> set[str]:
        """The components whose tables this database holds (their migration ran)."""
        return {r[0] for r in self.execute("SELECT component FROM convostore_schema")}

    def delete_message(self, cid: str, mid: str) -> bool:
        rows = self.execute(
            "DELETE FROM convostore_messages WHERE conversation_id = ? AND id = ? RETURNING seq",
            [cid, mid],
        )
        return bool(rows)

    def clear_messages(self, cid: str) -> None:
        """Delete the conversation's messages and the changes that named them."""
        self.send("DELETE FROM convostore_messages WHERE conversation_id = ?", [cid])
        self.send("DELETE FROM convostore_changes WHERE conversation_id = ?", [cid])

    def insert_change(self, cid: str, change: ChangeRow) -> None:
        self.send(
            "INSERT INTO convostore_changes (conversation_id, seq, kind, message_id, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            [cid, *change],
        )

    def changes_after(self, cid: str, after: int, limit: int) -> list[ChangeRow]:
        rows = self.execute(
            "SELECT seq, kind, message_id, created_at FROM convostore_changes"
            " WHERE conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            [cid, after, limit],
        )
        return [ChangeRow(*r) for r in rows]


class Migrations(Protocol):
    """What ``Backend.migrate`` brings up to date: a name and its versioned steps (a
    ``convostore.spi.Component``)."""

    @property
    def name(self) -> str: ...

    @property
    def steps(self) -> Sequence[Sequence[str]]: ...


class Backend(ABC):
    """A database: runs a function inside a transaction, retrying what the database may refuse.

    Adapters keep their own tables here too: ``migrate(component, steps)`` creates them, and
    ``write`` / ``read`` run their statements (``?`` placeholders on both databases).
    """

    dialect: str  # "sqlite" or "postgresql"
    # True where an uncontended call costs less than a hop to a worker thread (an embedded
    # database): async callers then try ``without_waiting`` on the event loop first.
    inline = False
    # True where a round trip costs more than the work (a server database): an append then
    # tries ``Tx.append_counted`` (a sync ``Tx.append_if_unchanged``) on the conversation's
    # row as the store last wrote it.
    conditional_append = False
    # True where a round trip costs more than a join: a user's first page of messages then
    # comes with its conversation's owner, checked on it (``Tx.owned_message_page``).
    joined_owner_check = False

    @abstractmethod
    def write(
        self, fn: Callable[[Tx], T], *, single_statement: bool = False, erasing: bool = False
    ) -> T:
        """Run ``fn`` in a write transaction that serializes with other writers; commit on return.
        ``single_statement``: ``fn`` runs one statement, atomic by itself, so a server database
        may skip BEGIN and COMMIT (a second statement is then a ``RuntimeError``).
        ``erasing``: ``fn`` deletes what a user asked to erase; after the commit the backend
        removes the old copies it can (SQLite truncates its write-ahead log when no reader
        holds it; deleted rows are overwritten on every backend's own terms, see the README)."""

    @abstractmethod
    def read(self, fn: Callable[[Tx], T], *, single_statement: bool = False) -> T:
        """Run ``fn`` in a read-only transaction (one consistent snapshot); ``single_statement``
        as for ``write``."""

    def without_waiting(self, call: Callable[[], T]) -> T:
        """Run ``call`` now if no lock it needs is taken; otherwise raise ``WouldBlock`` before
        anything is written, for the caller to run it again on a thread. ``call`` may read in
        several transactions but write in one, its last: after a write, locks are waited for."""
        raise WouldBlock

    def migrate(
        self, component: Migrations | str, steps: Sequence[Sequence[str]] | None = None
    ) -> None:
        """Bring a ``Component``'s tables (or those of the component named ``component``,
        with ``steps``) to its current version in one transaction.

        Statements are written once for both databases: ``{collate}`` and ``{blob}`` become
        the dialect's text, and a statement starting with ``SQLITE_ONLY`` or
        ``POSTGRESQL_ONLY`` runs on that database alone."""
        skip = POSTGRESQL_ONLY if self.dialect == "sqlite" else SQLITE_ONLY
        text = _DIALECT_TEXT[self.dialect]

        def dialect(statement: str) -> str:
            for placeholder, value in text.items():
                statement = statement.replace(placeholder, value)
            return statement

        if isinstance(component, str):
            name = component
        else:
            name, steps = component.name, component.steps
        if steps is None:
            raise TypeError("migrate(name, steps) needs its steps")
        native = [[dialect(s) for s in step if not s.startswith(skip)] for step in steps]
        self.write(lambda tx: tx.migrate(name, native))

    def enable_notifications(self) -> None:  # noqa: B027 - nothing to do by default
        """Make every write to a conversation wake ``wait_for_change`` in other processes."""

    def wait_for_change(self, timeout: float) -> bool:
        """Block until a write may have changed the database since the previous call, or
        ``timeout`` seconds pass; True if one may have."""
        raise NotImplementedError(f"{type(self).__name__} cannot wait for changes")

    def vacuum(self, tables: Sequence[str]) -> None:
        """Rewrite ``tables`` without the space that deleted or overwritten rows left (SQLite
        rewrites the whole file), outside any transaction; it locks them while it runs."""
        raise NotImplementedError(f"{type(self).__name__} cannot vacuum")

    def position(self) -> int | None:
        """With read replicas: the primary's WAL position (bytes) this process's reads see at
        least; None without."""
        return None

    def follow(self, position: int) -> None:  # noqa: B027 - nothing to follow by default
        """With read replicas: make this process's later reads see the primary up to
        ``position`` (another process's write); ``MemoryValidationError`` if the primary has
        not reached it. Without replicas every read sees every write already."""

    @property
    def primary(self) -> Backend:
        """Where writes go, and the reads that decide a write: this backend, unless it sends
        other reads to replicas (``replicas.py``)."""
        return self

    def on_primary(self) -> Backend:
        """This backend (same connections) with every read on the primary: itself, unless it
        sends reads to replicas."""
        return self

    @property
    def closed(self) -> bool:
        """After ``close()``: every call raises ``ClosedError("the store is closed")``."""
        return False

    @abstractmethod
    def close(self) -> None:
        """Release connections; the backend cannot be used afterwards."""
