"""A ``crewai.Memory`` storage backend on the conversation store's database, searched by
keyword: no vector database and no embedding service.

CrewAI hands a backend only the query's embedding, never its text. ``keyword_embedder``
therefore embeds a text as its bag of words: one dimension per hashed word, 1.0 where the
word occurs. The backend reads the words back from the query vector and looks them up in
an inverted index (table ``crewai_memory_terms``), so a search costs an index lookup per
word, and the score is the cosine of the two word sets, in 0..1 like CrewAI's own.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from convostore import MemoryValidationError, telemetry
from convostore.spi import Tx, check_id, check_int, check_text, run_in_thread
from crewai.memory.types import MemoryRecord, ScopeInfo

from . import _memory_sql as sql
from ._common import StoreLike, open_store

__all__ = [
    "DIMENSIONS",
    "ConvostoreMemoryStorage",
    "convostore_memory",
    "keyword_embedder",
    "terms",
]

DIMENSIONS = 4096
"""Length of a ``keyword_embedder`` vector: words are hashed into this many buckets."""

_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "he",
        "her",
        "his",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "with",
        "you",
        "your",
    ]
)
_WORD = re.compile(r"\w+")


def terms(text: str) -> list[int]:
    """The distinct hashed words of ``text`` (case- and accent-folded, stopwords dropped)."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    out: set[int] = set()
    for word in _WORD.findall(folded):
        if len(word) > 1 and word not in _STOPWORDS:
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            out.add(int.from_bytes(digest, "big") % DIMENSIONS)
    return sorted(out)


def keyword_embedder(texts: Sequence[str]) -> list[list[float]]:
    """Embed each text as its bag of hashed words (``DIMENSIONS`` floats, 1.0 per word).

    Pass it as ``Memory(embedder=keyword_embedder)``: it needs no model and no network.
    """
    vectors = []
    for text in texts:
        vector = [0.0] * DIMENSIONS
        for term in terms(text):
            vector[term] = 1.0
        vectors.append(vector)
    return vectors


def _micros(value: datetime) -> int:
    """Epoch microseconds; a naive datetime is UTC, as CrewAI's ``datetime.utcnow()``."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    delta = aware - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _datetime(micros: int) -> datetime:
    """The naive UTC datetime CrewAI compares with ``datetime.utcnow()``."""
    return datetime.fromtimestamp(micros / 1_000_000, UTC).replace(tzinfo=None)


def _scope(value: str | None, argument: str = "scope_prefix") -> str | None:
    """A scope path as stored: leading "/", no trailing "/"; None and "/" mean every scope."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise MemoryValidationError(f"{argument} must be a str or None, got {type(value).__name__}")
    check_text(argument, value)
    stripped = value.strip("/")
    return "/" + stripped if stripped else "/"


class ConvostoreMemoryStorage:
    """A ``crewai.memory.storage.backend.StorageBackend`` in the convostore database.

    ``store`` is a ``ConversationStore``, an ``AsyncConversationStore`` or a URL
    (``sqlite:///file.db``, ``postgresql://...``, ``memory://``). Records live in tables of
    their own (component ``crewai``) beside the conversations, on SQLite or PostgreSQL.
    Search is by keyword and needs the vectors of ``keyword_embedder``; use
    ``convostore_memory`` to get a ``Memory`` wired that way. ``replicas`` (PostgreSQL
    standbys of a URL's server, as ``ConversationStore(url, replicas=...)``) answer the reads.
    """

    def __init__(self, store: StoreLike, *, replicas: Sequence[str] | None = None) -> None:
        self.store, self._owned = open_store(store, replicas=replicas)
        self.backend = self.store.backend
        sql.migrate(self.backend)

    # -- conversions -------------------------------------------------------------------------

    def _row(
        self, record: MemoryRecord, argument: str
    ) -> tuple[sql.RecordRow, list[int], list[str]]:
        if not isinstance(record, MemoryRecord):
            raise MemoryValidationError(
                f"{argument} must be a crewai MemoryRecord, got {type(record).__name__}"
            )
        limits = self.store.limits
        check_id(f"{argument}.id", record.id, limits)
        for name in ("content", "scope", "source"):
            if getattr(record, name) is not None:
                check_text(f"{argument}.{name}", getattr(record, name))
        for category in record.categories:
            check_text(f"{argument}.categories[]", category)
        size = len(record.content.encode("utf-8"))
        if size > limits.max_content_bytes:
            raise MemoryValidationError(
                f"{argument}.content is {size} bytes; the limit is {limits.max_content_bytes} bytes"
            )
        categories = sorted({str(c) for c in record.categories})
        try:
            metadata = json.dumps(record.metadata, ensure_ascii=False, allow_nan=False)
            metadata.encode()
        except UnicodeEncodeError:  # lone surrogates: kept as \u escapes
            metadata = json.dumps(record.metadata, allow_nan=False)
        except RecursionError:
            raise MemoryValidationError(f"{argument}.metadata is nested too deeply") from None
        except (TypeError, ValueError) as exc:
            raise MemoryValidationError(f"{argument}.metadata is not JSON: {exc}") from None
        if len(metadata.encode("utf-8")) > limits.max_metadata_bytes:
            raise MemoryValidationError(
                f"{argument}.metadata is over the limit of {limits.max_metadata_bytes} bytes"
            )
        words = terms(record.content)
        row = sql.RecordRow(
            id=record.id,
            scope=_scope(record.scope, f"{argument}.scope") or "/",
            content=record.content,
            categories=json.dumps(categories, ensure_ascii=False),
            metadata=metadata,
            importance=float(record.importance),
            created_at=_micros(record.created_at),
            last_accessed=_micros(record.last_accessed),
            source=record.source,
            private=int(record.private),
            term_count=max(len(words), 1),
        )
        return row, words, categories

    @staticmethod
    def _record(row: sql.RecordRow) -> MemoryRecord:
        return MemoryRecord(
            id=row.id,
            content=row.content,
            scope=row.scope,
            categories=json.loads(row.categories),
            metadata=json.loads(row.metadata),
            importance=row.importance,
            created_at=_datetime(row.created_at),
            last_accessed=_datetime(row.last_accessed),
            source=row.source,
            private=bool(row.private),
        )

    @staticmethod
    def _limit(value: object, argument: str, minimum: int) -> int:
        return check_int(argument, value, minimum=minimum)

    # -- StorageBackend ------------------------------------------------------------------------

    def save(self, records: list[MemoryRecord]) -> None:
        """Store records (a record with an existing id replaces it), all or none."""
        rows = [self._row(r, f"records[{i}]") for i, r in enumerate(records)]
        if rows:
            self.backend.write(lambda tx: sql.insert(tx, rows))

    def update(self, record: MemoryRecord) -> None:
        """Replace the record with the same id."""
        row = self._row(record, "record")
        self.backend.write(lambda tx: sql.insert(tx, [row]))

    def search(  # noqa: PLR0917 - StorageBackend's signature
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        """Records sharing words with the query (a ``keyword_embedder`` vector), best first,
        scored by the cosine of the two word sets."""
        if len(query_embedding) != DIMENSIONS:
            raise MemoryValidationError(
                f"query_embedding has {len(query_embedding)} dimensions; this backend searches"
                f" by keyword and needs keyword_embedder's {DIMENSIONS}: pass"
                " Memory(embedder=convostore_crewai.keyword_embedder)"
            )
        limit = self._limit(limit, "limit", 1)
        query = [i for i, v in enumerate(query_embedding) if v]
        if not query:
            return []
        f = sql.Filter(_scope(scope_prefix), categories or None)
        fetch = None if metadata_filter else limit
        rows = self.backend.read(lambda tx: sql.search(tx, query, f, fetch))
        out: list[tuple[MemoryRecord, float]] = []
        for row, hits in rows:
            score = hits / math.sqrt(len(query) * row.term_count)
            if score < min_score:
                continue
            record = self._record(row)
            if metadata_filter and any(
                record.metadata.get(k) != v for k, v in metadata_filter.items()
            ):
                continue
            out.append((record, min(score, 1.0)))
            if len(out) >= limit:
                break
        return out

    def delete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        """Delete the records matching every given criterion (all records if none); return
        how many went."""
        f = sql.Filter(
            _scope(scope_prefix),
            categories or None,
            list(record_ids) if record_ids is not None else None,
            _micros(older_than) if older_than is not None else None,
        )

        def write(tx: Tx) -> int:
            if metadata_filter:
                doomed = [
                    row.id
                    for row in sql.select(tx, f)
                    if all(json.loads(row.metadata).get(k) == v for k, v in metadata_filter.items())
                ]
            else:
                doomed = sql.ids(tx, f)
            sql.delete_ids(tx, doomed)
            return len(doomed)

        return self.backend.write(write, erasing=True)

    def get_record(self, record_id: str) -> MemoryRecord | None:
        """One record by id, or None."""
        check_id("record_id", record_id, self.store.limits)
        rows = self.backend.read(lambda tx: sql.select(tx, sql.Filter(record_ids=[record_id])))
        return self._record(rows[0]) if rows else None

    def list_records(
        self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[MemoryRecord]:
        """Records in a scope and its subscopes, newest first."""
        limit = self._limit(limit, "limit", 0)
        offset = self._limit(offset, "offset", 0)
        f = sql.Filter(_scope(scope_prefix))
        rows = self.backend.read(lambda tx: sql.select(tx, f, limit=limit, offset=offset))
        return [self._record(r) for r in rows]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        """Record count, categories, date range and child scopes of a scope."""
        path = _scope(scope, "scope") or "/"
        f = sql.Filter(path)

        def read(
            tx: Tx,
        ) -> tuple[tuple[int, int | None, int | None], dict[str, int], list[str]]:
            return sql.scope_summary(tx, f), sql.category_counts(tx, f), sql.scopes(tx, f)

        (n, oldest, newest), cats, found = self.backend.read(read)
        return ScopeInfo(
            path=path,
            record_count=n,
            categories=sorted(cats),
            oldest_record=_datetime(oldest) if oldest is not None else None,
            newest_record=_datetime(newest) if newest is not None else None,
            child_scopes=_children(path, found),
        )

    def list_scopes(self, parent: str = "/") -> list[str]:
        """The immediate child scopes of ``parent``."""
        path = _scope(parent, "parent") or "/"
        found = self.backend.read(lambda tx: sql.scopes(tx, sql.Filter(path)))
        return _children(path, found)

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        """Category name to record count, within a scope."""
        f = sql.Filter(_scope(scope_prefix))
        return self.backend.read(lambda tx: sql.category_counts(tx, f))

    def count(self, scope_prefix: str | None = None) -> int:
        """How many records a scope and its subscopes hold."""
        f = sql.Filter(_scope(scope_prefix))
        return self.backend.read(lambda tx: sql.count(tx, f))

    def reset(self, scope_prefix: str | None = None) -> None:
        """Delete every record of a scope (of every scope when None)."""
        self.delete(scope_prefix=scope_prefix)

    def touch_records(self, record_ids: list[str]) -> None:
        """Set ``last_accessed`` to now (CrewAI calls this after a recall)."""
        now = _micros(datetime.now(UTC))
        if record_ids:
            self.backend.write(lambda tx: sql.touch(tx, record_ids, now))

    async def asave(self, records: list[MemoryRecord]) -> None:
        await run_in_thread(functools.partial(self.save, records))

    async def asearch(  # noqa: PLR0917 - StorageBackend's signature
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        return await run_in_thread(
            lambda: self.search(
                query_embedding, scope_prefix, categories, metadata_filter, limit, min_score
            )
        )

    async def adelete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        return await run_in_thread(
            lambda: self.delete(scope_prefix, categories, record_ids, older_than, metadata_filter)
        )

    def close(self) -> None:
        """Close the store if it was opened here from a URL (``Memory.close`` calls this)."""
        if self._owned:
            self.store.close()
            self._owned = False


# Each call CrewAI's Memory makes of the storage is a span ``crewai_memory.<method>`` (the
# async methods run these on a worker thread: the same spans).
telemetry.trace_methods(
    ConvostoreMemoryStorage,
    "crewai_memory",
    (
        "save",
        "update",
        "search",
        "delete",
        "get_record",
        "list_records",
        "get_scope_info",
        "list_scopes",
        "list_categories",
        "count",
        "reset",
        "touch_records",
    ),
    lambda storage: {"db.system.name": storage.backend.dialect},
)


def _children(path: str, scopes: Sequence[str]) -> list[str]:
    prefix = "/" if path == "/" else path + "/"
    return sorted(
        {
            prefix + s[len(prefix) :].split("/", 1)[0]
            for s in scopes
            if s.startswith(prefix) and s != prefix
        }
    )


def convostore_memory(
    store: StoreLike | ConvostoreMemoryStorage,
    *,
    replicas: Sequence[str] | None = None,
    **options: Any,
) -> Any:
    """A ``crewai.Memory`` on ``ConvostoreMemoryStorage`` with ``keyword_embedder``:
    ``Crew(memory=convostore_memory(store, llm=my_llm))``. ``options`` go to ``Memory``
    (give ``llm``: CrewAI's memory asks a model to extract and file what it remembers);
    ``replicas`` go with a URL, as ``ConvostoreMemoryStorage``'s."""
    from crewai import Memory

    if isinstance(store, ConvostoreMemoryStorage):
        if replicas is not None:
            raise MemoryValidationError(
                "replicas goes with a URL; a ConvostoreMemoryStorage keeps its store's",
                argument="replicas",
            )
        storage = store
    else:
        storage = ConvostoreMemoryStorage(store, replicas=replicas)
    return Memory(storage=storage, embedder=keyword_embedder, **options)
