"""The core's tables: their versioned migration steps, written once for both databases
(``{collate}``, ``{blob}``, ``SQLITE_ONLY`` / ``POSTGRESQL_ONLY``: see ``Backend.migrate``)."""

from __future__ import annotations

from .base import POSTGRESQL_ONLY
from .memories import MEMORY_MIGRATION, MEMORY_WRITE_FUNCTION

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
    [POSTGRESQL_ONLY + MEMORY_WRITE_FUNCTION],
    [
        # Tx.append_if_unchanged on PostgreSQL: a function, so that the server plans its
        # statements once per connection (statements are not prepared, for poolers' sake).
        POSTGRESQL_ONLY
        + """CREATE OR REPLACE FUNCTION convostore_append(
            p_id text, p_user_id text, p_created_at bigint, p_last_message_at bigint,
            p_message_count bigint, p_next_seq bigint, p_metadata text,
            p_new_user_id text, p_new_last_message_at bigint, p_new_message_count bigint,
            p_new_next_seq bigint, p_new_metadata text, p_new_ids boolean, p_rows json
        ) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    -- p_rows: the messages, each [seq, id, role, content, metadata, created_at, updated_at]
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
        created_at, updated_at)
    SELECT p_id, (r ->> 0)::bigint, r ->> 1, r ->> 2, r ->> 3, r ->> 4, (r ->> 5)::bigint,
        (r ->> 6)::bigint
    FROM json_array_elements(p_rows) AS r;
    RETURN true;
END $$""",
    ],
]
