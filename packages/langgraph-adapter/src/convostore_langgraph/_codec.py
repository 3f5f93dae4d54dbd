"""The saver's storage model, without a database: how channel values are encoded (msgpack
skeletons, small values kept in the checkpoint row, deltas of growing lists), the head cache
and its copies, and the checks on ids and metadata. Pure functions and data; the SQL is in
``_schema`` and ``saver``, the LangGraph protocol in ``saver``."""

from __future__ import annotations

import contextlib
import copy
import json
import pickle
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ormsgpack
from convostore import MemoryValidationError
from convostore.spi import Limits, check_id
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

    A list ``value`` is the saver's own: no caller ever holds its items. ``shared`` is the
    list whose items the caller last passed to ``put`` (or got from a read), which the next
    read may hand out again where they still equal the saver's own: no copy for what nobody
    changed, a copy of the saver's item for what somebody changed in place. It is handed out
    once; a second read before the next ``put`` gets copies."""

    version: str
    value: Any
    depth: int = 0
    tail: int = 0
    snap: int = 0
    in_row: tuple[str, bytes] | None = None
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
    messages) a comparison of their fields, twice as fast as the model's own ``__eq__``."""
    if mine is theirs:
        return True
    if type(mine) is not type(theirs):
        return False
    if isinstance(mine, BaseModel):
        return bool(
            mine.__dict__ == theirs.__dict__
            and mine.__pydantic_extra__ == theirs.__pydantic_extra__
            and mine.__pydantic_private__ == theirs.__pydantic_private__
        )
    return bool(mine == theirs)


def _private_copy(value: Any) -> Any:
    """A deep copy of ``value`` that shares no mutable object with it: a pickle round trip
    (3 to 4 times faster than ``copy.deepcopy`` on LangChain messages), or ``deepcopy`` for
    what pickle cannot take."""
    if type(value) in _ATOMIC:
        return value
    try:
        return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
    except Exception:
        return copy.deepcopy(value)


_ATOMIC = frozenset({str, bytes, int, float, bool, type(None)})


THREAD_ID_MAX_BYTES = 256
"""thread_id and checkpoint_id: at most this many UTF-8 bytes (the core's id limit)."""
CHECKPOINT_NS_MAX_BYTES = 2048
"""checkpoint_ns (it grows with subgraph nesting): at most this many UTF-8 bytes, so that
(thread_id, checkpoint_ns, checkpoint_id) fits a PostgreSQL index row."""
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


@contextlib.contextmanager
def _serializing(argument: str) -> Iterator[None]:
    """Serializer failures that mean bad input (a value nested deeper than Python recurses)
    as the documented ``MemoryValidationError``, before anything is written."""
    try:
        yield
    except (RecursionError, TypeError) as exc:
        # ormsgpack reports its own depth limit as a TypeError
        if isinstance(exc, TypeError) and "Recursion limit" not in str(exc):
            raise
        raise MemoryValidationError(
            f"{argument}: nested too deeply to serialize", argument=argument
        ) from None


def _metadata_text(metadata: Mapping[str, Any]) -> str:
    """The metadata as stored: JSON text, with lone surrogates escaped (the databases store
    UTF-8, which cannot hold them)."""
    text = _dump_metadata(metadata)
    try:
        text.encode()
    except UnicodeEncodeError:
        text = json.dumps(metadata, default=_json_default)
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
