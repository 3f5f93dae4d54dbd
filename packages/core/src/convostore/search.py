"""Search: messages and memory entries found by their text (the semantics, exact on every
backend, are in ``search_text``; the index and its statements in ``backends/search.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from .backends import Backend, Tx
from .backends.memories import MemoryEntryRow
from .backends.search import Hit, MemoryFilter, SearchFilter
from .engine import message_of
from .errors import MemoryValidationError
from .memory.stores import MemoryStoreMethods, decode_path_cursor, path_cursor
from .models import MemorySearchHit, MemorySearchResult, SearchHit, SearchResult
from .search_text import (
    decode_cursor,
    encode_cursor,
    index_text,
    matches,
    memory_index_text,
    parse_query,
    searchable_text,
    snippet,
)
from .validation import check_limit, check_memory_path_prefix, check_optional_id, check_role

REINDEX_BATCH = 1000


def _roles(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise MemoryValidationError("roles must be a list of roles", argument="roles")
    if not value:
        raise MemoryValidationError("roles: give at least one role, or None", argument="roles")
    return tuple(dict.fromkeys(check_role(role, "roles[]") for role in value))


def _key(hit: Hit) -> tuple[int, str, int]:
    return hit.message.created_at, hit.conversation_id, hit.message.seq


class SearchMethods(MemoryStoreMethods):
    """Finding messages and memory entries by their text, and indexing what was written
    before the index existed."""

    def search_messages(
        self,
        *,
        query: str,
        user_id: str | None = None,
        conversation_id: str | None = None,
        roles: Sequence[str] | None = None,
        limit: int = 20,
        after: str | None = None,
    ) -> SearchResult:
        """Messages whose text holds every term of ``query``, newest first, a page at a time.

        A term is a substring of the message's text (every string in its content), compared
        as ``str.lower()`` makes both; a term in double quotes may hold spaces. ``user_id``
        keeps that user's conversations (with ``conversation_id``, it is the ownership check
        every read makes); ``roles`` keeps those roles. Pass ``next_cursor`` as ``after``.
        """
        limits = self.limits
        terms = tuple(parse_query(query))
        uid = check_optional_id("user_id", user_id, limits)
        cid = check_optional_id("conversation_id", conversation_id, limits)
        kept = _roles(roles)
        check_limit(limit, limits)
        bound = None if after is None else decode_cursor(after, limits)
        f = SearchFilter(terms, cid, uid, kept, bound)

        def read(tx: Tx) -> list[Hit]:
            if cid is not None and uid is not None:
                row = tx.conversation(cid)
                if row is None:
                    return []
                self._owned(row, uid)
            hits = tx.search_messages(f, limit + 1)
            late = [
                hit
                for hit in tx.unindexed_messages(f)
                if matches(terms, index_text(hit.message.content))
            ]
            return sorted([*hits, *late], key=_key, reverse=True)[: limit + 1] if late else hits

        hits = self.backend.read(read)
        page = hits[:limit]
        items = []
        for hit in page:
            text = searchable_text(json.loads(hit.message.content))
            items.append(
                SearchHit(
                    conversation_id=hit.conversation_id,
                    message=message_of(hit.message),
                    snippet=snippet(text, terms),
                )
            )
        more = len(hits) > limit
        return SearchResult(
            items=items, next_cursor=encode_cursor(*_key(page[-1])) if more else None
        )

    def search_memories(
        self,
        *,
        memory_store_id: str,
        query: str,
        path_prefix: str | None = None,
        user_id: str | None = None,
        limit: int = 20,
        after: str | None = None,
    ) -> MemorySearchResult:
        """Live entries of a memory store whose path and content (joined with a newline) hold
        every term of ``query`` (as ``search_messages`` matches), by path as listings are,
        without their content: each with a snippet. Pass ``next_cursor`` as ``after``."""
        limits = self.limits
        terms = tuple(parse_query(query))
        sid, uid = self._memory_ids(memory_store_id, user_id)
        prefix = None if path_prefix is None else check_memory_path_prefix(path_prefix, limits)
        check_limit(limit, limits)
        start = None if after is None else decode_path_cursor(after, limits)
        m = MemoryFilter(terms, sid, prefix or None, start)

        def read(tx: Tx) -> list[MemoryEntryRow]:
            self._store_and_entry(tx, sid, uid)
            hits = tx.search_memories(m, limit + 1)
            late = [
                e
                for e in tx.unindexed_memories(m)
                if matches(terms, memory_index_text(e.path, e.content))
            ]
            return sorted([*hits, *late], key=lambda e: e.path)[: limit + 1] if late else hits

        rows = self.backend.read(read)
        page = rows[:limit]
        items = []
        for e in page:
            text = e.path if e.content is None else f"{e.path}\n{e.content.decode('utf-8')}"
            items.append(
                MemorySearchHit(
                    entry_id=e.id, path=e.path, version=e.version, snippet=snippet(text, terms)
                )
            )
        more = len(rows) > limit
        return MemorySearchResult(
            items=items, next_cursor=path_cursor(page[-1].path) if more else None
        )

    def reindex(self, *, progress: Callable[[int, int], None] | None = None) -> int:
        """Index the messages written before the search index existed (a store opened by an
        older convostore): see ``reindex``."""
        return reindex(self.backend, progress=progress)


def reindex(backend: Backend, *, progress: Callable[[int, int], None] | None = None) -> int:
    """Index every message the index lacks, a batch per transaction (an interrupted run
    resumes where it stopped); return how many. ``progress(done, total)`` after each batch."""
    backend.write(lambda tx: tx.find_unindexed())
    total = backend.primary.read(lambda tx: tx.count_unindexed())  # it decides the writes
    done = 0
    while done < total:
        count = backend.write(lambda tx: tx.index_unindexed(REINDEX_BATCH))
        if not count:
            break
        done += count
        if progress is not None:
            progress(done, total)
    return done
