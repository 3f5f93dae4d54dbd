"""The saver's storage model, without a database: how a checkpoint and its channel values
become rows and back (msgpack skeletons, small values kept in the checkpoint row, deltas of
growing lists, snapshots), the head cache and its copies, and the checks on ids and metadata.
Pure functions and data (``Codec`` holds the saver's serde and head cache); the SQL is in
``_schema``, the LangGraph protocol in ``saver``.

Invariant: a saver that has no head for a channel decides "in the row or a blob row" as the
writer did (``Codec.unchanged`` applies ``Codec.blob_for``'s size rule), so any process can
add a checkpoint to a thread another process wrote.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import json
import operator
import pickle
import sys
import threading
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import ormsgpack
from convostore import MemoryValidationError
from convostore.spi import Limits, check_id
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointTuple,
    PendingWrite,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from pydantic import BaseModel

_NOVALUE: Any = object()  # a head whose value is not kept in memory
_BlobKey = tuple[str, str, str, str]  # thread_id, ns, channel, version
_PLAIN = (type(None), bool, int, float)
_IN_ROW_MAX = 256  # bytes: a serialized value up to this size lives in the checkpoint row
_SIZED = (str, bytes, bytearray, list, tuple, dict, set, frozenset)
_COMPRESS_MIN = 512  # bytes: a larger checkpoint row is compressed (zlib halves it)
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


@dataclass(slots=True)
class _Head:
    """The last version of a channel this process wrote or read, with its value: a list (the
    base of the next delta), an immutable ``str`` / ``bytes`` or ``_NOVALUE``. ``in_row`` is
    the serialized value when it lives in checkpoint rows (it then has no blob row).

    A list ``value`` is the saver's own: its items are never handed to a caller, who gets
    fresh copies of them instead (``_private_copy``), or the items of ``shared`` (the list the
    last ``put`` stored, the caller's objects) when they still equal the saver's and nobody
    else holds them any more (see ``_exclusive``)."""

    version: str
    value: Any
    depth: int = 0
    tail: int = 0
    snap: int = 0
    in_row: tuple[str, bytes] | None = None
    shared: list[Any] | None = None
    states: _States | None = None  # _states(value), for _common_prefix


class _Heads:
    """A bounded LRU of ``_Head`` by (thread_id, ns, channel), shared by copies of a saver."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._data: OrderedDict[tuple[str, str, str], _Head] = OrderedDict()

    def get(self, key: tuple[str, str, str]) -> _Head | None:
        with self._lock:
            head = self._data.get(key)
            if head is not None:
                self._data.move_to_end(key)
            return head

    def set(self, key: tuple[str, str, str], head: _Head) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._data[key] = head
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def take_shared(self, head: _Head) -> list[Any] | None:
        """The head's ``shared`` list, to one reader only."""
        with self._lock:
            shared, head.shared = head.shared, None
        return shared

    def drop(self, thread_ids: Sequence[str] | None = None) -> None:
        with self._lock:
            if thread_ids is None:
                self._data.clear()
                return
            gone = set(thread_ids)
            for key in [k for k in self._data if k[0] in gone]:
                del self._data[key]


@dataclass(slots=True)
class _BlobRow:
    type: str
    data: bytes | None
    base: str | None
    keep: int | None
    depth: int
    tail: int
    snap: int


@dataclass(slots=True)
class _Blob:
    """A blob row about to be written, or (``in_row``) a small value for the checkpoint row."""

    channel: str
    version: str
    type: str
    data: bytes | None
    base: str | None = None
    keep: int | None = None
    depth: int = 0
    tail: int = 0
    snap: int = 0
    value: Any = None  # the full list, to fall back to a snapshot if the base has gone
    in_row: bool = False
    # (version, n): the first n items equal the saver's own copies of that version, which
    # the head of this one reuses (also when the row is a snapshot)
    equal: tuple[str, int] | None = None


def _same(mine: Any, theirs: Any) -> bool:
    """Whether two items hold the same content: ``==``, and for pydantic models (LangChain's
    messages) a comparison of their fields, twice as fast as the model's own ``__eq__``. An
    ``==`` that fails (a numpy array's) counts as a difference: the item is stored again."""
    if mine is theirs:
        return True
    if type(mine) is not type(theirs):
        return False
    try:
        if isinstance(mine, BaseModel):
            return bool(
                mine.__dict__ == theirs.__dict__
                and mine.__pydantic_extra__ == theirs.__pydantic_extra__
                and mine.__pydantic_private__ == theirs.__pydantic_private__
            )
        return bool(mine == theirs)
    except Exception:
        return False


_STATE = operator.attrgetter("__class__", "__dict__", "__pydantic_extra__", "__pydantic_private__")
_States = list[tuple[Any, ...]]


@cache
def _is_model(cls: type) -> bool:
    return issubclass(cls, BaseModel)


def _states(items: list[Any]) -> _States | None:
    """What ``_same`` compares of each item, if all are pydantic models (LangChain's
    messages): class, fields, extra and private attributes; else ``None``."""
    if not all(map(_is_model, set(map(type, items)))):
        return None
    return list(map(_STATE, items))


def _common_prefix(mine: list[Any], theirs: list[Any], states: _States | None = None) -> int:
    """How many leading items of ``theirs`` are ``_same`` as ``mine``'s. For a list of
    pydantic models (``states``: their ``_states``, kept with them) it is found with list
    comparisons in C, twice as fast as a call per item; otherwise item by item."""
    n = min(len(mine), len(theirs))
    a = mine if n == len(mine) else mine[:n]
    b = theirs if n == len(theirs) else theirs[:n]
    try:
        mine_states = _states(a) if states is None else states[:n] if n < len(states) else states
        if mine_states is not None:
            theirs_states = list(map(_STATE, b))
            if mine_states == theirs_states:
                return n
            return list(map(operator.eq, mine_states, theirs_states)).index(False)
    except Exception:  # not models, or an == that fails: item by item
        pass
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if not _same(x, y):
            return i
    return n


def _private_copy(value: Any) -> Any:
    """A deep copy of ``value`` that shares no mutable object with it, and shares its
    immutable leaves (text, numbers): lists, dicts with such keys, sets of such items and
    plain pydantic models (LangChain's messages) are copied a field at a time (faster than
    pickle, and the shared leaves make the next comparison with the original a pointer
    comparison); anything else by a pickle round trip, or ``deepcopy`` for what pickle cannot
    take."""
    if type(value) in _ATOMIC:
        return value
    try:
        return _copy(value)
    except RecursionError:  # deeper than this recursion goes: pickle's goes further
        return _pickle_copy(value)


def _private_copies(items: list[Any]) -> list[Any]:
    """``_private_copy`` of each item."""
    try:
        return [x if type(x) in _ATOMIC else _copy(x) for x in items]
    except RecursionError:
        return [_private_copy(x) for x in items]


_new = object.__new__
_set_slot = object.__setattr__


def _copy(value: Any) -> Any:
    kind: type = type(value)
    if kind in _ATOMIC:
        return value
    if kind is list:
        return [x if type(x) in _ATOMIC else _copy(x) for x in value]
    if kind is dict:
        return _copy_dict(value)
    if kind is set and _ATOMIC.issuperset(map(type, value)):
        return set(value)
    if kind not in _CONTAINERS and _plain_model(kind) and value.__pydantic_private__ is None:
        # as pydantic's own __deepcopy__ does it (private attributes: pickle, which knows them)
        out: Any = _new(kind)
        _set_slot(out, "__dict__", _copy_dict(value.__dict__))
        _set_slot(out, "__pydantic_fields_set__", set(value.__pydantic_fields_set__))
        extra = value.__pydantic_extra__
        _set_slot(out, "__pydantic_extra__", None if extra is None else _copy_dict(extra))
        _set_slot(out, "__pydantic_private__", None)
        return out
    return _pickle_copy(value)


def _copy_dict(value: dict[Any, Any]) -> dict[Any, Any]:
    if not _ATOMIC.issuperset(map(type, value)):  # a key that may be mutable
        out: dict[Any, Any] = _pickle_copy(value)
        return out
    return {k: x if type(x) in _ATOMIC else _copy(x) for k, x in value.items()}


def _pickle_copy(value: Any) -> Any:
    """A pickle round trip (3 to 4 times faster than ``copy.deepcopy`` on LangChain
    messages), or ``deepcopy`` for what pickle cannot take."""
    try:
        return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
    except Exception:
        return copy.deepcopy(value)


_ATOMIC = frozenset({str, bytes, int, float, bool, type(None)})


# -- handing on what only the saver holds ----------------------------------------------------

_getrefcount = getattr(sys, "getrefcount", None)
_MODEL_SLOTS = {
    "__dict__",
    "__weakref__",
    "__pydantic_fields_set__",
    "__pydantic_extra__",
    "__pydantic_private__",
}


_CONTAINERS = frozenset({list, dict, set})


@cache
def _plain_model(cls: type) -> bool:
    """A list, dict or set, or a pydantic model whose whole state is its ``__dict__`` and
    pydantic's own slots."""
    if cls in _CONTAINERS:
        return True
    if not issubclass(cls, BaseModel):
        return False
    for klass in cls.__mro__:
        slots = vars(klass).get("__slots__", ())
        if not set((slots,) if isinstance(slots, str) else slots) <= _MODEL_SLOTS:
            return False
    return True


def _exclusive(roots: list[Any], sole: int | None = None) -> bool:
    """Whether ``roots`` is the only holder of its items, and each mutable object inside them
    is held by its one container only: then nobody else can reach them, let alone change
    them, and they may be handed to a reader as they are. Reference counts tell (``sole``:
    the count this function sees for an object held once, ``_SOLE``); a weak reference, an
    object held twice or of a kind not known here (not a list, dict, set or plain pydantic
    model, with immutable leaves) means no. Walked a level at a time, mostly in C."""
    sole = _SOLE if sole is None else sole
    if sole is None or _getrefcount is None:
        return False
    level = list(roots)
    while level:
        if max(map(_getrefcount, level)) > sole:
            return False
        kinds = set(map(type, level))
        if not all(map(_plain_model, kinds)):
            return False
        # lists, dicts and sets take no weak references
        if not kinds <= _CONTAINERS and any(map(weakref.getweakrefcount, level)):
            return False
        skip = _ATOMIC.union(map(type, kinds))  # leaves, and the classes (of these metaclasses)
        level = [o for o in gc.get_referents(*level) if type(o) not in skip]
    return True


class _Probe(BaseModel):
    calls: list[dict[str, list[int]]]


def _calibrate() -> int | None:
    """``_SOLE``, found on probes: a fresh one passes ``_exclusive``, and one more reference
    to any object in it (or a weak reference) fails it. ``None`` (reads always copy) where
    reference counts do not tell that, as on PyPy."""
    if _getrefcount is None:
        return None

    def probe() -> list[Any]:
        return [_Probe(calls=[{"a": [1]}])]

    def part(roots: list[Any], index: int) -> Any:
        m = roots[0]
        return [m, m.__dict__, m.__pydantic_fields_set__, m.calls, m.calls[0], m.calls[0]["a"]][
            index
        ]

    for sole in range(1, 8):
        if not _exclusive(probe(), sole):
            continue
        failed = True
        for index in range(6):
            roots = probe()
            held = part(roots, index)
            failed = failed and not _exclusive(roots, sole)
            del held
        roots = probe()
        ref = weakref.ref(roots[0])
        failed = failed and not _exclusive(roots, sole)
        del ref
        return sole if failed else None
    return None


_SOLE = _calibrate()


def _hand_out(heads: _Heads, head: _Head) -> list[Any]:
    """What a read gives the caller for the head's list: the list the last ``put`` stored if
    it still equals the saver's own and only the saver holds it and its items (no copy: a
    graph's next invoke after the last one's result was dropped), else fresh copies."""
    box = [heads.take_shared(head)]  # the list's one holder, so that it is checked too
    own = head.value
    if (
        box[0] is not None
        and len(box[0]) == len(own)
        and _exclusive(box)
        and _common_prefix(own, box[0], head.states) == len(own)
    ):
        return box[0]
    return _private_copies(own)


THREAD_ID_MAX_BYTES = 256
"""thread_id, checkpoint_id, task_id, run_id, channel names and versions: at most this many
UTF-8 bytes (the core's id limit)."""
CHECKPOINT_NS_MAX_BYTES = 1536
"""checkpoint_ns (it grows with subgraph nesting): at most this many UTF-8 bytes, so that the
widest key, (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) or (thread_id,
checkpoint_ns, channel, version), fits a PostgreSQL index row (2,704 bytes) with every part
at its limit."""
_ID_LIMITS = Limits(max_id_bytes=THREAD_ID_MAX_BYTES)
_NS_LIMITS = Limits(max_id_bytes=CHECKPOINT_NS_MAX_BYTES)


def _thread_id(value: object, name: str = "thread_id") -> str:
    """A thread id as LangGraph gives it (a str, or an int or UUID it turns into one),
    refused before the database when NUL, a lone surrogate or past the limit: the same
    ``MemoryValidationError`` on SQLite and PostgreSQL."""
    if value is None:
        raise MemoryValidationError(f"{name} is required", argument=name)
    return check_id(name, value if isinstance(value, str) else str(value), _ID_LIMITS)


def _namespace(value: object) -> str:
    if value is None or value == "":
        return ""
    return check_id("checkpoint_ns", value, _NS_LIMITS)


def _checkpoint_id(value: object, name: str = "checkpoint_id") -> str | None:
    return None if value is None or value == "" else check_id(name, value, _ID_LIMITS)


def _key(name: str, value: object) -> str:
    """A task id, run id, channel name or version: the id rules."""
    return check_id(name, value, _ID_LIMITS)


@contextlib.contextmanager
def _serializing(argument: str) -> Iterator[None]:
    """Serializer failures that mean bad input, as the documented ``MemoryValidationError``
    before anything is written: a value nested deeper than Python recurses (ormsgpack reports
    its own depth limit as a ``TypeError``), a lone surrogate where msgpack needs UTF-8 (a
    channel name, a dict key)."""
    try:
        yield
    except (RecursionError, TypeError, UnicodeEncodeError) as exc:
        text = str(exc)
        if isinstance(exc, RecursionError) or "Recursion limit" in text:
            problem = "nested too deeply to serialize"
        elif "surrogates" in text:
            problem = "a lone surrogate where the serializer needs valid UTF-8"
        else:
            raise
        raise MemoryValidationError(f"{argument}: {problem}", argument=argument) from None


def _metadata_text(metadata: Mapping[str, Any]) -> str:
    """The metadata as stored: JSON text, with lone surrogates as ``\\udXXX`` escapes (the
    databases store UTF-8, which cannot hold them); nothing else escaped."""
    text = _dump_metadata(metadata)
    try:
        text.encode()
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode()
    return text


def _metadata_filter(filter: Mapping[str, Any]) -> dict[str, Any]:
    """A ``list`` filter as the metadata it is compared with was stored: through JSON (tuples
    are lists, other objects text). Keys must be text."""
    for key in filter:
        if not isinstance(key, str):
            raise TypeError(f"filter: metadata keys must be strings, got {key!r}")
    with _serializing("filter"):
        return {k: json.loads(json.dumps(v, default=_json_default)) for k, v in filter.items()}


def _metadata_matches(metadata: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """``InMemorySaver``'s filter: every key equal (a ``None`` value matches a missing key)."""
    return all(metadata.get(k) == v for k, v in wanted.items())


def _pack_default(value: Any) -> Any:
    if type(value) is int:
        return ormsgpack.Ext(_BIG_INT, str(value).encode())
    raise TypeError(f"not plain data: {type(value).__name__}")


def _unpack_ext(code: int, data: bytes) -> Any:
    if code == _BIG_INT:
        return int(data)
    raise ValueError(f"unknown msgpack extension {code}")


def _json_default(value: Any) -> Any:
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    return str(value)


_dump_metadata = json.JSONEncoder(ensure_ascii=False, default=_json_default).encode
_JSON_DECODER = json.JSONDecoder()


def _load_metadata(text: str) -> Any:
    """``json.loads`` without its whitespace checks (the text is ``_dump_metadata``'s)."""
    return _JSON_DECODER.raw_decode(text)[0]


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
        return "skeleton+zlib", zlib.compress(packed)
    return "skeleton", packed


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
        loaded = serde.loads_typed((ctype, bytes(data)))
    typed = loaded.pop(_TYPED_KEY, None)
    if typed and values:
        in_row = loaded.setdefault(_IN_ROW_KEY, {})
        for ch, (type_, blob) in typed.items():
            in_row[ch] = serde.loads_typed((type_, blob))
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
    ``blobs`` as rows of their own, ``in_row`` the small ones (typed) to remember as such."""

    plain: dict[str, Any]
    typed: dict[str, tuple[str, bytes]]
    blobs: list[_Blob]
    in_row: list[_Blob]


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
        rows = ChannelRows({}, {}, [], [])
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
            ckpt = self.decode(r[4], bytes(r[5]))
            decoded.append(ckpt)
            in_row = ckpt.get(_IN_ROW_KEY, {})
            for ch, ver in ckpt.get("channel_versions", {}).items():
                key = (r[0], r[1], ch, str(ver))
                if ch in in_row or key in memo or key in keys:
                    continue
                head = self.heads.get((r[0], r[1], ch))
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
            loaded = self.serde.loads_typed((row.type, row.data or b""))
            if row.base is not None:
                loaded = [*value[: row.keep], *loaded]
            memo[k] = value = loaded
        return value

    def pending(self, writes: Sequence[Sequence[Any]]) -> list[PendingWrite]:
        """Stored pending writes (task_id, channel, type, data, task_path, idx), in LangGraph's
        order."""
        if len(writes) > 1:
            writes = sorted(writes, key=lambda w: writes_sort_key(w[4], w[0], w[5]))
        loads = self.serde.loads_typed
        return [(w[0], w[1], loads((w[2], w[3]))) for w in writes]

    def build(
        self, loaded: Loaded, memo: dict[_BlobKey, Any], *, remember: bool = False
    ) -> CheckpointTuple:
        """The ``CheckpointTuple`` of a loaded row; with ``remember``, the versions read become
        the channels' heads."""
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
