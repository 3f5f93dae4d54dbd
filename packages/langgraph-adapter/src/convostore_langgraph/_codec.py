"""The saver's storage model, without a database: how channel values are encoded (msgpack
skeletons, small values kept in the checkpoint row, deltas of growing lists), the head cache
and its copies, and the checks on ids and metadata. Pure functions and data; the SQL is in
``_schema`` and ``saver``, the LangGraph protocol in ``saver``."""

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
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import ormsgpack
from convostore import MemoryValidationError
from convostore.spi import Limits, check_id
from pydantic import BaseModel

_NOVALUE: Any = object()  # a head whose value is not kept in memory
_Runs = tuple[tuple[int, bytes], ...]  # a list's items as consecutive pickled runs: (count, pickle)
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
    fresh objects loaded from ``runs`` (the same items, pickled) instead, or the items of
    ``shared`` (the list the last ``put`` stored, the caller's objects) when they still equal
    the saver's and nobody else holds them any more (see ``_exclusive``)."""

    version: str
    value: Any
    depth: int = 0
    tail: int = 0
    snap: int = 0
    in_row: tuple[str, bytes] | None = None
    runs: _Runs | None = None
    shared: list[Any] | None = None


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


_FIELDS = operator.attrgetter("__dict__")
_MODEL_REST = operator.attrgetter("__pydantic_extra__", "__pydantic_private__")


def _common_prefix(mine: list[Any], theirs: list[Any]) -> int:
    """How many leading items of ``theirs`` are ``_same`` as ``mine``'s. A list of pydantic
    models (LangChain's messages) that all are is found with list comparisons of their types
    and fields, twice as fast as a call per item; otherwise item by item."""
    n = min(len(mine), len(theirs))
    a, b = mine[:n], theirs[:n]
    types = list(map(type, a))
    try:
        if (
            types == list(map(type, b))
            and all(issubclass(t, BaseModel) for t in set(types))
            and list(map(_FIELDS, a)) == list(map(_FIELDS, b))
            and list(map(_MODEL_REST, a)) == list(map(_MODEL_REST, b))
        ):
            return n
    except Exception:
        pass
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if not _same(x, y):
            return i
    return n


def _private_copy(value: Any) -> Any:
    """A deep copy of ``value`` that shares no mutable object with it: a pickle round trip
    (3 to 4 times faster than ``copy.deepcopy`` on LangChain messages), or ``deepcopy`` for
    what pickle cannot take."""
    if type(value) in _ATOMIC:
        return value
    try:
        return pickle.loads(_dumps(value))
    except Exception:
        return copy.deepcopy(value)


def _dumps(value: Any) -> bytes:
    return pickle.dumps(value, pickle.HIGHEST_PROTOCOL)


def _runs_of(items: list[Any]) -> _Runs | None:
    """``items`` as one pickled run (``None`` if pickle cannot take them)."""
    try:
        return ((len(items), _dumps(items)),)
    except Exception:
        return None


def _thaw(items: list[Any], runs: _Runs | None) -> list[Any]:
    """Fresh objects equal to the saver's ``items``, loaded from their ``runs`` (half the cost
    of a copy: the pickling was done once, when the items were kept)."""
    if runs is None:
        return list(copy.deepcopy(items))
    out: list[Any] = []
    for _, data in runs:
        out += pickle.loads(data)
    return out


def _own(items: list[Any]) -> tuple[list[Any], _Runs | None]:
    """A private copy of a caller's ``items``, with its runs."""
    runs = _runs_of(items)
    return _thaw(items, runs), runs


def _own_extended(
    items: list[Any], runs: _Runs | None, keep: int, new: list[Any]
) -> tuple[list[Any], _Runs | None]:
    """The saver's ``items[:keep]`` followed by a private copy of the caller's ``new``, with
    their runs: the kept runs, one for ``new``, merged like a binary counter (the runs shrink
    from left to right), so a read loads at most log2(n) + 1 runs and each item is pickled
    O(log n) times in all."""
    tail, tail_runs = _own(new)
    out = [*items[:keep], *tail]
    if runs is None or tail_runs is None:
        return out, None
    kept: list[tuple[int, bytes]] = []
    start = 0
    for count, data in runs:
        if start + count > keep:
            break
        kept.append((count, data))
        start += count
    if start < keep:
        kept.append((keep - start, _dumps(items[start:keep])))
    if new:
        kept += tail_runs
    end = len(out)
    while len(kept) >= 2 and kept[-2][0] <= kept[-1][0]:
        count = kept[-2][0] + kept[-1][0]
        kept[-2:] = [(count, _dumps(out[end - count : end]))]
    return out, tuple(kept)


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
        if max(map(_getrefcount, level)) > sole or any(map(weakref.getweakrefcount, level)):
            return False
        kinds = set(map(type, level))
        if not all(map(_plain_model, kinds)):
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
    graph's next invoke after the last one's result was dropped), else fresh objects loaded
    from the runs."""
    box = [heads.take_shared(head)]  # the list's one holder, so that it is checked too
    own = head.value
    if (
        box[0] is not None
        and len(box[0]) == len(own)
        and _exclusive(box)
        and _common_prefix(own, box[0]) == len(own)
    ):
        return box[0]
    return _thaw(own, head.runs)


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
