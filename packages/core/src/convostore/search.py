"""Search: messages and memory entries found by their text (the semantics, exact on every
backend, are in ``search_text``; the index and its statements in ``backends/search.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from .backends import Backend, Tx
from .backends.search import Hit, SearchFilter
from .engine import Engine, message_of
from .errors import MemoryValidationError
from .models import SearchHit, SearchResult
from .search_text import (
    decode_cursor,
    encode_cursor,
    index_text,
    matches,
    parse_query,
    searchable_text,
    snippet,
)
from .validation import check_limit, check_optional_id, check_role

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


class SearchMethods(Engine):
    """Finding messages by their text, and building the index of rows written before it."""

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

    def reindex(self, *, progress: Callable[[int, int], None] | None = None) -> int:
        """Index the messages written before the search index existed (a store opened by an
        older convostore): see ``reindex``."""
        return reindex(self.backend, progress=progress)


def reindex(backend: Backend, *, progress: Callable[[int, int], None] | None = None) -> int:
    """Index every message the index lacks, a batch per transaction (an interrupted run
    resumes where it stopped); return how many. ``progress(done, total)`` after each batch."""
    total = backend.read(lambda tx: tx.count_unindexed())
    done = 0
    while done < total:
        count = backend.write(lambda tx: tx.index_unindexed(REINDEX_BATCH))
        if not count:
            break
        done += count
        if progress is not None:
            progress(done, total)
    return done
