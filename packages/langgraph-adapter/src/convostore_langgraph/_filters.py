"""Filter keys, one rule for the store's ``search`` and the saver's ``list``: a key names the
field of that exact name when there is one, else a dotted path into nested objects; a key that
can only be a mistake is SqliteStore's ``ValueError: Invalid filter key``. Keys never reach
SQL: ``key_text`` gives the text a match's JSON holds, which the SQL narrows rows by."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def check_filter_key(key: object) -> str:
    """A filter key: a field name, or a dotted path of field names. One that can only be a
    mistake (empty, an empty part as in ``"a..b"`` or a trailing ``"."``, NUL, a lone
    surrogate) gets SqliteStore's ``ValueError``."""
    if not isinstance(key, str):
        raise TypeError(f"filter: filter keys must be strings, got {key!r}")
    if not key or "\x00" in key or any(not part for part in key.split(".")):
        raise ValueError(
            f"Invalid filter key: {key!r}. Filter keys must be a field name or a dotted path"
            " of field names (no empty part, no NUL)."
        )
    try:
        key.encode()
    except UnicodeEncodeError:
        raise ValueError(f"Invalid filter key: {key!r}. Filter keys must be valid UTF-8.") from None
    return key


def field(value: Mapping[str, Any], key: str) -> Any:
    """The value a filter key names: the field itself when ``value`` has one by that exact
    name (as InMemoryStore and PostgresStore read it), else the dotted path into nested
    objects (as SqliteStore and SqliteSaver read it); None when neither is there."""
    if key in value or "." not in key:
        return value.get(key)
    found: Any = value
    for part in key.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return None
        found = found[part]
    return found


def key_text(key: str, dumps: Callable[[str], str]) -> str:
    """The text just before the value ``key`` matches in JSON written by ``dumps`` (with its
    default ``": "`` separator): ``"key": ``; for a dotted key the end of its last part
    (``b": ``), which the field named ``"a.b"`` and the nested ``"b"`` both end with."""
    if "." not in key:
        return f"{dumps(key)}: "
    return f"{dumps(key.rsplit('.', 1)[1])[1:]}: "
