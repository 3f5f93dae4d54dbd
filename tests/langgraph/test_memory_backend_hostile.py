"""Hostile input at every public entry point of ConvostoreMemoryBackend, on every backend: bad
paths (empty, traversal, empty segments, backslash, NUL, control and invisible formatting
characters, lone surrogates, too long, not a str), huge content, lone surrogates in content, bad patterns and
windows, another user's store. Each gets the documented answer (an ``error`` in the result, or
the core's exception at construction) and the store is left exactly as it was."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from convostore import (
    ConversationStore,
    Limits,
    MemoryStoreNotFoundError,
    MemoryStoreOwnershipError,
    MemoryValidationError,
)
from convostore_langgraph import ConvostoreMemoryBackend

BAD_PATHS: list[tuple[Any, str]] = [
    ("", r"must not be empty \('/' is the root\)"),
    ("/../etc/passwd", "must not have an empty, '.' or '..' segment"),
    ("/a/../../b.md", "must not have an empty, '.' or '..' segment"),
    ("/a/./b.md", "must not have an empty, '.' or '..' segment"),
    ("//a.md", r"must be relative \(no leading '/'\)"),
    ("/a//b.md", "must not have an empty, '.' or '..' segment"),
    ("/a.md/", "must not have an empty, '.' or '..' segment"),
    ("/a\\..\\b", "must not contain a backslash, a control character"),
    ("/a\nb.md", "must not contain a backslash, a control character"),
    ("/a\x85b.md", "a control character.*U\\+0085"),
    ("/a\x9bb.md", "a control character.*U\\+009B"),
    ("/a\u202eb.md", "an invisible formatting character.*U\\+202E"),
    ("/a\u2066b.md", "an invisible formatting character.*U\\+2066"),
    ("/a\u200bb.md", "an invisible formatting character.*U\\+200B"),
    ("/a\ufeffb.md", "an invisible formatting character.*U\\+FEFF"),
    ("/a\u2028b.md", "an invisible formatting character.*U\\+2028"),
    ("/a\x00b", "must not contain NUL"),
    ("/\ud800.md", r"not valid UTF-8 \(lone surrogate\)"),
    ("/" + "x" * 1025, "must be 1 to 1024 bytes of UTF-8, got 1025 bytes"),
    (42, "must be a str, got int"),
    (None, "must be a str, got NoneType"),
    (b"/a.md", "must be a str, got bytes"),
]


def short(value: Any) -> str:
    return repr(value)[:24]


class World:
    """Alice's store with two files, Bob's store with one, and Alice's backend."""

    def __init__(self, db: ConversationStore) -> None:
        self.db = db
        self.sid = db.create_memory_store("alice's", user_id="alice").memory_store_id
        self.bob_sid = db.create_memory_store("bob's", user_id="bob").memory_store_id
        self.mb = ConvostoreMemoryBackend(db, self.sid, user_id="alice")
        self.mb.write("/a.md", "alpha\n")
        self.mb.write("/dir/b.md", "beta\n")
        db.create_memory(self.bob_sid, "bob.md", "bob's secret", user_id="bob")

    def snapshot(self) -> list[Any]:
        out = []
        for sid in (self.sid, self.bob_sid):
            meta = self.db.get_memory_store(sid)
            listed = self.db.list_memory_versions(sid, limit=100).items
            out.append((meta, [self.db.get_memory_version(sid, v.version_id) for v in listed]))
        return out


@pytest.fixture
def world(backend_url: str) -> Iterator[World]:
    with ConversationStore(backend_url, limits=Limits(max_memory_content_bytes=1000)) as db:
        yield World(db)


def unchanged(world: World, call: Callable[[], Any]) -> Any:
    before = world.snapshot()
    result = call()
    assert world.snapshot() == before
    return result


def error_of(result: Any) -> str:
    if isinstance(result, list):
        assert len(result) == 1
        result = result[0]
    assert result.error, result
    return str(result.error)


# Every entry point taking a file path, called with `p`; a directory argument is in DIR_CALLS.
FILE_CALLS: dict[str, Callable[[ConvostoreMemoryBackend, Any], Any]] = {
    "read": lambda mb, p: mb.read(p),
    "write": lambda mb, p: mb.write(p, "x"),
    "edit": lambda mb, p: mb.edit(p, "alpha", "x"),
    "delete": lambda mb, p: mb.delete(p),
    "aread": lambda mb, p: asyncio.run(mb.aread(p)),
    "awrite": lambda mb, p: asyncio.run(mb.awrite(p, "x")),
    "aedit": lambda mb, p: asyncio.run(mb.aedit(p, "alpha", "x")),
    "adelete": lambda mb, p: asyncio.run(mb.adelete(p)),
}
DIR_CALLS: dict[str, Callable[[ConvostoreMemoryBackend, Any], Any]] = {
    "ls": lambda mb, p: mb.ls(p),
    "grep": lambda mb, p: mb.grep("a", path=p),
    "glob": lambda mb, p: mb.glob("*", path=p),
    "als": lambda mb, p: asyncio.run(mb.als(p)),
    "agrep": lambda mb, p: asyncio.run(mb.agrep("a", path=p)),
    "aglob": lambda mb, p: asyncio.run(mb.aglob("*", path=p)),
}


@pytest.mark.parametrize(
    ("name", "path", "message"),
    # delete("/a.md/") is not bad: a trailing "/" names a directory, and a.md goes with it
    [
        (n, p, m)
        for n in FILE_CALLS
        for p, m in BAD_PATHS
        if not (n.endswith("delete") and p == "/a.md/")
    ],
    ids=short,
)
def test_bad_file_paths_are_an_error_and_write_nothing(
    world: World, name: str, path: Any, message: str
) -> None:
    error = error_of(unchanged(world, lambda: FILE_CALLS[name](world.mb, path)))
    assert error.startswith("Error: ") and re.search(message, error)


@pytest.mark.parametrize("name", DIR_CALLS)
@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "must not be empty"),
        ("/a\x00", "path_prefix must not contain NUL"),
        ("/\ud800", r"path_prefix is not valid UTF-8 \(lone surrogate\)"),
        ("/" + "x" * 1100, r"path_prefix is 110\d bytes of UTF-8; the limit is 1024 bytes"),
        (42, "must be a str, got int"),
    ],
    ids=short,
)
def test_bad_directory_paths_are_an_error(world: World, name: str, path: Any, message: str) -> None:
    result = unchanged(world, lambda: DIR_CALLS[name](world.mb, path))
    assert re.search(message, error_of(result))


@pytest.mark.parametrize("name", DIR_CALLS)
def test_directories_that_cannot_exist_are_empty(world: World, name: str) -> None:
    for path in ["/../", "/a/../..", "/dir/../../"]:
        result = unchanged(world, lambda p=path: DIR_CALLS[name](world.mb, p))
        assert result.error is None and not (
            result.entries if name.endswith("ls") else result.matches
        )


@pytest.mark.parametrize("name", ["upload_files", "download_files"])
@pytest.mark.parametrize(("path", "message"), BAD_PATHS, ids=short)
def test_bad_paths_in_a_batch_are_invalid_path(
    world: World, name: str, path: Any, message: str
) -> None:
    if name == "upload_files":
        results = unchanged(world, lambda: world.mb.upload_files([(path, b"x")]))
    else:
        results = unchanged(world, lambda: world.mb.download_files([path]))
    assert [r.error for r in results] == ["invalid_path"]


def test_a_bad_path_does_not_stop_the_rest_of_an_upload(world: World) -> None:
    results = world.mb.upload_files([("/../x", b"x"), ("/ok.md", b"fine")])
    assert [r.error for r in results] == ["invalid_path", None]
    assert world.mb.download_files(["/ok.md"])[0].content == b"fine"


BAD_CONTENTS: list[tuple[Any, str]] = [
    ("x" * 1001, "content is 1001 bytes of UTF-8; the limit is 1000 bytes"),
    ("é" * 501, "content is 1002 bytes of UTF-8; the limit is 1000 bytes"),
    ("lone \ud800", r"content is not valid UTF-8 \(lone surrogate\)"),
    (42, "content must be a str, got int"),
    (None, "content must be a str, got NoneType"),
]


@pytest.mark.parametrize(("content", "message"), BAD_CONTENTS, ids=short)
@pytest.mark.parametrize("path", ["/a.md", "/new.md"])
def test_bad_contents_are_an_error_and_write_nothing(
    world: World, path: str, content: Any, message: str
) -> None:
    for call in (
        lambda: world.mb.write(path, content),
        lambda: asyncio.run(world.mb.awrite(path, content)),
    ):
        assert re.search(message, error_of(unchanged(world, call)))
    if isinstance(content, str):  # an edit that would make it too big, or hold a surrogate
        edit = error_of(unchanged(world, lambda: world.mb.edit("/a.md", "alpha", content)))
        assert re.search(re.sub(r"is 10\d\d bytes", r"is \\d+ bytes", message), edit)


def test_uploads_that_are_not_text_or_too_big_write_nothing(world: World) -> None:
    for data, message in [
        (b"\xff\xfe", "is not UTF-8 text"),
        (b"x" * 1001, "content is 1001 bytes of UTF-8; the limit is 1000 bytes"),
        ("text", "must be bytes"),
    ]:
        assert message in error_of(
            unchanged(world, lambda d=data: world.mb.upload_files([("/u.md", d)]))
        )


def test_nul_is_content_like_any_other_character(world: World) -> None:
    assert world.mb.write("/nul.md", "a\x00b").error is None
    assert world.mb.download_files(["/nul.md"])[0].content == b"a\x00b"
    assert [m["line"] for m in world.mb.grep("\x00").matches or []] == [1]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda mb: mb.read("/a.md", offset="1"), "offset and limit must be ints"),
        (lambda mb: mb.read("/a.md", limit=None), "offset and limit must be ints"),
        (lambda mb: mb.read("/a.md", offset=True), "offset and limit must be ints"),
        (lambda mb: mb.edit("/a.md", None, "x"), "old_string and new_string must be str"),
        (lambda mb: mb.edit("/a.md", "", "x"), "old_string cannot be empty"),
        (lambda mb: mb.grep(None), "pattern (and glob, when given) must be str"),
        (lambda mb: mb.grep("a", glob=1), "pattern (and glob, when given) must be str"),
        (lambda mb: mb.grep("a", max_count="2"), "max_count must be None or an int"),
        (lambda mb: mb.glob(None), "pattern must be a str"),
        (lambda mb: mb.glob("{" + "a," * 10_000 + "}"), "Error: "),
    ],
)
def test_bad_arguments_are_an_error(world: World, call: Any, message: str) -> None:
    assert message in error_of(unchanged(world, lambda: call(world.mb)))


def test_huge_windows_are_tolerated(world: World) -> None:
    assert "exceeds file length" in error_of(world.mb.read("/a.md", offset=10**100))
    assert world.mb.read("/a.md", offset=-(10**100), limit=10**100).start_line == 1


def test_another_users_store_is_refused_at_construction(world: World) -> None:
    before = world.snapshot()
    with pytest.raises(MemoryStoreOwnershipError, match="belongs to another user"):
        ConvostoreMemoryBackend(world.db, world.bob_sid, user_id="alice")
    with pytest.raises(MemoryStoreNotFoundError, match="not found"):
        ConvostoreMemoryBackend(world.db, "memstore_nope", user_id="alice")
    for kwargs, message in [
        ({"memory_store_id": "a\x00"}, "memory_store_id must not contain NUL"),
        ({"memory_store_id": 7}, "memory_store_id must be a str, got int"),
        ({"user_id": "\ud800"}, r"user_id is not valid UTF-8 \(lone surrogate\)"),
        ({"max_attempts": 0}, "max_attempts must be between 1 and 100, got 0"),
        ({"max_attempts": 10**30}, "max_attempts must be between 1 and 100"),
    ]:
        args = {"memory_store_id": world.sid, "user_id": "alice", **kwargs}
        with pytest.raises(MemoryValidationError, match=message):
            ConvostoreMemoryBackend(world.db, args.pop("memory_store_id"), **args)
    with pytest.raises(MemoryValidationError, match="store must be a ConversationStore"):
        ConvostoreMemoryBackend(42, world.sid)  # type: ignore[arg-type]
    assert world.snapshot() == before


def test_a_store_deleted_under_the_backend_raises(world: World) -> None:
    world.db.delete_memory_store(world.sid)
    with pytest.raises(MemoryStoreNotFoundError):
        world.mb.write("/a.md", "x")
    assert world.mb.read("/a.md").error == "File '/a.md' not found"  # a read by path: nothing


def test_bobs_files_never_show_through_alices_backend(world: World) -> None:
    mb = world.mb
    seen = [mb.ls("/"), mb.grep("secret"), mb.glob("*"), mb.read("/bob.md")]
    seen.append(mb.download_files(["/bob.md"]))
    assert "bob's secret" not in repr(seen) and "/bob.md" not in repr(seen[:3])
