"""ConvostoreMemoryBackend, call by call, on every backend: the DeepAgents protocol over one
memory store (paths, directories, the read window, create-or-replace, optimistic edits,
recursive deletes, grep, glob, upload and download, the async twins), and every change a
version of the store."""

from __future__ import annotations

import asyncio
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from convostore import AsyncConversationStore, ConversationStore
from convostore_langgraph import ConvostoreMemoryBackend
from deepagents.backends import CompositeBackend, StateBackend

USER = "alice"


@pytest.fixture
def sid(cstore: ConversationStore) -> str:
    return cstore.create_memory_store("notes", user_id=USER).memory_store_id


@pytest.fixture
def mb(cstore: ConversationStore, sid: str) -> ConvostoreMemoryBackend:
    return ConvostoreMemoryBackend(cstore, sid, user_id=USER)


def versions(db: ConversationStore, sid: str) -> list[tuple[str, str, int, str | None]]:
    """Every version of the store, oldest first: operation, path, version, content."""
    out = []
    for v in db.list_memory_versions(sid, limit=100).items:
        full = db.get_memory_version(sid, v.version_id)
        assert full is not None
        out.append((v.operation, v.path, v.version, full.content))
    return out


def paths(result: Any) -> list[str]:
    return [info["path"] for info in (result.entries if hasattr(result, "entries") else result)]


def test_paths_map_to_relative_store_paths_and_back(
    mb: ConvostoreMemoryBackend, cstore: ConversationStore, sid: str
) -> None:
    assert mb.write("/notes/2026/05/daily.md", "x").path == "/notes/2026/05/daily.md"
    entry = cstore.get_memory_by_path(sid, "notes/2026/05/daily.md")
    assert entry is not None and entry.content == "x"
    assert mb.memory_store_id == sid and mb.store is cstore


def test_ls_lists_the_immediate_children_with_implied_directories(
    mb: ConvostoreMemoryBackend,
) -> None:
    for path in ["/a.md", "/notes/b.md", "/notes/deep/c.md", "/notesx.md", "/z/y/x.md"]:
        assert mb.write(path, path).error is None
    root = mb.ls("/")
    assert paths(root) == ["/a.md", "/notes/", "/notesx.md", "/z/"]
    assert [i["is_dir"] for i in root.entries or []] == [False, True, False, True]
    assert paths(mb.ls("/notes")) == paths(mb.ls("/notes/")) == ["/notes/b.md", "/notes/deep/"]
    b = mb.ls("/notes").entries or []
    assert b[0]["size"] == len("/notes/b.md") and b[0]["modified_at"].endswith("+00:00")
    assert mb.ls("/nothing").entries == []
    assert mb.ls("/a.md").entries == []  # a file is not a directory (as StoreBackend)


def test_sizes_count_utf8_bytes(mb: ConvostoreMemoryBackend) -> None:
    mb.write("/é.md", "é" * 10)
    assert (mb.ls("/").entries or [])[0]["size"] == 20


def test_read_returns_the_raw_window_with_its_position(mb: ConvostoreMemoryBackend) -> None:
    mb.write("/f.md", "".join(f"line {i}\n" for i in range(1, 11)))
    whole = mb.read("/f.md")
    assert whole.file_data is not None and whole.file_data["content"].startswith("line 1\n")
    assert (whole.start_line, whole.end_line, whole.total_lines) == (1, 10, 10)
    window = mb.read("/f.md", offset=3, limit=2)
    assert window.file_data is not None and window.file_data["content"] == "line 4\nline 5\n"
    assert (window.start_line, window.end_line, window.next_offset) == (4, 5, 5)
    assert mb.read("/f.md", offset=-5, limit=1).start_line == 1  # tolerated, as the protocol asks
    assert mb.read("/f.md", limit=0).no_lines_requested
    assert "exceeds file length" in str(mb.read("/f.md", offset=50).error)
    assert mb.read("/missing.md").error == "File '/missing.md' not found"


def test_write_creates_then_replaces_keeping_every_version(
    mb: ConvostoreMemoryBackend, cstore: ConversationStore, sid: str
) -> None:
    assert mb.write("/p.md", "one").error is None
    assert mb.write("/p.md", "two").error is None  # the protocol: replace it entirely
    read = mb.read("/p.md")
    assert read.file_data is not None and read.file_data["content"] == "two"
    assert versions(cstore, sid) == [
        ("create", "p.md", 1, "one"),
        ("update", "p.md", 2, "two"),
    ]


def test_edit_replaces_a_unique_string_or_every_one(
    mb: ConvostoreMemoryBackend, cstore: ConversationStore, sid: str
) -> None:
    mb.write("/e.md", "a b a")
    refused = mb.edit("/e.md", "a", "x")
    assert refused.error is not None and "appears 2 times" in refused.error
    assert mb.edit("/e.md", "b", "y").occurrences == 1
    assert mb.edit("/e.md", "a", "x", replace_all=True).occurrences == 2
    assert "String not found" in str(mb.edit("/e.md", "zzz", "q").error)
    assert mb.edit("/nope.md", "a", "b").error == "Error: File '/nope.md' not found"
    assert [v[3] for v in versions(cstore, sid)] == ["a b a", "a y a", "x y x"]


def test_delete_removes_a_file_or_a_directory_and_keeps_their_history(
    mb: ConvostoreMemoryBackend, cstore: ConversationStore, sid: str
) -> None:
    for path in ["/d/a.md", "/d/sub/b.md", "/d.md", "/dx/c.md"]:
        mb.write(path, "x")
    assert mb.delete("/d").path == "/d"  # the file /d.md is not under /d
    assert paths(mb.ls("/")) == ["/d.md", "/dx/"]
    assert mb.delete("/d.md").error is None
    assert mb.delete("/d.md").error == "Error: File '/d.md' not found"
    deleted = [(v[0], v[1]) for v in versions(cstore, sid) if v[0] == "delete"]
    assert sorted(deleted) == [("delete", "d.md"), ("delete", "d/a.md"), ("delete", "d/sub/b.md")]
    assert mb.delete("/").error is None  # the root: every file (each a deletion version)
    assert mb.ls("/").entries == []
    assert len(versions(cstore, sid)) == 8


def test_grep_finds_literal_lines_under_a_path_and_a_glob(mb: ConvostoreMemoryBackend) -> None:
    mb.write("/a.md", "TODO: one\nnothing\n")
    mb.write("/src/b.py", "x = 1  # TODO\n")
    mb.write("/src/c.md", "(TODO.*)\n")
    every = mb.grep("TODO").matches or []
    assert sorted((m["path"], m["line"]) for m in every) == [
        ("/a.md", 1),
        ("/src/b.py", 1),
        ("/src/c.md", 1),
    ]
    assert [m["path"] for m in mb.grep("TODO", path="/src").matches or []] == [
        "/src/b.py",
        "/src/c.md",
    ]
    assert [m["path"] for m in mb.grep("TODO", glob="*.py").matches or []] == ["/src/b.py"]
    assert [m["text"] for m in mb.grep("(TODO.*)").matches or []] == ["(TODO.*)"]  # literal
    assert [m["path"] for m in mb.grep("TODO", path="/a.md").matches or []] == ["/a.md"]
    capped = mb.grep("TODO", max_count=1)
    assert len(capped.matches or []) == 1 and capped.truncated
    assert mb.grep("TODO", glob="a/../*").error is not None  # a pattern DeepAgents refuses


def test_glob_matches_paths_without_reading_content(mb: ConvostoreMemoryBackend) -> None:
    for path in ["/a.md", "/src/b.md", "/src/deep/c.md", "/src/d.py"]:
        mb.write(path, "x")
    assert sorted(paths(mb.glob("*.md").matches or [])) == ["/a.md", "/src/b.md", "/src/deep/c.md"]
    assert paths(mb.glob("/*.md").matches or []) == ["/a.md"]
    assert sorted(paths(mb.glob("**/*.md", path="/src").matches or [])) == [
        "/src/b.md",
        "/src/deep/c.md",
    ]
    assert mb.glob("*.txt").matches == []
    assert mb.glob("a/../*").error is not None


def test_upload_and_download_round_trip_text(
    mb: ConvostoreMemoryBackend, cstore: ConversationStore, sid: str
) -> None:
    up = mb.upload_files([("/u/a.md", "é\x00z".encode()), ("/u/a.md", b"again")])
    assert [r.error for r in up] == [None, None]
    down = mb.download_files(["/u/a.md", "/u", "/none", "/../x"])
    assert down[0].content == b"again"
    assert [d.error for d in down] == [None, "is_directory", "file_not_found", "invalid_path"]
    assert [v[3] for v in versions(cstore, sid)] == ["é\x00z", "again"]


def test_a_relative_path_is_a_key_as_storebackend_takes_it(
    mb: ConvostoreMemoryBackend, cstore: ConversationStore, sid: str
) -> None:
    """``StoreBackend`` takes any string as a key; here a relative path is the store path it
    spells, the same entry as its absolute form (the store has one path per file)."""
    assert mb.write("notes/a.md", "x").path == "notes/a.md"
    assert mb.edit("/notes/a.md", "x", "y").occurrences == 1
    assert (mb.read("notes/a.md").file_data or {}).get("content") == "y"
    assert paths(mb.ls("notes")) == ["/notes/a.md"]
    assert [m["path"] for m in mb.grep("y", path="notes").matches or []] == ["/notes/a.md"]
    assert mb.download_files(["notes/a.md"])[0].content == b"y"
    assert mb.delete("notes").path == "notes"
    assert [v[:3] for v in versions(cstore, sid)] == [
        ("create", "notes/a.md", 1),
        ("update", "notes/a.md", 2),
        ("delete", "notes/a.md", 3),
    ]


def test_a_path_typed_decomposed_names_the_same_file(mb: ConvostoreMemoryBackend) -> None:
    """Paths are normalized to NFC as the core keeps them: ``café`` typed decomposed lists,
    reads and deletes the file written precomposed."""
    nfd = unicodedata.normalize("NFD", "/café")
    assert nfd != "/café"
    mb.write("/café/menu.md", "soup")
    assert paths(mb.ls(nfd)) == ["/café/menu.md"]
    assert paths(mb.ls("/")) == ["/café/"]
    assert (mb.read(f"{nfd}/menu.md").file_data or {}).get("content") == "soup"
    assert [i["path"] for i in mb.glob("*.md", path=nfd).matches or []] == ["/café/menu.md"]
    assert mb.delete(nfd).error is None
    assert mb.ls("/").entries == []


def test_the_async_twins_do_the_same(mb: ConvostoreMemoryBackend) -> None:
    async def go() -> list[Any]:
        return [
            (await mb.awrite("/a/x.md", "hello world")).path,
            (await mb.aedit("/a/x.md", "world", "there")).occurrences,
            ((await mb.aread("/a/x.md")).file_data or {}).get("content"),
            paths(await mb.als("/")),
            [m["path"] for m in (await mb.agrep("there")).matches or []],
            paths((await mb.aglob("*.md")).matches or []),
            [r.error for r in await mb.aupload_files([("/b.md", b"b")])],
            [d.content for d in await mb.adownload_files(["/b.md"])],
            (await mb.adelete("/a")).path,
            paths(await mb.als("/")),
        ]

    assert asyncio.run(go()) == [
        "/a/x.md",
        1,
        "hello there",
        ["/a/"],
        ["/a/x.md"],
        ["/a/x.md"],
        [None],
        [b"b"],
        "/a",
        ["/b.md"],
    ]


def test_under_a_composite_route_the_agent_sees_memories_paths(
    mb: ConvostoreMemoryBackend, cstore: ConversationStore, sid: str
) -> None:
    composite = CompositeBackend(default=StateBackend(), routes={"/memories/": mb})
    assert composite.write("/memories/n/a.md", "x").path == "/memories/n/a.md"
    assert cstore.get_memory_by_path(sid, "n/a.md") is not None
    assert paths(composite.ls("/memories/")) == ["/memories/n/"]
    assert paths(composite.ls("/memories/n")) == ["/memories/n/a.md"]
    assert [m["path"] for m in composite.grep("x", path="/memories/").matches or []] == [
        "/memories/n/a.md"
    ]
    assert paths(composite.glob("**/*.md", path="/memories/").matches or []) == ["/memories/n/a.md"]


def test_a_store_like_argument_is_opened_and_closed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with ConversationStore(url) as db:
        sid = db.create_memory_store("m").memory_store_id
    with ConvostoreMemoryBackend(url, sid) as opened:
        opened.write("/a.md", "from a URL")
    assert opened.store.backend.closed  # opened here, so closed here
    with ConversationStore(url) as db:
        async_db = AsyncConversationStore(sync=db)
        mb = ConvostoreMemoryBackend(async_db, sid)  # an async store: its sync store is used
        assert mb.store is db
        mb.close()  # not ours: stays open
        assert db.get_memory_by_path(sid, "a.md") is not None


@pytest.fixture
def two(cstore: ConversationStore) -> tuple[str, str]:
    return (
        cstore.create_memory_store("a", user_id="alice").memory_store_id,
        cstore.create_memory_store("b", user_id="bob").memory_store_id,
    )


def test_a_backend_sees_only_its_own_store(cstore: ConversationStore, two: tuple[str, str]) -> None:
    a = ConvostoreMemoryBackend(cstore, two[0], user_id="alice")
    b = ConvostoreMemoryBackend(cstore, two[1], user_id="bob")
    a.write("/same.md", "alice's")
    b.write("/same.md", "bob's")
    assert (a.read("/same.md").file_data or {}).get("content") == "alice's"
    assert (b.read("/same.md").file_data or {}).get("content") == "bob's"
    assert [m["text"] for m in a.grep("'s").matches or []] == ["alice's"]
