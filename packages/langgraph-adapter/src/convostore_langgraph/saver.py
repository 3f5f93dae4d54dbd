"""``ConvostoreSaver``: a LangGraph checkpointer on a convostore database (SQLite or PostgreSQL).

This module is the LangGraph protocol: it checks the arguments (``_checks``), runs the named
statements of ``_schema`` in the backend's transactions and lets ``_codec`` turn checkpoints
into rows and back; ``_history`` walks the parent chain for ``DeltaChannel``.

Storage model (``_codec``): a checkpoint row holds the small channel values (numbers, booleans,
``None``, and values the serde turns into at most ``_IN_ROW_MAX`` bytes), in every checkpoint
that holds them. Each other (channel, version) is one blob row written once, when the version
first appears in ``new_versions``, so unchanged channels are never rewritten. A list channel
(``messages`` under ``add_messages``) that grew from the previous version this process wrote or
read is stored as a delta: "the first ``keep`` items of the base version, then these items".
Snapshots are taken when the deltas since the last one outweigh it (so total bytes stay linear
in what was appended) or the chain reaches ``max_delta_depth``.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from convostore import ConversationMeta, MemoryValidationError, StorageError, telemetry
from convostore.spi import (
    MAX_INT64,
    Backend,
    StoreLike,
    Tx,
    check_int,
    check_optional_int,
    check_text,
    open_store,
    run_in_thread,
    run_sync,
)
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from . import _schema as sql
from ._blobs import _BlobKey
from ._checks import (
    _checkpoint_id,
    _key,
    _load_metadata,
    _metadata_filter,
    _metadata_matches,
    _metadata_text,
    _namespace,
    _serializing,
    _thread_id,
)
from ._codec import ChannelRows, Codec, Loaded, decode_checkpoint, unneeded_blobs
from ._heads import _Heads
from ._history import delta_channel_history
from ._projection import DeltaReader, Pending, Projection, reduce_messages, snapshot_value
from ._serde import TypeNotAllowedError, saver_serde

__all__ = ["ConvostoreSaver"]

R = TypeVar("R")
_PAGE = 100


class ConvostoreSaver(BaseCheckpointSaver[str]):
    """A LangGraph ``BaseCheckpointSaver`` with both the sync and the async methods.

    ``store`` is a ``ConversationStore``, an ``AsyncConversationStore``, a URL (``sqlite:///f.db``,
    ``postgresql://...``, ``memory://``; ``replicas`` as the core's) or ``None`` (the default
    URL). A store you pass stays yours to close; one opened from a URL is closed by ``close()``.
    ``serde`` serializes channel values and writes (``EncryptedSerializer`` works); the default
    reads back LangGraph's safe types and ``allowed_msgpack_modules`` only (``_serde``).

    On PostgreSQL every commit is durable; ``durable_commits=False`` commits ``put`` and
    ``put_writes`` with ``synchronous_commit=off``, the guarantee of SQLite's default ``synchronous
    =NORMAL`` (a crash of the database machine can lose the last moments of checkpoints, never
    corrupt or reorder them); on SQLite the URL decides.

    Each thread is also a core conversation (``conversation_prefix`` + thread id) whose
    messages are the thread's current ``messages_key`` channel, written after each root
    checkpoint that changes it (see the README's "Threads as conversations"): owned by
    ``configurable[owner_key]``, titled by the state's ``title_key`` channel, holding up to
    ``max_conversation_messages``. ``messages_key=None`` turns that off.
    """

    def __init__(
        self,
        store: StoreLike = None,
        *,
        serde: SerializerProtocol | None = None,
        allowed_msgpack_modules: Iterable[type | tuple[str, str]] = (),
        max_delta_depth: int = 128,
        cache_size: int = 1024,
        durable_commits: bool = True,
        messages_key: str | None = "messages",
        owner_key: str | None = "user_id",
        title_key: str | None = "title",
        conversation_prefix: str = "",
        max_conversation_messages: int = 1_000_000,
        replicas: Sequence[str] | None = None,
    ) -> None:
        super().__init__(serde=saver_serde(serde, allowed_msgpack_modules))
        self.durable_commits = durable_commits
        self.store, self._owns_store = open_store(store, replicas=replicas)
        self.backend = self.store.backend
        self.max_delta_depth = max_delta_depth
        self._heads = _Heads(cache_size)
        self.projection: Projection | None = None
        if messages_key is not None:
            self.projection = Projection(
                self.store,
                messages_key=_key("messages_key", messages_key),
                owner_key=None if owner_key is None else _key("owner_key", owner_key),
                title_key=None if title_key is None else _key("title_key", title_key),
                prefix=check_text("conversation_prefix", conversation_prefix),
                max_messages=check_int(
                    "max_conversation_messages", max_conversation_messages, minimum=1
                ),
                size=cache_size,
            )
            self.projection.reader = _DeltaMessages(self, self.projection.messages_key)
        sql.migrate(self.backend)

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> ConvostoreSaver:
        """Open the database at ``url`` (closed again by ``close()``)."""
        return cls(url, **kwargs)

    def close(self) -> None:
        """Close the database if this saver opened it."""
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> ConvostoreSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> ConvostoreSaver:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await run_in_thread(self.close)

    @property
    def _codec(self) -> Codec:
        # built per call: a copy of this saver (LangGraph's with_allowlist) has its own serde
        return Codec(self.serde, self._heads, self.max_delta_depth)

    # -- reading --------------------------------------------------------------------------

    def _load(
        self,
        tx: Tx,
        codec: Codec,
        rows: Sequence[sql.CheckpointRow],
        memo: dict[_BlobKey, Any],
        writes: list[list[sql.WriteRow]] | None = None,
    ) -> list[Loaded]:
        """Everything needed to build the tuples of ``rows``: two more statements at most
        (one if the caller read the pending ``writes`` already)."""
        decoded, keys = codec.blob_keys(rows, memo)
        blobs = sql.fetch_blobs(tx, self.backend.dialect, keys) if keys else {}
        if writes is None:
            found = sql.fetch_writes(tx, [(r[0], r[1], r[2]) for r in rows])
            writes = [found.get((r[0], r[1], r[2]), []) for r in rows]
        return [(r, ckpt, blobs, w) for r, ckpt, w in zip(rows, decoded, writes, strict=True)]

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the thread's latest in its namespace: the
        checkpoint and its pending writes in one statement (one round trip, no transaction)
        when its lists are the ones this process wrote or read last (the heads, immutable per
        version); else that statement and its blobs in one read-only transaction."""
        conf = config["configurable"]
        thread_id = _thread_id(conf.get("thread_id"))
        ns = _namespace(conf.get("checkpoint_ns"))
        cid = _checkpoint_id(get_checkpoint_id(config))
        codec = self._codec
        memo: dict[_BlobKey, Any] = {}
        found = self.backend.read(
            lambda tx: sql.checkpoint_with_writes(tx, thread_id, ns, cid), single_statement=True
        )
        if found is None:
            return None
        decoded, keys = codec.blob_keys([found[0]], memo)
        if not keys:
            return codec.build((found[0], decoded[0], {}, found[1]), memo, remember=True)
        memo = {}

        def read(tx: Tx) -> list[Loaded]:
            found = sql.checkpoint_with_writes(tx, thread_id, ns, cid)
            if found is None:
                return []
            row, writes = found
            return self._load(tx, codec, [row], memo, writes=[writes])

        loaded = self.backend.read(read)
        if not loaded:
            return None
        return codec.build(loaded[0], memo, remember=True)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first. ``config=None`` lists every thread; a config without
        ``checkpoint_ns`` lists every namespace of the thread. Pages are read in separate
        transactions, so no lock or cursor is held while the caller iterates."""
        query = sql.CheckpointQuery()
        if config is not None:
            conf = config.get("configurable", {})
            if conf.get("thread_id") is not None:
                query = query._replace(thread_id=_thread_id(conf["thread_id"]))
            if conf.get("checkpoint_ns") is not None:
                query = query._replace(ns=_namespace(conf["checkpoint_ns"]))
            query = query._replace(checkpoint_id=_checkpoint_id(get_checkpoint_id(config)))
        if before is not None:
            query = query._replace(before=_checkpoint_id(get_checkpoint_id(before), "before"))
        check_optional_int("limit", limit, minimum=-MAX_INT64)
        wanted: dict[str, Any] = {}
        if filter:
            wanted = _metadata_filter(filter)
            query = query._replace(filter=filter)
        if limit is not None and limit <= 0:
            return
        codec = self._codec
        remaining = limit
        after: tuple[str, str, str] | None = None
        while True:
            page = _PAGE if remaining is None else min(_PAGE, remaining)
            memo: dict[_BlobKey, Any] = {}

            def read(
                tx: Tx,
                after: tuple[str, str, str] | None = after,
                memo: dict[_BlobKey, Any] = memo,
                page: int = page,
            ) -> tuple[list[Loaded], sql.CheckpointRow | None, int]:
                rows = sql.checkpoint_page(tx, query, after, page)
                last, scanned = (rows[-1] if rows else None), len(rows)
                if wanted:
                    rows = [r for r in rows if _metadata_matches(_load_metadata(r[6]), wanted)]
                return (self._load(tx, codec, rows, memo) if rows else []), last, scanned

            loaded, last, scanned = self.backend.read(read)
            for item in loaded:
                yield codec.build(item, memo)
            if remaining is not None:
                remaining -= len(loaded)
                if remaining <= 0:
                    return
            if last is None or scanned < page:
                return
            after = (last[2], last[0], last[1])

    # -- writing --------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (an upsert) and the channel versions that are new in it: numbers,
        booleans and None (plain) and small values (typed) in the checkpoint row, the others
        as blob rows, in one transaction (one statement when there is no blob row)."""
        conf = config["configurable"]
        thread_id = _thread_id(conf.get("thread_id"))
        ns = _namespace(conf.get("checkpoint_ns"))
        parent_id = _checkpoint_id(conf.get("checkpoint_id"), "parent checkpoint_id")
        _checkpoint_id(checkpoint["id"], "checkpoint['id']")
        codec = self._codec
        with _serializing("checkpoint"):
            rows = codec.channel_rows(
                thread_id,
                ns,
                checkpoint["channel_values"],
                checkpoint["channel_versions"],
                new_versions,
            )
            ctype, cdata = codec.encode(checkpoint, rows.plain, rows.typed)
            md = get_checkpoint_metadata(config, metadata)
            md_text = _metadata_text(md)
        run_id = md.get("run_id")
        if isinstance(run_id, str):
            _key("metadata['run_id']", run_id)
        row = [thread_id, ns, checkpoint["id"], parent_id, ctype, cdata, md_text]
        pending = None
        if self.projection is not None and not ns:
            key = self.projection.messages_key
            blob = next((b for b in rows.blobs if b.channel == key), None)
            pending = self.projection.prepare(
                thread_id,
                checkpoint,
                md,
                new_versions,
                None if blob is None else blob.equal,
                parent_id,
            )

        _store(self.backend, codec, rows, row, run_id, pending, durable=self.durable_commits)
        codec.written(thread_id, ns, rows)
        if pending is not None:
            pending.finish()
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store writes pending on a checkpoint. Regular writes are insert-or-ignore (the first
        one stays); a batch of only special channels (errors, interrupts, resumes) overwrites."""
        conf = config["configurable"]
        thread_id = _thread_id(conf.get("thread_id"))
        ns = _namespace(conf.get("checkpoint_ns"))
        cid = _checkpoint_id(conf.get("checkpoint_id"))
        if cid is None:
            raise MemoryValidationError("checkpoint_id is required", argument="checkpoint_id")
        task_id = _key("task_id", task_id)
        task_path = check_text("task_path", task_path)
        rows = []
        for i, (channel, value) in enumerate(writes):
            _key(f"writes[{i}] channel", channel)
            with _serializing(f"writes[{i}]"):
                type_, data = self.serde.dumps_typed(value)
            idx = WRITES_IDX_MAP.get(channel, i)
            rows.append((thread_id, ns, cid, task_id, idx, task_path, channel, type_, data))
        if not rows:
            return
        overwrite = all(w[0] in WRITES_IDX_MAP for w in writes)
        dialect, durable = self.backend.dialect, self.durable_commits
        chunks = sql.write_chunks(rows, overwrite=overwrite)
        # one statement (up to sql.WRITES_PER_STATEMENT rows): no transaction around it
        self.backend.write(
            lambda tx: sql.insert_writes(tx, dialect, chunks, overwrite=overwrite, durable=durable),
            single_statement=len(chunks) == 1,
        )
        if self.projection is not None and not ns:  # an interrupt() shows on the conversation
            self.projection.wrote(thread_id, cid, task_path, writes)

    # -- deleting, copying, pruning -------------------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, write and blob of the thread, in every namespace, and its
        conversation."""
        tid = _thread_id(thread_id)
        if self.projection is not None:
            self.projection.delete(tid)  # the conversation and (atomically) the thread
        self.backend.write(lambda tx: sql.delete_thread(tx, tid), erasing=True)
        self._heads.drop([tid])

    def sync_conversation(self, thread_id: str) -> ConversationMeta | None:
        """Write the thread's conversation from its latest root checkpoint, whole (for threads
        written while the projection was off); delete it if the thread has none (then None)."""
        tid = _thread_id(thread_id)
        if self.projection is None:
            return None
        latest = self.get_tuple({"configurable": {"thread_id": tid, "checkpoint_ns": ""}})
        if latest is None:
            return self.projection.sync(tid, None, {}, None)
        version = latest.checkpoint["channel_versions"].get(self.projection.messages_key)
        return self.projection.sync(
            tid, latest.checkpoint, latest.metadata, None if version is None else str(version)
        )

    def _resync(self, thread_ids: Iterable[str]) -> None:
        """After a change that is not a ``put`` (a copy, runs deleted): show each thread's
        latest checkpoint again (a failure warns, as after a ``put``)."""
        projection = self.projection
        if projection is None:
            return
        for tid in thread_ids:
            projection.run_guarded(tid, functools.partial(self.sync_conversation, tid))

    def _collect_garbage(self, tx: Tx, thread_id: str) -> None:
        """Delete the thread's blobs that no checkpoint (or delta resting on them) needs."""
        serde = self.serde
        checkpoints = [
            (ns, decode_checkpoint(serde, ctype, data, values=False))
            for ns, ctype, data in sql.encoded_checkpoints(tx, thread_id)
        ]
        sql.delete_blobs(tx, unneeded_blobs(thread_id, checkpoints, sql.blob_bases(tx, thread_id)))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (with their writes) that these runs created, in every thread
        and namespace, and the blobs nothing needs any more. Other runs are untouched."""
        if isinstance(run_ids, str):
            raise TypeError("run_ids must be a sequence of run ids, not one string")
        ids = [_key("run_ids[]", str(r)) for r in run_ids]
        if not ids:
            return

        def write(tx: Tx) -> set[str]:
            keys = sql.checkpoints_of_runs(tx, ids)
            sql.delete_checkpoints(tx, keys)
            threads = {k[0] for k in keys}
            for tid in threads:
                self._collect_garbage(tx, tid)
            return threads

        threads = sorted(self.backend.write(write, erasing=True))
        self._heads.drop(threads)
        self._resync(threads)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, write and blob of one thread to another (ids kept)."""
        src = _thread_id(source_thread_id, "source_thread_id")
        dst = _thread_id(target_thread_id, "target_thread_id")
        self.backend.write(lambda tx: sql.copy_thread(tx, src, dst))
        self._resync([dst])

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest`` keeps each namespace's newest checkpoint (with its pending writes);
        ``delete`` removes the threads. A thread whose graph uses a ``DeltaChannel`` cannot be
        cut to its head (its values are rebuilt from ancestors): it raises ``NotImplementedError``
        before anything is deleted, as ``PostgresSaver`` does."""
        if isinstance(thread_ids, str):
            raise TypeError("thread_ids must be a sequence of thread ids, not one string")
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"strategy must be 'keep_latest' or 'delete', got {strategy!r}")
        tids = [_thread_id(t, "thread_ids[]") for t in thread_ids]
        if strategy == "delete":
            for tid in tids:
                self.delete_thread(tid)
            return

        def write(tx: Tx, tid: str) -> None:
            rows = sql.checkpoints_newest_first(tx, tid)
            heads: dict[str, str] = {}
            for ns, cid, md in rows:
                if json.loads(md).get("counters_since_delta_snapshot"):
                    raise NotImplementedError(
                        f"prune(keep_latest): thread {tid!r} uses a DeltaChannel, whose values"
                        " are rebuilt from ancestor checkpoints; use strategy='delete'"
                    )
                heads.setdefault(ns, cid)
            sql.delete_checkpoints(tx, [(tid, ns, cid) for ns, cid, _ in rows if heads[ns] != cid])
            sql.detach_parents(tx, [(tid, ns, cid) for ns, cid in heads.items()])
            self._collect_garbage(tx, tid)

        for tid in tids:
            self.backend.write(functools.partial(write, tid=tid), erasing=True)
        self._heads.drop(tids)

    # -- DeltaChannel support ---------------------------------------------------------------

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Writes and seed per channel along the parent chain (see ``_history``)."""
        if not channels:
            return {}
        for ch in channels:
            _key("channels[]", ch)
        conf = config["configurable"]
        return delta_channel_history(
            self.backend,
            self._codec,
            thread_id=_thread_id(conf.get("thread_id")),
            ns=_namespace(conf.get("checkpoint_ns")),
            target=_checkpoint_id(get_checkpoint_id(config)),
            channels=channels,
        )

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Zero-padded so string order is numeric order; a random tail keeps forks apart (shorter
        than the reference savers': versions repeat in every checkpoint's ``versions_seen``)."""
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:012}.{random.getrandbits(32):08x}"

    # -- async surface: the same calls, on worker threads or (small ones) on the loop --------

    async def _run(self, fn: Callable[[], R], *, inline: bool = False) -> R:
        # ``inline``: one checkpoint's worth, run on the event loop when its locks are free.
        return await run_sync(fn, self.backend, inline=inline)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._run(functools.partial(self.get_tuple, config), inline=True)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        def collect() -> list[CheckpointTuple]:
            return list(self.list(config, filter=filter, before=before, limit=limit))

        for item in await self._run(collect):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self._run(
            functools.partial(self.put, config, checkpoint, metadata, new_versions), inline=True
        )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self._run(
            functools.partial(self.put_writes, config, writes, task_id, task_path), inline=True
        )

    async def async_conversation(self, thread_id: str) -> ConversationMeta | None:
        """``sync_conversation`` (the "a" prefix of the async surface) on a worker thread."""
        return await self._run(functools.partial(self.sync_conversation, thread_id))

    async def adelete_thread(self, thread_id: str) -> None:
        await self._run(functools.partial(self.delete_thread, thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._run(functools.partial(self.delete_for_runs, run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._run(functools.partial(self.copy_thread, source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._run(functools.partial(self.prune, thread_ids, strategy=strategy))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await self._run(
            functools.partial(self.get_delta_channel_history, config=config, channels=channels)
        )


def _store(  # noqa: PLR0917 - what put prepared
    backend: Backend,
    codec: Codec,
    rows: ChannelRows,
    row: list[Any],
    run_id: Any,
    pending: Pending | None,
    *,
    durable: bool,
) -> None:
    """A ``put``'s transaction: the thread's conversation (``pending``), the blob rows (a delta
    where its base is still there, else whole) and the checkpoint ``row``. On PostgreSQL a
    missing base fails the transaction (no round trip asks first): then it runs again with
    those blobs whole."""
    thread_id, ns, dialect = row[0], row[1], backend.dialect

    def write(tx: Tx) -> None:
        if pending is not None:  # the thread's conversation, in the same transaction
            pending.start(tx)
        whole = [b for b in rows.blobs if b.base is None]
        for blob in rows.blobs:
            if blob.base is not None and not sql.insert_delta(tx, dialect, thread_id, ns, blob):
                codec.snapshot(blob)
                whole.append(blob)
        sql.insert_blobs(tx, thread_id, ns, whole)
        sql.upsert_checkpoint(
            tx, dialect, row, run_id if isinstance(run_id, str) else None, durable=durable
        )
        if pending is not None:
            pending.run()

    single = not rows.blobs and pending is None
    try:
        backend.write(write, single_statement=single)
    except StorageError as exc:
        if not sql.base_was_gone(exc):
            raise
        for blob in rows.blobs:  # another process deleted their base
            if blob.base is not None:
                codec.snapshot(blob)
        backend.write(write, single_statement=single)


# Each call LangGraph makes of the saver is a span ``langgraph.<method>``, the parent of the
# store's (the async methods run these on a thread or the loop: the same spans).
telemetry.trace_methods(
    ConvostoreSaver,
    "langgraph",
    (
        "get_tuple",
        "list",
        "put",
        "put_writes",
        "delete_thread",
        "delete_for_runs",
        "copy_thread",
        "prune",
        "get_delta_channel_history",
        "sync_conversation",
    ),
    lambda saver: {"db.system.name": saver.backend.dialect},
)


class _DeltaMessages(DeltaReader):
    """The messages of a ``DeltaChannel`` thread, read through the saver for its projection."""

    def __init__(self, saver: ConvostoreSaver, channel: str) -> None:
        self.saver = saver
        self.channel = channel

    def writes(self, thread_id: str, checkpoint_id: str) -> list[Any]:
        """The channel's pending writes on the root checkpoint, in LangGraph's order."""
        codec, channel = self.saver._codec, self.channel
        key = (thread_id, "", checkpoint_id)
        found = self.saver.backend.read(lambda tx: sql.fetch_writes(tx, [key], [channel]))
        try:
            return [value for _, _, value in codec.pending(found.get(key, []))]
        except TypeNotAllowedError as exc:
            raise exc.at(thread_id, "", checkpoint_id) from None

    def value_at(self, thread_id: str, checkpoint_id: str) -> list[Any]:
        """The channel's messages at the root checkpoint, from its history."""
        config: RunnableConfig = {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": "",
                "checkpoint_id": checkpoint_id,
            }
        }
        history = self.saver.get_delta_channel_history(config=config, channels=[self.channel])
        entry = history.get(self.channel)
        if entry is None:
            return []
        seed = snapshot_value(entry.get("seed"))
        return reduce_messages(seed, [w[2] for w in entry["writes"]])
