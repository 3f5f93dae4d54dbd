"""The core's tables: their versioned migration steps, written once for both databases
(``{collate}``, ``{blob}``, ``SQLITE_ONLY`` / ``POSTGRESQL_ONLY``: see ``Backend.migrate``)."""

from __future__ import annotations

from .base import POSTGRESQL_ONLY, SQLITE_ONLY
from .memories import MEMORY_MIGRATION, memory_write_function
from .search import MARK_FROM_SCAN

# Tx.append_if_unchanged on PostgreSQL: a function, so that the server plans its statements once
# per connection (statements are not prepared, for poolers' sake). From the search step on, each
# row carries its searchable text too.
APPEND_FUNCTION = """CREATE OR REPLACE FUNCTION convostore_append(
            p_id text, p_user_id text, p_created_at bigint, p_last_message_at bigint,
            p_message_count bigint, p_next_seq bigint, p_metadata text,
            p_new_user_id text, p_new_last_message_at bigint, p_new_message_count bigint,
            p_new_next_seq bigint, p_new_metadata text, p_new_ids boolean, p_rows json
        ) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    -- p_rows: the messages, each [seq, id, role, content, metadata, created_at, updated_at{text_doc}]
    IF p_new_ids THEN  -- the messages' ids must be free (= ANY: probes of the id index,
        -- where a semi-join could walk the whole conversation)
        PERFORM FROM convostore_messages WHERE conversation_id = p_id
            AND id = ANY (ARRAY(SELECT r ->> 1 FROM json_array_elements(p_rows) AS r));
        IF FOUND THEN
            RETURN false;
        END IF;
    END IF;
    -- every change of a conversation updates its row: one that still holds all of it saw none
    UPDATE convostore_conversations SET user_id = p_new_user_id,
        last_message_at = p_new_last_message_at, message_count = p_new_message_count,
        next_seq = p_new_next_seq, metadata = p_new_metadata
        WHERE id = p_id AND user_id IS NOT DISTINCT FROM p_user_id
        AND created_at = p_created_at AND last_message_at = p_last_message_at
        AND message_count = p_message_count AND next_seq = p_next_seq
        AND metadata IS NOT DISTINCT FROM p_metadata;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO convostore_messages (conversation_id, seq, id, role, content, metadata,
        created_at, updated_at{search})
    SELECT p_id, (r ->> 0)::bigint, r ->> 1, r ->> 2, r ->> 3, r ->> 4, (r ->> 5)::bigint,
        (r ->> 6)::bigint{text}
    FROM json_array_elements(p_rows) AS r;
    RETURN true;
END $$"""

# Tx.append_counted on PostgreSQL: an append judged on what its rules read (the owner, the
# conversation's identity, its metadata, the quota's bound, the ids free) rather than on
# every column, so that concurrent appends to one conversation each take one statement: the
# messages are numbered after those stored when the row's lock is granted. NULL, nothing
# written, where a check fails (the caller takes the locking path, which raises from the row
# as it is).
APPEND_COUNTED_FUNCTION = """CREATE OR REPLACE FUNCTION convostore_append_counted(
            p_id text, p_user_id text, p_created_at bigint, p_metadata text, p_next_seq bigint,
            p_new_user_id text, p_at bigint, p_room bigint, p_new_ids boolean, p_rows json
        ) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    v_count bigint := json_array_length(p_rows);
    v_after bigint[];
BEGIN
    -- p_rows as convostore_append's, numbered from p_next_seq: renumbered from next_seq
    IF p_new_ids THEN  -- looked for under the row's lock: an append of the same id waited
        PERFORM FROM convostore_conversations WHERE id = p_id FOR UPDATE;
        PERFORM FROM convostore_messages WHERE conversation_id = p_id
            AND id = ANY (ARRAY(SELECT r ->> 1 FROM json_array_elements(p_rows) AS r));
        IF FOUND THEN
            RETURN NULL;
        END IF;
    END IF;
    UPDATE convostore_conversations SET user_id = p_new_user_id,
        last_message_at = greatest(last_message_at, p_at),
        message_count = message_count + v_count, next_seq = next_seq + v_count
        WHERE id = p_id AND user_id IS NOT DISTINCT FROM p_user_id
        AND created_at = p_created_at AND metadata IS NOT DISTINCT FROM p_metadata
        AND message_count <= p_room
        RETURNING ARRAY[last_message_at, message_count, next_seq] INTO v_after;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    INSERT INTO convostore_messages (conversation_id, seq, id, role, content, metadata,
        created_at, updated_at, search_text)
    SELECT p_id, (r ->> 0)::bigint - p_next_seq + v_after[3] - v_count, r ->> 1, r ->> 2,
        r ->> 3, r ->> 4, (r ->> 5)::bigint, (r ->> 6)::bigint, r ->> 7
    FROM json_array_elements(p_rows) AS r;
    RETURN v_after;
END $$"""

# pg_trgm where the database has it, else in a schema of its own: an extension created in a
# store's schema would go with that schema, and with it every other store's search index.
# (Migrations of one component take one lock for the whole database: no two create it.)
_PG_TRGM_EXTENSION = """DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        CREATE SCHEMA IF NOT EXISTS convostore_extensions;
        CREATE EXTENSION pg_trgm SCHEMA convostore_extensions;
    END IF;
END $$"""

# The pg_trgm operator class, named with the schema the extension lives in (a store's schema
# may not be on the search path of every role).
_PG_TRGM_INDEX = """DO $$
DECLARE trgm text;
BEGIN
    SELECT n.nspname INTO trgm FROM pg_extension e
        JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    EXECUTE format('CREATE INDEX %s ON %s USING gin (search_text %I.gin_trgm_ops)', %L, %L, trgm);
END $$"""

SEARCH_MIGRATION: list[str] = [
    SQLITE_ONLY + "ALTER TABLE convostore_messages ADD COLUMN search_rid INTEGER",
    SQLITE_ONLY
    + "CREATE VIRTUAL TABLE convostore_search USING fts5(text, conversation_id UNINDEXED,"
    " seq UNINDEXED, tokenize = 'trigram case_sensitive 1', detail = none)",
    SQLITE_ONLY + "CREATE TRIGGER convostore_search_gone AFTER DELETE ON convostore_messages"
    " WHEN old.search_rid IS NOT NULL"
    " BEGIN DELETE FROM convostore_search WHERE rowid = old.search_rid; END",
    SQLITE_ONLY
    + "CREATE INDEX convostore_messages_unindexed ON convostore_messages (conversation_id, seq)"
    " WHERE search_rid IS NULL",
    POSTGRESQL_ONLY + _PG_TRGM_EXTENSION,
    POSTGRESQL_ONLY + "ALTER TABLE convostore_messages ADD COLUMN search_text text",
    POSTGRESQL_ONLY
    + _PG_TRGM_INDEX.replace("%L, %L", "'convostore_messages_search', 'convostore_messages'"),
    POSTGRESQL_ONLY
    + "CREATE INDEX convostore_messages_unindexed ON convostore_messages (conversation_id, seq)"
    " WHERE search_text IS NULL",
    POSTGRESQL_ONLY
    + APPEND_FUNCTION.format(search=", search_text", text=", r ->> 7", text_doc=", search_text"),
]
"""The migration step that adds the index (existing rows are indexed by ``reindex``)."""


MEMORY_SEARCH_MIGRATION: list[str] = [
    SQLITE_ONLY + "ALTER TABLE convostore_memory_entries ADD COLUMN search_rid INTEGER",
    SQLITE_ONLY
    + "CREATE VIRTUAL TABLE convostore_memory_search USING fts5(text, entry_id UNINDEXED,"
    " tokenize = 'trigram case_sensitive 1', detail = none)",
    SQLITE_ONLY
    + "CREATE TRIGGER convostore_memory_search_gone AFTER DELETE ON convostore_memory_entries"
    " WHEN old.search_rid IS NOT NULL"
    " BEGIN DELETE FROM convostore_memory_search WHERE rowid = old.search_rid; END",
    SQLITE_ONLY + "CREATE INDEX convostore_memory_entries_unindexed"
    " ON convostore_memory_entries (store_id, path) WHERE search_rid IS NULL",
    POSTGRESQL_ONLY + "ALTER TABLE convostore_memory_entries ADD COLUMN search_text text",
    POSTGRESQL_ONLY
    + _PG_TRGM_INDEX.replace(
        "%L, %L", "'convostore_memory_entries_search', 'convostore_memory_entries'"
    ),
    POSTGRESQL_ONLY + "CREATE INDEX convostore_memory_entries_unindexed"
    " ON convostore_memory_entries (store_id, path) WHERE search_text IS NULL",
    POSTGRESQL_ONLY
    + "DROP FUNCTION convostore_memory_write(text, bigint, bigint, bigint, bigint, bigint,"
    " bigint, bigint, text, bigint, bigint, bigint, text, text, bigint, bigint, bigint, bigint,"
    " bigint, bigint, text, text, bigint, bigint, bytea)",
    POSTGRESQL_ONLY + memory_write_function(search=True),
]
"""The migration step that indexes memory entries (path and current content)."""

# SQLite: the messages not in the index yet are those past a mark in the table's row order,
# where a partial index held them before (it cost every append one more page written). A new
# row's rowid is one more than the largest: a delete that takes the largest rows below the mark
# brings the mark down with it, or their rowids would be given again below it.
SEARCH_MARK_MIGRATION: list[str] = [
    SQLITE_ONLY + "CREATE TABLE convostore_search_mark"
    " (id INTEGER PRIMARY KEY CHECK (id = 1), indexed_to INTEGER NOT NULL)",
    SQLITE_ONLY + "INSERT INTO convostore_search_mark (id, indexed_to) VALUES (1, 0)",
    SQLITE_ONLY + MARK_FROM_SCAN,
    SQLITE_ONLY + "DROP INDEX convostore_messages_unindexed",
    SQLITE_ONLY + "CREATE TRIGGER convostore_search_mark_down AFTER DELETE ON convostore_messages"
    " WHEN (SELECT coalesce(max(rowid), 0) FROM convostore_messages)"
    " < (SELECT indexed_to FROM convostore_search_mark)"
    " BEGIN UPDATE convostore_search_mark"
    " SET indexed_to = (SELECT coalesce(max(rowid), 0) FROM convostore_messages); END",
]
"""The migration step that replaces SQLite's partial index of unindexed messages by a mark."""

# SQLite: a memory update leaves its entry's index row as it was (SqliteSearch); an entry whose
# current version is numbered at or past its store's indexed_seq has a stale row, read directly
# by a search until a batch rewrites it. Every row is current when this step runs; a new store
# starts with its mark at its next_seq; a restore that numbers the store's versions lower brings
# the mark down with next_seq.
MEMORY_SEARCH_MARK_MIGRATION: list[str] = [
    SQLITE_ONLY + "ALTER TABLE convostore_memory_stores"
    " ADD COLUMN indexed_seq BIGINT NOT NULL DEFAULT 0",
    SQLITE_ONLY + "UPDATE convostore_memory_stores SET indexed_seq = next_seq",
    SQLITE_ONLY + "CREATE TRIGGER convostore_memory_mark_down"
    " AFTER UPDATE OF next_seq ON convostore_memory_stores WHEN new.next_seq < new.indexed_seq"
    " BEGIN UPDATE convostore_memory_stores SET indexed_seq = new.next_seq"
    " WHERE id = new.id; END",
    SQLITE_ONLY + "CREATE TRIGGER convostore_memory_mark_new"
    " AFTER INSERT ON convostore_memory_stores"
    " BEGIN UPDATE convostore_memory_stores SET indexed_seq = new.next_seq"
    " WHERE id = new.id; END",
]
"""The migration step that lets SQLite's memory updates leave their index rows to a batch."""

MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE convostore_conversations (
            id TEXT {collate} PRIMARY KEY,
            user_id TEXT {collate},
            created_at BIGINT NOT NULL,
            last_message_at BIGINT NOT NULL,
            message_count INTEGER NOT NULL,
            next_seq BIGINT NOT NULL,
            metadata TEXT
        )""",
        "CREATE INDEX convostore_conversations_by_user"
        " ON convostore_conversations (user_id, last_message_at, id)",
        "CREATE INDEX convostore_conversations_by_time"
        " ON convostore_conversations (last_message_at, id)",
        """CREATE TABLE convostore_messages (
            conversation_id TEXT {collate} NOT NULL,
            seq BIGINT NOT NULL,
            id TEXT {collate} NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            metadata TEXT,
            created_at BIGINT NOT NULL,
            updated_at BIGINT,
            PRIMARY KEY (conversation_id, seq)
        )""",
        # (id, conversation_id), not the other way round: conversation-ordered reads must not
        # find a second index starting with conversation_id to sort from.
        "CREATE UNIQUE INDEX convostore_messages_by_id ON convostore_messages (id, conversation_id)",
    ],
    [
        # One row: the last time an ordered-clock append took (ConversationStore.ordered).
        "CREATE TABLE convostore_clock (id INTEGER PRIMARY KEY, last BIGINT NOT NULL)",
    ],
    MEMORY_MIGRATION,
    [
        # What happened to a conversation besides appends (those are its messages' rows), at
        # the conversation's sequence numbers: the change feed reads both, merged by seq.
        """CREATE TABLE convostore_changes (
            conversation_id TEXT {collate} NOT NULL,
            seq BIGINT NOT NULL,
            kind TEXT NOT NULL,
            message_id TEXT {collate},
            created_at BIGINT NOT NULL,
            PRIMARY KEY (conversation_id, seq)
        )""",
    ],
    [POSTGRESQL_ONLY + memory_write_function(search=False)],
    [
        # Tx.append_if_unchanged on PostgreSQL: a function, so that the server plans its
        # statements once per connection (statements are not prepared, for poolers' sake).
        POSTGRESQL_ONLY + APPEND_FUNCTION.format(search="", text="", text_doc=""),
    ],
    SEARCH_MIGRATION,
    MEMORY_SEARCH_MIGRATION,
    [
        # A store-wide search's first read on PostgreSQL: the newest messages, newest first
        # (PostgresSearch.search_messages). SQLite's index rows are numbered by time instead.
        POSTGRESQL_ONLY
        + "CREATE INDEX convostore_messages_by_time ON convostore_messages (created_at)",
    ],
    SEARCH_MARK_MIGRATION,
    MEMORY_SEARCH_MARK_MIGRATION,
    [POSTGRESQL_ONLY + APPEND_COUNTED_FUNCTION],
]
