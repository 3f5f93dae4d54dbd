"""Argument checks and JSON encoding, shared by the store and the adapters: every rule here runs
before anything is written."""

from __future__ import annotations

import json
import json.scanner
import math
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ContentTooLargeError, MemoryValidationError, OwnershipError
from .models import ROLES, Order, Role

MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    """The store's limits; the defaults are the reference's."""

    max_id_bytes: int = 256
    max_content_bytes: int = 50 * MB
    max_metadata_bytes: int = 50 * MB
    max_messages_per_conversation: int = 10_000
    max_page_size: int = 100
    max_memory_path_bytes: int = 1024
    max_memory_content_bytes: int = 10 * MB
    max_memory_entries_per_store: int = 100_000
    max_description_bytes: int = 4096


def check_text(name: str, value: object) -> str:
    """Text both databases store alike, of any length: a str without NUL (PostgreSQL's text
    refuses it) or lone surrogates (UTF-8 cannot hold one)."""
    return _text_and_size(name, value)[0]


def _text_and_size(name: str, value: object) -> tuple[str, int]:
    """``check_text``'s rule, and the value's size in UTF-8 bytes."""
    if not isinstance(value, str):
        raise MemoryValidationError(
            f"{name} must be a str, got {type(value).__name__}", argument=name
        )
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise MemoryValidationError(
            f"{name} is not valid UTF-8 (lone surrogate)", argument=name
        ) from None
    if "\x00" in value:
        raise MemoryValidationError(f"{name} must not contain NUL characters", argument=name)
    return value, size


def check_id(name: str, value: object, limits: Limits) -> str:
    """An id is a non-empty str of at most ``max_id_bytes`` UTF-8 bytes without NUL."""
    text, size = _text_and_size(name, value)
    if not 1 <= size <= limits.max_id_bytes:
        raise MemoryValidationError(
            f"{name} must be 1 to {limits.max_id_bytes} bytes of UTF-8, got {size} bytes",
            argument=name,
        )
    return text


def check_optional_id(name: str, value: object, limits: Limits) -> str | None:
    return None if value is None else check_id(name, value, limits)


def check_role(value: object, name: str = "role") -> Role:
    if value not in ROLES:
        raise MemoryValidationError(
            f"{name} must be one of {', '.join(ROLES)}; got {value!r}", argument=name
        )
    return value


MAX_INT64 = 2**63 - 1
"""The largest integer both databases store (a signed 64-bit column or parameter)."""


def check_int(name: str, value: object, *, minimum: int = 0, maximum: int = MAX_INT64) -> int:
    """An int (not a bool) between ``minimum`` and ``maximum`` inclusive."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise MemoryValidationError(
            f"{name} must be an int, got {type(value).__name__}", argument=name
        )
    if not minimum <= value <= maximum:
        raise MemoryValidationError(
            f"{name} must be between {minimum} and {maximum}, got {_short_int(value)}",
            argument=name,
        )
    return value


def check_optional_int(
    name: str, value: object, *, minimum: int = 0, maximum: int = MAX_INT64
) -> int | None:
    """None, or ``check_int``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise MemoryValidationError(
            f"{name} must be None or an int, got {type(value).__name__}", argument=name
        )
    return check_int(name, value, minimum=minimum, maximum=maximum)


def _short_int(value: int) -> str:
    """An int as text, shortened when huge (``str`` refuses more than 4,300 digits)."""
    if value.bit_length() <= 128:
        return str(value)
    return f"{'-' if value < 0 else ''}an int of {value.bit_length()} bits"


def check_limit(value: object, limits: Limits) -> int:
    return check_int("limit", value, minimum=1, maximum=limits.max_page_size)


def check_last(value: object) -> int | None:
    """``last``: None (everything) or how many of the newest, ``>= 0``."""
    return check_optional_int("last", value)


def check_order(value: object) -> Order:
    if value not in ("asc", "desc"):
        raise MemoryValidationError(
            f"order must be 'asc' or 'desc', got {value!r}", argument="order"
        )
    return value


def check_cursors(after: object, before: object) -> None:
    if after is not None and before is not None:
        raise MemoryValidationError("after and before are mutually exclusive; pass one of them")


def _check_json(value: Any, path: str, depth: int = 0, argument: str | None = None) -> None:
    """Refuse what JSON would alter or cannot hold: NaN, non-str keys, sets, objects;
    ``path`` starts with the ``argument`` (the root path by default)."""
    argument = argument or path
    if depth > 900:
        # the path itself would be 900 segments long: name the argument only
        raise MemoryValidationError(f"{argument}: nested deeper than 900 levels", argument=argument)
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise MemoryValidationError(
                f"{path}: {value} is not valid JSON (NaN and Infinity)", argument=argument
            )
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise MemoryValidationError(
                    f"{path}: keys must be str, got {type(key).__name__} {key!r}",
                    argument=argument,
                )
            _check_json(item, f"{path}[{key!r}]", depth + 1, argument)
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json(item, f"{path}[{index}]", depth + 1, argument)
        return
    raise MemoryValidationError(
        f"{path}: {type(value).__name__} is not JSON-serializable", argument=argument
    )


_CONTAINERS = (dict, list, tuple)


def _keeps_shape(value: Any, depth: int = 0) -> bool:
    """Whether ``json.dumps`` keeps ``value``'s containers as they are (str keys only) within
    ``_check_json``'s depth limit: its fast form, visiting containers only."""
    if depth >= 900:
        return not value
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return False
            if isinstance(item, _CONTAINERS) and not _keeps_shape(item, depth + 1):
                return False
        return True
    for item in value:  # a loop, not all(): one frame per level, as in _check_json
        if isinstance(item, _CONTAINERS) and not _keeps_shape(item, depth + 1):
            return False
    return True


# One encoder for every call: json.dumps with options builds a new one each time.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode_json(name: str, value: Any, max_bytes: int) -> str:
    """Serialize ``value`` exactly (``json.loads`` gives it back deep-equal) within ``max_bytes``."""
    try:
        text = _ENCODER.encode(value)
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
    except UnicodeEncodeError:  # lone surrogates: keep them as \\u escapes
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
        size = len(text)
    except (ValueError, TypeError, RecursionError) as exc:
        _check_json(value, name)  # names the offending value
        raise MemoryValidationError(
            f"{name}: not serializable as JSON ({exc})", argument=name
        ) from None
    if isinstance(value, _CONTAINERS) and not _keeps_shape(value):
        _check_json(value, name)
    if size > max_bytes:
        raise ContentTooLargeError(
            f"{name} is {size} bytes serialized; the limit is {max_bytes} bytes", argument=name
        )
    return text


def encode_content(value: object, limits: Limits, name: str = "content") -> str:
    if not isinstance(value, (str, list, tuple, dict)):
        raise MemoryValidationError(
            f"{name} must be a str, a list or a dict, got {type(value).__name__}", argument=name
        )
    return encode_json(name, value, limits.max_content_bytes)


def encode_metadata(value: object, limits: Limits, name: str = "metadata") -> str | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise MemoryValidationError(
            f"{name} must be a dict, got {type(value).__name__}", argument=name
        )
    return encode_json(name, dict(value), limits.max_metadata_bytes)


_scan: Any = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def loads(text: str) -> Any:
    """``json.loads(text)``, without the layers around its scanner that cost a short text
    more than the scan: stored JSON is ``json.dumps`` output, which the scanner takes whole
    from its first character. Anything else (white space around it, an error, bytes) goes
    to ``json.loads``, which answers as it always does."""
    try:
        value, end = _scan(text, 0)
    except (StopIteration, ValueError, TypeError):
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def first_value(text: str, head: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``text``, a JSON object as ``encode_json`` writes it, starts with
    ``head`` (``key_head(key)``): the value of that first key, decoded alone, the rest of the
    text not at all (the store never writes a key twice); ``(False, None)`` otherwise."""
    if text.startswith(head):
        try:
            value, end = _scan(text, len(head))
        except (StopIteration, ValueError):
            return False, None
        if text[end : end + 1] in (",", "}"):
            return True, value
    return False, None


def key_head(key: str) -> str:
    """How a JSON object ``encode_json`` writes starts when ``key`` is its first key."""
    return "{" + _ENCODER.encode(key) + ":"


def decode_json(text: str | None) -> Any:
    return None if text is None else loads(text)


# Characters no path may hold: controls (Cc: C0, DEL, C1) and what a reader cannot see or
# that changes how the text around it shows (Cf: bidi overrides and isolates, zero-width
# characters, the BOM, the soft hyphen, tags; Zl, Zp: the line and paragraph separators).
_REFUSED_IN_PATHS = frozenset(("Cc", "Cf", "Zl", "Zp"))


def _normalized(name: str, value: object) -> tuple[str, int]:
    """``check_text``, then NFC (``normalize_memory_path``): the text and its UTF-8 size."""
    text = normalize_memory_path(_text_and_size(name, value)[0])
    return text, len(text.encode("utf-8"))


def _check_path_characters(name: str, text: str) -> None:
    """No backslash, control or invisible formatting character."""
    for char in text:
        if char == "\\" or unicodedata.category(char) in _REFUSED_IN_PATHS:
            what = unicodedata.name(char, unicodedata.category(char))
            raise MemoryValidationError(
                f"{name} must not contain a backslash, a control character or an invisible"
                f" formatting character, got U+{ord(char):04X} ({what}) in {preview(text)}",
                argument=name,
            )


def normalize_memory_path(path: str) -> str:
    """A memory path (or path prefix) as the store keeps and compares it: Unicode NFC, so
    ``café`` typed precomposed or decomposed is one path."""
    return path if path.isascii() else unicodedata.normalize("NFC", path)


def check_memory_path(value: object, limits: Limits, name: str = "path") -> str:
    """A memory entry's path, normalized to NFC: relative (``notes/2026/05/daily.md``),
    segments joined by ``/``, none of them empty, ``.`` or ``..``; no backslash, no control or
    invisible formatting character; at most ``max_memory_path_bytes`` bytes of UTF-8."""
    text, size = _normalized(name, value)
    if not 1 <= size <= limits.max_memory_path_bytes:
        raise MemoryValidationError(
            f"{name} must be 1 to {limits.max_memory_path_bytes} bytes of UTF-8, got {size} bytes",
            argument=name,
        )
    _check_path_characters(name, text)
    if text.startswith("/"):
        raise MemoryValidationError(
            f"{name} must be relative (no leading '/'), got {preview(text)}", argument=name
        )
    if any(part in ("", ".", "..") for part in text.split("/")):
        raise MemoryValidationError(
            f"{name} must not have an empty, '.' or '..' segment, got {preview(text)}",
            argument=name,
        )
    return text


def check_memory_path_prefix(value: object, limits: Limits, name: str = "path_prefix") -> str:
    """A prefix of memory paths: a plain string prefix (``"notes/"`` for a directory), in NFC
    and without the characters no path holds, at most ``max_memory_path_bytes`` bytes."""
    text, size = _normalized(name, value)
    if size > limits.max_memory_path_bytes:
        raise MemoryValidationError(
            f"{name} is {size} bytes of UTF-8; the limit is {limits.max_memory_path_bytes} bytes",
            argument=name,
        )
    _check_path_characters(name, text)
    return text


def check_memory_content(value: object, limits: Limits, name: str = "content") -> bytes:
    """A memory entry's content: a str (any text, NUL included) of at most
    ``max_memory_content_bytes`` bytes of UTF-8; returned encoded."""
    if not isinstance(value, str):
        raise MemoryValidationError(
            f"{name} must be a str, got {type(value).__name__}", argument=name
        )
    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError:
        raise MemoryValidationError(
            f"{name} is not valid UTF-8 (lone surrogate)", argument=name
        ) from None
    if len(data) > limits.max_memory_content_bytes:
        raise ContentTooLargeError(
            f"{name} is {len(data)} bytes of UTF-8; the limit is"
            f" {limits.max_memory_content_bytes} bytes",
            argument=name,
        )
    return data


def check_optional_text(name: str, value: object, max_bytes: int) -> str | None:
    """None, or ``check_text`` within ``max_bytes`` bytes of UTF-8."""
    if value is None:
        return None
    text, size = _text_and_size(name, value)
    if size > max_bytes:
        raise MemoryValidationError(
            f"{name} is {size} bytes of UTF-8; the limit is {max_bytes} bytes", argument=name
        )
    return text


def preview(text: str, size: int = 60) -> str:
    """``text`` for an error message, cut to ``size`` characters."""
    return repr(text) if len(text) <= size else f"{text[:size]!r}... ({len(text)} characters)"


def check_owner(
    owner: str | None,
    user_id: str | None,
    *,
    strict: bool,
    what: str,
    error: type[OwnershipError],
) -> None:
    """The ownership rule, for conversations and memory stores alike: a call given a
    ``user_id`` may use what that user owns, and (unless ``strict``) what nobody owns."""
    if user_id is None or owner == user_id or (owner is None and not strict):
        return
    whose = "nobody (a strict store refuses it)" if owner is None else "another user"
    raise error(f"{what} belongs to {whose}, not to user_id {user_id!r}")
