"""The saver's storage model, without a database: how a checkpoint and its channel values
become rows and back (msgpack skeletons, small values kept in the checkpoint row, deltas of
growing lists, snapshots). Pure functions and data (``Codec`` holds the saver's serde and head
cache); the head cache is ``_heads``, the copies and comparisons it keeps ``_copies``, the
checks on ids and metadata ``_checks``; the SQL is in ``_schema``, the LangGraph protocol in
``saver``.

Invariant: a saver that has no head for a channel decides "in the row or a blob row" as the
writer did (``Codec.unchanged`` applies ``Codec.blob_for``'s size rule), so any process can
add a checkpoint to a thread another process wrote.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ormsgpack
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointTuple,
    PendingWrite,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ._blobs import _Blob, _BlobKey, _BlobRow

# F401: some names are not used here; first defined in this module, they stay importable from it
from ._checks import (  # noqa: F401
    CHECKPOINT_NS_MAX_BYTES,
    THREAD_ID_MAX_BYTES,
    _key,
    _load_metadata,
    _metadata_matches,
    _metadata_text,
    _namespace,
    _serializing,
    _thread_id,
)
from ._copies import (  # noqa: F401
    _SOLE,
    _common_prefix,
    _exclusive,
    _private_copies,
    _private_copy,
    _same,
    _states,
)
from ._heads import _EMPTY, _NOVALUE, _hand_out, _Head, _Heads
from ._serde import TypeNotAllowedError, loads

_PLAIN = (type(None), bool, int, float)
_IN_ROW_MAX = 256  # bytes: a serialized value up to this size lives in the checkpoint row
_SIZED = (str, bytes, bytearray, list, tuple, dict, set, frozenset)
_COMPRESS_MIN = 512  # bytes: a larger checkpoint row is compressed (zlib halves it)
_WINDOW_BITS = 10  # zlib.decompress reads it with its default window
_CACHE_MAX = 1 << 20
_IN_ROW_KEY = "__convostore_inline__"  # values kept in the row (stored name kept); decoded: all
_TYPED_KEY = "__convostore_typed__"  # serialized small values: {channel: [type, bytes]}
# msgpack for the skeleton: anything but plain data (datetimes, subclasses...) goes to the serde
_PACK_OPTS = (
    ormsgpack.OPT_PASSTHROUGH_BIG_INT
    | ormsgpack.OPT_PASSTHROUGH_DATACLASS
    | ormsgpack.OPT_PASSTHROUGH_DATETIME
    | ormsgpack.OPT_PASSTHROUGH_ENUM
    | ormsgpack.OPT_PASSTHROUGH_SUBCLASS
    | ormsgpack.OPT_PASSTHROUGH_UUID
)
_BIG_INT = 1  # msgpack extension type: an int beyond 64 bits, as its decimal text


def _pack_default(value: Any) -> Any:
    if type(value) is int:
        return ormsgpack.Ext(_BIG_INT, str(value).encode())
    raise TypeError(f"not plain data: {type(value).__name__}")


def _unpack_ext(code: int, data: bytes) -> Any:
    if code == _BIG_INT:
        return int(data)
    raise ValueError(f"unknown msgpack extension {code}")


# -- checkpoints and channel values as rows -------------------------------------------------


def encode_checkpoint(
    serde: SerializerProtocol,
    checkpoint: Checkpoint,
    plain: dict[str, Any],
    typed: dict[str, tuple[str, bytes]],
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
        return serde.dumps_typed(skeleton)
    if len(packed) > _COMPRESS_MIN:
        return "skeleton+zlib", _compress(packed)
    return "skeleton", packed


def _compress(data: bytes) -> bytes:
    """A zlib stream with a 1 KB window and little memory: a skeleton is a few hundred
    bytes, which compress as well as with the defaults, and setting up the default
    compressor (256 KB of state) costs six times the compression itself."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, _WINDOW_BITS, 2)
    return compressor.compress(data) + compressor.flush()


def decode_checkpoint(
    serde: SerializerProtocol, ctype: str, data: bytes, *, values: bool = True
) -> dict[str, Any]:
    """The stored skeleton, every value kept in the row under ``_IN_ROW_KEY`` (without
    ``values``, only the plain ones: the typed ones are not deserialized)."""
    if ctype == "skeleton":
        loaded: dict[str, Any] = ormsgpack.unpackb(data, ext_hook=_unpack_ext)
    elif ctype == "skeleton+zlib":
        loaded = ormsgpack.unpackb(zlib.decompress(data), ext_hook=_unpack_ext)
    elif ctype == "json+zlib":  # the format before msgpack
        loaded = json.loads(zlib.decompress(data))
    elif ctype == "json":
        loaded = json.loads(data)
    else:
        loaded = loads(serde, ctype, bytes(data))
    typed = loaded.pop(_TYPED_KEY, None)
    if typed and values:
        in_row = loaded.setdefault(_IN_ROW_KEY, {})
        for ch, (type_, blob) in typed.items():
            in_row[ch] = loads(serde, type_, blob, ch)
    return loaded


def unneeded_blobs(
    thread_id: str,
    checkpoints: Iterable[tuple[str, Mapping[str, Any]]],
    bases: Mapping[tuple[str, str, str], str | None],
) -> list[_BlobKey]:
    """The thread's blob rows that no checkpoint needs: ``checkpoints`` are (ns, decoded
    checkpoint), ``bases`` {(ns, channel, version): the version it is a delta of}. A version
    a checkpoint names is needed, and so is every base a needed delta rests on."""
    needed: set[tuple[str, str, str]] = set()
    for ns, ckpt in checkpoints:
        for ch, ver in ckpt.get("channel_versions", {}).items():
            needed.add((ns, ch, str(ver)))
    stack = list(needed)
    while stack:
        ns, ch, ver = stack.pop()
        base = bases.get((ns, ch, ver))
        if base is not None and (ns, ch, base) not in needed:
            needed.add((ns, ch, base))
            stack.append((ns, ch, base))
    return [(thread_id, *k) for k in bases if k not in needed]


@dataclass(slots=True)
class ChannelRows:
    """How a checkpoint's channel values are stored: ``plain`` and ``typed`` in its row,
    ``blobs`` as rows of their own, ``in_row`` the small ones (typed) to remember as such,
    ``empty`` the new versions without a value (channel, version): no row."""

    plain: dict[str, Any]
    typed: dict[str, tuple[str, bytes]]
    blobs: list[_Blob]
    in_row: list[_Blob]
    empty: list[tuple[str, str]]


Loaded = tuple[Sequence[Any], dict[str, Any], Mapping[_BlobKey, _BlobRow], Sequence[Any]]
"""A checkpoint row, its decoded skeleton, the blob rows read with it and its pending writes."""


@dataclass(slots=True, frozen=True)
class Codec:
    """The storage model of one saver: its serde, its head cache and its delta depth. Built
    for each call (a copy of a saver may carry another serde; the heads are shared)."""

    serde: SerializerProtocol
    heads: _Heads
    max_delta_depth: int

    def encode(
        self, checkpoint: Checkpoint, plain: dict[str, Any], typed: dict[str, tuple[str, bytes]]
    ) -> tuple[str, bytes]:
        return encode_checkpoint(self.serde, checkpoint, plain, typed)

    def decode(self, ctype: str, data: bytes, *, values: bool = True) -> dict[str, Any]:
        return decode_checkpoint(self.serde, ctype, data, values=values)

    # -- writing ------------------------------------------------------------------------------

    def channel_rows(
        self,
        thread_id: str,
        ns: str,
        values: Mapping[str, Any],
        versions: ChannelVersions,
        new_versions: ChannelVersions,
    ) -> ChannelRows:
        """How each channel value is stored: plain or typed in the checkpoint row, or rows.
        An empty channel needs no row (a version without a blob reads as empty)."""
        rows = ChannelRows({}, {}, [], [], [])
        for ch, version in new_versions.items():
            if ch not in values:
                rows.empty.append((ch, str(version)))
        for ch, value in values.items():
            if type(value) in _PLAIN:
                rows.plain[ch] = value
                continue
            if ch in new_versions:
                blob: _Blob | None = self.blob_for(thread_id, ns, ch, str(new_versions[ch]), value)
            elif ch in versions:
                blob = self.unchanged(thread_id, ns, ch, str(versions[ch]), value)
            else:
                continue
            if blob is not None and blob.in_row:
                rows.typed[ch] = (blob.type, blob.data or b"")
                rows.in_row.append(blob)
            elif blob is not None:
                _key("channel", ch)  # both are in the blob row's key
                _key(f"version of channel {ch!r}", blob.version)
                rows.blobs.append(blob)
        return rows

    def blob_for(self, thread_id: str, ns: str, channel: str, version: str, value: Any) -> _Blob:
        """How a new version is stored: in the checkpoint row if small, else a delta of the
        channel's last known list, or whole. Small means at most ``_IN_ROW_MAX`` bytes
        serialized; a value longer than that, or a list that extends a list stored as a row,
        is taken as big without serializing it (so a growing list is never serialized whole)."""
        head = None
        keep = 0
        if type(value) is list and value:
            head = self.heads.get((thread_id, ns, channel))
            if head is not None and type(head.value) is list and head.version != version:
                # The head's items are the saver's own copies, which no caller holds: an item
                # the caller changed in place (get_state, edit, update_state) compares unequal
                # and is stored again from there on. Found also where the chain is too deep
                # for a delta: the snapshot's head reuses the copies, and the thread's
                # conversation receives only what changed.
                keep = _common_prefix(head.value, value, head.states)
        whole: tuple[str, bytes] | None = None
        extends = head is not None and 0 < keep == len(head.value)
        if not extends and not (type(value) in _SIZED and len(value) > _IN_ROW_MAX):
            whole = self.serde.dumps_typed(value)
            if len(whole[1]) <= _IN_ROW_MAX:
                return _Blob(channel, version, *whole, in_row=True)
        if keep and head is not None and head.depth < self.max_delta_depth:
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
                    equal=(head.version, keep),
                )
        type_, data = whole or self.serde.dumps_typed(value)
        equal = (head.version, keep) if keep and head is not None else None
        return _Blob(channel, version, type_, data, snap=len(data), value=value, equal=equal)

    def unchanged(
        self, thread_id: str, ns: str, channel: str, version: str, value: Any
    ) -> _Blob | None:
        """How an unchanged channel is stored: in the row again if its version was kept in the
        row (every checkpoint holding a small value holds it), else nothing (its blob exists).
        Known from the channel's head, or from the length of ``value`` (``blob_for``'s rule,
        so a saver without the head decides as the writer did); serialized only when neither
        tells. A value found big then is also offered as a row (``DO NOTHING`` if it
        is there), in case whoever wrote it kept in the row a form of it that serialized
        smaller."""
        head = self.heads.get((thread_id, ns, channel))
        if head is not None and head.version == version and head.value is not _EMPTY:
            if head.in_row is None:
                return None
            return _Blob(channel, version, *head.in_row, in_row=True)
        if type(value) in _SIZED and len(value) > _IN_ROW_MAX:
            return None
        type_, data = self.serde.dumps_typed(value)
        if len(data) <= _IN_ROW_MAX:
            return _Blob(channel, version, type_, data, in_row=True)
        return _Blob(channel, version, type_, data, snap=len(data), value=_NOVALUE)

    def snapshot(self, blob: _Blob) -> None:
        """Turn a delta whose base has gone (pruned by another process) into a whole row."""
        blob.type, data = self.serde.dumps_typed(blob.value)
        blob.data, blob.base, blob.keep = data, None, None
        blob.depth, blob.tail, blob.snap = 0, 0, len(data)

    def written(self, thread_id: str, ns: str, rows: ChannelRows) -> None:
        """Remember the versions a committed checkpoint stored as the channels' heads."""
        for b in rows.blobs:
            self._remember(
                (thread_id, ns, b.channel, b.version),
                b.value,
                depth=b.depth,
                tail=b.tail,
                snap=b.snap,
                size=len(b.data or b""),
                equal=b.equal,
            )
        for b in rows.in_row:
            self.heads.set(
                (thread_id, ns, b.channel),
                _Head(b.version, _NOVALUE, in_row=(b.type, b.data or b"")),
            )
        for channel, version in rows.empty:  # a later read needs no statement to learn it
            self.heads.set((thread_id, ns, channel), _Head(version, _EMPTY))

    def _remember(
        self,
        key: _BlobKey,
        value: Any,
        *,
        depth: int,
        tail: int,
        snap: int,
        size: int,
        equal: tuple[str, int] | None = None,
    ) -> None:
        """Record the version as the channel's head, keeping lists (the base of the next delta)
        and immutable text or bytes up to ``_CACHE_MAX`` bytes; never other objects
        (``_NOVALUE`` then: the head only says the version is a row).

        A list kept is the saver's own: ``value`` may be the caller's (``put``), so its items
        are copied, except the first ``n`` when ``equal = (version, n)`` names the previous
        head, whose own items they are (``blob_for`` found them equal). The caller's list
        is kept too, as ``shared``: the next read hands it on if by then nobody else holds it
        (``_hand_out``)."""
        if self.heads.size <= 0:
            return
        shared = states = None
        if type(value) is list:
            shared = list(value) if _SOLE is not None else None  # see _hand_out
            previous = self.heads.get((key[0], key[1], key[2])) if equal else None
            if equal and previous and previous.version == equal[0] and type(previous.value) is list:
                keep = equal[1]
                copies = _private_copies(value[keep:])
                value = [*previous.value[:keep], *copies]
                if previous.states is not None and (more := _states(copies)) is not None:
                    states = [*previous.states[:keep], *more]
            else:
                value = _private_copies(value)
            states = _states(value) if states is None else states
        elif type(value) not in (str, bytes) or size > _CACHE_MAX:
            value = _NOVALUE
        head = _Head(key[3], value, depth, tail, snap, shared=shared, states=states)
        self.heads.set((key[0], key[1], key[2]), head)

    # -- reading ------------------------------------------------------------------------------

    def blob_keys(
        self, rows: Sequence[Sequence[Any]], memo: dict[_BlobKey, Any]
    ) -> tuple[list[dict[str, Any]], set[_BlobKey]]:
        """The decoded skeletons of checkpoint ``rows`` and the blob rows still to read for
        them. A list this process wrote or read last is taken from memory (into ``memo``)
        instead of being read and decoded."""
        decoded: list[dict[str, Any]] = []
        keys: set[_BlobKey] = set()
        for r in rows:
            try:
                ckpt = self.decode(r[4], bytes(r[5]))
            except TypeNotAllowedError as exc:
                raise exc.at(r[0], r[1], r[2]) from None
            decoded.append(ckpt)
            in_row = ckpt.get(_IN_ROW_KEY, {})
            for ch, ver in ckpt.get("channel_versions", {}).items():
                key = (r[0], r[1], ch, str(ver))
                if ch in in_row or key in memo or key in keys:
                    continue
                head = self.heads.get((r[0], r[1], ch))
                if head is not None and head.version == key[3] and head.value is _EMPTY:
                    continue  # no row, no value
                if head is not None and head.version == key[3] and head.value is not _NOVALUE:
                    memo[key] = head.value
                else:
                    keys.add(key)
        return decoded, keys

    def value(
        self, key: _BlobKey, blobs: Mapping[_BlobKey, _BlobRow], memo: dict[_BlobKey, Any]
    ) -> Any:
        """The value of a (channel, version): its delta chain applied, down to a snapshot or a
        value in ``memo`` (which then holds every version on the way)."""
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
            loaded = loads(self.serde, row.type, row.data or b"", key[2])
            if row.base is not None:
                loaded = [*value[: row.keep], *loaded]
            memo[k] = value = loaded
        return value

    def pending(self, writes: Sequence[Sequence[Any]]) -> list[PendingWrite]:
        """Stored pending writes (task_id, channel, type, data, task_path, idx), in LangGraph's
        order."""
        if len(writes) > 1:
            writes = sorted(writes, key=lambda w: writes_sort_key(w[4], w[0], w[5]))
        serde = self.serde
        return [(w[0], w[1], loads(serde, w[2], w[3], w[1])) for w in writes]

    def build(
        self, loaded: Loaded, memo: dict[_BlobKey, Any], *, remember: bool = False
    ) -> CheckpointTuple:
        """The ``CheckpointTuple`` of a loaded row; with ``remember``, the versions read become
        the channels' heads. A stored value the serde refuses is ``TypeNotAllowedError``."""
        try:
            return self._build(loaded, memo, remember)
        except TypeNotAllowedError as exc:
            row = loaded[0]
            raise exc.at(row[0], row[1], row[2]) from None

    def _build(self, loaded: Loaded, memo: dict[_BlobKey, Any], remember: bool) -> CheckpointTuple:
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
                if remember and key not in memo:  # no row: the channel is empty there
                    self.heads.set((thread_id, ns, ch), _Head(key[3], _EMPTY))
                if key in memo:  # the cached head
                    head = self.heads.get((thread_id, ns, ch))
                    own = memo[key]
                    if head is not None and head.value is own and type(own) is list:
                        values[ch] = _hand_out(self.heads, head)
                    else:
                        values[ch] = _private_copy(own)
                continue
            if blob.type == "empty":
                continue
            value = self.value(key, blobs, memo)
            if not remember:
                values[ch] = _private_copy(value)
                continue
            size = len(blob.data or b"")
            kept: Any = _NOVALUE
            states = None
            if type(value) is list:
                kept, states = value, _states(value)
                values[ch] = _private_copies(value)
            else:
                values[ch] = _private_copy(value)
                if type(value) in (str, bytes) and size <= _CACHE_MAX:
                    kept = value
            self.heads.set(
                (thread_id, ns, ch),
                _Head(key[3], kept, blob.depth, blob.tail, blob.snap, states=states),
            )
        ckpt["channel_values"] = values
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
            self.pending(writes),
        )
