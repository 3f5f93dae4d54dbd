"""Hostile input at every memory-store entry point, on every backend.

As in ``test_hostile.py``: forged cursors, huge integers, NUL, lone surrogates, deep nesting,
huge sizes, bad paths, another store's or another user's ids. Each case raises the documented
error, the same on memory, SQLite and PostgreSQL, and leaves what is stored exactly as it was.

To extend: add a value to a list below, or an entry point to ``CALLS``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any

import pytest
from convostore import (
    ConversationStore,
    Limits,
    MemoryEntryNotFoundError,
    MemoryPathConflictError,
    MemoryStoreOwnershipError,
    MemoryValidationError,
    MemoryVersionConflictError,
    MemoryVersionNotFoundError,
)
from test_hostile import BAD_IDS, HUGE_INTS, _b64, _id, nested

SID, EID, VID = "memory_store_id", "entry_id", "version_id"


class Mem:
    """Alice's memory store with one entry at version 2, and the ids the calls use."""

    def __init__(self, store: ConversationStore) -> None:
        self.store = store
        self.sid = store.create_memory_store("alice's", user_id="alice").memory_store_id
        entry = store.create_memory(self.sid, "notes/a.md", "first")
        self.eid = entry.entry_id
        store.update_memory(self.sid, self.eid, "second", 1)
        self.vid = store.list_memory_versions(self.sid).items[0].version_id

    def calls(self) -> dict[str, dict[str, Any]]:
        """Every memory entry point with valid arguments."""
        sid, eid, vid = self.sid, self.eid, self.vid
        return {
            "get_memory_store": {SID: sid},
            "delete_memory_store": {SID: sid},
            "create_memory": {SID: sid, "path": "b.md", "content": "x"},
            "list_memories": {SID: sid},
            "get_memory": {SID: sid, EID: eid},
            "get_memory_by_path": {SID: sid, "path": "notes/a.md"},
            "update_memory": {SID: sid, EID: eid, "content": "y", "version": 2},
            "delete_memory": {SID: sid, EID: eid},
            "list_memory_versions": {SID: sid},
            "get_memory_version": {SID: sid, VID: vid},
            "redact_memory_version": {SID: sid, VID: vid},
        }

    def call(self, name: str, **override: Any) -> Any:
        return getattr(self.store, name)(**{**self.calls()[name], **override})

    def snapshot(self) -> list[Any]:
        """Every store with its counters, entries with content, versions with content."""
        store, out = self.store, []
        for meta in store.list_memory_stores(limit=100).items:
            sid = meta.memory_store_id
            entries = [
                store.get_memory(sid, e.entry_id) for e in store.list_memories(sid, limit=100).items
            ]
            versions = [
                store.get_memory_version(sid, v.version_id)
                for v in store.list_memory_versions(sid, limit=100).items
            ]
            out.append((meta, entries, versions))
        return out


CALL_NAMES = [
    "get_memory_store",
    "delete_memory_store",
    "create_memory",
    "list_memories",
    "get_memory",
    "get_memory_by_path",
    "update_memory",
    "delete_memory",
    "list_memory_versions",
    "get_memory_version",
    "redact_memory_version",
]
ENTRY_CALLS = ["get_memory", "update_memory", "delete_memory"]
VERSION_CALLS = ["get_memory_version", "redact_memory_version"]
PATH_CALLS = ["create_memory", "get_memory_by_path", "update_memory"]


@pytest.fixture
def mem(store: ConversationStore) -> Mem:
    return Mem(store)


def _refused(mem: Mem, error: type[Exception], match: str, call: Callable[[], Any]) -> None:
    before = mem.snapshot()
    with pytest.raises(error, match=match):
        call()
    assert mem.snapshot() == before


@pytest.mark.parametrize("name", CALL_NAMES)
@pytest.mark.parametrize(("value", "message"), BAD_IDS, ids=_id)
def test_bad_memory_store_ids_are_refused(mem: Mem, name: str, value: Any, message: str) -> None:
    _refused(
        mem,
        MemoryValidationError,
        f"memory_store_id {message}",
        lambda: mem.call(name, memory_store_id=value),
    )


@pytest.mark.parametrize("name", CALL_NAMES)
@pytest.mark.parametrize(("value", "message"), BAD_IDS[:4], ids=_id)
def test_bad_user_ids_are_refused(mem: Mem, name: str, value: Any, message: str) -> None:
    _refused(
        mem, MemoryValidationError, f"user_id {message}", lambda: mem.call(name, user_id=value)
    )


@pytest.mark.parametrize("name", ENTRY_CALLS)
@pytest.mark.parametrize(("value", "message"), BAD_IDS, ids=_id)
def test_bad_entry_ids_are_refused(mem: Mem, name: str, value: Any, message: str) -> None:
    _refused(
        mem, MemoryValidationError, f"entry_id {message}", lambda: mem.call(name, entry_id=value)
    )


@pytest.mark.parametrize("name", VERSION_CALLS)
@pytest.mark.parametrize(("value", "message"), BAD_IDS, ids=_id)
def test_bad_version_ids_are_refused(mem: Mem, name: str, value: Any, message: str) -> None:
    _refused(
        mem,
        MemoryValidationError,
        f"version_id {message}",
        lambda: mem.call(name, version_id=value),
    )


# Unicode's format characters (category Cf) and the line and paragraph separators: bidi
# overrides and isolates, the zero-width ones, the BOM, the soft hyphen, an invisible tag.
INVISIBLE = (
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    "\u200b\u200c\u200d\u2060\ufeff\u00ad\U000e0041\u2028\u2029"
)

BAD_PATHS: list[tuple[Any, str]] = [
    ("/notes/a.md", r"must be relative \(no leading '/'\)"),
    ("notes//a.md", "must not have an empty, '.' or '..' segment"),
    ("notes/a.md/", "must not have an empty, '.' or '..' segment"),
    ("./a.md", "must not have an empty, '.' or '..' segment"),
    ("notes/../../etc/passwd", "must not have an empty, '.' or '..' segment"),
    ("..", "must not have an empty, '.' or '..' segment"),
    ("notes\\a.md", r"must not contain a backslash.*got U\+005C"),
    *(
        (f"a{c}b.md", f"must not contain a backslash, a control.*got U\\+{ord(c):04X}")
        for c in "\n\x1b\x7f\x80\x85\x9b\x9f"
    ),  # C0, DEL and C1 (NEL, CSI) controls
    *(
        (
            f"notes/a{c}b.md",
            f"must not contain .* an invisible formatting character.*got U\\+{ord(c):04X}",
        )
        for c in INVISIBLE
    ),
    ("a\x00b", "must not contain NUL"),
    ("\ud800.md", r"is not valid UTF-8 \(lone surrogate\)"),
    ("", "must be 1 to 1024 bytes of UTF-8, got 0 bytes"),
    ("x" * 1025, "must be 1 to 1024 bytes of UTF-8, got 1025 bytes"),
    ("é" * 600, "must be 1 to 1024 bytes of UTF-8, got 1200 bytes"),
    # the limit holds for the path as stored: U+0958 is 3 bytes, its NFC form 6
    ("\u0958" * 300, "must be 1 to 1024 bytes of UTF-8, got 1800 bytes"),
    (42, "must be a str, got int"),
    (None, "must be a str, got NoneType"),
    (b"a.md", "must be a str, got bytes"),
]


@pytest.mark.parametrize("name", PATH_CALLS)
@pytest.mark.parametrize(("value", "message"), BAD_PATHS, ids=_id)
def test_bad_paths_are_refused(mem: Mem, name: str, value: Any, message: str) -> None:
    if name == "update_memory" and value is None:
        return  # path=None means: keep the path
    _refused(mem, MemoryValidationError, f"path {message}", lambda: mem.call(name, path=value))


BAD_CONTENTS: list[tuple[Any, str]] = [
    (42, "must be a str, got int"),
    (b"bytes", "must be a str, got bytes"),
    (["x"], "must be a str, got list"),
    ({"a": 1}, "must be a str, got dict"),
    ("lone \ud800", r"is not valid UTF-8 \(lone surrogate\)"),
    ("x" * 1001, "is 1001 bytes of UTF-8; the limit is 1000 bytes"),
    ("é" * 501, "is 1002 bytes of UTF-8; the limit is 1000 bytes"),
]


@pytest.mark.parametrize("name", ["create_memory", "update_memory"])
@pytest.mark.parametrize(("value", "message"), BAD_CONTENTS, ids=_id)
def test_bad_contents_are_refused(backend_url: str, name: str, value: Any, message: str) -> None:
    with ConversationStore(backend_url, limits=Limits(max_memory_content_bytes=1000)) as store:
        mem = Mem(store)
        _refused(
            mem, MemoryValidationError, f"content {message}", lambda: mem.call(name, content=value)
        )


def test_create_memory_needs_content(mem: Mem) -> None:
    _refused(
        mem,
        MemoryValidationError,
        "content must be a str, got NoneType",
        lambda: mem.call("create_memory", content=None),
    )


@pytest.mark.parametrize(("value", "message"), HUGE_INTS, ids=_id)
def test_huge_and_wrong_integers_are_refused(mem: Mem, value: Any, message: str) -> None:
    for name in ("update_memory", "delete_memory"):
        _refused(
            mem,
            MemoryValidationError,
            f"version {message}",
            lambda n=name: mem.call(n, version=value),
        )
    for name in ("list_memories", "list_memory_versions"):
        _refused(
            mem, MemoryValidationError, f"limit {message}", lambda n=name: mem.call(n, limit=value)
        )
    _refused(
        mem,
        MemoryValidationError,
        f"limit {message}",
        lambda: mem.store.list_memory_stores(limit=value),
    )


def test_a_version_in_range_but_wrong_is_a_conflict_not_a_crash(mem: Mem) -> None:
    for name in ("update_memory", "delete_memory"):
        _refused(
            mem,
            MemoryValidationError,
            "version must be between 1",
            lambda n=name: mem.call(n, version=0),
        )
        _refused(
            mem,
            MemoryVersionConflictError,
            "at version 2, not version 9223372036854775807",
            lambda n=name: mem.call(n, version=2**63 - 1),
        )


# A list_memories cursor is a path, base64-encoded: one that decodes to a valid path is a
# legitimate seek (see below); everything else is refused.
FORGED_PATH_CURSORS: list[Any] = [
    "not base64 at all!",
    "",
    "A" * (1 << 20),  # huge
    _b64(b"\xff\xfe"),  # not UTF-8
    "\ud800",
    "a\x00",
    42,
    _b64(b"[" * 100_000),
    _b64(b"/absolute"),
    _b64(b"a/../b"),
    _b64(b"a\x00b"),
    _b64(b"x" * 2000),
    _b64("é".encode() * 600),
    _b64("a\u202eb".encode()),
    _b64("a\x85b".encode()),
]


@pytest.mark.parametrize("cursor", FORGED_PATH_CURSORS, ids=_id)
def test_forged_entry_cursors_are_refused(mem: Mem, cursor: Any) -> None:
    _refused(mem, MemoryValidationError, "after", lambda: mem.call("list_memories", after=cursor))


def test_a_cursor_of_any_valid_path_seeks_past_it(mem: Mem) -> None:
    mem.store.create_memory(mem.sid, "z.md", "z")
    page = mem.call("list_memories", after=_b64(b"notes/b"))
    assert [e.path for e in page.items] == ["z.md"]


@pytest.mark.parametrize(("value", "message"), BAD_IDS[:4], ids=_id)
def test_bad_version_and_store_cursors_are_refused(mem: Mem, value: Any, message: str) -> None:
    _refused(
        mem,
        MemoryValidationError,
        f"after {message}",
        lambda: mem.call("list_memory_versions", after=value),
    )
    _refused(
        mem,
        MemoryValidationError,
        f"after {message}",
        lambda: mem.store.list_memory_stores(after=value),
    )


def test_another_stores_ids_reach_nothing(mem: Mem) -> None:
    store = mem.store
    other = store.create_memory_store("other", user_id="alice").memory_store_id
    before = mem.snapshot()
    assert store.get_memory(other, mem.eid) is None
    assert store.get_memory_version(other, mem.vid) is None
    with pytest.raises(MemoryEntryNotFoundError):
        store.update_memory(other, mem.eid, "hijack", 2)
    with pytest.raises(MemoryEntryNotFoundError):
        store.delete_memory(other, mem.eid)
    with pytest.raises(MemoryVersionNotFoundError):
        store.redact_memory_version(other, mem.vid)
    with pytest.raises(MemoryValidationError, match="after: no version"):
        store.list_memory_versions(other, after=mem.vid)
    assert store.list_memory_versions(other, entry_id=mem.eid).items == []
    assert mem.snapshot() == before


@pytest.mark.parametrize("name", CALL_NAMES)
def test_another_users_store_is_refused(mem: Mem, name: str) -> None:
    _refused(
        mem,
        MemoryStoreOwnershipError,
        "belongs to another user",
        lambda: mem.call(name, user_id="mallory"),
    )


@pytest.mark.parametrize("name", CALL_NAMES)
def test_the_owner_passes_the_same_check(mem: Mem, name: str) -> None:
    mem.call(name, user_id="alice")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"name": "a\x00b"}, "name must not contain NUL"),
        ({"name": ""}, "name must be 1 to 256 bytes"),
        ({"name": "x" * 257}, "name must be 1 to 256 bytes"),
        ({"name": None}, "name must be a str"),
        ({"description": "d" * 4097}, "description is 4097 bytes of UTF-8; the limit is 4096"),
        ({"description": "a\x00"}, "description must not contain NUL"),
        ({"description": "\udc00"}, "description is not valid UTF-8"),
        ({"description": 5}, "description must be a str"),
        ({"metadata": {"deep": nested(10_000)}}, "nested deeper than 900 levels"),
        ({"metadata": {"x": float("nan")}}, "not valid JSON"),
        ({"metadata": ["not", "a", "dict"]}, "metadata must be a dict"),
        ({"user_id": "u\x00"}, "user_id must not contain NUL"),
    ],
)
def test_bad_store_arguments_are_refused(mem: Mem, override: dict[str, Any], message: str) -> None:
    args = {"name": "n", **override}
    _refused(mem, MemoryValidationError, message, lambda: mem.store.create_memory_store(**args))


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ("memstore_a", "memory_store_ids must be a list"),
        (42, "memory_store_ids must be a list"),
        (["ok", "a\x00"], r"memory_store_ids\[1\] must not contain NUL"),
        (["x" * 300], r"memory_store_ids\[0\] must be 1 to 256 bytes"),
    ],
)
def test_bad_attachments_are_refused(mem: Mem, ids: Any, message: str) -> None:
    for call in (mem.store.attach_memory_stores, mem.store.detach_memory_stores):
        with pytest.raises(MemoryValidationError, match=message):
            call("c", ids)
    assert mem.store.get_conversation(conversation_id="c") is None


@pytest.mark.parametrize(
    "prefix", ["a\x00", "\ud800", "x" * 1025, 42, "a\x1b", "notes/\x9b", "\u202enotes/", "\u200b"]
)
def test_bad_path_prefixes_are_refused(mem: Mem, prefix: Any) -> None:
    _refused(
        mem,
        MemoryValidationError,
        "path_prefix",
        lambda: mem.call("list_memories", path_prefix=prefix),
    )


@pytest.mark.parametrize("name", CALL_NAMES)
def test_a_strict_store_refuses_an_unowned_memory_store(
    store: ConversationStore, name: str
) -> None:
    mem = Mem(store)
    unowned = store.create_memory_store("shared").memory_store_id
    entry = store.create_memory(unowned, "notes/a.md", "x")
    store.update_memory(unowned, entry.entry_id, "y", 1)
    vid = store.list_memory_versions(unowned).items[0].version_id
    strict = Mem.__new__(Mem)
    strict.store, strict.sid, strict.eid, strict.vid = (
        store.with_strict_ownership(),
        unowned,
        entry.entry_id,
        vid,
    )
    _refused(
        mem,
        MemoryStoreOwnershipError,
        "belongs to nobody",
        lambda: strict.call(name, user_id="anyone"),
    )
    strict.call(name)  # without a user_id nothing is scoped


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def test_paths_are_normalized_to_nfc_at_every_entry_point(store: ConversationStore) -> None:
    """``café`` typed precomposed (NFC) or decomposed (NFD) is one path, stored as NFC."""
    nfc = "café/menu.md"
    assert _nfd(nfc) != nfc
    sid = store.create_memory_store("s").memory_store_id
    entry = store.create_memory(sid, _nfd(nfc), "x")
    assert entry.path == nfc
    with pytest.raises(MemoryPathConflictError):
        store.create_memory(sid, nfc, "y")
    for path in (nfc, _nfd(nfc)):
        found = store.get_memory_by_path(sid, path)
        assert found is not None and found.entry_id == entry.entry_id
    for prefix in ("café/", _nfd("café/")):
        assert [e.path for e in store.list_memories(sid, path_prefix=prefix).items] == [nfc]
    store.create_memory(sid, "z.md", "z")
    page = store.list_memories(sid, after=_b64(_nfd(nfc).encode()))
    assert [e.path for e in page.items] == ["z.md"]
    moved = store.update_memory(sid, entry.entry_id, None, 1, path=_nfd("thé/menu.md"))
    assert moved.path == "thé/menu.md"
    assert store.get_memory_by_path(sid, "thé/menu.md") is not None
    assert [v.path for v in store.list_memory_versions(sid, entry_id=entry.entry_id).items] == [
        nfc,
        "thé/menu.md",
    ]
