"""Search over HTTP: ``GET /search/messages`` and ``GET /memory_stores/{id}/search`` answer what
the core's ``search_messages`` / ``search_memories`` answer for the caller (a user's own
conversations and memory stores only), a page at a time, against a real server on an SQLite
file and on PostgreSQL. Hostile queries: ``test_hostile.py``; another user's ids:
``test_isolation.py``."""

from __future__ import annotations

from typing import Any

import httpx
from convostore import ConversationStore
from served import Server, new_id


def _pages(client: httpx.Client, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every hit, following ``nextCursor``."""
    found: list[dict[str, Any]] = []
    after = None
    while True:
        response = client.get(path, params={**params, **({"after": after} if after else {})})
        assert response.status_code == 200, response.text
        page = response.json()
        assert set(page) == {"items", "nextCursor"}
        found += page["items"]
        after = page["nextCursor"]
        if after is None:
            return found


def _strict(server: Server) -> ConversationStore:
    return ConversationStore(server.store_url).with_strict_ownership()


def _chat(client: httpx.Client, cid: str, *messages: tuple[str, Any]) -> None:
    body = {"messages": [{"role": role, "content": content} for role, content in messages]}
    assert client.post(f"/conversations/{cid}/messages", json=body).status_code == 201


def test_messages_are_the_core_calls_hits_page_by_page(server: Server) -> None:
    alice, bob = server.client("alice"), server.client("bob")
    tag = new_id("tag")  # a term no other test writes
    cids = [new_id("found") for _ in range(3)]
    for n, cid in enumerate(cids):
        _chat(
            alice,
            cid,
            ("user", f"Where is order {tag} number {n}?"),
            ("assistant", [{"type": "text", "text": f"ORDER {tag.upper()}-{n} ships today"}]),
            ("user", "thanks"),
        )
    _chat(bob, new_id("bobs"), ("user", f"my order {tag} too"))

    hits = _pages(alice, "/search/messages", q=f"order {tag}", limit=4)
    with _strict(server) as store:
        expected = store.search_messages(query=f"order {tag}", user_id="alice", limit=100)
    assert hits == [h.model_dump(mode="json", by_alias=True) for h in expected.items]
    assert len(hits) == 6 and {h["conversationId"] for h in hits} == set(cids)
    assert hits[0]["conversationId"] == cids[-1]  # newest first
    assert set(hits[0]) == {"conversationId", "message", "snippet"}
    assert tag.upper() in hits[0]["snippet"] and "ships today" in hits[0]["snippet"]
    assert {h["message"]["role"] for h in hits} == {"user", "assistant"}

    only = _pages(alice, "/search/messages", q=tag, role="assistant")
    assert len(only) == 3 and {h["message"]["role"] for h in only} == {"assistant"}
    both = _pages(alice, "/search/messages", q=tag, role=["user", "assistant"])
    assert [h["message"]["messageId"] for h in both] == [h["message"]["messageId"] for h in hits]
    one = _pages(alice, "/search/messages", q='"number 1?"', conversationId=cids[1])
    assert [h["message"]["content"] for h in one] == [f"Where is order {tag} number 1?"]

    mine = _pages(bob, "/search/messages", q=tag)
    assert [h["message"]["content"] for h in mine] == [f"my order {tag} too"]


def test_an_admin_searches_everyone_or_one_user(server: Server) -> None:
    tag = new_id("adm")
    _chat(server.client("alice"), new_id("a"), ("user", f"{tag} from alice"))
    _chat(server.client("bob"), new_id("b"), ("user", f"{tag} from bob"))
    admin = server.client("admin")
    everyone = _pages(admin, "/search/messages", q=tag)
    assert sorted(h["message"]["content"] for h in everyone) == [
        f"{tag} from alice",
        f"{tag} from bob",
    ]
    as_bob = _pages(admin, "/search/messages", q=tag, userId="bob")
    assert [h["message"]["content"] for h in as_bob] == [f"{tag} from bob"]
    refused = server.client("bob").get("/search/messages", params={"q": tag, "userId": "alice"})
    assert refused.status_code == 403 and refused.json()["error"]["argument"] == "userId"


def test_memories_are_the_core_calls_hits_by_path(server: Server) -> None:
    alice = server.client("alice")
    sid = alice.post("/memory_stores", json={"name": "search-notes"}).json()["memoryStoreId"]
    for path, content in [
        ("notes/deploys.md", "Deploys on Fridays: no."),
        ("notes/2026/friday.md", "standup moved"),
        ("notes/other.md", "nothing to see"),
        ("archive/deploys.md", "Fridays were fine in 2019"),
    ]:
        created = alice.post(
            f"/memory_stores/{sid}/memories", json={"path": path, "content": content}
        )
        assert created.status_code == 201, created.text

    hits = _pages(alice, f"/memory_stores/{sid}/search", q="friday", limit=1)
    with _strict(server) as store:
        expected = store.search_memories(
            memory_store_id=sid, query="friday", user_id="alice", limit=100
        )
    assert hits == [h.model_dump(mode="json", by_alias=True) for h in expected.items]
    assert [h["path"] for h in hits] == [
        "archive/deploys.md",
        "notes/2026/friday.md",
        "notes/deploys.md",
    ]
    assert set(hits[0]) == {"entryId", "path", "version", "snippet"}  # no content
    assert "Fridays were fine" in hits[0]["snippet"] and hits[0]["version"] == 1

    notes = _pages(alice, f"/memory_stores/{sid}/search", q="friday", pathPrefix="notes/")
    assert [h["path"] for h in notes] == ["notes/2026/friday.md", "notes/deploys.md"]
