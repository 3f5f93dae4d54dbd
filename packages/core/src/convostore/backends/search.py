"""The search index's tables and statements (part of the core component; each dialect's ``Tx``
has them). What a match is lives in ``convostore.search_text``; the index only finds candidates
fast, and each statement here checks every term on the lower-cased text it keeps, so what it
returns is exact.

Each message's (and memory entry's) searchable text is kept lower-cased as Python's
``str.lower()`` makes it (databases lower-case otherwise), written in the transaction that
writes the message and gone with it:

- SQLite: an FTS5 table with the trigram tokenizer, kept alike for every writer; a message's
  row names its index row (``search_rid``) and a trigger deletes that row with the message. The
  index row's number starts with the minute of the message's ``created_at``, so a page newest
  first reads the index backwards and stops at its last minute (``SqliteSearch``).
- PostgreSQL: the text in a column of the message's row (``search_text``) with a pg_trgm GIN
  index; ``LIKE`` on it is exact (``PostgresSearch``). A store-wide page reads the newest
  messages first through an index on ``created_at`` and goes to the GIN index only when they
  hold too few matches: the GIN index finds every match, which a common term makes slow to sort.

Rows written before the index existed hold no text (``search_rid`` / ``search_text`` NULL):
searches read them directly until ``reindex`` has indexed them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from ..search_text import index_text, memory_index_text
from .keys import prefix_upper
from .memories import MemoryEntryRow, MemoryVersionRow
from .rows import MessageRow

# An index row's number on SQLite: the minute of created_at, then a count within that minute.
RID_BITS = 36
BUCKET_MS = 60_000
MAX_BUCKET = (1 << (63 - RID_BITS)) - 1

EXTENSION_HINT = (
    "the search index needs PostgreSQL's pg_trgm extension, which this role may not create:"
    " run 'CREATE EXTENSION pg_trgm;' in this database as a superuser (or as its owner), then"
    " open the store again"
)

FTS_TABLES = ("convostore_search", "convostore_memory_search")
"""SQLite's FTS5 tables of the index."""
MERGE_SEGMENTS = "INSERT INTO {0}({0}) VALUES('optimize')"
"""Merge every segment of FTS5 table {0} into one: the postings of deleted rows, which a
delete leaves in older segments (SQLite 3.40 has no FTS5 secure-delete), are dropped."""

RECENT_WINDOWS = (5000, 15000)
"""How many of the newest messages a store-wide search reads on PostgreSQL before it asks the
trigram index: a term in one message of 250 fills a page of 20 in the first window; a term that
filled half its page there, in the second. Rarer terms cost the trigram index less than more
rows read would."""

_MSG = "seq, id, role, content, metadata, created_at, updated_at"
_KEY_DESC = "m.created_at DESC, m.conversation_id DESC, m.seq DESC"


def bucket(created_at: int) -> int:
    """The minute a message's index row number starts with (``MAX_BUCKET`` past the year 2225)."""
    return min(max(created_at, 0) // BUCKET_MS, MAX_BUCKET)


class Hit(NamedTuple):
    """A message found, with its conversation."""

    conversation_id: str
    message: MessageRow


class SearchFilter(NamedTuple):
    """What a message search keeps: its terms (lower-cased), the one conversation (its owner
    checked before) or else the user's own conversations, the roles, and the place after which
    the page starts (``(created_at, conversation_id, seq)``, exclusive)."""

    terms: tuple[str, ...]
    conversation_id: str | None
    user_id: str | None
    roles: tuple[str, ...]
    after: tuple[int, str, int] | None


def _trigrams(terms: Sequence[str], most: int = 24) -> list[str]:
    """Distinct trigrams of the terms of three characters or more, at most ``most``, taken
    across each term: every one occurs in a matching text."""
    grams: list[str] = []
    for term in terms:
        every = [term[i : i + 3] for i in range(len(term) - 2)]
        share = max(1, most // len(terms))
        step = max(1, -(-len(every) // share))
        grams += [*every[::step], every[-1]] if every else []
    return list(dict.fromkeys(grams))[:most]


def _fts_query(grams: Sequence[str]) -> str:
    return " AND ".join('"' + g.replace('"', '""') + '"' for g in grams)


def _like(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _scope(f: SearchFilter) -> tuple[list[str], list[Any], str]:
    """The conditions of the scope, the roles and the cursor, their parameters, and the join
    with conversations they need ('' if none)."""
    where: list[str] = []
    params: list[Any] = []
    join = ""
    if f.conversation_id is not None:
        where.append("m.conversation_id = ?")
        params.append(f.conversation_id)
    elif f.user_id is not None:
        join = " JOIN convostore_conversations c ON c.id = m.conversation_id"
        where.append("c.user_id = ?")
        params.append(f.user_id)
    if f.roles:
        where.append(f"m.role IN ({', '.join('?' for _ in f.roles)})")
        params += f.roles
    if f.after is not None:
        where.append("(m.created_at, m.conversation_id, m.seq) < (?, ?, ?)")
        params += f.after
    return where, params, join


_COLUMNS = "m.conversation_id, " + ", ".join(f"m.{c}" for c in _MSG.split(", "))


def _hits(rows: Iterable[Sequence[Any]]) -> list[Hit]:
    return [Hit(r[0], MessageRow(*r[1:8])) for r in rows]


class SearchStatements(ABC):
    """The statements that write messages (the index goes with them) and search them: each
    dialect's ``Tx`` has its own (``SqliteSearch``, ``PostgresSearch``)."""

    _unindexed = ""  # the condition of a message row the index does not hold

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    @abstractmethod
    def send(self, sql: str, params: Sequence[Any] = ()) -> None: ...

    @abstractmethod
    def execute_batch(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[tuple[Any, ...]]]: ...

    @abstractmethod
    def insert_messages(self, cid: str, rows: Sequence[MessageRow]) -> None:
        """Insert messages of the conversation, with their index rows."""

    @abstractmethod
    def update_message(self, cid: str, row: MessageRow) -> None:
        """Overwrite a message's content, metadata and update time (found by id), and its
        index row."""

    @abstractmethod
    def copy_messages(self, source: str, target: str, max_seq: int | None) -> tuple[int, int]:
        """Copy the messages of ``source`` (up to ``max_seq``) into ``target`` with their ids,
        positions and times, inside the database; return how many and the last position."""

    def search_messages(self, f: SearchFilter, limit: int) -> list[Hit]:
        """The first ``limit`` indexed messages matching ``f``, newest first (``created_at``,
        then the conversation id, then the position, all descending)."""
        raise NotImplementedError

    def unindexed_messages(self, f: SearchFilter) -> list[Hit]:
        """The messages in ``f``'s scope that the index does not hold yet (not matched)."""
        where, params, join = _scope(f)
        return _hits(
            self.execute(
                f"SELECT {_COLUMNS} FROM convostore_messages m{join}"
                f" WHERE {' AND '.join([self._unindexed, *where])}",
                params,
            )
        )

    def index_unindexed(self, limit: int) -> int:
        """Index up to ``limit`` messages the index lacks; return how many."""
        raise NotImplementedError

    def find_unindexed(self) -> None:  # noqa: B027 - nothing to do where the index has no mark
        """Look for the messages the index lacks in the whole table (``reindex``: a database
        rebuilt by hand may have moved what says where they are)."""

    def count_unindexed(self) -> int:
        """How many messages and memory entries the index lacks (partial indexes hold them)."""
        mark = self._unindexed.removeprefix("m.")
        [(messages,)] = self.execute(f"SELECT count(*) FROM convostore_messages WHERE {mark}")
        [(entries,)] = self.execute(f"SELECT count(*) FROM convostore_memory_entries WHERE {mark}")
        return int(messages) + int(entries)

    # -- memory entries --------------------------------------------------------------------

    def _memory_text(self, row: MemoryEntryRow) -> str:
        """An entry's text for the index: its content as given, or (a row restored without it,
        by an import) as its current version holds it."""
        content = row.content
        if content is None and row.redacted_at is None:
            found = self.execute(
                "SELECT content FROM convostore_memory_versions WHERE store_id = ? AND seq = ?",
                [row.store_id, row.version_seq],
            )
            content = bytes(found[0][0]) if found and found[0][0] is not None else None
        return memory_index_text(row.path, content)

    def search_memories(self, m: MemoryFilter, limit: int) -> list[MemoryEntryRow]:
        """The first ``limit`` indexed entries of a memory store matching ``m``, by path, with
        their current content (None where redacted)."""
        raise NotImplementedError

    def unindexed_memories(self, m: MemoryFilter) -> list[MemoryEntryRow]:
        """The entries of ``m``'s store (and prefix, past its cursor) the index lacks, with
        their content (not matched)."""
        where, params = _memory_scope(m)
        mark = self._unindexed.removeprefix("m.")
        return _entries(
            self.execute(
                f"SELECT {_ENTRY_COLUMNS}{_ENTRY_JOIN} WHERE e.{mark} AND {' AND '.join(where)}",
                params,
            )
        )


class MemoryFilter(NamedTuple):
    """What a memory search keeps: its terms, the store, a path prefix, and the path after
    which the page starts (exclusive)."""

    terms: tuple[str, ...]
    store_id: str
    prefix: str | None
    after: str | None


_ENTRY_COLUMNS = (
    "e.store_id, e.path, e.id, e.version, e.version_seq, e.size, e.created_at, e.updated_at,"
    " v.redacted_at, v.content"
)
_ENTRY_JOIN = (
    " FROM convostore_memory_entries e JOIN convostore_memory_versions v"
    " ON v.store_id = e.store_id AND v.seq = e.version_seq"
)


def _memory_scope(m: MemoryFilter) -> tuple[list[str], list[Any]]:
    where, params = ["e.store_id = ?"], [m.store_id]
    if m.prefix:
        where.append("e.path >= ?")
        params.append(m.prefix)
        upper = prefix_upper(m.prefix)
        if upper is not None:
            where.append("e.path < ?")
            params.append(upper)
    if m.after is not None:
        where.append("e.path > ?")
        params.append(m.after)
    return where, params


def _entries(rows: Iterable[Sequence[Any]]) -> list[MemoryEntryRow]:
    return [
        MemoryEntryRow(*r[:9])._replace(content=None if r[9] is None else bytes(r[9])) for r in rows
    ]


class SqliteSearch(SearchStatements):
    """The FTS5 index of SQLite (see the module's docstring)."""

    _unindexed = "m.search_rid IS NULL"

    def unindexed_messages(self, f: SearchFilter) -> list[Hit]:
        where, params, join = _scope(f)
        return _hits(
            self.execute(
                f"{_PENDING} SELECT {_COLUMNS} FROM pending p"
                f" JOIN convostore_messages m ON m.rowid = p.r{join}"
                f" WHERE {' AND '.join(where) or 'true'}",
                params,
            )
        )

    def count_unindexed(self) -> int:
        [(messages,)] = self.execute(f"{_PENDING} SELECT count(*) FROM pending")
        [(entries,)] = self.execute(
            "SELECT count(*) FROM convostore_memory_entries WHERE search_rid IS NULL"
        )
        [(stale,)] = self.execute(
            "SELECT count(*) FROM convostore_memory_stores st"
            " JOIN convostore_memory_versions v ON v.store_id = st.id AND v.seq >= st.indexed_seq"
            " JOIN convostore_memory_entries e ON e.id = v.entry_id AND e.version_seq = v.seq"
            " WHERE e.search_rid IS NOT NULL"
        )
        return int(messages) + int(entries) + int(stale)

    def find_unindexed(self) -> None:
        self.execute(MARK_FROM_SCAN)

    def _rids(self, created: Sequence[int]) -> list[int]:
        """New index row numbers for messages created at ``created``: after the last one of
        each minute (writers are serialized, so nobody takes them meanwhile)."""
        taken: dict[int, int] = {}
        rids = []
        for at in created:
            minute = at // BUCKET_MS
            if not 0 <= minute <= MAX_BUCKET:
                minute = bucket(at)
            rid = taken.get(minute)
            if rid is None:
                low = minute << RID_BITS
                last = self.execute(
                    "SELECT rowid FROM convostore_search WHERE rowid BETWEEN ? AND ?"
                    " ORDER BY rowid DESC LIMIT 1",
                    [low, low + (1 << RID_BITS) - 1],
                )
                rid = last[0][0] + 1 if last else low
            rids.append(rid)
            taken[minute] = rid + 1
        return rids

    def _index(self, rows: Sequence[tuple[str, int, int, str]]) -> list[int]:
        """Index ``(conversation_id, seq, created_at, text)``; their row numbers."""
        rids = self._rids([at for _, _, at, _ in rows])
        self.executemany(
            "INSERT INTO convostore_search (rowid, text, conversation_id, seq) VALUES (?, ?, ?, ?)",
            [(rid, text, cid, seq) for rid, (cid, seq, _, text) in zip(rids, rows, strict=True)],
        )
        return rids

    def _insert(self, cid: str, rows: Sequence[MessageRow], rids: Sequence[int | None]) -> None:
        self.executemany(
            f"INSERT INTO convostore_messages (conversation_id, {_MSG}, search_rid)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(cid, *row, rid) for row, rid in zip(rows, rids, strict=True)],
        )

    def insert_messages(self, cid: str, rows: Sequence[MessageRow]) -> None:
        # Indexed later, a batch in one transaction (SqliteBackend.write, close): FTS5 writes
        # a segment per transaction, which costs an append more than its own rows; a search
        # reads the rows not indexed yet directly (``unindexed_messages``).
        self._insert(cid, rows, [None] * len(rows))
        self._left_unindexed(len(rows))

    def _left_unindexed(self, count: int) -> None:
        """``count`` messages or memory entries were written without their index rows, or
        left them stale (for the batch)."""

    def update_message(self, cid: str, row: MessageRow) -> None:
        self.execute(
            "UPDATE convostore_messages SET content = ?, metadata = ?, updated_at = ?"
            " WHERE conversation_id = ? AND id = ?",
            [row.content, row.metadata, row.updated_at, cid, row.id],
        )
        self.execute(
            "UPDATE convostore_search SET text = ? WHERE rowid = (SELECT search_rid"
            " FROM convostore_messages WHERE conversation_id = ? AND id = ?)",
            [index_text(row.content), cid, row.id],
        )

    def copy_messages(self, source: str, target: str, max_seq: int | None) -> tuple[int, int]:
        bound = "" if max_seq is None else " AND m.seq <= ?"
        params: list[Any] = [source] if max_seq is None else [source, max_seq]
        rows = self.execute(
            f"SELECT {_COLUMNS}, s.text FROM convostore_messages m"
            " LEFT JOIN convostore_search s ON s.rowid = m.search_rid"
            f" WHERE m.conversation_id = ?{bound} ORDER BY m.seq",
            params,
        )
        copies = [MessageRow(*r[1:8]) for r in rows]
        texts = [
            (target, m.seq, m.created_at, r[8] if r[8] is not None else index_text(m.content))
            for m, r in zip(copies, rows, strict=True)
        ]
        [(caught_up,)] = self.execute(_MARK_CAUGHT_UP)
        self._insert(target, copies, self._index(texts))
        if caught_up:  # the copies, indexed, need not be read past the mark by every search
            self.execute(_MARK_AT_END)
        return len(copies), copies[-1].seq if copies else 0

    def index_unindexed(self, limit: int) -> int:
        # the first `limit` past the mark, which then passes them; one statement of each kind
        # for the whole batch
        rows = self.execute(_PENDING_ROWS, [limit])
        rids = self._index(
            [(cid, seq, at, index_text(content)) for _, cid, seq, at, content in rows]
        )
        self.executemany(_SET_RIDS, _runs([r[0] for r in rows], rids))
        if len(rows) < limit:  # every message past the mark is indexed now
            self.execute(_MARK_AT_END)
        else:
            self.execute("UPDATE convostore_search_mark SET indexed_to = ?", [rows[-1][0]])
        # the stale rows first: an entry indexed below would be stale by its mark still
        stale = self._index_stale(limit - len(rows))
        entries = self.execute(
            f"SELECT {_ENTRY_COLUMNS}{_ENTRY_JOIN} WHERE e.search_rid IS NULL"
            " ORDER BY e.store_id, e.path LIMIT ?",
            [limit - len(rows) - stale],
        )
        for entry in _entries(entries):
            self.execute(
                "UPDATE convostore_memory_entries SET search_rid = ? WHERE store_id = ? AND path = ?",
                [self._index_entry(entry), entry.store_id, entry.path],
            )
        return len(rows) + stale + len(entries)

    def _index_entry(self, entry: MemoryEntryRow) -> int:
        """Index a memory entry (its content as read with it); its index row's number."""
        last = self.execute(
            "SELECT rowid FROM convostore_memory_search ORDER BY rowid DESC LIMIT 1"
        )
        rid = last[0][0] + 1 if last else 1
        self.execute(
            "INSERT INTO convostore_memory_search (rowid, text, entry_id) VALUES (?, ?, ?)",
            [rid, self._memory_text(entry), entry.id],
        )
        return rid

    def insert_memory_entry(self, row: MemoryEntryRow) -> None:
        # Indexed later, with the batch, as messages are (a segment of FTS5 per transaction
        # cost a create more than its rows): without an index row (``search_rid`` NULL) a
        # search reads it directly meanwhile.
        super().insert_memory_entry(row)  # type: ignore[misc]
        self._left_unindexed(1)

    def insert_memory_version(self, row: MemoryVersionRow) -> None:
        super().insert_memory_version(row)  # type: ignore[misc]
        if row.operation != "update":  # a create or a delete leaves no index row stale
            self.execute(
                "UPDATE convostore_memory_stores SET indexed_seq = ? WHERE id = ?"
                " AND indexed_seq = ?",
                [row.seq + 1, row.store_id, row.seq],
            )

    def update_memory_entry(self, row: MemoryEntryRow, *, was_at: str) -> None:
        # The entry's index row is left as it was (rewriting it cost an update more than the
        # rest of it, a segment of FTS5 per transaction): its current version, numbered at or
        # past its store's indexed_seq, marks it stale until a batch rewrites it
        # (SqliteBackend.write, close); a search reads it directly meanwhile.
        super().update_memory_entry(row, was_at=was_at)  # type: ignore[misc]
        self._left_unindexed(1)

    def redact_memory_version(self, sid: str, seq: int, at: int) -> None:
        """Also the index row of the version's entry, where it holds that version's text: the
        current version's, or a stale row's (which may hold any earlier version's)."""
        super().redact_memory_version(sid, seq, at)  # type: ignore[misc]
        rows = self.execute(
            f"SELECT {_ENTRY_COLUMNS}, e.search_rid FROM convostore_memory_versions r"
            " JOIN convostore_memory_entries e ON e.id = r.entry_id"
            " JOIN convostore_memory_versions v ON v.store_id = e.store_id AND v.seq = e.version_seq"
            " JOIN convostore_memory_stores st ON st.id = e.store_id"
            " WHERE r.store_id = ? AND r.seq = ? AND e.search_rid IS NOT NULL"
            " AND (e.version_seq = r.seq OR e.version_seq >= st.indexed_seq)",
            [sid, seq],
        )
        self._rewrite_entries(rows)

    def _rewrite_entries(self, rows: Sequence[Sequence[Any]]) -> None:
        """Rewrite the index rows of entries read as ``_ENTRY_COLUMNS, e.search_rid``."""
        self.executemany(
            "UPDATE convostore_memory_search SET text = ? WHERE rowid = ?",
            [(self._memory_text(e), r[-1]) for e, r in zip(_entries(rows), rows, strict=True)],
        )

    def unindexed_memories(self, m: MemoryFilter) -> list[MemoryEntryRow]:
        """Also the entries whose index row is stale (their current version at or past the
        store's mark): the store's versions from the mark on, the current ones."""
        where, params = _memory_scope(m)
        # the versions first (MATERIALIZED): a planner without statistics walks the store's
        # entries instead
        stale = self.execute(
            "WITH p AS MATERIALIZED (SELECT seq, entry_id FROM convostore_memory_versions"
            " WHERE store_id = ? AND seq >= (SELECT indexed_seq FROM convostore_memory_stores"
            f" WHERE id = ?)) SELECT {_ENTRY_COLUMNS} FROM p"
            " JOIN convostore_memory_entries e ON e.id = p.entry_id AND e.version_seq = p.seq"
            " JOIN convostore_memory_versions v ON v.store_id = e.store_id AND v.seq = p.seq"
            f" WHERE e.search_rid IS NOT NULL AND {' AND '.join(where)}",
            [m.store_id, m.store_id, *params],
        )
        return [*super().unindexed_memories(m), *_entries(stale)]

    def _index_stale(self, budget: int) -> int:
        """Rewrite up to ``budget`` stale index rows of memory entries, store by store, each
        store's mark moved past what was rewritten; return how many."""
        done = 0
        stores = self.execute(
            "SELECT id, indexed_seq FROM convostore_memory_stores WHERE indexed_seq < next_seq"
        )
        for sid, mark in stores:
            if done >= budget:
                break
            rows = self.execute(
                f"SELECT {_ENTRY_COLUMNS}, e.search_rid FROM convostore_memory_versions v"
                " JOIN convostore_memory_entries e ON e.id = v.entry_id AND e.version_seq = v.seq"
                " WHERE v.store_id = ? AND v.seq >= ? AND e.search_rid IS NOT NULL"
                " ORDER BY v.seq LIMIT ?",
                [sid, mark, budget - done],
            )
            self._rewrite_entries(rows)
            if len(rows) < budget - done:  # every stale row of the store is rewritten
                self.execute(_MEMORY_MARK_AT_END, [sid])
            else:
                self.execute(
                    "UPDATE convostore_memory_stores SET indexed_seq = ? WHERE id = ?",
                    [rows[-1][4] + 1, sid],
                )
            done += len(rows)
        return done

    def search_memories(self, m: MemoryFilter, limit: int) -> list[MemoryEntryRow]:
        where, params = _memory_scope(m)
        grams = _trigrams([t for t in m.terms if len(t) >= 3])
        match = ["convostore_memory_search MATCH ?"] if grams else []
        terms = ["instr(s.text, ?) > 0" for _ in m.terms]
        sql = (
            f"SELECT {_ENTRY_COLUMNS} FROM convostore_memory_search s"
            " JOIN convostore_memory_entries e ON e.id = s.entry_id"
            " JOIN convostore_memory_versions v ON v.store_id = e.store_id"
            " AND v.seq = e.version_seq JOIN convostore_memory_stores st ON st.id = e.store_id"
            f" WHERE {' AND '.join([*match, *terms, *where, 'e.version_seq < st.indexed_seq'])}"
            " ORDER BY e.path LIMIT ?"
        )
        head = [_fts_query(grams)] if grams else []
        return _entries(self.execute(sql, [*head, *m.terms, *params, limit]))

    def _page(self, f: SearchFilter, *, low: int, high: int, limit: int, exact: bool) -> list[Hit]:
        """Matches of ``f`` among the index rows numbered ``low`` to ``high``: the highest
        numbers first, or (``exact``) in the order of results."""
        where, params, join = _scope(f)
        grams = _trigrams([t for t in f.terms if len(t) >= 3])
        match = ["convostore_search MATCH ?"] if grams else []
        terms = ["instr(s.text, ?) > 0" for _ in f.terms]  # the exact check of each term
        sql = (
            f"SELECT {_COLUMNS} FROM convostore_search s JOIN convostore_messages m"
            " ON m.conversation_id = s.conversation_id AND m.seq = s.seq"
            f"{join} WHERE {' AND '.join([*match, 's.rowid BETWEEN ? AND ?', *terms, *where])}"
            f" ORDER BY {_KEY_DESC if exact else 's.rowid DESC'} LIMIT ?"
        )
        head = [_fts_query(grams)] if grams else []
        return _hits(self.execute(sql, [*head, low, high, *f.terms, *params, limit]))

    def search_messages(self, f: SearchFilter, limit: int) -> list[Hit]:
        # Read the index backwards to the `limit`-th match: every match of a minute before the
        # last minute read comes after those, so the page is among the matches of the minutes
        # read; read those again, in the order of results.
        high = MAX_RID if f.after is None else ((bucket(f.after[0]) + 1) << RID_BITS) - 1
        first = self._page(f, low=0, high=high, limit=limit, exact=False)
        if len(first) < limit:
            return sorted(first, key=_order_key, reverse=True)
        last_minute = bucket(first[-1].message.created_at)
        return self._page(f, low=last_minute << RID_BITS, high=high, limit=limit, exact=True)


MAX_RID = (1 << 63) - 1

MARK_FROM_SCAN = (
    "UPDATE convostore_search_mark SET indexed_to = coalesce("
    "(SELECT min(rowid) FROM convostore_messages WHERE search_rid IS NULL) - 1,"
    " (SELECT coalesce(max(rowid), 0) FROM convostore_messages))"
)
"""Put SQLite's mark just below the first message the index lacks (a scan of the table)."""

_WITHOUT_INDEX_ROW = (
    "rowid > (SELECT indexed_to FROM convostore_search_mark) AND search_rid IS NULL"
)
"""SQLite's messages the index lacks: past the mark, without an index row (those copied in
with theirs are past it too)."""
_PENDING = f"WITH pending AS MATERIALIZED (SELECT rowid AS r FROM convostore_messages WHERE {_WITHOUT_INDEX_ROW})"
_PENDING_ROWS = (
    "SELECT rowid, conversation_id, seq, created_at, content FROM convostore_messages"
    f" WHERE {_WITHOUT_INDEX_ROW} ORDER BY rowid LIMIT ?"
)
"""The first messages the index lacks, in the table's order (a range of its rowids: cheaper
than ``_PENDING`` joined back to the table)."""
_MARK_AT_END = (
    "UPDATE convostore_search_mark"
    " SET indexed_to = (SELECT coalesce(max(rowid), 0) FROM convostore_messages)"
)
_MEMORY_MARK_AT_END = "UPDATE convostore_memory_stores SET indexed_seq = next_seq WHERE id = ?"
"""No index row of the memory store's entries is stale (SQLite)."""
_MARK_CAUGHT_UP = (
    "SELECT (SELECT indexed_to FROM convostore_search_mark)"
    " >= (SELECT coalesce(max(rowid), 0) FROM convostore_messages)"
)


_SET_RIDS = "UPDATE convostore_messages SET search_rid = rowid + ? WHERE rowid BETWEEN ? AND ?"
"""Name the index rows of a run of messages: consecutive rowids, consecutive index rows."""


def _runs(rowids: Sequence[int], rids: Sequence[int]) -> list[tuple[int, int, int]]:
    """``_SET_RIDS``'s parameters for messages ``rowids`` (ascending) given index rows
    ``rids``: one statement a run (a batch of appends within a minute is one), not one a row."""
    runs: list[tuple[int, int, int]] = []
    for rowid, rid in zip(rowids, rids, strict=True):
        if runs and runs[-1][0] == rid - rowid and runs[-1][2] == rowid - 1:
            runs[-1] = (rid - rowid, runs[-1][1], rowid)
        else:
            runs.append((rid - rowid, rowid, rowid))
    return runs


def _order_key(hit: Hit) -> tuple[int, str, int]:
    return hit.message.created_at, hit.conversation_id, hit.message.seq


class PostgresSearch(SearchStatements):
    """The pg_trgm index of PostgreSQL (see the module's docstring)."""

    _unindexed = "m.search_text IS NULL"

    def search_messages(self, f: SearchFilter, limit: int) -> list[Hit]:
        where, params, join = _scope(f)
        # LIKE on the lower-cased text, its wildcards escaped, is exact.
        likes = ["m.search_text LIKE ? ESCAPE '\\'" for _ in f.terms]
        terms = list(map(_like, f.terms))
        if not join and f.conversation_id is None:
            # A store-wide search reads the newest messages first (the time index, newest
            # first): a common term fills its page there, where the trigram index would fetch
            # every match to sort them. Any match newer than the page's is in the window read.
            inner = f" WHERE {' AND '.join(where)}" if where else ""
            sql = (
                f"SELECT {_COLUMNS} FROM (SELECT * FROM convostore_messages m{inner}"
                f" ORDER BY {_KEY_DESC} LIMIT ?) m"
                f" WHERE {' AND '.join(likes)} ORDER BY {_KEY_DESC} LIMIT ?"
            )
            for window in RECENT_WINDOWS:
                recent = _hits(self.execute(sql, [*params, window, *terms, limit]))
                if len(recent) == limit:
                    return recent
                if 2 * len(recent) < limit:
                    break  # too rare a term for a larger window: the trigram index is faster
        # The trigram index finds the candidates.
        sql = (
            f"SELECT {_COLUMNS} FROM convostore_messages m{join}"
            f" WHERE {' AND '.join([*likes, *where])} ORDER BY {_KEY_DESC} LIMIT ?"
        )
        return _hits(self.execute(sql, [*terms, *params, limit]))

    def insert_messages(self, cid: str, rows: Sequence[MessageRow]) -> None:
        sql = (
            f"INSERT INTO convostore_messages (conversation_id, {_MSG}, search_text)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        values = [(cid, *row, index_text(row.content)) for row in rows]
        if len(values) == 1:
            self.send(sql, values[0])
        else:
            self.executemany(sql, values)

    def update_message(self, cid: str, row: MessageRow) -> None:
        self.send(
            "UPDATE convostore_messages SET content = ?, metadata = ?, updated_at = ?,"
            " search_text = ? WHERE conversation_id = ? AND id = ?",
            [row.content, row.metadata, row.updated_at, index_text(row.content), cid, row.id],
        )

    def copy_messages(self, source: str, target: str, max_seq: int | None) -> tuple[int, int]:
        bound = "" if max_seq is None else " AND seq <= ?"
        params: list[Any] = [source] if max_seq is None else [source, max_seq]
        _, counted = self.execute_batch(
            [
                (
                    f"INSERT INTO convostore_messages (conversation_id, {_MSG}, search_text)"
                    f" SELECT ?, {_MSG}, search_text FROM convostore_messages"
                    f" WHERE conversation_id = ?{bound}",
                    [target, *params],
                ),
                (
                    "SELECT count(*), coalesce(max(seq), 0) FROM convostore_messages"
                    " WHERE conversation_id = ?",
                    [target],
                ),
            ]
        )
        return int(counted[0][0]), int(counted[0][1])

    def index_unindexed(self, limit: int) -> int:
        rows = self.execute(
            "SELECT conversation_id, seq, content FROM convostore_messages"
            " WHERE search_text IS NULL ORDER BY conversation_id, seq LIMIT ?",
            [limit],
        )
        self.executemany(
            "UPDATE convostore_messages SET search_text = ? WHERE conversation_id = ? AND seq = ?",
            [(index_text(content), cid, seq) for cid, seq, content in rows],
        )
        entries = self.execute(
            f"SELECT {_ENTRY_COLUMNS}{_ENTRY_JOIN} WHERE e.search_text IS NULL"
            " ORDER BY e.store_id, e.path LIMIT ?",
            [limit - len(rows)],
        )
        self.executemany(
            "UPDATE convostore_memory_entries SET search_text = ? WHERE store_id = ? AND path = ?",
            [(memory_index_text(e.path, e.content), e.store_id, e.path) for e in _entries(entries)],
        )
        return len(rows) + len(entries)

    def insert_memory_entry(self, row: MemoryEntryRow) -> None:
        self.send(
            "INSERT INTO convostore_memory_entries (store_id, path, id, version, version_seq,"
            " size, created_at, updated_at, search_text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [*row[:8], self._memory_text(row)],
        )

    def update_memory_entry(self, row: MemoryEntryRow, *, was_at: str) -> None:
        super().update_memory_entry(row, was_at=was_at)  # type: ignore[misc]
        self.send(
            "UPDATE convostore_memory_entries SET search_text = ? WHERE id = ?",
            [memory_index_text(row.path, row.content), row.id],
        )

    def redact_memory_version(self, sid: str, seq: int, at: int) -> None:
        super().redact_memory_version(sid, seq, at)  # type: ignore[misc]
        for eid, path in self.execute(
            "SELECT id, path FROM convostore_memory_entries WHERE store_id = ? AND version_seq = ?",
            [sid, seq],
        ):
            self.send(
                "UPDATE convostore_memory_entries SET search_text = ? WHERE id = ?",
                [memory_index_text(path, None), eid],
            )

    def search_memories(self, m: MemoryFilter, limit: int) -> list[MemoryEntryRow]:
        where, params = _memory_scope(m)
        likes = ["e.search_text LIKE ? ESCAPE '\\'" for _ in m.terms]
        sql = (
            f"SELECT {_ENTRY_COLUMNS}{_ENTRY_JOIN}"
            f" WHERE {' AND '.join([*likes, *where])} ORDER BY e.path LIMIT ?"
        )
        return _entries(self.execute(sql, [*map(_like, m.terms), *params, limit]))
