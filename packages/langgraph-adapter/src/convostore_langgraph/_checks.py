"""The saver's checks on what LangGraph gives it (thread ids, namespaces, checkpoint and task
ids, channel names, serializer failures that mean bad input, ``list`` filters) and its
metadata as stored JSON text: the same ``MemoryValidationError`` on SQLite and PostgreSQL,
raised before anything is written.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from convostore import MemoryValidationError
from convostore.spi import Limits, check_id

from ._filters import check_filter_key, field

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
    are lists, other objects text). Keys follow the store's rule (``_filters``)."""
    for key in filter:
        check_filter_key(key)
    with _serializing("filter"):
        return {k: json.loads(json.dumps(v, default=_json_default)) for k, v in filter.items()}


def _metadata_matches(metadata: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """``InMemorySaver``'s filter, every value equal (a ``None`` value matches a missing key),
    with the store's keys: a dotted key is the field of that name, else a path (``_filters``)."""
    return all(field(metadata, k) == v for k, v in wanted.items())


def _json_default(value: Any) -> Any:
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    return str(value)


_dump_metadata = json.JSONEncoder(ensure_ascii=False, default=_json_default).encode
_JSON_DECODER = json.JSONDecoder()


def _load_metadata(text: str) -> Any:
    """``json.loads`` without its whitespace checks (the text is ``_dump_metadata``'s)."""
    return _JSON_DECODER.raw_decode(text)[0]
