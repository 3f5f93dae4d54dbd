"""DeepAgents' own tests of its ``StoreBackend`` (its ``tests/unit_tests/backends/
test_store_backend.py`` and ``test_store_backend_async.py``), ported to run on
ConvostoreMemoryBackend, on every backend. ``InMemoryStore`` lookups become the memory store's
(``/docs/readme.md`` is the entry at ``docs/readme.md``).

Left out, as they test what a memory store is not: the namespace factory and its validation
(a memory backend is bound to one memory store and a ``user_id``: see
``test_memory_backend_hostile.py`` for another user's store), the legacy list-of-lines values
``StoreBackend`` migrates (a memory entry was never stored so), and the count of ``batch`` calls
of a recursive delete (each deleted file here is a version of its own; the README says so).
"""

from __future__ import annotations

import pytest
from convostore import ConversationStore
from convostore_langgraph import ConvostoreMemoryBackend
from deepagents.backends.protocol import EditResult, ReadResult, WriteResult
from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain_core.messages import ToolMessage


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def be(cstore: ConversationStore) -> ConvostoreMemoryBackend:
    return ConvostoreMemoryBackend(cstore, cstore.create_memory_store("filesystem").memory_store_id)


def stored(be: ConvostoreMemoryBackend, key: str) -> str | None:
    """What ``mem_store.get(namespace, key).value["content"]`` reads: the entry's content."""
    entry = be.store.get_memory_by_path(be.memory_store_id, key.removeprefix("/"))
    return None if entry is None else entry.content


# -- test_store_backend.py -----------------------------------------------------------------


def test_store_backend_crud_and_search(be: ConvostoreMemoryBackend) -> None:
    msg = be.write("/docs/readme.md", "hello store")
    assert isinstance(msg, WriteResult) and msg.error is None and msg.path == "/docs/readme.md"

    read_result = be.read("/docs/readme.md")
    assert isinstance(read_result, ReadResult) and read_result.file_data is not None
    assert "hello store" in read_result.file_data["content"]

    msg2 = be.edit("/docs/readme.md", "hello", "hi", replace_all=False)
    assert isinstance(msg2, EditResult) and msg2.error is None and msg2.occurrences == 1

    infos = be.ls("/docs/").entries
    assert infos is not None
    assert any(i["path"] == "/docs/readme.md" for i in infos)

    matches = be.grep("hi", path="/").matches
    assert matches is not None and any(m["path"] == "/docs/readme.md" for m in matches)

    g = be.glob("*.md", path="/").matches
    assert g is not None and any(i["path"] == "/docs/readme.md" for i in g)
    g2 = be.glob("**/*.md", path="/").matches
    assert g2 is not None and any(i["path"] == "/docs/readme.md" for i in g2)
    assert {i["path"] for i in g} == {i["path"] for i in g2}


def test_store_backend_read_surfaces_pagination_metadata(be: ConvostoreMemoryBackend) -> None:
    be.write("/notes.txt", "one\ntwo\nthree\nfour\nfive")
    result = be.read("/notes.txt", offset=1, limit=2)
    assert result.error is None
    assert result.total_lines == 5
    assert result.start_line == 2
    assert result.end_line == 3
    assert result.next_offset == 3


@pytest.mark.parametrize(("offset", "limit"), [(0, 0), (0, -3), (-1, 0)])
def test_store_backend_read_non_positive_limit_returns_empty_read(
    be: ConvostoreMemoryBackend, offset: int, limit: int
) -> None:
    be.write("/notes.txt", "one\ntwo\nthree")
    result = be.read("/notes.txt", offset=offset, limit=limit)
    assert result.error is None
    assert result.file_data is not None
    assert result.file_data["content"] == ""
    assert result.start_line is None


def test_store_backend_read_negative_offset_starts_at_first_line(
    be: ConvostoreMemoryBackend,
) -> None:
    be.write("/notes.txt", "one\ntwo\nthree")
    result = be.read("/notes.txt", offset=-1, limit=2)
    assert result.error is None
    assert result.start_line == 1
    assert result.end_line == 2


def test_store_backend_reads_mkv_as_binary_without_slicing(be: ConvostoreMemoryBackend) -> None:
    be.write("/clip.mkv", "single line of bytes")
    read_result = be.read("/clip.mkv", offset=5, limit=10)
    assert isinstance(read_result, ReadResult)
    assert read_result.error is None
    assert read_result.file_data is not None
    assert read_result.file_data["content"] == "single line of bytes"


@pytest.mark.parametrize("name", ["/a.png", "/doc.pdf", "/x/y.JPG", "/talk.mp3", "/clip.mp4"])
def test_every_binary_typed_path_reads_whole_as_the_built_in_backends_do(
    be: ConvostoreMemoryBackend, name: str
) -> None:
    """(Ours) The same rule for every type DeepAgents reads as binary, not ``.mkv`` only."""
    be.write(name, "one\ntwo\nthree")
    result = be.read(name, offset=2, limit=1)
    assert result.error is None and result.file_data is not None
    assert result.file_data["content"] == "one\ntwo\nthree"
    assert be.read("/t.txt").error is not None  # text paths are still sliced (and checked)


def test_store_backend_write_overwrites_existing_file(be: ConvostoreMemoryBackend) -> None:
    assert be.write("/charmander.txt", "Hello world").error is None
    assert be.write("/charmander.txt", "New content").error is None
    read_result = be.read("/charmander.txt")
    assert read_result.file_data is not None
    assert "New content" in read_result.file_data["content"]


NESTED = {
    "/src/main.py": "main code",
    "/src/utils/helper.py": "helper code",
    "/src/utils/common.py": "common code",
    "/docs/readme.md": "readme",
    "/docs/api/reference.md": "api reference",
    "/config.json": "config",
}


def test_store_backend_ls_nested_directories(be: ConvostoreMemoryBackend) -> None:
    for path, content in NESTED.items():
        assert be.write(path, content).error is None

    root_listing = be.ls("/").entries
    assert root_listing is not None
    root_paths = [fi["path"] for fi in root_listing]
    assert "/config.json" in root_paths
    assert "/src/" in root_paths
    assert "/docs/" in root_paths
    assert "/src/main.py" not in root_paths
    assert "/src/utils/helper.py" not in root_paths
    assert "/docs/readme.md" not in root_paths
    assert "/docs/api/reference.md" not in root_paths

    src_listing = be.ls("/src/").entries
    assert src_listing is not None
    src_paths = [fi["path"] for fi in src_listing]
    assert "/src/main.py" in src_paths
    assert "/src/utils/" in src_paths
    assert "/src/utils/helper.py" not in src_paths

    utils_listing = be.ls("/src/utils/").entries
    assert utils_listing is not None
    utils_paths = [fi["path"] for fi in utils_listing]
    assert "/src/utils/helper.py" in utils_paths
    assert "/src/utils/common.py" in utils_paths
    assert len(utils_paths) == 2

    assert be.ls("/nonexistent/").entries == []


def test_store_backend_ls_trailing_slash(be: ConvostoreMemoryBackend) -> None:
    for path, content in {"/file.txt": "content", "/dir/nested.txt": "nested"}.items():
        assert be.write(path, content).error is None
    assert len(be.ls("/").entries or []) > 0
    listing1 = be.ls("/dir/").entries
    listing2 = be.ls("/dir").entries
    assert listing1 is not None and listing2 is not None
    assert len(listing1) == len(listing2)
    assert [fi["path"] for fi in listing1] == [fi["path"] for fi in listing2]


def test_store_backend_intercept_large_tool_result(be: ConvostoreMemoryBackend) -> None:
    middleware = FilesystemMiddleware(backend=be, tool_token_limit_before_evict=1000)
    large_content = "y" * 5000
    result = middleware._intercept_large_tool_result(
        ToolMessage(content=large_content, tool_call_id="test_456")
    )
    assert isinstance(result, ToolMessage)
    assert "Tool result too large" in result.content
    assert "/large_tool_results/test_456" in result.content
    assert stored(be, "/large_tool_results/test_456") == large_content


@pytest.mark.parametrize(
    ("pattern", "expected_file"),
    [
        ("def __init__(", "code.py"),
        ("str | int", "types.py"),
        ("[a-z]", "regex.py"),
        ("(.*)", "regex.py"),
        ("api.key", "config.json"),
        ("x * y", "math.py"),
        ("a^2", "math.py"),
    ],
)
def test_store_backend_grep_literal_search_special_chars(
    be: ConvostoreMemoryBackend, pattern: str, expected_file: str
) -> None:
    files = {
        "/code.py": "def __init__(self, arg):\n    pass",
        "/types.py": "def func(x: str | int) -> None:\n    return x",
        "/regex.py": "pattern = r'[a-z]+'\nchars = '(.*)'",
        "/config.json": '{"api.key": "value", "url": "https://example.com"}',
        "/math.py": "result = x * y + z\nformula = a^2 + b^2",
    }
    for path, content in files.items():
        assert be.write(path, content).error is None
    matches = be.grep(pattern, path="/").matches
    assert matches is not None
    assert any(expected_file in m["path"] for m in matches)


def test_store_backend_delete(be: ConvostoreMemoryBackend) -> None:
    be.write("/docs/readme.md", "hello store")
    assert be.read("/docs/readme.md").error is None
    result = be.delete("/docs/readme.md")
    assert result.error is None
    assert result.path == "/docs/readme.md"
    assert be.read("/docs/readme.md").error is not None


def test_store_backend_delete_directory_recursive(be: ConvostoreMemoryBackend) -> None:
    be.write("/work/a.txt", "a")
    be.write("/work/sub/b.txt", "b")
    be.write("/keep.txt", "k")
    result = be.delete("/work")
    assert result.error is None
    assert result.path == "/work"
    assert be.read("/work/a.txt").error is not None
    assert be.read("/work/sub/b.txt").error is not None
    assert be.read("/keep.txt").error is None


@pytest.mark.anyio
async def test_store_backend_adelete_directory_recursive(be: ConvostoreMemoryBackend) -> None:
    await be.awrite("/work/a.txt", "a")
    await be.awrite("/work/sub/b.txt", "b")
    await be.awrite("/keep.txt", "k")
    result = await be.adelete("/work")
    assert result.error is None
    assert (await be.aread("/work/a.txt")).error is not None
    assert (await be.aread("/work/sub/b.txt")).error is not None
    assert (await be.aread("/keep.txt")).error is None


def test_store_backend_delete_missing_returns_error(be: ConvostoreMemoryBackend) -> None:
    result = be.delete("/nope.md")
    assert result.path is None
    assert result.error is not None
    assert "not found" in result.error


@pytest.mark.anyio
async def test_store_backend_adelete(be: ConvostoreMemoryBackend) -> None:
    await be.awrite("/a.md", "x")
    result = await be.adelete("/a.md")
    assert result.error is None
    assert result.path == "/a.md"
    assert (await be.aread("/a.md")).error is not None
    missing = await be.adelete("/a.md")
    assert missing.error is not None and "not found" in missing.error


def test_store_backend_delete_treats_wildcard_as_literal_key(be: ConvostoreMemoryBackend) -> None:
    be.write("/a.md", "a")
    be.write("/b.md", "b")
    be.write("*", "literal star")
    result = be.delete("*")
    assert result.error is None
    assert result.path == "*"
    assert be.read("/a.md").error is None
    assert be.read("/b.md").error is None
    assert be.read("*").error is not None


def test_store_backend_delete_wildcard_missing_does_not_match_files(
    be: ConvostoreMemoryBackend,
) -> None:
    be.write("/a.md", "a")
    be.write("/b.md", "b")
    result = be.delete("*")
    assert result.path is None
    assert result.error is not None and "not found" in result.error
    assert be.read("/a.md").error is None
    assert be.read("/b.md").error is None


@pytest.mark.anyio
async def test_store_backend_adelete_treats_wildcard_as_literal_key(
    be: ConvostoreMemoryBackend,
) -> None:
    await be.awrite("/a.md", "a")
    await be.awrite("*", "literal star")
    result = await be.adelete("*")
    assert result.error is None
    assert result.path == "*"
    assert (await be.aread("/a.md")).error is None
    assert (await be.aread("*")).error is not None
    missing = await be.adelete("*")
    assert missing.error is not None and "not found" in missing.error


# -- test_store_backend_async.py -----------------------------------------------------------


@pytest.mark.anyio
async def test_store_backend_aread_non_positive_limit_returns_empty_read(
    be: ConvostoreMemoryBackend,
) -> None:
    await be.awrite("/notes.txt", "one\ntwo\nthree")
    result = await be.aread("/notes.txt", offset=0, limit=0)
    assert result.error is None
    assert result.file_data is not None
    assert result.file_data["content"] == ""
    assert result.start_line is None


@pytest.mark.anyio
async def test_store_backend_aread_negative_offset_starts_at_first_line(
    be: ConvostoreMemoryBackend,
) -> None:
    await be.awrite("/notes.txt", "one\ntwo\nthree")
    result = await be.aread("/notes.txt", offset=-1, limit=2)
    assert result.error is None
    assert result.start_line == 1
    assert result.end_line == 2


@pytest.mark.anyio
async def test_store_backend_async_crud_and_search(be: ConvostoreMemoryBackend) -> None:
    msg = await be.awrite("/docs/readme.md", "hello store")
    assert isinstance(msg, WriteResult) and msg.error is None and msg.path == "/docs/readme.md"

    read_result = await be.aread("/docs/readme.md")
    assert isinstance(read_result, ReadResult) and read_result.file_data is not None
    assert "hello store" in read_result.file_data["content"]

    msg2 = await be.aedit("/docs/readme.md", "hello", "hi", replace_all=False)
    assert isinstance(msg2, EditResult) and msg2.error is None and msg2.occurrences == 1

    infos = (await be.als("/docs/")).entries
    assert infos is not None
    assert any(i["path"] == "/docs/readme.md" for i in infos)

    matches = (await be.agrep("hi", path="/")).matches
    assert matches is not None and any(m["path"] == "/docs/readme.md" for m in matches)

    g = (await be.aglob("*.md", path="/")).matches
    assert g is not None and any(i["path"] == "/docs/readme.md" for i in g)
    g2 = (await be.aglob("**/*.md", path="/")).matches
    assert g2 is not None and any(i["path"] == "/docs/readme.md" for i in g2)
    assert {i["path"] for i in g} == {i["path"] for i in g2}


@pytest.mark.anyio
async def test_store_backend_aread_surfaces_pagination_metadata(
    be: ConvostoreMemoryBackend,
) -> None:
    await be.awrite("/notes.txt", "one\ntwo\nthree\nfour\nfive")
    result = await be.aread("/notes.txt", offset=1, limit=2)
    assert result.error is None
    assert result.total_lines == 5
    assert result.start_line == 2
    assert result.end_line == 3
    assert result.next_offset == 3


@pytest.mark.anyio
async def test_store_backend_als_nested_directories(be: ConvostoreMemoryBackend) -> None:
    for path, content in NESTED.items():
        assert (await be.awrite(path, content)).error is None

    root_listing = (await be.als("/")).entries
    assert root_listing is not None
    root_paths = [fi["path"] for fi in root_listing]
    assert "/config.json" in root_paths
    assert "/src/" in root_paths
    assert "/docs/" in root_paths
    assert "/src/main.py" not in root_paths
    assert "/docs/api/reference.md" not in root_paths

    src_listing = (await be.als("/src/")).entries
    assert src_listing is not None
    src_paths = [fi["path"] for fi in src_listing]
    assert "/src/main.py" in src_paths
    assert "/src/utils/" in src_paths
    assert "/src/utils/helper.py" not in src_paths

    utils_listing = (await be.als("/src/utils/")).entries
    assert utils_listing is not None
    utils_paths = [fi["path"] for fi in utils_listing]
    assert "/src/utils/helper.py" in utils_paths
    assert "/src/utils/common.py" in utils_paths
    assert len(utils_paths) == 2

    assert (await be.als("/nonexistent/")).entries == []


@pytest.mark.anyio
async def test_store_backend_als_trailing_slash(be: ConvostoreMemoryBackend) -> None:
    for path, content in {"/file.txt": "content", "/dir/nested.txt": "nested"}.items():
        assert (await be.awrite(path, content)).error is None
    assert len((await be.als("/")).entries or []) > 0
    listing1 = (await be.als("/dir/")).entries
    listing2 = (await be.als("/dir")).entries
    assert listing1 is not None and listing2 is not None
    assert [fi["path"] for fi in listing1] == [fi["path"] for fi in listing2]


@pytest.mark.anyio
async def test_store_backend_async_errors(be: ConvostoreMemoryBackend) -> None:
    err = await be.aedit("/missing.txt", "a", "b")
    assert isinstance(err, EditResult) and err.error and "not found" in err.error
    read_result = await be.aread("/nonexistent.txt")
    assert isinstance(read_result, ReadResult) and read_result.error is not None


@pytest.mark.anyio
async def test_store_backend_aedit_replace_all(be: ConvostoreMemoryBackend) -> None:
    assert (await be.awrite("/test.txt", "foo bar foo baz")).error is None
    res2 = await be.aedit("/test.txt", "foo", "qux", replace_all=False)
    assert res2.error is not None
    assert "appears 2 times" in res2.error
    res3 = await be.aedit("/test.txt", "foo", "qux", replace_all=True)
    assert res3.error is None
    assert res3.occurrences == 2
    read_result = await be.aread("/test.txt")
    assert read_result.file_data is not None
    assert "qux bar qux baz" in read_result.file_data["content"]
    res4 = await be.aedit("/test.txt", "bar", "xyz", replace_all=False)
    assert res4.error is None
    assert res4.occurrences == 1
    read_result2 = await be.aread("/test.txt")
    assert read_result2.file_data is not None
    assert "qux xyz qux baz" in read_result2.file_data["content"]


@pytest.mark.anyio
async def test_store_backend_aread_with_offset_and_limit(be: ConvostoreMemoryBackend) -> None:
    lines = "\n".join([f"Line {i}" for i in range(1, 11)])
    assert (await be.awrite("/multi.txt", lines)).error is None
    read_result = await be.aread("/multi.txt", offset=2, limit=3)
    assert read_result.file_data is not None
    content = read_result.file_data["content"]
    assert "Line 3" in content and "Line 4" in content and "Line 5" in content
    assert "Line 1" not in content and "Line 6" not in content


@pytest.mark.anyio
async def test_store_backend_agrep_with_glob(be: ConvostoreMemoryBackend) -> None:
    for path, content in {
        "/test.py": "import os",
        "/test.txt": "import nothing",
        "/main.py": "import sys",
    }.items():
        assert (await be.awrite(path, content)).error is None
    matches = (await be.agrep("import", path="/", glob="*.py")).matches
    assert matches is not None
    assert len([m["path"] for m in matches if m["path"].endswith(".py")]) >= 2


@pytest.mark.anyio
async def test_store_backend_aglob_patterns(be: ConvostoreMemoryBackend) -> None:
    for path, content in {
        "/src/main.py": "code",
        "/src/utils/helper.py": "utils",
        "/tests/test_main.py": "tests",
        "/readme.md": "docs",
        "/docs/api.md": "api docs",
    }.items():
        assert (await be.awrite(path, content)).error is None
    py_files = [i["path"] for i in (await be.aglob("**/*.py", path="/")).matches or []]
    assert "/src/main.py" in py_files
    assert "/src/utils/helper.py" in py_files
    assert "/tests/test_main.py" in py_files
    md_files = [i["path"] for i in (await be.aglob("**/*.md", path="/")).matches or []]
    assert "/readme.md" in md_files
    assert "/docs/api.md" in md_files


@pytest.mark.anyio
async def test_store_backend_aupload_adownload(be: ConvostoreMemoryBackend) -> None:
    uploads = await be.aupload_files(
        [("/file1.bin", b"Binary content 1"), ("/file2.bin", b"Binary content 2")]
    )
    assert len(uploads) == 2
    assert all(r.error is None for r in uploads)
    downloads = await be.adownload_files(["/file1.bin", "/file2.bin"])
    assert len(downloads) == 2
    assert downloads[0].error is None
    assert downloads[1].error is None


@pytest.mark.anyio
async def test_store_backend_agrep_invalid_regex(be: ConvostoreMemoryBackend) -> None:
    assert (await be.awrite("/test.txt", "some content")).error is None
    result = await be.agrep("[invalid", path="/")
    assert result.matches is not None


@pytest.mark.anyio
async def test_store_backend_intercept_large_tool_result_async(
    be: ConvostoreMemoryBackend,
) -> None:
    middleware = FilesystemMiddleware(backend=be, tool_token_limit_before_evict=1000)
    large_content = "y" * 5000
    result = middleware._intercept_large_tool_result(
        ToolMessage(content=large_content, tool_call_id="test_456")
    )
    assert isinstance(result, ToolMessage)
    assert "Tool result too large" in result.content
    assert "/large_tool_results/test_456" in result.content
    assert stored(be, "/large_tool_results/test_456") == large_content


@pytest.mark.anyio
async def test_store_backend_aintercept_large_tool_result_async(
    be: ConvostoreMemoryBackend,
) -> None:
    middleware = FilesystemMiddleware(backend=be, tool_token_limit_before_evict=1000)
    large_content = "z" * 5000
    artifact_payload = {"kind": "structured", "value": {"key": "v"}}
    tool_message = ToolMessage(
        content=large_content,
        tool_call_id="test_async_789",
        name="example_tool",
        id="tool_msg_async_1",
        artifact=artifact_payload,
        status="error",
        additional_kwargs={"trace": "abc"},
        response_metadata={"provider": "mock"},
    )
    result = await middleware._aintercept_large_tool_result(tool_message)
    assert isinstance(result, ToolMessage)
    assert "Tool result too large" in result.content
    assert "/large_tool_results/test_async_789" in result.content
    assert result.name == "example_tool"
    assert result.id == "tool_msg_async_1"
    assert result.artifact == artifact_payload
    assert result.status == "error"
    assert result.additional_kwargs == {"trace": "abc"}
    assert result.response_metadata == {"provider": "mock"}
    assert stored(be, "/large_tool_results/test_async_789") == large_content
