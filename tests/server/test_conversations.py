"""Conversations and messages over HTTP: every endpoint and its documented errors, against a
real server on an SQLite file and on PostgreSQL."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx
from served import Server, new_id

JSON = {"content-type": "application/json"}


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code and error["message"]
    return error


def _post(
    client: httpx.Client, cid: str, body: Any, params: Any = None, **headers: str
) -> httpx.Response:
    url = f"/conversations/{quote(cid, safe='')}/messages"
    return client.post(url, json=body, headers=headers, params=params)


def test_append_then_read_in_the_reference_shapes(server: Server) -> None:
    alice, cid = server.client("alice"), new_id()
    first = _post(alice, cid, {"role": "user", "content": "Hello!", "metadata": {"source": "web"}})
    assert first.status_code == 201 and first.json()["messageId"].startswith("msg_")
    _post(alice, cid, {"role": "assistant", "content": [{"type": "text", "text": "Hi"}]})

    messages = _messages(alice, cid)
    assert [m["content"] for m in messages] == ["Hello!", [{"type": "text", "text": "Hi"}]]
    assert set(messages[0]) == {
        "messageId",
        "role",
        "content",
        "createdAt",
        "metadata",
        "updatedAt",
    }
    assert messages[0]["messageId"] == first.json()["messageId"]
    assert messages[0]["metadata"] == {"source": "web"} and messages[0]["updatedAt"] is None

    meta = alice.get(f"/conversations/{cid}").json()
    assert meta["conversationId"] == cid and meta["messageCount"] == 2
    assert meta["userId"] == "alice"  # a user's new conversation is theirs
    assert meta["lastMessageAt"] >= meta["createdAt"] > 0


def _messages(client: httpx.Client, cid: str, **params: Any) -> list[Any]:
    """The items of a page of ``cid``'s messages."""
    response = client.get(f"/conversations/{quote(cid, safe='')}/messages", params=params)
    assert response.status_code == 200, response.text
    items: list[Any] = response.json()["items"]
    return items


def test_message_pages_follow_the_python_api(server: Server) -> None:
    """The page is get_messages' (``after`` and ``before`` in time, ``order`` sorting the page);
    ``nextCursor`` is the page after it in time, ``previousCursor`` the one before."""
    alice, cid = server.client("alice"), new_id()
    ids = _post(
        alice, cid, {"messages": [{"role": "user", "content": f"m{i}"} for i in range(10)]}
    ).json()["messageIds"]

    def page(**params: Any) -> tuple[list[str], str | None, str | None]:
        response = alice.get(f"/conversations/{cid}/messages", params=params)
        assert response.status_code == 200, response.text
        body = response.json()
        assert set(body) == {"items", "nextCursor", "previousCursor"}
        contents = [m["content"] for m in body["items"]]
        return contents, body["nextCursor"], body["previousCursor"]

    assert page(limit=3) == (["m0", "m1", "m2"], ids[2], None)
    assert page(limit=3, order="desc") == (["m9", "m8", "m7"], None, ids[7])
    assert page(limit=3, order="desc", before=ids[7]) == (["m6", "m5", "m4"], ids[6], ids[4])
    assert page(limit=2, after=ids[4]) == (["m5", "m6"], ids[6], ids[5])
    assert page(limit=3, after=ids[6]) == (["m7", "m8", "m9"], None, ids[7])
    assert page(limit=3, before=ids[3], order="desc") == (["m2", "m1", "m0"], ids[2], None)
    assert page(limit=10) == ([f"m{i}" for i in range(10)], None, None)  # all: no cursor
    assert page(limit=100) == ([f"m{i}" for i in range(10)], None, None)
    empty = alice.get(f"/conversations/{new_id()}/messages").json()  # as get_messages: none
    assert empty == {"items": [], "nextCursor": None, "previousCursor": None}


def test_message_cursors_walk_every_message_once_both_ways(server: Server) -> None:
    """At every page size, the largest (100, which cannot read one more to know whether more
    follow) included: nextCursor walks forward in time, previousCursor back."""
    alice, cid = server.client("alice"), new_id()
    for start in range(0, 205, 100):
        batch = [{"role": "user", "content": str(i)} for i in range(start, min(start + 100, 205))]
        assert _post(alice, cid, {"messages": batch}).status_code == 201
    for limit in (7, 100):
        seen: list[str] = []
        params: dict[str, Any] = {"limit": limit}
        while True:
            body = alice.get(f"/conversations/{cid}/messages", params=params).json()
            seen += [m["content"] for m in body["items"]]
            if body["nextCursor"] is None:
                break
            params = {"limit": limit, "after": body["nextCursor"]}
        assert seen == [str(i) for i in range(205)], limit
        seen, params = [], {"limit": limit, "order": "desc"}
        while True:
            body = alice.get(f"/conversations/{cid}/messages", params=params).json()
            seen += [m["content"] for m in body["items"]]
            if body["previousCursor"] is None:
                break
            params = {"limit": limit, "order": "desc", "before": body["previousCursor"]}
        assert seen == [str(i) for i in range(204, -1, -1)], limit


def test_bad_paging_arguments_are_400_naming_the_argument(server: Server) -> None:
    alice, cid = server.client("alice"), new_id()
    mid = _post(alice, cid, {"role": "user", "content": "x"}).json()["messageId"]
    url = f"/conversations/{cid}/messages"
    assert (
        _error(alice.get(url, params={"limit": 0}), 400, "invalid_argument")["argument"] == "limit"
    )
    assert "between 1 and 100" in alice.get(url, params={"limit": 101}).json()["error"]["message"]
    huge = alice.get(url, params={"limit": 2**70})
    assert _error(huge, 400, "invalid_argument")["argument"] == "limit"
    _error(alice.get(url, params={"after": mid, "before": mid}), 400, "invalid_argument")
    _error(alice.get(url, params={"after": "msg_forged"}), 400, "invalid_argument")
    _error(alice.get(url, params={"order": "sideways"}), 422, "invalid_request")
    _error(alice.get(url, params={"limit": "ten"}), 422, "invalid_request")
    for cursor in ("bm90IGEgY3Vyc29y", "%%%", "W10", "x" * 5000):
        _error(alice.get("/conversations", params={"after": cursor}), 400, "invalid_argument")


def test_list_conversations_pages_with_cursors(server: Server) -> None:
    admin, user = server.client("admin"), new_id("u")
    cids = [new_id() for _ in range(5)]
    for cid in cids:
        _post(admin, cid, {"role": "user", "content": "hi"}, params={"userId": user})
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 2, "userId": user}
        if cursor:
            params["after"] = cursor
        page = admin.get("/conversations", params=params).json()
        assert set(page) == {"items", "nextCursor", "previousCursor"}
        seen += [c["conversationId"] for c in page["items"]]
        if page["nextCursor"] is None:
            break
        cursor = page["nextCursor"]
    assert sorted(seen) == sorted(cids)
    back = admin.get(
        "/conversations", params={"limit": 2, "userId": user, "before": page["previousCursor"]}
    ).json()
    assert len(back["items"]) == 2
    oldest = admin.get("/conversations", params={"limit": 1, "order": "asc", "userId": user})
    assert oldest.json()["items"][0]["conversationId"] == cids[0]


def test_patch_merges_metadata_and_null_deletes_a_key(server: Server) -> None:
    alice, cid = server.client("alice"), new_id()
    created = alice.patch(f"/conversations/{cid}", json={"metadata": {"title": "T", "tag": "x"}})
    assert created.status_code == 200 and created.json()["messageCount"] == 0
    assert created.json()["userId"] == "alice"
    merged = alice.patch(f"/conversations/{cid}", json={"metadata": {"tag": None, "n": 1}})
    assert merged.json()["metadata"] == {"title": "T", "n": 1}
    _error(alice.patch(f"/conversations/{cid}", json={"metadata": [1]}), 422, "invalid_request")
    _error(alice.patch(f"/conversations/{cid}", json={}), 422, "invalid_request")
    unknown = alice.patch(f"/conversations/{cid}", json={"metadata": {}, "title": "no"})
    assert _error(unknown, 422, "invalid_request")["argument"] == "title"


def test_fork_copies_a_conversation_whole_or_up_to_a_message(server: Server) -> None:
    alice, cid = server.client("alice"), new_id("trip")
    ids = [
        _post(alice, cid, {"role": role, "content": text, "metadata": {"n": i}}).json()["messageId"]
        for i, (role, text) in enumerate(
            [("user", "Plan 3 days in Kyoto"), ("assistant", "Day 1: ..."), ("user", "5 days")]
        )
    ]
    alice.patch(f"/conversations/{cid}", json={"metadata": {"title": "Kyoto", "tag": "x"}})
    branch = new_id("trip-b")
    body = {"newConversationId": branch, "upTo": ids[1], "metadata": {"tag": None, "b": 1}}
    forked = alice.post(f"/conversations/{cid}/fork", json=body)
    assert forked.status_code == 201, forked.text
    meta = forked.json()
    assert meta["conversationId"] == branch and meta["messageCount"] == 2
    assert meta["userId"] == "alice"
    assert meta["metadata"] == {
        "title": "Kyoto",
        "b": 1,
        "forkedFrom": {"conversationId": cid, "messageId": ids[1]},
    }
    assert alice.get(f"/conversations/{branch}").json() == meta
    copied, source = _messages(alice, branch), _messages(alice, cid)
    assert copied == source[:2]  # ids, contents, metadata and times kept
    assert alice.get(f"/conversations/{cid}").json()["messageCount"] == 3  # untouched
    whole = alice.post(f"/conversations/{cid}/fork", json={"newConversationId": new_id()})
    assert whole.status_code == 201 and whole.json()["messageCount"] == 3
    assert whole.json()["metadata"]["forkedFrom"] == {"conversationId": cid, "messageId": None}

    taken = alice.post(f"/conversations/{cid}/fork", json={"newConversationId": branch})
    assert "is a conversation already" in _error(taken, 409, "conversation_exists")["message"]
    missing = alice.post(f"/conversations/{new_id()}/fork", json={"newConversationId": new_id()})
    _error(missing, 404, "not_found")
    unknown = alice.post(
        f"/conversations/{cid}/fork", json={"newConversationId": new_id(), "upTo": "msg_nope"}
    )
    assert _error(unknown, 400, "invalid_argument")["argument"] == "up_to"
    no_id = alice.post(f"/conversations/{cid}/fork", json={"upTo": ids[0]})
    assert _error(no_id, 422, "invalid_request")["argument"] == "newConversationId"


def test_delete_and_clear(server: Server) -> None:
    alice, cid = server.client("alice"), new_id()
    _post(
        alice,
        cid,
        {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]},
    )
    alice.patch(f"/conversations/{cid}", json={"metadata": {"title": "kept"}})
    assert alice.delete(f"/conversations/{cid}/messages").status_code == 204
    assert _messages(alice, cid) == []
    meta = alice.get(f"/conversations/{cid}").json()
    assert meta["messageCount"] == 0 and meta["metadata"] == {"title": "kept"}
    assert alice.delete(f"/conversations/{cid}").status_code == 204
    _error(alice.get(f"/conversations/{cid}"), 404, "not_found")
    assert alice.delete(f"/conversations/{cid}").status_code == 204  # idempotent


def test_one_message_read_update_delete(server: Server) -> None:
    alice, cid = server.client("alice"), new_id()
    mid = _post(alice, cid, {"role": "assistant", "content": "draft"}).json()["messageId"]
    one = alice.get(f"/conversations/{cid}/messages/{mid}")
    assert one.status_code == 200 and one.json()["content"] == "draft"
    updated = alice.patch(
        f"/conversations/{cid}/messages/{mid}", json={"content": "final", "metadata": {"e": 1}}
    ).json()
    assert updated["content"] == "final" and updated["metadata"] == {"e": 1}
    assert updated["updatedAt"] >= updated["createdAt"]
    kept = alice.patch(f"/conversations/{cid}/messages/{mid}", json={"metadata": {"e": 2}})
    assert kept.json()["content"] == "final"
    _error(alice.patch(f"/conversations/{cid}/messages/{mid}", json={}), 400, "invalid_argument")
    _error(
        alice.patch(f"/conversations/{cid}/messages/msg_none", json={"content": "x"}),
        404,
        "not_found",
    )
    assert alice.delete(f"/conversations/{cid}/messages/{mid}").status_code == 204
    _error(alice.get(f"/conversations/{cid}/messages/{mid}"), 404, "not_found")
    assert alice.delete(f"/conversations/{cid}/messages/{mid}").status_code == 204


def test_idempotency_key_and_message_id_make_retries_safe(server: Server) -> None:
    alice, cid = server.client("alice"), new_id()
    body = {"role": "user", "content": "once"}
    first = _post(alice, cid, body, **{"Idempotency-Key": "req-1"})
    again = _post(alice, cid, body, **{"Idempotency-Key": "req-1"})
    assert first.json() == again.json() == {"messageId": "req-1"}
    conflict = _post(
        alice, cid, {"role": "user", "content": "other"}, **{"Idempotency-Key": "req-1"}
    )
    assert _error(conflict, 409, "message_id_conflict")["argument"] == "messageId"
    with_id = {"role": "user", "content": "x", "messageId": "m-1"}
    assert _post(alice, cid, with_id).json() == _post(alice, cid, with_id).json()
    differ = _post(alice, cid, with_id, **{"Idempotency-Key": "other"})
    _error(differ, 400, "invalid_argument")
    batch = {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    ids = _post(alice, cid, batch, **{"Idempotency-Key": "b-1"}).json()["messageIds"]
    assert ids == ["b-1:0", "b-1:1"]
    assert _post(alice, cid, batch, **{"Idempotency-Key": "b-1"}).json()["messageIds"] == ids
    assert alice.get(f"/conversations/{cid}").json()["messageCount"] == 4


def test_an_idempotency_key_reused_with_another_batch_is_409(server: Server) -> None:
    """A retry carries the same batch: one longer, shorter, or a single message where a batch
    was (and the other way round) is a different request under the same key."""
    alice, cid = server.client("alice"), new_id()
    a, b, c = ({"role": "user", "content": x} for x in "abc")
    key = {"Idempotency-Key": "k-1"}
    assert _post(alice, cid, {"messages": [a, b]}, **key).json()["messageIds"] == ["k-1:0", "k-1:1"]
    for other in ({"messages": [a, b, c]}, {"messages": [a]}, {"messages": []}, a):
        refused = _post(alice, cid, other, **key)
        error = _error(refused, 409, "message_id_conflict")
        assert error["argument"] == "Idempotency-Key", other
    assert _post(alice, cid, {"messages": [a, b]}, **key).status_code == 201  # the same: a retry
    assert _post(alice, cid, a, **{"Idempotency-Key": "k-2"}).json() == {"messageId": "k-2"}
    as_batch = _post(alice, cid, {"messages": [a]}, **{"Idempotency-Key": "k-2"})
    assert _error(as_batch, 409, "message_id_conflict")["argument"] == "Idempotency-Key"
    contents = [m["content"] for m in _messages(alice, cid)]
    assert contents == ["a", "b", "a"]


def test_a_batch_is_atomic(server: Server) -> None:
    alice, cid = server.client("alice"), new_id()
    bad = {"messages": [{"role": "user", "content": "ok"}, {"role": "user", "content": 12}]}
    refused = _post(alice, cid, bad)
    assert refused.status_code in (400, 422), refused.text
    core_bad = {
        "messages": [
            {"role": "user", "content": "ok"},
            {"role": "user", "content": {"a": [1]}, "messageId": ""},
        ]
    }
    error = _error(_post(alice, cid, core_bad), 400, "invalid_argument")
    assert error["argument"] == "messages[1].message_id"
    assert _messages(alice, cid) == []
    assert _post(alice, cid, {"messages": []}).json() == {"messageIds": []}


def test_bad_bodies_are_400_or_422_never_500(server: Server) -> None:
    alice, cid = server.client("alice"), new_id()
    url = f"/conversations/{cid}/messages"
    cases: list[tuple[Any, int]] = [
        ({"role": "robot", "content": "x"}, 422),
        ({"content": "x"}, 422),
        ({"role": "user"}, 422),
        ({"role": "user", "content": "x", "extra": 1}, 422),
        ({"role": "user", "content": None}, 422),
        ({"role": "user", "content": "x", "metadata": "no"}, 422),
        ({"role": "user", "content": "x", "messageId": "a\u0000b"}, 400),
        ({"role": "user", "content": "x", "messageId": "m" * 257}, 400),
        ({"role": "user", "content": "x", "messageId": "\ud800"}, 400),
        ([1, 2], 422),
        ("text", 422),
    ]
    for body, status in cases:
        response = alice.post(url, content=json.dumps(body), headers=JSON)
        assert response.status_code == status, (body, response.text)
        assert response.json()["error"]["code"] in ("invalid_request", "invalid_argument")
    for raw in (b"{not json", b"[1,", b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000):
        response = alice.post(url, content=raw, headers={"content-type": "application/json"})
        error = _error(response, 400, "invalid_request")  # a body that is not JSON: 400
        assert error["argument"] == "body" and error["message"].startswith("body: "), raw[:9]
    for method, path in [
        ("PATCH", f"/conversations/{cid}"),
        ("PUT", "/memory_stores/s/memories/e"),
    ]:
        response = alice.request(method, path, content=b"{", headers=JSON)
        assert _error(response, 400, "invalid_request")["argument"] == "body", path
    plain = alice.post(
        url, content=b'{"role":"user","content":"x"}', headers={"content-type": "text/plain"}
    )
    assert 400 <= plain.status_code < 500
    assert _messages(alice, cid) == []


def test_json_the_python_api_keeps_comes_back_exact(server: Server) -> None:
    """NUL, lone surrogates (written as \\ud800 escapes), big ints, deep nesting."""
    alice, cid = server.client("alice"), new_id()
    deep: Any = "leaf"
    for _ in range(200):
        deep = [deep]
    content = {"nul": "a\u0000b", "lone": "x\ud800y", "big": 2**80, "deep": deep, "é": "ü"}
    body = json.dumps({"role": "user", "content": content})  # ASCII, surrogates escaped
    posted = alice.post(
        f"/conversations/{cid}/messages", content=body, headers={"content-type": "application/json"}
    )
    assert posted.status_code == 201, posted.text
    back = alice.get(f"/conversations/{cid}/messages")
    assert back.status_code == 200
    assert json.loads(back.text)["items"][0]["content"] == content


def test_ids_holding_slashes_and_escapes(server: Server) -> None:
    alice = server.client("alice")
    for cid in ("claude/abc/session", "a%2Fb", "percent%", "spa ce", "ünï/cødé", "x?y#z"):
        mid = _post(alice, cid, {"role": "user", "content": cid}).json()["messageId"]
        path = f"/conversations/{quote(cid, safe='')}"
        assert alice.get(path).json()["conversationId"] == cid
        assert alice.get(f"{path}/messages/{mid}").json()["content"] == cid
        assert alice.delete(path).status_code == 204
    bad_utf8 = alice.get("/conversations/%ff%fe/messages")
    assert _error(bad_utf8, 400, "invalid_argument")["argument"] == "conversation_id"
    long = alice.get(f"/conversations/{'x' * 300}")
    assert _error(long, 400, "invalid_argument")["argument"] == "conversation_id"


def test_ids_a_path_segment_cannot_carry_go_in_the_query(server: Server) -> None:
    """``.`` and ``..`` are ids like any other, but URLs resolve them away as path segments,
    even percent-encoded (httpx and browsers alike): they go in the query, '-' in the path."""
    alice = server.client("alice")
    for cid in (".", "..", "-"):
        posted = alice.post(
            "/conversations/-/messages",
            params={"conversationId": cid},
            json={"role": "user", "content": cid, "messageId": ".."},
        )
        assert posted.status_code == 201, posted.text
        query = {"conversationId": cid}
        assert alice.get("/conversations/-", params=query).json()["conversationId"] == cid
        page = alice.get("/conversations/-/messages", params=query).json()
        assert [m["content"] for m in page["items"]] == [cid]
        one = alice.get("/conversations/-/messages/-", params={**query, "messageId": ".."})
        assert one.json()["content"] == cid
        patched = alice.patch("/conversations/-", params=query, json={"metadata": {"t": cid}})
        assert patched.json()["metadata"] == {"t": cid}
    assert alice.get("/conversations/-").json()["metadata"] == {"t": "-"}  # '-' in the path
    both = alice.get("/conversations/x", params={"conversationId": "."})
    assert _error(both, 400, "invalid_argument")["argument"] == "conversationId"
    for cid in (".", "..", "-"):
        assert alice.delete("/conversations/-", params={"conversationId": cid}).status_code == 204
    assert alice.get("/conversations/-", params={"conversationId": "."}).status_code == 404


def test_unknown_routes_and_methods(server: Server) -> None:
    alice = server.client("alice")
    _error(alice.get("/nothing"), 404, "not_found")
    _error(alice.put("/conversations/x"), 405, "method_not_allowed")
    assert server.client(None).get("/openapi.json").status_code == 200


def test_hostile_values_in_paths_queries_and_bodies(server: Server) -> None:
    alice, admin, cid = server.client("alice"), server.client("admin"), new_id()
    _post(alice, cid, {"role": "user", "content": "x"})
    for path in ("/conversations/a%00b", "/conversations/%ed%a0%80/messages"):
        _error(alice.get(path), 400, "invalid_argument")
    url = f"/conversations/{cid}/messages"
    _error(alice.get(url, params={"after": "a\x00b"}), 400, "invalid_argument")
    _error(alice.get(url, params={"before": "m" * 300}), 400, "invalid_argument")
    as_nul = admin.get("/conversations", params={"userId": "u\x00"})
    assert _error(as_nul, 400, "invalid_argument")["argument"] == "user_id"
    _error(alice.get("/conversations", params={"userId": "u\x00"}), 403, "forbidden")
    deep: Any = "leaf"
    for _ in range(950):
        deep = [deep]
    nested = alice.post(url, content=json.dumps({"role": "user", "content": deep}), headers=JSON)
    assert _error(nested, 400, "invalid_argument")["argument"] == "content"
    huge_int = '{"role": "user", "content": "x", "metadata": {"n": ' + "9" * 5000 + "}}"
    assert 400 <= alice.post(url, content=huge_int, headers=JSON).status_code < 500
    assert [m["content"] for m in _messages(alice, cid)] == ["x"]


def test_the_fast_lane_and_the_regular_handler_answer_alike(server: Server) -> None:
    """A plain request takes the endpoint's fast lane (routes/fast.py), one with anything to
    decode or an unusual header the regular handler: both answer the same, byte for byte."""
    alice, bob, cid = server.client("alice"), server.client("bob"), new_id()
    url = f"/conversations/{cid}/messages"
    body = json.dumps({"role": "user", "content": "hi"})
    plain = alice.post(url, content=body, headers=JSON)  # the lane
    regular = alice.post(url, content=body, headers={"content-type": "application/json; x=1"})
    assert plain.status_code == regular.status_code == 201
    keyed = [
        alice.post(url, content=body, headers={**JSON, "Idempotency-Key": "k"}),
        alice.post(url, content=body, headers={**JSON, "Idempotency-Key": "k", "x": "1"}),
        alice.post(url + "?userId=alic%65", content=body, headers={**JSON, "Idempotency-Key": "k"}),
    ]
    assert {r.status_code for r in keyed} == {201} and len({r.text for r in keyed}) == 1
    for query, encoded in [
        ("limit=2", "limit=%32"),
        ("limit=2&order=desc", "limit=2&order=des%63"),
        ("order=desc&userId=alice", "order=desc&userId=alic%65"),
        (f"after={plain.json()['messageId']}", f"after={plain.json()['messageId']}&x="),
        ("limit=0", "limit=%30"),
        ("limit=1000", "limit=100%30"),  # over the store's limit: 400 either way
        ("order=up", "order=u%70"),  # 422 either way
        ("userId=bob", "userId=bo%62"),  # 403 either way
    ]:
        fast, slow = alice.get(f"{url}?{query}"), alice.get(f"{url}?{encoded}")
        assert (fast.status_code, fast.text) == (slow.status_code, slow.text), query
    for client in (bob, server.client(None)):  # another user's, no token: as before
        fast, slow = client.get(f"{url}?limit=2"), client.get(f"{url}?limit=%32")
        assert (fast.status_code, fast.text) == (slow.status_code, slow.text)
        fast = client.post(url, content=body, headers=JSON)
        slow = client.post(url, content=body, headers={"content-type": "application/json; x=1"})
        assert (fast.status_code, fast.text) == (slow.status_code, slow.text)
