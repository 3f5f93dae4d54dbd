"""Search over memory entries: a store's live entries whose path and current content hold every
term (``str.lower()`` on both), by path; the answers equal a plain scan, page by page, on every
backend; the index follows creates, updates, moves, deletes and redactions."""

from __future__ import annotations

import random
from typing import Any

import anyio
import pytest
from convostore import (
    AsyncConversationStore,
    ConversationStore,
    MemoryStoreNotFoundError,
    MemoryStoreOwnershipError,
    MemoryValidationError,
)

WORDS = ["Deploy", "runbook", "订单", "注文", "ΟΔΟΣ", "σίσυφος", "ς", "_", "%", "API-KEY", "ß"]


def body(rng: random.Random) -> str:
    return "\n".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(3)
    )


def fill(store: ConversationStore, sid: str, rng: random.Random, count: int) -> None:
    for i in range(count):
        folder = rng.choice(["notes/", "Ops/", "日本/", ""])
        store.create_memory(sid, f"{folder}{rng.choice(WORDS)}-{i}.md", body(rng))
    entries = store.list_memories(sid, limit=100).items
    for e in entries[:10]:  # updates, moves, deletes and a redaction: the index follows
        store.update_memory(sid, e.entry_id, "zebra " + body(rng), e.version)
    for e in entries[10:15]:
        store.update_memory(sid, e.entry_id, None, e.version, path=f"moved/{e.path}")
    for e in entries[15:20]:
        store.delete_memory(sid, e.entry_id)
    for version in store.list_memory_versions(sid, entry_id=entries[25].entry_id).items[-1:]:
        store.redact_memory_version(sid, version.version_id)


def scan(store: ConversationStore, sid: str) -> list[tuple[str, str]]:
    """(path, text) of every live entry, read through the store's plain API."""
    found = []
    after = None
    while True:
        page = store.list_memories(sid, limit=100, after=after)
        for e in page.items:
            entry = store.get_memory(sid, e.entry_id)
            content = "" if entry.content is None else entry.content
            found.append((e.path, e.path if entry.content is None else f"{e.path}\n{content}"))
        if page.next_cursor is None:
            return found
        after = page.next_cursor


def walk(store: ConversationStore, sid: str, query: str, limit: int, **kw: Any) -> list[str]:
    paths: list[str] = []
    after = None
    while True:
        result = store.search_memories(
            memory_store_id=sid, query=query, limit=limit, after=after, **kw
        )
        paths += [h.path for h in result.items]
        if result.next_cursor is None:
            return paths
        after = result.next_cursor


def test_memory_search_equals_a_scan(backend_url: str) -> None:
    rng = random.Random(5)
    with ConversationStore(backend_url) as store:
        sid = store.create_memory_store("docs").memory_store_id
        other = store.create_memory_store("other").memory_store_id
        store.create_memory(other, "notes/x.md", "Deploy runbook zebra")  # never found in sid
        fill(store, sid, rng, 120)
        rows = scan(store, sid)
        for _ in range(80):
            terms = [
                rng.choice([*WORDS, "zebra", "md", "notes/", "moved", "-1", "x"]).lower()
                for _ in range(rng.randint(1, 2))
            ]
            prefix = rng.choice([None, "notes/", "Ops/", "moved/", "日"])
            want = [
                path
                for path, text in rows
                if all(t in text.lower() for t in terms)
                and (prefix is None or path.startswith(prefix))
            ]
            got = walk(store, sid, " ".join(terms), rng.choice([1, 7, 100]), path_prefix=prefix)
            assert got == want, (terms, prefix)


def test_hits_have_no_content_but_a_snippet(store: ConversationStore) -> None:
    sid = store.create_memory_store("docs", user_id="u").memory_store_id
    entry = store.create_memory(
        sid, "ops/deploy.md", "line one\nThe Deploy Key is 42\n", user_id="u"
    )
    result = store.search_memories(memory_store_id=sid, query="deploy key", user_id="u")
    (hit,) = result.items
    assert (hit.entry_id, hit.path, hit.version) == (entry.entry_id, "ops/deploy.md", 1)
    assert "Deploy Key is 42" in hit.snippet
    assert "content" not in hit.model_dump()
    # the path alone matches too
    assert [h.path for h in store.search_memories(memory_store_id=sid, query="ops/").items] == [
        "ops/deploy.md"
    ]


def test_a_redacted_current_version_is_found_by_its_path_only(store: ConversationStore) -> None:
    sid = store.create_memory_store("docs").memory_store_id
    entry = store.create_memory(sid, "a.md", "secret words")
    (version,) = store.list_memory_versions(sid, entry_id=entry.entry_id).items
    store.redact_memory_version(sid, version.version_id)
    assert store.search_memories(memory_store_id=sid, query="secret").items == []
    assert [h.path for h in store.search_memories(memory_store_id=sid, query="a.md").items] == [
        "a.md"
    ]


def test_another_users_store_is_refused_and_a_missing_one_named(store: ConversationStore) -> None:
    sid = store.create_memory_store("docs", user_id="alice").memory_store_id
    store.create_memory(sid, "a.md", "plan", user_id="alice")
    with pytest.raises(MemoryStoreOwnershipError):
        store.search_memories(memory_store_id=sid, query="plan", user_id="bob")
    with pytest.raises(MemoryStoreNotFoundError):
        store.search_memories(memory_store_id="memstore_missing", query="plan")


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"query": ""}, "query"),
        ({"query": "a\x00"}, "query"),
        ({"query": "x" * 1001}, "query"),
        ({"query": "ok", "limit": 0}, "limit"),
        ({"query": "ok", "after": "!!"}, "after"),
        ({"query": "ok", "path_prefix": "a\x00"}, "path_prefix"),
        ({"query": "ok", "path_prefix": "a\u202eb"}, "path_prefix"),
    ],
)
def test_bad_arguments_are_refused(
    store: ConversationStore, kwargs: dict[str, Any], argument: str
) -> None:
    sid = store.create_memory_store("docs").memory_store_id
    with pytest.raises(MemoryValidationError) as caught:
        store.search_memories(memory_store_id=sid, **kwargs)
    assert caught.value.argument == argument


def test_the_async_store_searches_memories(store: ConversationStore) -> None:
    sid = store.create_memory_store("docs").memory_store_id
    store.create_memory(sid, "b.md", "Runbook")
    store.create_memory(sid, "a.md", "runbook too")

    async def run() -> list[str]:
        found = await AsyncConversationStore(sync=store).search_memories(
            memory_store_id=sid, query="RUNBOOK"
        )
        return [h.path for h in found.items]

    assert anyio.run(run) == ["a.md", "b.md"]


def test_reindex_indexes_entries_written_before_the_index(backend_url: str) -> None:
    with ConversationStore(backend_url) as store:
        sid = store.create_memory_store("docs").memory_store_id
        for i in range(3):
            store.create_memory(sid, f"{i}.md", f"old note {i}")
        column = "search_rid" if store.backend.dialect == "sqlite" else "search_text"
        store.backend.write(
            lambda tx: tx.execute(f"UPDATE convostore_memory_entries SET {column} = NULL")
        )
        if store.backend.dialect == "sqlite":
            store.backend.write(lambda tx: tx.execute("DELETE FROM convostore_memory_search"))
        found = [h.path for h in store.search_memories(memory_store_id=sid, query="old").items]
        assert found == ["0.md", "1.md", "2.md"]
        assert store.reindex() == 3
        assert [
            h.path for h in store.search_memories(memory_store_id=sid, query="old").items
        ] == found
