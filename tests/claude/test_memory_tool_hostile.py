"""Hostile input at every command of ConvostoreMemoryTool (through ``call``, the runner's entry
point), on every backend: paths outside /memories, traversal, percent-encoded separators, empty
segments, backslashes, NUL, control characters, lone surrogates, huge paths; huge, surrogate or
non-string text; bad line numbers and ranges; another user's store. Each is a ``ToolError`` (or
the core's error at construction) and the store is left exactly as it was."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from anthropic.types.beta import BetaMemoryTool20250818InsertCommand
from convostore import (
    ConversationStore,
    Limits,
    MemoryStoreNotFoundError,
    MemoryStoreOwnershipError,
    MemoryValidationError,
)
from convostore_claude import AsyncConvostoreMemoryTool, ConvostoreMemoryTool

BAD_PATHS: list[tuple[Any, str]] = [
    ("/memories/../x.md", "must not have an empty, '.' or '..' segment"),
    ("/memories/a/../../etc/passwd", "must not have an empty, '.' or '..' segment"),
    ("/memories/./a.md", "must not have an empty, '.' or '..' segment"),
    ("/memories//a.md", r"must be relative \(no leading '/'\)"),
    ("/memories/..%2Fx.md", "percent-encoded"),
    ("/memories/%2e%2e/x.md", "percent-encoded"),
    ("/memories/a%5Cb.md", "percent-encoded"),
    ("/memories%2F..%2Fx", "Path must start with /memories"),
    ("/memoriesx/a.md", "Path must start with /memories"),
    ("/etc/passwd", "Path must start with /memories"),
    ("memories/a.md", "Path must start with /memories"),
    ("", "Path must start with /memories"),
    ("/memories/a\\..\\b", "must not contain a backslash, a control character"),
    ("/memories/a\nb.md", "must not contain a backslash, a control character"),
    ("/memories/a\x85b.md", "a control character.*U\\+0085"),
    ("/memories/a\x9bb.md", "a control character.*U\\+009B"),
    ("/memories/a\u202eb.md", "an invisible formatting character.*U\\+202E"),
    ("/memories/a\u2066b.md", "an invisible formatting character.*U\\+2066"),
    ("/memories/a\u200bb.md", "an invisible formatting character.*U\\+200B"),
    ("/memories/a\ufeffb.md", "an invisible formatting character.*U\\+FEFF"),
    ("/memories/a\u2028b.md", "an invisible formatting character.*U\\+2028"),
    ("/memories/a\x00b", "must not contain NUL"),
    ("/memories/\ud800.md", r"not valid UTF-8 \(lone surrogate\)"),
    ("/memories/" + "x" * 1025, "must be 1 to 1024 bytes of UTF-8, got 1025 bytes"),
    (42, "path must be a string, got int"),
    (None, "path must be a string, got NoneType"),
]


class World:
    """Alice's store with two files, Bob's with one, and Alice's tool."""

    def __init__(self, db: ConversationStore) -> None:
        self.db = db
        self.sid = db.create_memory_store("alice's", user_id="alice").memory_store_id
        self.bob_sid = db.create_memory_store("bob's", user_id="bob").memory_store_id
        self.tool = ConvostoreMemoryTool(db, self.sid, user_id="alice")
        self.tool.call({"command": "create", "path": "/memories/a.md", "file_text": "alpha\n"})
        self.tool.call({"command": "create", "path": "/memories/d/b.md", "file_text": "beta\n"})
        db.create_memory(self.bob_sid, "bob.md", "bob's secret", user_id="bob")

    def snapshot(self) -> list[Any]:
        out = []
        for sid in (self.sid, self.bob_sid):
            listed = self.db.list_memory_versions(sid, limit=100).items
            out.append(
                (
                    self.db.get_memory_store(sid),
                    [self.db.get_memory_version(sid, v.version_id) for v in listed],
                )
            )
        return out

    def refused(self, command: dict[str, Any], message: str) -> None:
        before = self.snapshot()
        with pytest.raises(ToolError) as caught:
            self.tool.call(command)
        assert re.search(message, str(caught.value)), str(caught.value)
        with pytest.raises(ToolError):  # the async tool says the same
            asyncio.run(AsyncConvostoreMemoryTool(self.db, self.sid, user_id="alice").call(command))
        assert self.snapshot() == before


@pytest.fixture
def world(backend_url: str) -> Iterator[World]:
    with ConversationStore(backend_url, limits=Limits(max_memory_content_bytes=1000)) as db:
        yield World(db)


def short(value: Any) -> str:
    return repr(value)[:24]


COMMANDS = {
    "view": lambda p: {"command": "view", "path": p},
    "create": lambda p: {"command": "create", "path": p, "file_text": "x"},
    "str_replace": lambda p: {"command": "str_replace", "path": p, "old_str": "a", "new_str": "b"},
    "insert": lambda p: {"command": "insert", "path": p, "insert_line": 0, "insert_text": "x"},
    "delete": lambda p: {"command": "delete", "path": p},
    "rename_from": lambda p: {"command": "rename", "old_path": p, "new_path": "/memories/n.md"},
    "rename_to": lambda p: {"command": "rename", "old_path": "/memories/a.md", "new_path": p},
}


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize(("path", "message"), BAD_PATHS, ids=short)
def test_bad_paths_are_refused_and_write_nothing(
    world: World, name: str, path: Any, message: str
) -> None:
    world.refused(COMMANDS[name](path), message)


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (
            {"command": "create", "path": "/memories/n.md", "file_text": "x" * 1001},
            "content is 1001 bytes of UTF-8; the limit is 1000 bytes",
        ),
        (
            {"command": "create", "path": "/memories/n.md", "file_text": "lone \ud800"},
            r"content is not valid UTF-8 \(lone surrogate\)",
        ),
        (
            {"command": "create", "path": "/memories/n.md", "file_text": None},
            "file_text must be a string, got NoneType",
        ),
        (
            {
                "command": "str_replace",
                "path": "/memories/a.md",
                "old_str": "alpha",
                "new_str": "é" * 600,
            },
            r"content is \d+ bytes of UTF-8; the limit is 1000 bytes",
        ),
        (
            {
                "command": "str_replace",
                "path": "/memories/a.md",
                "old_str": "alpha",
                "new_str": "\udfff",
            },
            r"not valid UTF-8 \(lone surrogate\)",
        ),
        (
            {"command": "str_replace", "path": "/memories/a.md", "old_str": 1, "new_str": "x"},
            "old_str must be a string, got int",
        ),
        (
            {"command": "str_replace", "path": "/memories/a.md", "old_str": "a", "new_str": ["x"]},
            "new_str must be a string, got list",
        ),
        (
            {
                "command": "insert",
                "path": "/memories/a.md",
                "insert_line": 0,
                "insert_text": "x" * 1000,
            },
            r"content is \d+ bytes of UTF-8; the limit is 1000 bytes",
        ),
        (
            {
                "command": "insert",
                "path": "/memories/a.md",
                "insert_line": 10**100,
                "insert_text": "x",
            },
            r"Invalid `insert_line` parameter: 1000000000000000000000000000000000000000",
        ),
        (
            {"command": "insert", "path": "/memories/a.md", "insert_line": -1, "insert_text": "x"},
            r"within the range \[0, 1\]",
        ),
        (
            {"command": "view", "path": "/memories/a.md", "view_range": [1]},
            r"view_range must be a list of two integers",
        ),
        (
            {"command": "view", "path": "/memories/a.md", "view_range": "1-2"},
            r"view_range must be a list of two integers",
        ),
    ],
    ids=lambda v: v["command"] if isinstance(v, dict) else "",
)
def test_bad_text_and_numbers_are_refused_and_write_nothing(
    world: World, command: dict[str, Any], message: str
) -> None:
    world.refused(command, message)


def test_the_methods_check_what_the_sdk_would_coerce(world: World) -> None:
    """``call`` coerces loosely (b"x" becomes "x", "1" becomes 1); a caller of the methods
    themselves gets the types checked (a view_range is coerced even by ``model_construct``)."""
    insert = BetaMemoryTool20250818InsertCommand.model_construct
    before = world.snapshot()
    for method, command, message in [
        (world.tool.insert, insert(path="/memories/a.md", insert_line=0, insert_text=b"x"),
         "insert_text must be a string, got bytes"),
        (world.tool.insert, insert(path="/memories/a.md", insert_line="1", insert_text="x"),
         "insert_line must be an integer, got str"),
        (world.tool.insert, insert(path="/memories/a.md", insert_line=True, insert_text="x"),
         "insert_line must be an integer, got bool"),
    ]:  # fmt: skip
        with pytest.raises(ToolError, match=message):
            method(command)  # type: ignore[operator]
    assert world.snapshot() == before


def test_huge_view_ranges_and_nul_are_harmless(world: World) -> None:
    huge = world.tool.call(
        {"command": "view", "path": "/memories/a.md", "view_range": [-(10**100), 10**100]}
    )
    assert str(huge).endswith("     1\talpha\n     2\t")
    world.tool.call({"command": "create", "path": "/memories/nul.md", "file_text": "a\x00b"})
    assert str(world.tool.call({"command": "view", "path": "/memories/nul.md"})).endswith("a\x00b")


def test_another_users_store_is_refused_at_construction(world: World) -> None:
    before = world.snapshot()
    with pytest.raises(MemoryStoreOwnershipError, match="belongs to another user"):
        ConvostoreMemoryTool(world.db, world.bob_sid, user_id="alice")
    with pytest.raises(MemoryStoreOwnershipError):
        AsyncConvostoreMemoryTool(world.db, world.bob_sid, user_id="alice")
    with pytest.raises(MemoryStoreNotFoundError, match="not found"):
        ConvostoreMemoryTool(world.db, "memstore_nope")
    for kwargs, message in [
        ({"memory_store_id": "a\x00"}, "memory_store_id must not contain NUL"),
        ({"memory_store_id": None}, "memory_store_id must be a str, got NoneType"),
        ({"user_id": "\ud800"}, r"user_id is not valid UTF-8 \(lone surrogate\)"),
        ({"max_attempts": 0}, "max_attempts must be between 1 and 100, got 0"),
        ({"max_attempts": True}, "max_attempts must be an int, got bool"),
    ]:
        args = {"memory_store_id": world.sid, "user_id": "alice", **kwargs}
        with pytest.raises(MemoryValidationError, match=message):
            ConvostoreMemoryTool(world.db, args.pop("memory_store_id"), **args)
    with pytest.raises(MemoryValidationError, match="store must be a ConversationStore"):
        ConvostoreMemoryTool(b"sqlite://", world.sid)  # type: ignore[arg-type]
    assert world.snapshot() == before


def test_bobs_memories_never_show_through_alices_tool(world: World) -> None:
    seen = [world.tool.call({"command": "view", "path": "/memories"})]
    for path in ["/memories/bob.md", f"/memories/../{world.bob_sid}/bob.md"]:
        with pytest.raises(ToolError) as caught:
            world.tool.call({"command": "view", "path": path})
        seen.append(str(caught.value))
    assert "bob's secret" not in repr(seen) and "bob.md\n" not in str(seen[0])
