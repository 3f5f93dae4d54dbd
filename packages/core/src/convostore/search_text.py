"""What search means, without a database: a message's searchable text, a query's terms, a
match, a snippet, and the cursor of a page of hits. The indexes of both databases only find
candidates faster; every rule is here, and the differential test holds them to it.

- A message's searchable text is every string in its content (a string is itself; lists and
  objects give their string values, depth first, not their keys), joined with a newline.
- A query is terms separated by white space; a term in double quotes may hold spaces. A text
  matches when each term occurs in it, ignoring case as ``str.lower()`` does.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from typing import Any

from .errors import MemoryValidationError
from .validation import MAX_INT64, Limits, check_id, check_text, loads, preview

MAX_QUERY_CHARS = 1000
MAX_TERMS = 16
SNIPPET_BEFORE = 60
SNIPPET_CHARS = 200

_TERM = re.compile(r'"([^"]*)"|(\S+)')


_CONTAINERS = (dict, list, tuple)


def _strings(value: dict[Any, Any] | list[Any] | tuple[Any, ...], out: list[str]) -> None:
    """Append the strings of a container to ``out``, depth first (a list, not a generator:
    each string a chain of ``yield from`` hands up costs as many steps as it is deep)."""
    for item in value.values() if isinstance(value, dict) else value:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, _CONTAINERS):
            _strings(item, out)


def searchable_text(content: Any) -> str:
    """Every string in ``content`` (decoded JSON), depth first, joined with a newline."""
    if isinstance(content, str):
        return content
    out: list[str] = []
    if isinstance(content, _CONTAINERS):
        _strings(content, out)
    return "\n".join(out)


NUL_MARK = "\uffff"
"""What a NUL or a lone surrogate of the text becomes in the index (a database's text cannot
hold them). A query may hold none of them, so no match is made or lost by it."""

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def index_text(content_json: str) -> str:
    """What the index holds for a message whose stored content is ``content_json``: its
    searchable text, lower-cased (NUL and lone surrogates as ``NUL_MARK``); none for content
    another program damaged (not JSON, not text), which a read names."""
    try:
        content = loads(content_json)
    except (ValueError, TypeError, RecursionError):
        return ""
    text = searchable_text(content).lower()
    if text.isascii() and "\x00" not in text:  # nothing to replace (the common case)
        return text
    return _UNSTORABLE.sub(NUL_MARK, text)


def memory_index_text(path: str, content: bytes | None) -> str:
    """What the index holds for a memory entry: its path and its content (none when its
    current version is redacted), joined with a newline, lower-cased (NUL as ``NUL_MARK``)."""
    text = path if content is None else f"{path}\n{content.decode('utf-8')}"
    return _UNSTORABLE.sub(NUL_MARK, text.lower())


def parse_query(query: object) -> list[str]:
    """The lower-cased terms of ``query``; a ``MemoryValidationError`` naming ``query`` for an
    empty one, one over 1,000 characters or 16 terms, a NUL, U+FFFF or a lone surrogate."""
    text = check_text("query", query)
    if NUL_MARK in text:
        raise MemoryValidationError(
            "query must not contain U+FFFF (a noncharacter)", argument="query"
        )
    if len(text) > MAX_QUERY_CHARS:
        raise MemoryValidationError(
            f"query has {len(text)} characters, over the limit of {MAX_QUERY_CHARS}",
            argument="query",
        )
    found = (m.group(1) if m.group(1) is not None else m.group(2) for m in _TERM.finditer(text))
    terms = [term.lower() for term in found if term]  # an empty quoted term "" is no term
    if not terms:
        raise MemoryValidationError("query has no terms (it is empty or blank)", argument="query")
    if len(terms) > MAX_TERMS:
        raise MemoryValidationError(
            f"query has {len(terms)} terms, over the limit of {MAX_TERMS}", argument="query"
        )
    return terms


def matches(terms: Sequence[str], lowered: str) -> bool:
    """Whether every term occurs in ``lowered`` (a lower-cased searchable text)."""
    return all(term in lowered for term in terms)


def snippet(text: str, terms: Sequence[str]) -> str:
    """A short excerpt of ``text`` around the first place a term occurs (white space runs
    made one space; ``…`` where it is cut)."""
    lowered = text.lower()
    found = [p for p in (lowered.find(t) for t in terms) if p >= 0]
    at = min(found) if found else 0
    if len(lowered) != len(text):  # lower() changed the length: cut what was matched
        text = lowered
    start = max(0, at - SNIPPET_BEFORE)
    end = min(len(text), start + SNIPPET_CHARS)
    start = max(0, min(start, end - SNIPPET_CHARS))
    excerpt = " ".join(text[start:end].split())
    return ("…" if start > 0 else "") + excerpt + ("…" if end < len(text) else "")


def encode_cursor(created_at: int, conversation_id: str, seq: int) -> str:
    """The opaque cursor after a hit: its place in the order of results."""
    raw = json.dumps([created_at, conversation_id, seq], ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: object, limits: Limits, name: str = "after") -> tuple[int, str, int]:
    """The (created_at, conversation id, seq) an ``encode_cursor`` cursor holds; anything else,
    forged or damaged, is a ``MemoryValidationError`` naming ``name``."""
    if not isinstance(cursor, str):
        raise MemoryValidationError(
            f"{name} must be a str, got {type(cursor).__name__}", argument=name
        )
    if len(cursor) <= 8 * limits.max_id_bytes + 96:
        try:
            at, cid, seq = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
            if (
                type(at) is int
                and type(seq) is int
                and 0 <= at <= MAX_INT64
                and 0 <= seq <= MAX_INT64
            ):
                return at, check_id(f"{name} (its conversation id)", cid, limits), seq
        except (ValueError, TypeError, RecursionError, MemoryValidationError):
            pass
    raise MemoryValidationError(
        f"{name}: {preview(cursor)} is not a cursor returned by a search", argument=name
    )
