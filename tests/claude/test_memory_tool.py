"""ConvostoreMemoryTool in the anthropic SDK's tool runner, on every backend, with the Messages
API scripted over HTTP (examples/claude_memory_tool.py): the SDK and the handler run for real.
Memory written in one run is read by another process, every command is a version of the store
(a rename keeps the entry and its history), concurrent edits lose nothing, and a redacted
version is unreadable through every command."""

from __future__ import annotations

import subprocess
import sys
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from anthropic import AsyncAnthropic
from anthropic.lib.tools import ToolError
from convostore import ConversationStore
from convostore_claude import AsyncConvostoreMemoryTool, ConvostoreMemoryTool

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "claude_memory_tool.py"
sys.path.insert(0, str(EXAMPLE.parent))

from claude_memory_tool import (  # noqa: E402
    END,
    USER,
    ScriptedMessagesAPI,
    ask,
    history,
    memory_store_id,
)


def run_example(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def versions(db: ConversationStore, sid: str) -> list[tuple[str, str, str, int, str | None]]:
    """Every version of the store: entry id, operation, path, version, content."""
    out = []
    for v in db.list_memory_versions(sid, limit=100).items:
        full = db.get_memory_version(sid, v.version_id)
        out.append((v.entry_id, v.operation, v.path, v.version, full.content if full else None))
    return out


def test_the_runner_views_creates_edits_inserts_renames_and_deletes(shared_url: str) -> None:
    api = ScriptedMessagesAPI()
    assert ask(shared_url, "remember: dark mode", api) == (
        "File created successfully at: /memories/notes.md"
    )
    assert "- dark mode\n     3\t- large fonts" in ask(shared_url, "remember: large fonts", api)
    assert "     3\t- large fonts\n     4\t<!-- end -->" in ask(shared_url, "recall", api)
    tidy = ask(shared_url, "tidy", api)
    assert tidy.splitlines()[1:] == [
        "71B\t/memories",
        "71B\t/memories/archive/",
        "71B\t/memories/archive/notes.md",
    ]
    assert "     2\t(kept by the assistant)" in ask(shared_url, "/memories/archive/notes.md", api)
    assert ask(shared_url, "forget everything", api) == "Successfully deleted /memories/archive"
    # the SDK ran its default loop: a thread created, then continued with the new messages only
    assert [r.get("thread", {}).get("type") for r in api.requests[:3]] == [
        "create",
        "continue",
        "continue",
    ]
    with ConversationStore(shared_url) as db:
        sid = memory_store_id(db)
        got = versions(db, sid)
        assert len({entry for entry, *_ in got}) == 1  # one entry: the rename kept it
        assert [(op, path, n) for _, op, path, n, _ in got] == [
            ("create", "notes.md", 1),
            ("update", "notes.md", 2),
            ("update", "notes.md", 3),
            ("update", "archive/notes.md", 4),  # the rename, with the content carried over
            ("delete", "archive/notes.md", 5),
        ]
        assert got[3][4] == f"# Notes\n(kept by the assistant)\n- dark mode\n- large fonts\n{END}\n"
        assert db.get_memory_store(sid).entry_count == 0  # type: ignore[union-attr]


def test_memory_written_in_one_run_is_read_by_another_process(shared_url: str) -> None:
    ask(shared_url, "remember: the deploy is on Tuesday")  # this process
    assert "- the deploy is on Tuesday" in run_example("--url", shared_url, "recall")
    run_example("--url", shared_url, "remember: tabs, not spaces")  # and back
    assert "- tabs, not spaces" in ask(shared_url, "recall")
    assert history(shared_url, "notes.md") == ["v1 create notes.md", "v2 update notes.md"]


def test_the_example_runs_as_a_script() -> None:
    out = run_example()
    assert "File created successfully at: /memories/notes.md" in out
    assert "history: v1 create notes.md; v2 update notes.md; v3 update notes.md;" in out
    assert "v4 update archive/notes.md" in out


def test_the_async_runner_runs_the_async_tool(backend_url: str) -> None:
    import asyncio

    async def go() -> list[str]:
        api = ScriptedMessagesAPI()
        client = AsyncAnthropic(
            api_key="scripted",
            base_url="http://scripted.invalid",
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(api)),
        )
        with ConversationStore(backend_url) as db:
            tool = AsyncConvostoreMemoryTool(db, memory_store_id(db), user_id=USER)
            answers = []
            for text in ["remember: async", "remember: works", "recall"]:
                runner = client.beta.messages.tool_runner(
                    model="claude-sonnet-5-5",
                    max_tokens=100,
                    messages=[{"role": "user", "content": text}],
                    tools=[tool],
                )
                final = await runner.until_done()
                answers.append("".join(b.text for b in final.content if b.type == "text"))
            return answers

    answers = asyncio.run(go())
    assert answers[0] == "File created successfully at: /memories/notes.md"
    assert "     2\t- async\n     3\t- works" in answers[2]


def test_a_refused_command_reaches_the_model_as_an_error_result(shared_url: str) -> None:
    api = ScriptedMessagesAPI()
    answer = ask(shared_url, "/memories/../etc/passwd", api)
    result = api.requests[-1]["messages"][-1]["content"][0]
    assert result["is_error"] is True and result["type"] == "tool_result"
    assert "must not have an empty, '.' or '..' segment" in answer
    with ConversationStore(shared_url) as db:
        assert db.list_memory_versions(memory_store_id(db)).items == []


# -- the commands, through the SDK's own entry point (``call``, as the runner calls it) ------


@pytest.fixture
def db(backend_url: str) -> Any:
    with ConversationStore(backend_url) as store:
        yield store


@pytest.fixture
def tool(db: ConversationStore) -> ConvostoreMemoryTool:
    return ConvostoreMemoryTool(db, db.create_memory_store("m").memory_store_id)


def call(tool: ConvostoreMemoryTool, **command: Any) -> str:
    return str(tool.call(command))


def refused(tool: ConvostoreMemoryTool, **command: Any) -> str:
    before = versions(tool.store, tool.memory_store_id)
    with pytest.raises(ToolError) as caught:
        tool.call(command)
    assert versions(tool.store, tool.memory_store_id) == before
    return str(caught.value)


def test_view_lists_two_levels_without_hidden_items(tool: ConvostoreMemoryTool) -> None:
    for path, text in [
        ("a.md", "x" * 2048),
        ("d/b.md", "bb"),
        ("d/e/c.md", "ccc"),
        ("d/e/f/g.md", "g"),
        (".hidden/h.md", "h"),
        ("d/.h.md", "h"),
    ]:
        call(tool, command="create", path=f"/memories/{path}", file_text=text)
    listing = call(tool, command="view", path="/memories").splitlines()
    assert listing == [
        "Here're the files and directories up to 2 levels deep in /memories,"
        " excluding hidden items:",
        "2.0K\t/memories",
        "2K\t/memories/a.md",
        "6B\t/memories/d/",
        "2B\t/memories/d/b.md",
        "4B\t/memories/d/e/",
    ]
    assert call(tool, command="view", path="/memories/d/").splitlines()[1:] == [
        "7B\t/memories/d",
        "2B\t/memories/d/b.md",
        "4B\t/memories/d/e/",
        "3B\t/memories/d/e/c.md",
        "1B\t/memories/d/e/f/",
    ]
    assert "does not exist" in refused(tool, command="view", path="/memories/nothing")


def test_view_of_a_file_numbers_its_lines_within_a_range(tool: ConvostoreMemoryTool) -> None:
    call(tool, command="create", path="/memories/f.md", file_text="one\ntwo\nthree\nfour")
    head = "Here's the content of /memories/f.md with line numbers:\n"
    assert call(tool, command="view", path="/memories/f.md") == head + (
        "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour"
    )
    window = call(tool, command="view", path="/memories/f.md", view_range=[2, 3])
    assert window == head + "     2\ttwo\n     3\tthree"
    assert call(tool, command="view", path="/memories/f.md", view_range=[3, -1]).endswith(
        "     3\tthree\n     4\tfour"
    )
    assert call(tool, command="view", path="/memories/f.md", view_range=[9, 12]) == head


def test_create_refuses_an_existing_file(tool: ConvostoreMemoryTool) -> None:
    call(tool, command="create", path="/memories/a.md", file_text="1")
    assert refused(tool, command="create", path="/memories/a.md", file_text="2") == (
        "File /memories/a.md already exists"
    )
    assert "is a directory" in refused(tool, command="create", path="/memories", file_text="x")


def test_str_replace_needs_exactly_one_occurrence(tool: ConvostoreMemoryTool) -> None:
    call(tool, command="create", path="/memories/a.md", file_text="x\ny x\nz")
    assert "Multiple occurrences of old_str `x` in lines: 1, 2" in refused(
        tool, command="str_replace", path="/memories/a.md", old_str="x", new_str="q"
    )
    assert "did not appear verbatim" in refused(
        tool, command="str_replace", path="/memories/a.md", old_str="w", new_str="q"
    )
    out = call(tool, command="str_replace", path="/memories/a.md", old_str="z", new_str="Z")
    assert out.endswith("     1\tx\n     2\ty x\n     3\tZ")
    assert "does not exist" in refused(
        tool, command="str_replace", path="/memories/b.md", old_str="x", new_str="y"
    )


def test_insert_puts_a_line_after_the_one_named(tool: ConvostoreMemoryTool) -> None:
    call(tool, command="create", path="/memories/a.md", file_text="one\ntwo\n")
    call(tool, command="insert", path="/memories/a.md", insert_line=0, insert_text="zero\n")
    call(tool, command="insert", path="/memories/a.md", insert_line=3, insert_text="three")
    entry = tool.store.get_memory_by_path(tool.memory_store_id, "a.md")
    assert entry is not None and entry.content == "zero\none\ntwo\nthree\n"
    assert "within the range [0, 4]" in refused(
        tool, command="insert", path="/memories/a.md", insert_line=5, insert_text="x"
    )


def test_delete_removes_a_file_or_a_directory_keeping_the_history(
    tool: ConvostoreMemoryTool,
) -> None:
    for path in ["a.md", "d/b.md", "d/e/c.md", "dx.md"]:
        call(tool, command="create", path=f"/memories/{path}", file_text=path)
    assert call(tool, command="delete", path="/memories/d") == "Successfully deleted /memories/d"
    call(tool, command="delete", path="/memories/a.md")
    assert [e.path for e in tool.store.list_memories(tool.memory_store_id).items] == ["dx.md"]
    assert "does not exist" in refused(tool, command="delete", path="/memories/d")
    assert "Cannot delete the /memories directory itself" in refused(
        tool, command="delete", path="/memories"
    )
    ops = [v[1] for v in versions(tool.store, tool.memory_store_id)]
    assert ops == ["create"] * 4 + ["delete"] * 3


def test_rename_moves_entries_with_their_history(tool: ConvostoreMemoryTool) -> None:
    call(tool, command="create", path="/memories/a.md", file_text="a")
    call(tool, command="create", path="/memories/d/b.md", file_text="b")
    call(tool, command="create", path="/memories/d/e/c.md", file_text="c")
    a = tool.store.get_memory_by_path(tool.memory_store_id, "a.md")
    call(tool, command="rename", old_path="/memories/a.md", new_path="/memories/x/a.md")
    moved = tool.store.get_memory_by_path(tool.memory_store_id, "x/a.md")
    assert a is not None and moved is not None and moved.entry_id == a.entry_id
    assert (moved.version, moved.content) == (2, "a")
    call(tool, command="rename", old_path="/memories/d", new_path="/memories/n")
    paths = [e.path for e in tool.store.list_memories(tool.memory_store_id).items]
    assert paths == ["n/b.md", "n/e/c.md", "x/a.md"]
    for old, new, message in [
        ("/memories/x/a.md", "/memories/n/b.md", "already exists"),
        ("/memories/x/a.md", "/memories/n", "already exists"),
        ("/memories/n", "/memories/n/m", "into itself"),
        ("/memories/none", "/memories/z", "does not exist"),
        ("/memories", "/memories/z", "Cannot rename the /memories directory itself"),
        ("/memories/x/a.md", "/memories", "already exists"),
    ]:
        assert message in refused(tool, command="rename", old_path=old, new_path=new)


def test_a_path_typed_decomposed_names_the_same_file(tool: ConvostoreMemoryTool) -> None:
    """The core keeps paths in NFC: ``café`` typed decomposed (NFD) is the same file and
    directory, in every command, and what the tool shows is the stored (NFC) path."""
    nfd = unicodedata.normalize("NFD", "café")
    call(tool, command="create", path=f"/memories/{nfd}/menu.md", file_text="soup\n")
    assert "already exists" in refused(
        tool, command="create", path="/memories/café/menu.md", file_text="x"
    )
    assert call(tool, command="view", path=f"/memories/{nfd}").splitlines()[1:] == [
        "5B\t/memories/café",
        "5B\t/memories/café/menu.md",
    ]
    assert "soup" in call(tool, command="view", path=f"/memories/{nfd}/menu.md")
    call(tool, command="rename", old_path=f"/memories/{nfd}", new_path="/memories/bistro")
    paths = [e.path for e in tool.store.list_memories(tool.memory_store_id).items]
    assert paths == ["bistro/menu.md"]
    call(tool, command="rename", old_path="/memories/bistro", new_path=f"/memories/{nfd}")
    call(tool, command="delete", path=f"/memories/{nfd}")
    assert tool.store.list_memories(tool.memory_store_id).items == []
    moves = [v[2] for v in versions(tool.store, tool.memory_store_id)]
    assert moves == ["café/menu.md", "bistro/menu.md", "café/menu.md", "café/menu.md"]


def test_clear_all_memory_deletes_every_file(tool: ConvostoreMemoryTool) -> None:
    call(tool, command="create", path="/memories/a.md", file_text="a")
    call(tool, command="create", path="/memories/d/b.md", file_text="b")
    assert tool.clear_all_memory() == "All memory cleared"
    assert tool.store.list_memories(tool.memory_store_id).items == []
    assert len(versions(tool.store, tool.memory_store_id)) == 4


# -- concurrent edits ------------------------------------------------------------------------


class Interleaved(ConversationStore):
    """A real store on which another writer gets in between a read and the update after it:
    before each of the next ``times`` calls of ``update_memory``, ``meanwhile()`` runs."""

    meanwhile: Callable[[], Any] = staticmethod(lambda: None)
    times = 0

    def update_memory(self, *args: Any, **kwargs: Any) -> Any:
        if self.times > 0:
            self.times -= 1
            self.meanwhile()
        return super().update_memory(*args, **kwargs)


@contextmanager
def two_tools(
    url: str, content: str
) -> Iterator[tuple[ConvostoreMemoryTool, ConvostoreMemoryTool]]:
    """Theirs on one connection, mine on an ``Interleaved`` one; both on one memory store."""
    with ConversationStore(url) as db:
        sid = db.create_memory_store("s").memory_store_id
    with ConvostoreMemoryTool(url, sid) as theirs, Interleaved(url) as interleaved:
        theirs.call({"command": "create", "path": "/memories/s.md", "file_text": content})
        yield theirs, ConvostoreMemoryTool(interleaved, sid, max_attempts=3)


def contents(tool: ConvostoreMemoryTool) -> list[str | None]:
    return [v[4] for v in versions(tool.store, tool.memory_store_id)]


def test_an_edit_from_a_stale_version_is_reapplied_on_the_new_one(shared_url: str) -> None:
    with two_tools(shared_url, "a\nEND\n") as (theirs, mine):
        store: Any = mine.store
        store.meanwhile = lambda: theirs.call(
            {"command": "insert", "path": "/memories/s.md", "insert_line": 0, "insert_text": "0"}
        )
        store.times = 1
        mine.call(
            {
                "command": "str_replace",
                "path": "/memories/s.md",
                "old_str": "END",
                "new_str": "b\nEND",
            }
        )
        assert contents(mine) == ["a\nEND\n", "0\na\nEND\n", "0\na\nb\nEND\n"]
        store.times = 1  # an insert is an edit too
        mine.call(
            {"command": "insert", "path": "/memories/s.md", "insert_line": 1, "insert_text": "1"}
        )
        assert contents(mine)[-2:] == ["0\n0\na\nb\nEND\n", "0\n1\n0\na\nb\nEND\n"]


def test_an_edit_whose_text_changed_concurrently_writes_nothing(shared_url: str) -> None:
    with two_tools(shared_url, "colour: blue\n") as (theirs, mine):
        store: Any = mine.store
        store.meanwhile = lambda: theirs.call(
            {
                "command": "str_replace",
                "path": "/memories/s.md",
                "old_str": "blue",
                "new_str": "green",
            }
        )
        store.times = 1
        with pytest.raises(ToolError, match="did not appear verbatim"):
            mine.call(
                {
                    "command": "str_replace",
                    "path": "/memories/s.md",
                    "old_str": "blue",
                    "new_str": "red",
                }
            )
        assert contents(mine) == ["colour: blue\n", "colour: green\n"]


def test_an_edit_that_keeps_conflicting_gives_up_and_writes_nothing(shared_url: str) -> None:
    with two_tools(shared_url, "x\n") as (theirs, mine):
        store: Any = mine.store
        store.meanwhile = lambda: theirs.call(
            {"command": "insert", "path": "/memories/s.md", "insert_line": 0, "insert_text": "t"}
        )
        store.times = 3
        with pytest.raises(ToolError, match="changed 3 times while this edit was made"):
            mine.call(
                {
                    "command": "insert",
                    "path": "/memories/s.md",
                    "insert_line": 0,
                    "insert_text": "m",
                }
            )
        assert [c for c in contents(mine) if c and c.startswith("m")] == []
        assert len(contents(mine)) == 4


def test_a_rename_carries_a_concurrent_edit_along(shared_url: str) -> None:
    with two_tools(shared_url, "v1\n") as (theirs, mine):
        store: Any = mine.store
        store.meanwhile = lambda: theirs.call(
            {"command": "str_replace", "path": "/memories/s.md", "old_str": "v1", "new_str": "v2"}
        )
        store.times = 1
        mine.call({"command": "rename", "old_path": "/memories/s.md", "new_path": "/memories/t.md"})
        moved = mine.store.get_memory_by_path(mine.memory_store_id, "t.md")
        assert moved is not None and (moved.content, moved.version) == ("v2\n", 3)


# -- redaction -------------------------------------------------------------------------------

SECRET = "MARKER-51e0c2"


def test_a_redacted_version_is_unreadable_through_every_command(backend_url: str) -> None:
    with ConversationStore(backend_url) as db:
        sid = db.create_memory_store("r", user_id=USER).memory_store_id
        tool = ConvostoreMemoryTool(db, sid, user_id=USER)
        tool.call({"command": "create", "path": "/memories/s.md", "file_text": f"{SECRET}\n"})
        db.redact_memory_version(sid, db.list_memory_versions(sid).items[0].version_id)
        seen = [tool.call({"command": "view", "path": "/memories"})]
        for command in [
            {"command": "view", "path": "/memories/s.md"},
            {"command": "view", "path": "/memories/s.md", "view_range": [1, 1]},
            {"command": "str_replace", "path": "/memories/s.md", "old_str": SECRET, "new_str": "x"},
            {"command": "insert", "path": "/memories/s.md", "insert_line": 0, "insert_text": "x"},
            {"command": "rename", "old_path": "/memories/s.md", "new_path": "/memories/t.md"},
            {"command": "create", "path": "/memories/s.md", "file_text": "x"},
        ]:
            with pytest.raises(ToolError) as caught:
                tool.call(command)
            seen.append(str(caught.value).replace(f"`{SECRET}`", "`<the caller's old_str>`"))
        assert SECRET not in repr(seen)
        assert "its current version was redacted" in seen[1]
        assert "/memories/s.md" in str(seen[0])  # listed: path and size, no content
        assert [v.redacted for v in db.list_memory_versions(sid).items] == [True]
        tool.call({"command": "delete", "path": "/memories/s.md"})  # deleting it is fine
        assert [v.operation for v in db.list_memory_versions(sid).items] == ["create", "delete"]


def test_through_the_runner_a_redacted_file_never_reaches_the_model(shared_url: str) -> None:
    ask(shared_url, f"remember: the code is {SECRET}")
    with ConversationStore(shared_url) as db:
        sid = memory_store_id(db)
        db.redact_memory_version(sid, db.list_memory_versions(sid).items[0].version_id)
    api = ScriptedMessagesAPI()
    answer = ask(shared_url, "recall", api)
    assert "its current version was redacted" in answer
    assert SECRET not in repr(api.requests)  # nothing the model was sent holds it
    assert SECRET not in run_example("--url", shared_url, "recall")  # nor in another process
