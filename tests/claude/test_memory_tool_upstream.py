"""The anthropic SDK's own tests of its file-system memory tool (its
``tests/lib/tools/memory_tools/test_filesystem.py``: ``TestBetaLocalFilesystemMemoryTool`` and
the async twin), ported to run on ConvostoreMemoryTool and AsyncConvostoreMemoryTool, on every
backend. The directory snapshot becomes the store's live entries (``memories/<path>``).

Left out: the three symlink tests (a memory store has no symlinks to escape through). Where
ours answers in other words on purpose, the test says so.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)
from convostore import ConversationStore
from convostore_claude import AsyncConvostoreMemoryTool, ConvostoreMemoryTool


class Tool:
    """The sync or the async tool, called the same way: ``tool.view(command)``."""

    def __init__(self, db: ConversationStore, flavour: str) -> None:
        self.db = db
        self.sid = db.create_memory_store("m").memory_store_id
        self.sync = ConvostoreMemoryTool(db, self.sid)
        self.flavour = flavour
        self.async_tool = AsyncConvostoreMemoryTool(db, self.sid)

    def __getattr__(self, name: str) -> Callable[[Any], Any]:
        if self.flavour == "sync":
            method: Callable[[Any], Any] = getattr(self.sync, name)
            return method
        return lambda command: asyncio.run(getattr(self.async_tool, name)(command))

    def snapshot(self) -> dict[str, str | None]:
        """What ``get_directory_snapshot`` gives of the SDK's directory: every live file."""
        out: dict[str, str | None] = {}
        after = None
        while True:
            page = self.db.list_memories(self.sid, limit=100, after=after)
            for item in page.items:
                entry = self.db.get_memory(self.sid, item.entry_id)
                out[f"memories/{item.path}"] = entry.content if entry else None
            if page.next_cursor is None:
                return out
            after = page.next_cursor


@pytest.fixture(params=["sync", "async"])
def tool(backend_url: str, request: pytest.FixtureRequest) -> Iterator[Tool]:
    with ConversationStore(backend_url) as db:
        yield Tool(db, request.param)


def create(tool: Tool, path: str, text: str) -> Any:
    return tool.create(
        BetaMemoryTool20250818CreateCommand(command="create", file_text=text, path=path)
    )


def view(tool: Tool, path: str, view_range: list[int] | None = None) -> Any:
    return tool.view(
        BetaMemoryTool20250818ViewCommand(command="view", path=path, view_range=view_range)
    )


def test_create(tool: Tool) -> None:
    result = create(tool, "/memories/test_file.txt", "Hello, World!")
    assert result == "File created successfully at: /memories/test_file.txt"
    assert tool.snapshot() == {"memories/test_file.txt": "Hello, World!"}


def test_create_nested_directories(tool: Tool) -> None:
    result = create(tool, "/memories/deep/nested/file.txt", "Nested file")
    assert result == "File created successfully at: /memories/deep/nested/file.txt"
    assert tool.snapshot() == {"memories/deep/nested/file.txt": "Nested file"}


def test_create_error_if_file_already_exists(tool: Tool) -> None:
    create(tool, "/memories/existing.txt", "Original")
    with pytest.raises(ToolError, match=re.escape("File /memories/existing.txt already exists")):
        create(tool, "/memories/existing.txt", "New")


def test_view_file(tool: Tool) -> None:
    create(tool, "/memories/view_test.txt", "Line 1\nLine 2\nLine 3")
    assert view(tool, "/memories/view_test.txt") == (
        "Here's the content of /memories/view_test.txt with line numbers:\n"
        "     1\tLine 1\n     2\tLine 2\n     3\tLine 3"
    )


def test_view_directory(tool: Tool) -> None:
    create(tool, "/memories/dir/file1.txt", "File 1")
    create(tool, "/memories/dir/file2.txt", "File 2")
    result = view(tool, "/memories/dir")
    assert "Here're the files and directories up to 2 levels deep in /memories/dir" in result
    assert "/memories/dir" in result
    assert "/memories/dir/file1.txt" in result
    assert "/memories/dir/file2.txt" in result


def test_view_file_with_range(tool: Tool) -> None:
    create(tool, "/memories/range_test.txt", "Line 1\nLine 2\nLine 3\nLine 4\nLine 5")
    assert view(tool, "/memories/range_test.txt", [2, 4]) == (
        "Here's the content of /memories/range_test.txt with line numbers:\n"
        "     2\tLine 2\n     3\tLine 3\n     4\tLine 4"
    )


def test_view_error_for_non_existent_file(tool: Tool) -> None:
    with pytest.raises(
        ToolError,
        match=re.escape("The path /memories/nonexistent.txt does not exist. Please provide"),
    ):
        view(tool, "/memories/nonexistent.txt")


def test_view_error_for_files_with_too_many_lines(tool: Tool) -> None:
    create(tool, "/memories/huge.txt", "\n".join(["line"] * 1000000))
    with pytest.raises(ToolError, match=r"exceeds maximum line limit of 999,999 lines"):
        view(tool, "/memories/huge.txt")
    with pytest.raises(ToolError, match=r"exceeds maximum line limit of 999,999 lines"):
        view(tool, "/memories/huge.txt", [1, 2])  # the SDK counts before it takes a range


def test_view_of_exactly_the_most_lines_the_sdk_shows(tool: Tool) -> None:
    """(Ours) The limit's edge: 999,999 lines are shown."""
    create(tool, "/memories/big.txt", "\n".join(["line"] * 999_999))
    assert view(tool, "/memories/big.txt", [999_999, -1]).endswith("999999\tline")


def test_str_replace(tool: Tool) -> None:
    create(tool, "/memories/replace_test.txt", "Line 1\nOld Text\nLine 3")
    result = tool.str_replace(
        BetaMemoryTool20250818StrReplaceCommand(
            command="str_replace",
            path="/memories/replace_test.txt",
            old_str="Old Text",
            new_str="New Text",
        )
    )
    assert result == (
        "The memory file has been edited. Here is the snippet showing the change (with line"
        " numbers):\n     1\tLine 1\n     2\tNew Text\n     3\tLine 3"
    )
    assert tool.snapshot() == {"memories/replace_test.txt": "Line 1\nNew Text\nLine 3"}


def test_str_replace_error_when_string_not_found(tool: Tool) -> None:
    create(tool, "/memories/replace_test.txt", "Hello, World!")
    with pytest.raises(
        ToolError,
        match=re.escape(
            "No replacement was performed, old_str `NotFound` did not appear verbatim in"
            " /memories/replace_test.txt."
        ),
    ):
        tool.str_replace(
            BetaMemoryTool20250818StrReplaceCommand(
                command="str_replace",
                path="/memories/replace_test.txt",
                old_str="NotFound",
                new_str="Python",
            )
        )


def test_str_replace_error_when_string_appears_multiple_times(tool: Tool) -> None:
    create(tool, "/memories/replace_test.txt", "Hello\nMiddle\nHello")
    with pytest.raises(
        ToolError,
        match=r"No replacement was performed\. Multiple occurrences of old_str `Hello` in"
        r" lines: 1, 3\. Please ensure it is unique",
    ):
        tool.str_replace(
            BetaMemoryTool20250818StrReplaceCommand(
                command="str_replace",
                path="/memories/replace_test.txt",
                old_str="Hello",
                new_str="Hi",
            )
        )


def test_str_replace_error_for_non_existent_file(tool: Tool) -> None:
    with pytest.raises(
        ToolError,
        match=re.escape("The path /memories/nonexistent.txt does not exist. Please provide"),
    ):
        tool.str_replace(
            BetaMemoryTool20250818StrReplaceCommand(
                command="str_replace", path="/memories/nonexistent.txt", old_str="o", new_str="n"
            )
        )


def insert(tool: Tool, path: str, line: int, text: str) -> Any:
    return tool.insert(
        BetaMemoryTool20250818InsertCommand(
            command="insert", path=path, insert_line=line, insert_text=text
        )
    )


def test_insert(tool: Tool) -> None:
    create(tool, "/memories/insert_test.txt", "Line 1\nLine 2")
    result = insert(tool, "/memories/insert_test.txt", 1, "Inserted Line")
    assert result == "The file /memories/insert_test.txt has been edited."
    assert tool.snapshot() == {"memories/insert_test.txt": "Line 1\nInserted Line\nLine 2\n"}


def test_insert_at_beginning_of_file(tool: Tool) -> None:
    create(tool, "/memories/insert_test.txt", "Line 1\nLine 2")
    insert(tool, "/memories/insert_test.txt", 0, "First Line")
    assert tool.snapshot() == {"memories/insert_test.txt": "First Line\nLine 1\nLine 2\n"}


def test_insert_at_end_of_file(tool: Tool) -> None:
    create(tool, "/memories/insert_test.txt", "Line 1\nLine 2")
    insert(tool, "/memories/insert_test.txt", 2, "Last Line")
    assert tool.snapshot() == {"memories/insert_test.txt": "Line 1\nLine 2\nLast Line\n"}


def test_insert_error_for_non_existent_file(tool: Tool) -> None:
    with pytest.raises(
        ToolError,
        match=re.escape("The path /memories/nonexistent.txt does not exist. Please provide"),
    ):
        insert(tool, "/memories/nonexistent.txt", 0, "text")


def test_insert_error_for_invalid_insert_line(tool: Tool) -> None:
    create(tool, "/memories/insert_test.txt", "Line 1\nLine 2")
    with pytest.raises(
        ToolError,
        match=r"Invalid `insert_line` parameter: 10. It should be within the range \[0, 2\]",
    ):
        insert(tool, "/memories/insert_test.txt", 10, "text")


def delete(tool: Tool, path: str) -> Any:
    return tool.delete(BetaMemoryTool20250818DeleteCommand(command="delete", path=path))


def test_delete(tool: Tool) -> None:
    create(tool, "/memories/delete_me.txt", "To be deleted")
    assert delete(tool, "/memories/delete_me.txt") == "Successfully deleted /memories/delete_me.txt"
    assert tool.snapshot() == {}


def test_delete_directory(tool: Tool) -> None:
    create(tool, "/memories/subdir/file.txt", "Content")
    assert delete(tool, "/memories/subdir") == "Successfully deleted /memories/subdir"
    assert tool.snapshot() == {}


def test_delete_error_when_file_not_found(tool: Tool) -> None:
    with pytest.raises(
        ToolError, match=re.escape("The path /memories/nonexistent.txt does not exist")
    ):
        delete(tool, "/memories/nonexistent.txt")


def test_delete_not_allow_deleting_memories_directory(tool: Tool) -> None:
    with pytest.raises(ToolError, match="Cannot delete the /memories directory itself"):
        delete(tool, "/memories")


def rename(tool: Tool, old: str, new: str) -> Any:
    return tool.rename(
        BetaMemoryTool20250818RenameCommand(command="rename", old_path=old, new_path=new)
    )


def test_rename(tool: Tool) -> None:
    create(tool, "/memories/old_name.txt", "Original content")
    assert rename(tool, "/memories/old_name.txt", "/memories/new_name.txt") == (
        "Successfully renamed /memories/old_name.txt to /memories/new_name.txt"
    )
    assert tool.snapshot() == {"memories/new_name.txt": "Original content"}


def test_rename_to_nested_path(tool: Tool) -> None:
    create(tool, "/memories/file.txt", "Content")
    assert rename(tool, "/memories/file.txt", "/memories/nested/dir/file.txt") == (
        "Successfully renamed /memories/file.txt to /memories/nested/dir/file.txt"
    )
    assert tool.snapshot() == {"memories/nested/dir/file.txt": "Content"}


def test_rename_error_when_source_not_found(tool: Tool) -> None:
    with pytest.raises(
        ToolError, match=re.escape("The path /memories/nonexistent.txt does not exist")
    ):
        rename(tool, "/memories/nonexistent.txt", "/memories/new.txt")


def test_rename_error_when_destination_exists(tool: Tool) -> None:
    create(tool, "/memories/file1.txt", "File 1")
    create(tool, "/memories/file2.txt", "File 2")
    with pytest.raises(
        ToolError, match=re.escape("The destination /memories/file2.txt already exists")
    ):
        rename(tool, "/memories/file1.txt", "/memories/file2.txt")


def test_path_validation_reject_paths_not_starting_with_memories(tool: Tool) -> None:
    with pytest.raises(ToolError, match="Path must start with /memories"):
        create(tool, "/invalid/path.txt", "Invalid")


def test_path_validation_reject_paths_trying_to_escape_memories(tool: Tool) -> None:
    """The SDK says "Path /memories/../../../etc/passwd would escape /memories directory";
    ours names the rule the core applies to every path (no ``..`` segment at all)."""
    with pytest.raises(
        ToolError,
        match=r"Invalid path /memories/\.\./\.\./\.\./etc/passwd: path must not have an empty,"
        r" '\.' or '\.\.' segment",
    ):
        create(tool, "/memories/../../../etc/passwd", "Escape attempt")
    assert tool.snapshot() == {}


def test_str_replace_and_insert_on_a_directory_say_it_is_not_a_file(tool: Tool) -> None:
    """(The SDK's own tool's answer, which its tests do not pin.)"""
    create(tool, "/memories/d/f.txt", "x")
    with pytest.raises(ToolError, match=r"^The path /memories/d is not a file\.$"):
        tool.str_replace(
            BetaMemoryTool20250818StrReplaceCommand(
                command="str_replace", path="/memories/d", old_str="x", new_str="y"
            )
        )
    with pytest.raises(ToolError, match=r"^The path /memories/d is not a file\.$"):
        insert(tool, "/memories/d", 0, "text")
    assert tool.snapshot() == {"memories/d/f.txt": "x"}
