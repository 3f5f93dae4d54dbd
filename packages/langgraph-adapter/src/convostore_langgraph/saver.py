"""``ConvostoreSaver``: a LangGraph checkpointer on a convostore database (SQLite or PostgreSQL).

Storage model: a checkpoint row holds the small channel values (numbers, booleans, ``None``, and
values the serde turns into at most ``_IN_ROW_MAX`` bytes), in every checkpoint that holds them.
Each other (channel, version) is one blob row written once, when the version first appears in
``new_versions``, so unchanged channels are never rewritten. A list channel (``messages`` under
``add_messages``) that grew from the previous version this process wrote or read is stored as a
delta: "the first ``keep`` items of the base version, then these items". Snapshots are taken
when the deltas since the last one outweigh it (so total bytes stay linear in what was
appended) or the chain reaches ``max_delta_depth``.
"""

from __future__ import annotations

import functools
import json
import random
import zlib
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import ormsgpack
from convostore import ConversationStore, MemoryValidationError
from convostore.spi import (
    MAX_INT64,
    StoreLike,
    Tx,
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
    PendingWrite,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ._codec import (
    _CACHE_MAX,
    _COMPRESS_MIN,
    _IN_ROW_KEY,
    _IN_ROW_MAX,
    _NOVALUE,
    _PACK_OPTS,
    _PLAIN,
    _SIZED,
    _SOLE,
    _TYPED_KEY,
    _Blob,
    _BlobRow,
    _checkpoint_id,
    _common_prefix,
    _hand_out,
    _Head,
    _Heads,
    _json_default,
    _key,
    _load_metadata,
    _metadata_matches,
    _metadata_text,
    _namespace,
    _own,
    _own_extended,
    _pack_default,
    _private_copy,
    _runs_of,
    _serializing,
    _thaw,
    _thread_id,
    _unpack_ext,
)
from ._schema import (
    _BLOB_INSERT,
    _BLOB_MARKS,
    _CKPT_COLS,
    _CKPT_CONFLICT,
    _CKPT_UPSERT,
    _GET_BY_ID,
    _GET_LATEST,
    _WRITES_IGNORE,
    _WRITES_INSERT,
    _WRITES_OVERWRITE,
    ancestors_sql,
    fetch_blobs_sql,
    filter_conditions,
    insert_sql,
    migrate,
)

__all__ = ["ConvostoreSaver"]

R = TypeVar("R")
_PAGE = 100
_WALK = 64
_BlobKey = tuple[str, str, str, str]  # thread_id, ns, channel, version


class ConvostoreSaver(BaseCheckpointSaver[str]):
    """A LangGraph ``BaseCheckpointSaver`` with both the sync and the async methods.

    ``store`` is a ``ConversationStore``, an ``AsyncConversationStore``, a URL
    (``sqlite:///file.db``, ``postgresql://...``, ``memory://``) or ``None`` (the default URL).
    A store you pass stays yours to close; one opened from a URL is closed by ``close()``.
    ``serde`` is the serializer for channel values and writes (an ``EncryptedSerializer`` works).

    On PostgreSQL every commit is durable; ``durable_commits=False`` commits ``put`` and
    ``put_writes`` with ``synchronous_commit=off``, the guarantee of SQLite's default
    ``synchronous=NORMAL`` (a crash of the database machine can lose the last moments of
    checkpoints, never corrupt or reorder them). On SQLite the URL decides
    (``sqlite:///f.db?synchronous=FULL``).
    """

    def __init__(
        self,
        store: StoreLike = None,
        *,
        serde: SerializerProtocol | None = None,
        max_delta_depth: int = 128,
        cache_size: int = 1024,
        durable_commits: bool = True,
    ) -> None:
        super().__init__(serde=serde)
        self.durable_commits = durable_commits
        self.store: ConversationStore
        self.store, self._owns_store = open_store(store)
        self.backend = self.store.backend
        self.max_delta_depth = max_delta_depth
        self._heads = _Heads(cache_size)
        migrate(self.backend)

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

    # -- encoding -------------------------------------------------------------------------

    def _encode_checkpoint(
        self, checkpoint: Checkpoint, plain: dict[str, Any], typed: dict[str, tuple[str, bytes]]
    ) -> tuple[str, bytes]:
        """The checkpoint without its channel values, except ``plain`` ones (numbers, booleans,
        ``None``) and ``typed`` ones (small values, serialized by the serde, so an encrypting
        serde sees every text value). Plain data is packed with msgpack: ctype ``skeleton``
        (``skeleton+zlib`` above ``_COMPRESS_MIN`` bytes), a name no serde type takes; anything
        else by the serde, under the serde's type."""
        skeleton: dict[str, Any] = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        if plain:
            skeleton[_IN_ROW_KEY] = plain
        if typed:
            skeleton[_TYPED_KEY] = typed
        try:
            packed = ormsgpack.packb(skeleton, default=_pack_default, option=_PACK_OPTS)
        except TypeError:
            return self.serde.dumps_typed(skeleton)
        if len(packed) > _COMPRESS_MIN:
            return "skeleton+zlib", zlib.compress(packed)
        return "skeleton", packed

    def _decode_checkpoint(self, ctype: str, data: bytes, *, values: bool = True) -> dict[str, Any]:
        """The stored skeleton, every value kept in the row under ``_IN_ROW_KEY`` (without ``values``,
        only the plain ones: the typed ones are not deserialized)."""
        if ctype == "skeleton":
            loaded: dict[str, Any] = ormsgpack.unpackb(data, ext_hook=_unpack_ext)
        elif ctype == "skeleton+zlib":
            loaded = ormsgpack.unpackb(zlib.decompress(data), ext_hook=_unpack_ext)
        elif ctype == "json+zlib":  # the format before msgpack
            loaded = json.loads(zlib.decompress(data))
        elif ctype == "json":
            loaded = json.loads(data)
        else:
            loaded = self.serde.loads_typed((ctype, bytes(data)))
        typed = loaded.pop(_TYPED_KEY, None)
        if typed and values:
            in_row = loaded.setdefault(_IN_ROW_KEY, {})
            for ch, (type_, blob) in typed.items():
                in_row[ch] = self.serde.loads_typed((type_, blob))
        return loaded

    @staticmethod
    def _blob_params(thread_id: str, ns: str, b: _Blob) -> list[Any]:
        head = [thread_id, ns, b.channel, b.version, b.type, b.data]
        return [*head, b.base, b.keep, b.depth, b.tail, b.snap]

    def _insert(self, head: str, count: int, tail: str) -> str:
        """``head VALUES (?, ...) tail`` for ``count`` parameters (see ``insert_sql``)."""
        return insert_sql(self.backend.dialect, self.durable_commits, head, count, tail)

    def _blob_for(self, thread_id: str, ns: str, channel: str, version: str, value: Any) -> _Blob:
        """How a new version is stored: in the checkpoint row if small, else a delta of the channel's last
        known list, or whole. Small means at most ``_IN_ROW_MAX`` bytes serialized; a value
        longer than that, or a list that extends a list stored as a row, is taken as big
        without serializing it (so a growing list is never serialized whole)."""
        head = None
        keep = 0
        if type(value) is list and value:
            head = self._heads.get((thread_id, ns, channel))
            if (
                head is not None
                and type(head.value) is list
                and head.version != version
                and head.depth < self.max_delta_depth
            ):
                # The head's items are the saver's own copies, which no caller holds: an item
                # the caller changed in place (get_state, edit, update_state) compares unequal
                # and is stored again from there on.
                keep = _common_prefix(head.value, value)
        whole: tuple[str, bytes] | None = None
        extends = head is not None and 0 < keep == len(head.value)
        if not extends and not (type(value) in _SIZED and len(value) > _IN_ROW_MAX):
            whole = self.serde.dumps_typed(value)
            if len(whole[1]) <= _IN_ROW_MAX:
                return _Blob(channel, version, *whole, in_row=True)
        if keep and head is not None:
            type_, data = self.serde.dumps_typed(value[keep:])
            tail = head.tail + len(data)
            if tail <= max(head.snap, 4096):
                return _Blob(
                    channel,
                    version,
                    type_,
                    data,
                    base=head.version,
                    keep=keep,
                    depth=head.depth + 1,
                    tail=tail,
                    snap=head.snap,
                    value=value,
                )
        type_, data = whole or self.serde.dumps_typed(value)
        return _Blob(channel, version, type_, data, snap=len(data), value=value)

    def _unchanged(
        self, thread_id: str, ns: str, channel: str, version: str, value: Any
    ) -> _Blob | None:
        """How an unchanged channel is stored: in the row again if its version was kept in the
        row (every checkpoint holding a small value holds it), else nothing (its blob exists).
        Known from the channel's head, or from the length of ``value`` (``_blob_for``'s rule,
        so a saver without the head decides as the writer did); serialized only when neither
        tells. A value found big then is also offered as a row (``DO NOTHING`` if it
        is there), in case whoever wrote it kept in the row a form of it that serialized smaller."""
        head = self._heads.get((thread_id, ns, channel))
        if head is not None and head.version == version:
            if head.in_row is None:
                return None
            return _Blob(channel, version, *head.in_row, in_row=True)
        if type(value) in _SIZED and len(value) > _IN_ROW_MAX:
            return None
        type_, data = self.serde.dumps_typed(value)
        if len(data) <= _IN_ROW_MAX:
            return _Blob(channel, version, type_, data, in_row=True)
        return _Blob(channel, version, type_, data, snap=len(data), value=_NOVALUE)

    def _remember(
        self,
        key: _BlobKey,
        value: Any,
        *,
        depth: int,
        tail: int,
        snap: int,
        size: int,
        base: tuple[str, int] | None = None,
    ) -> None:
        """Record the version as the channel's head, keeping lists (the base of the next delta)
        and immutable text or bytes up to ``_CACHE_MAX`` bytes; never other objects
        (``_NOVALUE`` then: the head only says the version is a row).

        A list kept is the saver's own: ``value`` may be the caller's (``put``), so its items
        are copied, except the first ``keep`` of a delta on ``base = (version, keep)``, which
        are the previous head's own items (``_blob_for`` found them equal). The caller's list
        is kept too, as ``shared``: the next read hands it on if by then nobody else holds it
        (``_hand_out``)."""
        if self._heads.size <= 0:
            return
        runs = shared = None
        if type(value) is list:
            shared = list(value) if _SOLE is not None else None  # see _hand_out
            previous = self._heads.get((key[0], key[1], key[2])) if base else None
            if base and previous and previous.version == base[0] and type(previous.value) is list:
                value, runs = _own_extended(
                    previous.value, previous.runs, base[1], value[base[1] :]
                )
            else:
                value, runs = _own(value)
        elif type(value) not in (str, bytes) or size > _CACHE_MAX:
            value = _NOVALUE
        head = _Head(key[3], value, depth, tail, snap, runs=runs, shared=shared)
        self._heads.set((key[0], key[1], key[2]), head)

    def _remember_in_row(self, key: _BlobKey, type_: str, data: bytes) -> None:
        """Record that the version lives in checkpoint rows, serialized as (type_, data)."""
        self._heads.set((key[0], key[1], key[2]), _Head(key[3], _NOVALUE, in_row=(type_, data)))

    # -- reading --------------------------------------------------------------------------

    def _fetch_blobs(self, tx: Tx, keys: set[_BlobKey]) -> dict[_BlobKey, _BlobRow]:
        """The blob rows for ``keys`` and every delta base they rest on, in one statement."""
        out: dict[_BlobKey, _BlobRow] = {}
        ordered = sorted(keys)
        for start in range(0, len(ordered), 500):
            chunk = ordered[start : start + 500]
            sql = fetch_blobs_sql(self.backend.dialect, len(chunk))
            params = [p for key in chunk for p in key]
            for r in tx.execute(sql, params):
                out[(r[0], r[1], r[2], r[3])] = _BlobRow(
                    r[4], None if r[5] is None else bytes(r[5]), r[6], r[7], r[8], r[9], r[10]
                )
        return out

    def _fetch_writes(
        self, tx: Tx, ids: Sequence[tuple[str, str, str]], channels: Sequence[str] | None = None
    ) -> dict[tuple[str, str, str], list[tuple[str, str, str, bytes, str, int]]]:
        """Pending writes of the checkpoints ``ids`` (thread_id, ns, checkpoint_id), unsorted."""
        out: dict[tuple[str, str, str], list[tuple[str, str, str, bytes, str, int]]] = {}
        if not ids:
            return out
        groups: dict[tuple[str, str], list[str]] = {}
        for thread_id, ns, cid in ids:
            groups.setdefault((thread_id, ns), []).append(cid)
        clauses: list[str] = []
        params: list[Any] = []
        for (thread_id, ns), cids in groups.items():
            marks = ", ".join("?" for _ in cids)
            clauses.append(f"(thread_id = ? AND ns = ? AND checkpoint_id IN ({marks}))")
            params += [thread_id, ns, *cids]
        sql = (
            "SELECT thread_id, ns, checkpoint_id, task_id, channel, type, data, task_path, idx"
            f" FROM lg_writes WHERE ({' OR '.join(clauses)})"
        )
        if channels is not None:
            sql += f" AND channel IN ({', '.join('?' for _ in channels)})"
            params += list(channels)
        for r in tx.execute(sql, params):
            out.setdefault((r[0], r[1], r[2]), []).append(
                (r[3], r[4], r[5], bytes(r[6]) if r[6] is not None else b"", r[7], r[8])
            )
        return out

    def _load_rows(
        self,
        tx: Tx,
        rows: Sequence[tuple[Any, ...]],
        memo: dict[_BlobKey, Any],
        writes: list[list[Any]] | None = None,
    ) -> list[tuple[tuple[Any, ...], dict[str, Any], dict[_BlobKey, _BlobRow], list[Any]]]:
        """Everything needed to build the tuples of ``rows``: two more statements at most
        (one if the caller read the pending ``writes`` already). A list this process wrote or
        read last is taken from memory (into ``memo``) instead of being read and decoded."""
        decoded: list[dict[str, Any]] = []
        keys: set[_BlobKey] = set()
        for r in rows:
            ckpt = self._decode_checkpoint(r[4], bytes(r[5]))
            decoded.append(ckpt)
            in_row = ckpt.get(_IN_ROW_KEY, {})
            for ch, ver in ckpt.get("channel_versions", {}).items():
                key = (r[0], r[1], ch, str(ver))
                if ch in in_row or key in memo or key in keys:
                    continue
                head = self._heads.get((r[0], r[1], ch))
                if head is not None and head.version == key[3] and head.value is not _NOVALUE:
                    memo[key] = head.value
                else:
                    keys.add(key)
        blobs = self._fetch_blobs(tx, keys) if keys else {}
        if writes is None:
            found = self._fetch_writes(tx, [(r[0], r[1], r[2]) for r in rows])
            writes = [found.get((r[0], r[1], r[2]), []) for r in rows]
        return [(r, ckpt, blobs, w) for r, ckpt, w in zip(rows, decoded, writes, strict=True)]

    def _value(
        self, key: _BlobKey, blobs: Mapping[_BlobKey, _BlobRow], memo: dict[_BlobKey, Any]
    ) -> Any:
        if key in memo:
            return memo[key]
        chain: list[tuple[_BlobKey, _BlobRow]] = []
        cursor: _BlobKey | None = key
        while cursor is not None and cursor not in memo:
            row = blobs[cursor]
            chain.append((cursor, row))
            cursor = None if row.base is None else (key[0], key[1], key[2], row.base)
        value: Any = memo[cursor] if cursor is not None else None
        for k, row in reversed(chain):
            loaded = self.serde.loads_typed((row.type, row.data or b""))
            if row.base is not None:
                loaded = [*value[: row.keep], *loaded]
            memo[k] = value = loaded
        return value

    def _build(
        self,
        loaded: tuple[tuple[Any, ...], dict[str, Any], dict[_BlobKey, _BlobRow], list[Any]],
        memo: dict[_BlobKey, Any],
        *,
        remember: bool = False,
    ) -> CheckpointTuple:
        row, ckpt, blobs, writes = loaded
        thread_id, ns, cid, parent_id = row[0], row[1], row[2], row[3]
        in_row = ckpt.pop(_IN_ROW_KEY, {})
        values: dict[str, Any] = {}
        for ch, ver in ckpt.get("channel_versions", {}).items():
            if ch in in_row:
                values[ch] = in_row[ch]
                continue
            key = (thread_id, ns, ch, str(ver))
            blob = blobs.get(key)
            # What the caller gets is objects nobody else holds: the head and the memo (shared
            # by the checkpoints of one read) stay the saver's own, whatever the caller changes.
            if blob is None:
                if key in memo:  # the cached head
                    head = self._heads.get((thread_id, ns, ch))
                    own = memo[key]
                    if head is not None and head.value is own and type(own) is list:
                        values[ch] = _hand_out(self._heads, head)
                    else:
                        values[ch] = _private_copy(own)
                continue
            if blob.type == "empty":
                continue
            value = self._value(key, blobs, memo)
            if not remember:
                values[ch] = _private_copy(value)
                continue
            size = len(blob.data or b"")
            kept: Any = _NOVALUE
            runs = None
            if type(value) is list:
                kept, runs = value, _runs_of(value)
                values[ch] = _thaw(value, runs)
            else:
                values[ch] = _private_copy(value)
                if type(value) in (str, bytes) and size <= _CACHE_MAX:
                    kept = value
            self._heads.set(
                (thread_id, ns, ch),
                _Head(key[3], kept, blob.depth, blob.tail, blob.snap, runs=runs),
            )
        ckpt["channel_values"] = values
        if len(writes) > 1:
            writes = sorted(writes, key=lambda w: writes_sort_key(w[4], w[0], w[5]))
        loads = self.serde.loads_typed
        pending: list[PendingWrite] = [(w[0], w[1], loads((w[2], w[3]))) for w in writes]
        parent: RunnableConfig | None = None
        if parent_id:
            parent = {
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": ns,
                    "checkpoint_id": parent_id,
                }
            }
        # positional: a NamedTuple built from keywords costs three times as much
        return CheckpointTuple(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}},
            ckpt,  # type: ignore[arg-type]
            _load_metadata(row[6]),
            parent,
            pending,
        )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the thread's latest in its namespace."""
        conf = config["configurable"]
        thread_id = _thread_id(conf.get("thread_id"))
        ns = _namespace(conf.get("checkpoint_ns"))
        cid = _checkpoint_id(get_checkpoint_id(config))

        # the checkpoint and its pending writes in one statement, its blobs (if any) in a second
        if cid:
            sql, params = _GET_BY_ID, [thread_id, ns, cid]
        else:
            sql, params = _GET_LATEST, [thread_id, ns]

        def read(tx: Tx) -> Any:
            rows = tx.execute(sql, params)
            if not rows:
                return None
            writes = [
                (r[7], r[8], r[9], bytes(r[10]) if r[10] is not None else b"", r[11], r[12])
                for r in rows
                if r[7] is not None
            ]
            return self._load_rows(tx, [rows[0][:7]], memo, writes=[writes])

        memo: dict[_BlobKey, Any] = {}
        loaded = self.backend.read(read)
        if not loaded:
            return None
        return self._build(loaded[0], memo, remember=True)

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
        where: list[str] = []
        params: list[Any] = []
        if config is not None:
            conf = config.get("configurable", {})
            if conf.get("thread_id") is not None:
                where.append("thread_id = ?")
                params.append(_thread_id(conf["thread_id"]))
            if conf.get("checkpoint_ns") is not None:
                where.append("ns = ?")
                params.append(_namespace(conf["checkpoint_ns"]))
            if cid := _checkpoint_id(get_checkpoint_id(config)):
                where.append("checkpoint_id = ?")
                params.append(cid)
        if before is not None and (bid := _checkpoint_id(get_checkpoint_id(before), "before")):
            where.append("checkpoint_id < ?")
            params.append(bid)
        check_optional_int("limit", limit, minimum=-MAX_INT64)
        wanted: dict[str, Any] = {}
        if filter:
            w, p = filter_conditions(filter)
            where += w
            params += p
            # as stored: the metadata went through JSON (tuples are lists, objects are text)
            with _serializing("filter"):
                wanted = {
                    k: json.loads(json.dumps(v, default=_json_default)) for k, v in filter.items()
                }
        if limit is not None and limit <= 0:
            return
        remaining = limit
        bound: tuple[str, str, str] | None = None
        while True:
            page = _PAGE if remaining is None else min(_PAGE, remaining)
            conds = list(where)
            page_params = list(params)
            if bound is not None:
                conds.append("(checkpoint_id, thread_id, ns) < (?, ?, ?)")
                page_params += list(bound)
            sql = (
                f"SELECT {_CKPT_COLS} FROM lg_checkpoints"
                + (f" WHERE {' AND '.join(conds)}" if conds else "")
                + " ORDER BY checkpoint_id DESC, thread_id DESC, ns DESC LIMIT ?"
            )

            memo: dict[_BlobKey, Any] = {}

            def read(
                tx: Tx,
                sql: str = sql,
                page_params: list[Any] = page_params,
                memo: Any = memo,
                page: int = page,
            ) -> tuple[Any, tuple[Any, ...] | None, int]:
                rows = tx.execute(sql, [*page_params, page])
                last, scanned = (rows[-1] if rows else None), len(rows)
                if wanted:
                    rows = [r for r in rows if _metadata_matches(_load_metadata(r[6]), wanted)]
                return (self._load_rows(tx, rows, memo) if rows else []), last, scanned

            loaded, last, scanned = self.backend.read(read)
            for item in loaded:
                yield self._build(item, memo)
            if remaining is not None:
                remaining -= len(loaded)
                if remaining <= 0:
                    return
            if last is None or scanned < page:
                return
            bound = (last[2], last[0], last[1])

    # -- writing --------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (an upsert) and the channel versions that are new in it."""
        conf = config["configurable"]
        thread_id = _thread_id(conf.get("thread_id"))
        ns = _namespace(conf.get("checkpoint_ns"))
        parent_id = _checkpoint_id(conf.get("checkpoint_id"), "parent checkpoint_id")
        _checkpoint_id(checkpoint["id"], "checkpoint['id']")
        values = checkpoint["channel_values"]
        versions = checkpoint["channel_versions"]
        # an empty channel needs no row (a version without a blob reads as empty); numbers,
        # booleans and None (plain) and small values (typed) live in the checkpoint row
        with _serializing("checkpoint"):
            plain, typed, blobs, kept_in_row = self._channel_rows(
                thread_id, ns, values, versions, new_versions
            )
            ctype, cdata = self._encode_checkpoint(checkpoint, plain, typed)
            md = get_checkpoint_metadata(config, metadata)
            md_text = _metadata_text(md)
        run_id = md.get("run_id")
        if isinstance(run_id, str):
            _key("metadata['run_id']", run_id)
        sql = self._insert(_CKPT_UPSERT, 8, _CKPT_CONFLICT)
        self._write_checkpoint(
            thread_id=thread_id,
            ns=ns,
            parent_id=parent_id,
            checkpoint_id=checkpoint["id"],
            encoded=(ctype, cdata),
            md_text=md_text,
            run_id=run_id,
            sql=sql,
            blobs=blobs,
        )
        for b in kept_in_row:
            self._remember_in_row((thread_id, ns, b.channel, b.version), b.type, b.data or b"")
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def _channel_rows(
        self,
        thread_id: str,
        ns: str,
        values: Mapping[str, Any],
        versions: ChannelVersions,
        new_versions: ChannelVersions,
    ) -> tuple[dict[str, Any], dict[str, tuple[str, bytes]], Sequence[_Blob], Sequence[_Blob]]:
        """How each channel value is stored: plain or typed in the checkpoint row, or rows."""
        plain: dict[str, Any] = {}
        typed: dict[str, tuple[str, bytes]] = {}
        blobs: list[_Blob] = []
        kept_in_row: list[_Blob] = []
        for ch, value in values.items():
            if type(value) in _PLAIN:
                plain[ch] = value
                continue
            if ch in new_versions:
                blob: _Blob | None = self._blob_for(thread_id, ns, ch, str(new_versions[ch]), value)
            elif ch in versions:
                blob = self._unchanged(thread_id, ns, ch, str(versions[ch]), value)
            else:
                continue
            if blob is not None and blob.in_row:
                typed[ch] = (blob.type, blob.data or b"")
                kept_in_row.append(blob)
            elif blob is not None:
                _key("channel", ch)  # both are in the blob row's key
                _key(f"version of channel {ch!r}", blob.version)
                blobs.append(blob)
        return plain, typed, blobs, kept_in_row

    def _write_checkpoint(
        self,
        *,
        thread_id: str,
        ns: str,
        parent_id: str | None,
        checkpoint_id: str,
        encoded: tuple[str, bytes],
        md_text: str,
        run_id: object,
        sql: str,
        blobs: Sequence[_Blob],
    ) -> None:
        """Write the checkpoint row and its blob rows in one transaction; remember the heads."""
        ctype, cdata = encoded

        def write(tx: Tx) -> None:
            whole = [b for b in blobs if b.base is None]
            for blob in blobs:
                if blob.base is None:
                    continue
                # a delta only if its base is still there (another process may have pruned it)
                stored = tx.execute(
                    f"INSERT INTO lg_blobs ({_BLOB_INSERT}) SELECT {_BLOB_MARKS}"
                    " WHERE EXISTS (SELECT 1 FROM lg_blobs WHERE thread_id = ? AND ns = ?"
                    f" AND channel = ? AND version = ?{tx.lock_suffix})"
                    " ON CONFLICT (thread_id, ns, channel, version) DO NOTHING RETURNING version",
                    [
                        *self._blob_params(thread_id, ns, blob),
                        thread_id,
                        ns,
                        blob.channel,
                        blob.base,
                    ],
                )
                if not stored:
                    blob.type, data = self.serde.dumps_typed(blob.value)
                    blob.data, blob.base, blob.keep = data, None, None
                    blob.depth, blob.tail, blob.snap = 0, 0, len(data)
                    whole.append(blob)
            if whole:
                tx.executemany(
                    f"INSERT INTO lg_blobs ({_BLOB_INSERT}) VALUES ({_BLOB_MARKS})"
                    " ON CONFLICT (thread_id, ns, channel, version) DO NOTHING",
                    [self._blob_params(thread_id, ns, b) for b in whole],
                )
            tx.execute(
                sql,
                [
                    thread_id,
                    ns,
                    checkpoint_id,
                    parent_id,
                    ctype,
                    cdata,
                    md_text,
                    run_id if isinstance(run_id, str) else None,
                ],
            )

        self.backend.write(write, single_statement=not blobs)  # no blob: one upsert
        for b in blobs:
            key = (thread_id, ns, b.channel, b.version)
            size = len(b.data or b"")
            base = None if b.base is None or b.keep is None else (b.base, b.keep)
            self._remember(
                key, b.value, depth=b.depth, tail=b.tail, snap=b.snap, size=size, base=base
            )

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
        special = all(w[0] in WRITES_IDX_MAP for w in writes)
        conflict = _WRITES_OVERWRITE if special else _WRITES_IGNORE
        sql = self._insert(_WRITES_INSERT, 9, conflict)
        # one row is one statement: no transaction needed around it
        self.backend.write(lambda tx: tx.executemany(sql, rows), single_statement=len(rows) == 1)

    # -- deleting, copying, pruning -------------------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, write and blob of the thread, in every namespace."""
        tid = _thread_id(thread_id)

        def write(tx: Tx) -> None:
            for table in ("lg_checkpoints", "lg_blobs", "lg_writes"):
                tx.execute(f"DELETE FROM {table} WHERE thread_id = ?", [tid])

        self.backend.write(write, erasing=True)
        self._heads.drop([tid])

    def _collect_garbage(self, tx: Tx, thread_id: str) -> None:
        """Delete the thread's blobs that no checkpoint (or delta resting on them) needs."""
        needed: set[tuple[str, str, str]] = set()
        for ns, ctype, data in tx.execute(
            "SELECT ns, ctype, checkpoint FROM lg_checkpoints WHERE thread_id = ?", [thread_id]
        ):
            ckpt = self._decode_checkpoint(ctype, bytes(data), values=False)
            for ch, ver in ckpt.get("channel_versions", {}).items():
                needed.add((ns, ch, str(ver)))
        rows = tx.execute(
            "SELECT ns, channel, version, base FROM lg_blobs WHERE thread_id = ?", [thread_id]
        )
        bases = {(r[0], r[1], r[2]): r[3] for r in rows}
        stack = list(needed)
        while stack:
            ns, ch, ver = stack.pop()
            base = bases.get((ns, ch, ver))
            if base is not None and (ns, ch, base) not in needed:
                needed.add((ns, ch, base))
                stack.append((ns, ch, base))
        gone = [(thread_id, *k) for k in bases if k not in needed]
        if gone:
            tx.executemany(
                "DELETE FROM lg_blobs WHERE thread_id = ? AND ns = ? AND channel = ? AND version = ?",
                gone,
            )

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (with their writes) that these runs created, in every thread
        and namespace, and the blobs nothing needs any more. Other runs are untouched."""
        if isinstance(run_ids, str):
            raise TypeError("run_ids must be a sequence of run ids, not one string")
        ids = [_key("run_ids[]", str(r)) for r in run_ids]
        if not ids:
            return

        def write(tx: Tx) -> set[str]:
            rows = tx.execute(
                "SELECT thread_id, ns, checkpoint_id FROM lg_checkpoints"
                f" WHERE run_id IN ({', '.join('?' for _ in ids)})",
                ids,
            )
            tx.executemany(
                "DELETE FROM lg_writes WHERE thread_id = ? AND ns = ? AND checkpoint_id = ?", rows
            )
            tx.executemany(
                "DELETE FROM lg_checkpoints WHERE thread_id = ? AND ns = ? AND checkpoint_id = ?",
                rows,
            )
            threads = {r[0] for r in rows}
            for tid in threads:
                self._collect_garbage(tx, tid)
            return threads

        self._heads.drop(list(self.backend.write(write, erasing=True)))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, write and blob of one thread to another (ids kept)."""
        src = _thread_id(source_thread_id, "source_thread_id")
        dst = _thread_id(target_thread_id, "target_thread_id")

        def write(tx: Tx) -> None:
            tx.execute(
                f"INSERT INTO lg_checkpoints ({_CKPT_COLS}, run_id) SELECT ?, ns, checkpoint_id,"
                " parent_id, ctype, checkpoint, metadata, run_id FROM lg_checkpoints"
                " WHERE thread_id = ? ON CONFLICT (thread_id, ns, checkpoint_id) DO NOTHING",
                [dst, src],
            )
            tx.execute(
                "INSERT INTO lg_blobs (thread_id, ns, channel, version, type, data, base, keep,"
                " depth, tail, snap) SELECT ?, ns, channel, version, type, data, base, keep,"
                " depth, tail, snap FROM lg_blobs WHERE thread_id = ?"
                " ON CONFLICT (thread_id, ns, channel, version) DO NOTHING",
                [dst, src],
            )
            tx.execute(
                "INSERT INTO lg_writes (thread_id, ns, checkpoint_id, task_id, idx, task_path,"
                " channel, type, data) SELECT ?, ns, checkpoint_id, task_id, idx, task_path,"
                " channel, type, data FROM lg_writes WHERE thread_id = ?"
                " ON CONFLICT (thread_id, ns, checkpoint_id, task_id, idx) DO NOTHING",
                [dst, src],
            )

        self.backend.write(write)

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
            rows = tx.execute(
                "SELECT ns, checkpoint_id, metadata FROM lg_checkpoints WHERE thread_id = ?"
                " ORDER BY ns, checkpoint_id DESC",
                [tid],
            )
            heads: dict[str, str] = {}
            for ns, cid, md in rows:
                if json.loads(md).get("counters_since_delta_snapshot"):
                    raise NotImplementedError(
                        f"prune(keep_latest): thread {tid!r} uses a DeltaChannel, whose values"
                        " are rebuilt from ancestor checkpoints; use strategy='delete'"
                    )
                heads.setdefault(ns, cid)
            doomed = [(tid, ns, cid) for ns, cid, _ in rows if heads[ns] != cid]
            tx.executemany(
                "DELETE FROM lg_writes WHERE thread_id = ? AND ns = ? AND checkpoint_id = ?",
                doomed,
            )
            tx.executemany(
                "DELETE FROM lg_checkpoints WHERE thread_id = ? AND ns = ? AND checkpoint_id = ?",
                doomed,
            )
            tx.executemany(
                "UPDATE lg_checkpoints SET parent_id = NULL"
                " WHERE thread_id = ? AND ns = ? AND checkpoint_id = ?",
                [(tid, ns, cid) for ns, cid in heads.items()],
            )
            self._collect_garbage(tx, tid)

        for tid in tids:
            self.backend.write(functools.partial(write, tid=tid), erasing=True)
        self._heads.drop(tids)

    # -- DeltaChannel support ---------------------------------------------------------------

    @staticmethod
    def _parent_of(tx: Tx, thread_id: str, ns: str, target: str | None) -> str | None:
        if target:
            rows = tx.execute(
                "SELECT parent_id FROM lg_checkpoints"
                " WHERE thread_id = ? AND ns = ? AND checkpoint_id = ?",
                [thread_id, ns, target],
            )
        else:
            rows = tx.execute(
                "SELECT parent_id FROM lg_checkpoints WHERE thread_id = ? AND ns = ?"
                " ORDER BY checkpoint_id DESC LIMIT 1",
                [thread_id, ns],
            )
        return rows[0][0] if rows else None

    def _ancestors(
        self, tx: Tx, *, thread_id: str, ns: str, first: str, channels: set[str]
    ) -> tuple[Sequence[tuple[Any, ...]], Sequence[dict[str, Any]], dict[_BlobKey, _BlobRow], Any]:
        """Up to ``_WALK`` checkpoints up the parent chain from ``first``, with the blobs and
        writes of ``channels`` there: three statements."""
        chain = tx.execute(
            ancestors_sql(self.backend.dialect),
            [first, thread_id, ns, _WALK - 1, thread_id, ns],
        )
        decoded = [self._decode_checkpoint(r[2], bytes(r[3])) for r in chain]
        keys: set[_BlobKey] = set()
        for ckpt in decoded:
            in_row = ckpt.get(_IN_ROW_KEY, {})
            for ch in channels:
                ver = ckpt.get("channel_versions", {}).get(ch)
                if ver is not None and ch not in in_row:
                    keys.add((thread_id, ns, ch, str(ver)))
        blobs = self._fetch_blobs(tx, keys) if keys else {}
        writes = self._fetch_writes(
            tx, [(thread_id, ns, r[0]) for r in chain], channels=sorted(channels)
        )
        return chain, decoded, blobs, writes

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Writes and seed per channel along the parent chain, read ``64`` ancestors per
        statement (a recursive query), not one ``get_tuple`` per ancestor."""
        if not channels:
            return {}
        for ch in channels:
            _key("channels[]", ch)
        conf = config["configurable"]
        thread_id = _thread_id(conf.get("thread_id"))
        ns = _namespace(conf.get("checkpoint_ns"))
        target = _checkpoint_id(get_checkpoint_id(config))
        wanted = list(dict.fromkeys(channels))
        collected: dict[str, list[list[PendingWrite]]] = {c: [] for c in wanted}
        seeds: dict[str, Any] = {}
        remaining = set(wanted)
        cursor = self.backend.read(lambda tx: self._parent_of(tx, thread_id, ns, target))
        while cursor is not None and remaining:
            walk = functools.partial(
                self._ancestors, thread_id=thread_id, ns=ns, first=cursor, channels=remaining
            )
            chain, decoded, blobs, writes = self.backend.read(walk)
            if not chain:
                break
            memo: dict[_BlobKey, Any] = {}
            for row, ckpt in zip(chain, decoded, strict=True):
                if not remaining:
                    break
                ended: dict[str, Any] = {}
                in_row = ckpt.get(_IN_ROW_KEY, {})
                for ch in remaining:
                    ver = ckpt.get("channel_versions", {}).get(ch)
                    if ver is None:
                        continue
                    if ch in in_row:
                        ended[ch] = in_row[ch]
                        continue
                    key = (thread_id, ns, ch, str(ver))
                    blob = blobs.get(key)
                    if blob is None or blob.type == "empty":
                        continue
                    ended[ch] = self._value(key, blobs, memo)
                mine = sorted(
                    writes.get((thread_id, ns, row[0]), []),
                    key=lambda w: writes_sort_key(w[4], w[0], w[5]),
                )
                for ch in remaining:
                    found = [
                        (w[0], w[1], self.serde.loads_typed((w[2], w[3])))
                        for w in mine
                        if w[1] == ch
                    ]
                    collected[ch].append(found)
                for ch, value in ended.items():
                    seeds[ch] = value
                    remaining.discard(ch)
            last = chain[-1]
            cursor = last[1] if len(chain) == _WALK else None
        result: dict[str, DeltaChannelHistory] = {}
        for ch in wanted:
            entry: DeltaChannelHistory = {
                "writes": [w for group in reversed(collected[ch]) for w in group]
            }
            if ch in seeds:
                entry["seed"] = seeds[ch]
            result[ch] = entry
        return result

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Zero-padded so string order is numeric order; a random tail keeps forks apart
        (shorter than the reference savers' 49 characters: versions are repeated in every
        checkpoint's ``channel_versions`` and ``versions_seen``)."""
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
