"""Two users with two tokens: neither can list, read, change or delete the other's
conversations or memory stores by any endpoint, by guessing ids or forging cursors; what the
other owns answers exactly as a missing thing does."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from served import Server, new_id


def _not_found(response: httpx.Response) -> str:
    assert response.status_code == 404, response.text
    error = response.json()["error"]
    assert error["code"] == "not_found"
    return str(error["message"])


@pytest.fixture
def alices(server: Server) -> dict[str, str]:
    """A conversation with a message and a memory store with an entry, all alice's."""
    alice = server.client("alice")
    cid = new_id("alice-chat")
    mid = alice.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "mine"})
    alice.patch(f"/conversations/{cid}", json={"metadata": {"title": "private"}})
    sid = alice.post("/memory_stores", json={"name": "alice-notes"}).json()["memoryStoreId"]
    entry = alice.post(f"/memory_stores/{sid}/memories", json={"path": "p.md", "content": "secret"})
    eid = entry.json()["entryId"]
    vid = alice.get(f"/memory_stores/{sid}/versions").json()["items"][0]["versionId"]
    return {"cid": cid, "mid": mid.json()["messageId"], "sid": sid, "eid": eid, "vid": vid}


def _snapshot(server: Server, ids: dict[str, str]) -> Any:
    admin = server.client("admin")
    cid, sid = ids["cid"], ids["sid"]
    return (
        admin.get(f"/conversations/{cid}").json(),
        admin.get(f"/conversations/{cid}/messages").json(),
        admin.get(f"/memory_stores/{sid}").json(),
        admin.get(f"/memory_stores/{sid}/versions").json(),
        admin.get(f"/memory_stores/{sid}/memories/{ids['eid']}").json(),
    )


CONVERSATION_CALLS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "/conversations/{cid}", None),
    ("PATCH", "/conversations/{cid}", {"metadata": {"title": "taken"}}),
    ("DELETE", "/conversations/{cid}", None),
    ("POST", "/conversations/{cid}/fork", {"newConversationId": "taken"}),
    ("GET", "/conversations/{cid}/messages", None),
    ("GET", "/conversations/{cid}/messages?after={mid}", None),
    ("POST", "/conversations/{cid}/messages", {"role": "user", "content": "injected"}),
    ("POST", "/conversations/{cid}/messages", {"messages": [{"role": "user", "content": "x"}]}),
    ("DELETE", "/conversations/{cid}/messages", None),
    ("GET", "/conversations/{cid}/messages/{mid}", None),
    ("PATCH", "/conversations/{cid}/messages/{mid}", {"content": "changed"}),
    ("DELETE", "/conversations/{cid}/messages/{mid}", None),
]

MEMORY_CALLS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "/memory_stores/{sid}", None),
    ("DELETE", "/memory_stores/{sid}", None),
    ("GET", "/memory_stores/{sid}/memories", None),
    ("POST", "/memory_stores/{sid}/memories", {"path": "q.md", "content": "x"}),
    ("GET", "/memory_stores/{sid}/memories/{eid}", None),
    ("PUT", "/memory_stores/{sid}/memories/{eid}", {"content": "changed", "version": 1}),
    ("DELETE", "/memory_stores/{sid}/memories/{eid}", None),
    ("GET", "/memory_stores/{sid}/versions", None),
    ("GET", "/memory_stores/{sid}/versions?entryId={eid}", None),
    ("GET", "/memory_stores/{sid}/versions/{vid}", None),
]


# -- another user's things answer as missing ones, byte for byte ------------------------------

C, M = "/conversations/{conversationId}", "/memory_stores/{memoryStoreId}"
V1 = "/v1/conversations/{conversationId}"
# Requests for every operation of the API, with alice's ids in the path (and some queries
# naming her message, entry or version). The operations come from the server's own OpenAPI
# document: one this table does not name fails the test, so no endpoint is forgotten.
REQUESTS: dict[tuple[str, str], list[tuple[str, dict[str, Any] | None]]] = {
    ("GET", "/me"): [("", None)],
    ("GET", "/healthz"): [("", None)],
    ("GET", "/readyz"): [("", None)],
    ("GET", "/metrics"): [("", None)],
    ("GET", "/conversations"): [("", None)],
    ("GET", C): [("", None)],
    ("PATCH", C): [("", {"metadata": {"title": "taken"}})],
    ("DELETE", C): [("", None)],
    ("POST", f"{C}/fork"): [
        ("", {"newConversationId": "bobs-fork"}),
        ("", {"newConversationId": "bobs-fork", "upTo": "msg_x", "metadata": {"a": 1}}),
    ],
    ("GET", f"{C}/messages"): [("", None), ("?after={mid}", None), ("?before={mid}", None)],
    ("POST", f"{C}/messages"): [
        ("", {"role": "user", "content": "injected"}),
        ("", {"messages": [{"role": "user", "content": "x"}]}),
    ],
    ("DELETE", f"{C}/messages"): [("", None)],
    ("GET", f"{C}/messages/{{messageId}}"): [("", None)],
    ("PATCH", f"{C}/messages/{{messageId}}"): [("", {"content": "changed"})],
    ("DELETE", f"{C}/messages/{{messageId}}"): [("", None)],
    ("GET", f"{C}/events"): [("", None), ("?after=1", None)],
    ("POST", "/memory_stores"): [("", {"name": "n"})],
    ("GET", "/memory_stores"): [("", None)],
    ("GET", M): [("", None)],
    ("DELETE", M): [("", None)],
    ("POST", f"{M}/memories"): [("", {"path": "q.md", "content": "x"})],
    ("GET", f"{M}/memories"): [("", None), ("?pathPrefix=p", None)],
    ("GET", f"{M}/memories/{{entryId}}"): [("", None)],
    ("PUT", f"{M}/memories/{{entryId}}"): [("", {"content": "changed", "version": 1})],
    ("DELETE", f"{M}/memories/{{entryId}}"): [("", None), ("?version=1", None)],
    ("GET", f"{M}/versions"): [("", None), ("?entryId={eid}", None), ("?after={vid}", None)],
    ("GET", f"{M}/versions/{{versionId}}"): [("", None)],
    ("POST", f"{M}/versions/{{versionId}}/redact"): [("", None)],
    ("GET", "/search/messages"): [("?q=mine&conversationId={cid}", None), ("?q=mine", None)],
    ("GET", f"{M}/search"): [("?q=secret", None), ("?q=p&pathPrefix=p", None)],
    # OpenAI's Conversations API: alice's conversation and her message as an item.
    ("POST", "/v1/conversations"): [("", {"items": [{"role": "user", "content": "x"}]})],
    ("GET", V1): [("", None)],
    ("POST", V1): [("", {"metadata": {"title": "taken"}})],
    ("DELETE", V1): [("", None)],
    ("POST", f"{V1}/items"): [("", {"items": [{"role": "user", "content": "injected"}]})],
    ("GET", f"{V1}/items"): [("", None), ("?after={mid}", None), ("?after={mid}&order=asc", None)],
    ("GET", f"{V1}/items/{{itemId}}"): [("", None)],
    ("DELETE", f"{V1}/items/{{itemId}}"): [("", None)],
}
# Writes that create the conversation they name: a free id is created, another user's is
# 409 conversation_ownership (conversation ids are one namespace: the README's one exception).
CREATING = {("PATCH", C), ("POST", f"{C}/messages")}
# Operations that name nothing of alice's: nothing to compare.
UNNAMED = {("GET", "/me"), ("GET", "/conversations"), ("POST", "/memory_stores")}
UNNAMED |= {("GET", "/memory_stores"), ("POST", "/v1/conversations")}
UNNAMED |= {("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics")}


def _operations(server: Server) -> set[tuple[str, str]]:
    paths = server.client(None).get("/openapi.json").json()["paths"]
    return {(method.upper(), path) for path, methods in paths.items() for method in methods}


def _answer(client: httpx.Client, method: str, url: str, body: Any) -> tuple[int, str, bytes]:
    """Status, content type and body; of an event stream (which stays open), what comes
    before its first event."""
    with client.stream(method, url, json=body) as response:
        kind = response.headers.get("content-type", "")
        if not kind.startswith("text/event-stream"):
            return response.status_code, kind, response.read()
        head = b""
        for chunk in response.iter_raw():
            head += chunk
            if b"\n\n" in head:
                break
        return response.status_code, kind, head


@pytest.mark.parametrize("as_admin", [False, True], ids=["bob", "admin-as-bob"])
def test_another_users_things_answer_as_missing_ones_byte_for_byte(
    server: Server, alices: dict[str, str], as_admin: bool
) -> None:
    """Every endpoint answers bob for alice's conversation, message, memory store, entry and
    version exactly as it answers him once they are deleted: status, type and body, byte for
    byte (only the writes that create a conversation cannot hide it)."""
    assert _operations(server) == set(REQUESTS), "REQUESTS must name every operation"
    client = server.client("admin" if as_admin else "bob")
    if as_admin:
        client.params = client.params.set("userId", "bob")
    ids = {
        "conversationId": alices["cid"],
        "messageId": alices["mid"],
        "memoryStoreId": alices["sid"],
        "entryId": alices["eid"],
        "versionId": alices["vid"],
        "itemId": alices["mid"],
    }
    calls = [
        (operation, path.format(**ids) + query.format(**alices), body)
        for operation, requests in REQUESTS.items()
        if operation not in UNNAMED
        for query, body in requests
        for method, path in [operation]
    ]
    before = _snapshot(server, alices)
    theirs = [_answer(client, op[0], url, body) for op, url, body in calls]
    assert _snapshot(server, alices) == before  # nothing of alice's changed
    admin = server.client("admin")
    assert admin.delete(f"/conversations/{alices['cid']}").status_code == 204
    assert admin.delete(f"/memory_stores/{alices['sid']}").status_code == 204
    for (operation, url, body), answer in zip(calls, theirs, strict=True):
        if operation in CREATING:  # a free id would be created: the id is said to be taken
            assert answer[0] == 409, (operation, url)
            error = json.loads(answer[2])["error"]
            assert error == {
                "code": "conversation_ownership",
                "message": f"conversation {alices['cid']!r} is not yours: choose another id",
                "argument": "conversationId",
            }, (operation, url)
            continue
        assert _answer(client, operation[0], url, body) == answer, (operation, url)


def test_the_answer_is_the_one_a_missing_id_gets(server: Server, alices: dict[str, str]) -> None:
    bob = server.client("bob")
    theirs = _not_found(bob.get(f"/conversations/{alices['cid']}"))
    missing_cid = new_id("alice-chat")
    assert _not_found(bob.get(f"/conversations/{missing_cid}")) == theirs.replace(
        alices["cid"], missing_cid
    )
    theirs = _not_found(bob.get(f"/memory_stores/{alices['sid']}/memories"))
    fake = "memstore_" + "0" * 32
    assert _not_found(bob.get(f"/memory_stores/{fake}/memories")) == theirs.replace(
        alices["sid"], fake
    )
    assert _not_found(bob.get(f"/memory_stores/{alices['sid']}")) == _not_found(
        bob.get(f"/memory_stores/{fake}")
    ).replace(fake, alices["sid"])


def test_listings_show_only_ones_own(server: Server, alices: dict[str, str]) -> None:
    bob = server.client("bob")
    bob.post(f"/conversations/{new_id('bob-chat')}/messages", json={"role": "user", "content": "b"})
    bob.post("/memory_stores", json={"name": "bob-notes"})
    conversations = bob.get("/conversations", params={"limit": 100}).json()["items"]
    assert conversations and {c["userId"] for c in conversations} == {"bob"}
    stores = bob.get("/memory_stores", params={"limit": 100}).json()["items"]
    assert stores and {s["userId"] for s in stores} == {"bob"}
    for path in ("/conversations", "/memory_stores"):
        refused = bob.get(path, params={"userId": "alice"})
        assert refused.status_code == 403 and refused.json()["error"]["argument"] == "userId"
    assert bob.get("/conversations", params={"userId": "bob"}).status_code == 200


def _cursor(last_message_at: int, cid: str) -> str:
    raw = json.dumps([last_message_at, cid]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def test_forged_cursors_do_not_reach_the_other_user(server: Server, alices: dict[str, str]) -> None:
    bob = server.client("bob")
    for _ in range(3):
        bob.post(f"/conversations/{new_id('bob')}/messages", json={"role": "user", "content": "b"})
    alice_meta = server.client("alice").get(f"/conversations/{alices['cid']}").json()
    forged = {
        _cursor(alice_meta["lastMessageAt"], alices["cid"]),
        _cursor(alice_meta["lastMessageAt"] + 1, alices["cid"]),
        _cursor(0, ""),
        _cursor(2**62, "zzz"),
    }
    for cursor in forged:
        for side in ("after", "before"):
            page = bob.get("/conversations", params={side: cursor, "limit": 100})
            assert page.status_code in (200, 400), page.text
            if page.status_code == 200:
                assert {c["userId"] for c in page.json()["items"]} <= {"bob"}

    own = new_id("bob")
    bob.post(f"/conversations/{own}/messages", json={"role": "user", "content": "b"})
    for side in ("after", "before"):
        refused = bob.get(f"/conversations/{own}/messages", params={side: alices["mid"]})
        assert refused.status_code == 400  # no such message in bob's conversation
        assert "mine" not in refused.text

    sid = bob.post("/memory_stores", json={"name": "b"}).json()["memoryStoreId"]
    versions = bob.get(f"/memory_stores/{sid}/versions", params={"after": alices["vid"]})
    assert versions.status_code == 400 and "secret" not in versions.text
    entry = bob.get(f"/memory_stores/{sid}/memories/{alices['eid']}")
    _not_found(entry)
    version = bob.get(f"/memory_stores/{sid}/versions/{alices['vid']}")
    _not_found(version)
    stores = bob.get("/memory_stores", params={"after": alices["sid"], "limit": 100}).json()
    assert {s["userId"] for s in stores["items"]} <= {"bob"}


def test_an_admin_sees_both_and_acts_as_either(server: Server, alices: dict[str, str]) -> None:
    admin = server.client("admin")
    assert admin.get(f"/conversations/{alices['cid']}").json()["userId"] == "alice"
    as_bob = admin.get(f"/conversations/{alices['cid']}", params={"userId": "bob"})
    _not_found(as_bob)
    as_alice = admin.get(f"/conversations/{alices['cid']}/messages", params={"userId": "alice"})
    assert [m["content"] for m in as_alice.json()["items"]] == ["mine"]
    cid = new_id("for-bob")
    admin.post(
        f"/conversations/{cid}/messages",
        params={"userId": "bob"},
        json={"role": "assistant", "content": "made for bob"},
    )
    assert server.client("bob").get(f"/conversations/{cid}").json()["userId"] == "bob"


def test_no_token_or_a_bad_token_is_401(server: Server, alices: dict[str, str]) -> None:
    anonymous = server.client(None)
    for headers in (
        {},
        {"Authorization": "Bearer nope"},
        {"Authorization": "Basic YTpi"},
        {"Authorization": "Bearer"},
    ):
        for method, path, body in CONVERSATION_CALLS + MEMORY_CALLS:
            response = anonymous.request(method, path.format(**alices), json=body, headers=headers)
            assert response.status_code == 401, (path, response.text)
            assert response.json()["error"]["code"] == "unauthenticated"
            assert response.headers["www-authenticate"] == "Bearer"
    assert anonymous.get("/conversations").status_code == 401
