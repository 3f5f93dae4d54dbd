"""The delta-channel walk: the writes and the seed of ``DeltaChannel`` channels along a
checkpoint's parent chain, read ``_WALK`` ancestors per transaction (a recursive query), not
one ``get_tuple`` per ancestor."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from convostore.spi import Backend, Tx
from langgraph.checkpoint.base import DeltaChannelHistory, PendingWrite, writes_sort_key

from . import _schema as sql
from ._blobs import _BlobKey, _BlobRow
from ._codec import _IN_ROW_KEY, Codec
from ._serde import TypeNotAllowedError, loads

_WALK = 64

_Chain = tuple[
    list[tuple[str, str | None, str, bytes]],
    list[dict[str, Any]],
    dict[_BlobKey, _BlobRow],
    dict[sql.CheckpointKey, list[sql.WriteRow]],
]


def _ancestors(
    tx: Tx,
    codec: Codec,
    dialect: str,
    *,
    thread_id: str,
    ns: str,
    first: str,
    channels: set[str],
) -> _Chain:
    """Up to ``_WALK`` checkpoints up the parent chain from ``first``, decoded, with the blobs
    and writes of ``channels`` there: three statements."""
    chain = sql.ancestors(tx, dialect, thread_id, ns, first=first, count=_WALK)
    decoded = []
    for r in chain:
        try:
            decoded.append(codec.decode(r[2], r[3]))
        except TypeNotAllowedError as exc:
            raise exc.at(thread_id, ns, r[0]) from None
    keys: set[_BlobKey] = set()
    for ckpt in decoded:
        in_row = ckpt.get(_IN_ROW_KEY, {})
        for ch in channels:
            ver = ckpt.get("channel_versions", {}).get(ch)
            if ver is not None and ch not in in_row:
                keys.add((thread_id, ns, ch, str(ver)))
    blobs = sql.fetch_blobs(tx, dialect, keys) if keys else {}
    writes = sql.fetch_writes(tx, [(thread_id, ns, r[0]) for r in chain], channels=sorted(channels))
    return chain, decoded, blobs, writes


def delta_channel_history(
    backend: Backend,
    codec: Codec,
    *,
    thread_id: str,
    ns: str,
    target: str | None,
    channels: Sequence[str],
) -> dict[str, DeltaChannelHistory]:
    """For each of ``channels``: the writes since its nearest ancestor of ``target`` (the
    namespace's latest checkpoint without one) that holds a value for it, oldest first, and
    that value as the seed (none if no ancestor holds one)."""
    wanted = list(dict.fromkeys(channels))
    collected: dict[str, list[list[PendingWrite]]] = {c: [] for c in wanted}
    seeds: dict[str, Any] = {}
    remaining = set(wanted)
    cursor = backend.read(lambda tx: sql.parent_of(tx, thread_id, ns, target))
    while cursor is not None and remaining:
        walk = functools.partial(
            _ancestors,
            codec=codec,
            dialect=backend.dialect,
            thread_id=thread_id,
            ns=ns,
            first=cursor,
            channels=remaining,
        )
        chain, decoded, blobs, writes = backend.read(walk)
        if not chain:
            break
        memo: dict[_BlobKey, Any] = {}
        try:
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
                    ended[ch] = codec.value(key, blobs, memo)
                mine = sorted(
                    writes.get((thread_id, ns, row[0]), []),
                    key=lambda w: writes_sort_key(w[4], w[0], w[5]),
                )
                for ch in remaining:
                    found = [
                        (w[0], w[1], loads(codec.serde, w[2], w[3], ch)) for w in mine if w[1] == ch
                    ]
                    collected[ch].append(found)
                for ch, value in ended.items():
                    seeds[ch] = value
                    remaining.discard(ch)
        except TypeNotAllowedError as exc:
            raise exc.at(thread_id, ns, row[0]) from None
        cursor = chain[-1][1] if len(chain) == _WALK else None
    result: dict[str, DeltaChannelHistory] = {}
    for ch in wanted:
        entry: DeltaChannelHistory = {
            "writes": [w for group in reversed(collected[ch]) for w in group]
        }
        if ch in seeds:
            entry["seed"] = seeds[ch]
        result[ch] = entry
    return result
