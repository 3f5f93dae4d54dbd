"""The Memory Stores endpoints (paths as the reference gives them) over the core's memory
stores: every endpoint and its documented errors, on an SQLite file and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import httpx
from served import Server


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code and error["message"]
    return error


def _store(client: httpx.Client, **body: Any) -> str:
    created = client.post("/memory_stores", json={"name": "acme-project", **body})
    assert created.status_code == 201, created.text
    return str(created.json()["memoryStoreId"])


def test_the_reference_flow(server: Server) -> None:
    alice = server.client("alice")
    created = alice.post(
        "/memory_stores",
        json={"name": "acme", "description": "what we learned", "metadata": {"k": 1}},
    ).json()
    sid = created["memoryStoreId"]
    assert sid.startswith("memstore_") and created["userId"] == "alice"
    assert (created["entryCount"], created["totalSize"]) == (0, 0)

    entry = alice.post(
        f"/memory_stores/{sid}/memories",
        json={"path": "notes/2026/05/daily.md", "content": "Deploys on Fridays: no."},
    )
    assert entry.status_code == 201 and entry.json()["version"] == 1
    eid = entry.json()["entryId"]

    listed = alice.get(f"/memory_stores/{sid}/memories").json()
    assert [e["path"] for e in listed["items"]] == ["notes/2026/05/daily.md"]
    assert "content" not in listed["items"][0]  # listings give no content (the reference)
    one = alice.get(f"/memory_stores/{sid}/memories/{eid}").json()
    assert one["content"] == "Deploys on Fridays: no."

    updated = alice.put(
        f"/memory_stores/{sid}/memories/{eid}",
        json={"content": "Deploys on Fridays: no. Mondays: yes.", "version": 1},
    )
    assert updated.status_code == 200 and updated.json()["version"] == 2
    stale = alice.put(f"/memory_stores/{sid}/memories/{eid}", json={"content": "x", "version": 1})
    error = _error(stale, 409, "version_conflict")
    assert error["currentVersion"] == 2 and error["argument"] == "version"

    store = alice.get(f"/memory_stores/{sid}").json()
    assert (store["entryCount"], store["totalSize"]) == (1, 37)

    deleted = alice.delete(f"/memory_stores/{sid}/memories/{eid}")
    assert deleted.status_code == 200 and deleted.json()["operation"] == "delete"
    assert alice.delete(f"/memory_stores/{sid}/memories/{eid}").json() == deleted.json()
    _error(alice.get(f"/memory_stores/{sid}/memories/{eid}"), 404, "not_found")
    versions = alice.get(f"/memory_stores/{sid}/versions", params={"entryId": eid}).json()
    assert [v["operation"] for v in versions["items"]] == ["create", "update", "delete"]
    assert not any("content" in v for v in versions["items"])


def test_listings_leave_content_out_of_their_schema(server: Server) -> None:
    document = server.client(None).get("/openapi.json").json()
    schemas = document["components"]["schemas"]

    def item_of(path: str) -> dict[str, Any]:
        ok = document["paths"][path]["get"]["responses"]["200"]["content"]
        page = schemas[ok["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]]
        item: dict[str, Any] = schemas[
            page["properties"]["items"]["items"]["$ref"].rsplit("/", 1)[1]
        ]
        return item

    for path in (
        "/memory_stores/{memoryStoreId}/memories",
        "/memory_stores/{memoryStoreId}/versions",
    ):
        properties = item_of(path)["properties"]
        assert "content" not in properties and "path" in properties, path
    one = document["paths"]["/memory_stores/{memoryStoreId}/memories/{entryId}"]["get"]
    entry = one["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert "content" in schemas[entry.rsplit("/", 1)[1]]["properties"]


def test_paths_must_be_relative(server: Server) -> None:
    alice = server.client("alice")
    sid = _store(alice)
    for path in ("/notes/meeting.md", "a/../b", "a//b", "", "a\\b"):
        refused = alice.post(f"/memory_stores/{sid}/memories", json={"path": path, "content": "x"})
        assert _error(refused, 400, "invalid_argument")["argument"] == "path"
    ok = alice.post(f"/memory_stores/{sid}/memories", json={"path": "config.yaml", "content": ""})
    assert ok.status_code == 201
    taken = alice.post(
        f"/memory_stores/{sid}/memories", json={"path": "config.yaml", "content": ""}
    )
    assert _error(taken, 409, "path_conflict")["argument"] == "path"


def test_listing_pages_and_prefix(server: Server) -> None:
    alice = server.client("alice")
    sid = _store(alice)
    for path in ("a.md", "notes/1.md", "notes/2.md", "notes/3.md", "z.md"):
        alice.post(f"/memory_stores/{sid}/memories", json={"path": path, "content": path})
    first = alice.get(f"/memory_stores/{sid}/memories", params={"pathPrefix": "notes/", "limit": 2})
    assert [e["path"] for e in first.json()["items"]] == ["notes/1.md", "notes/2.md"]
    rest = alice.get(
        f"/memory_stores/{sid}/memories",
        params={"pathPrefix": "notes/", "limit": 2, "after": first.json()["nextCursor"]},
    ).json()
    assert [e["path"] for e in rest["items"]] == ["notes/3.md"] and rest["nextCursor"] is None
    _error(
        alice.get(f"/memory_stores/{sid}/memories", params={"after": "forged"}),
        400,
        "invalid_argument",
    )

    versions = alice.get(f"/memory_stores/{sid}/versions", params={"limit": 3}).json()
    more = alice.get(
        f"/memory_stores/{sid}/versions", params={"after": versions["nextCursor"]}
    ).json()
    assert len(versions["items"]) + len(more["items"]) == 5
    bad = alice.get(f"/memory_stores/{sid}/versions", params={"after": "memver_forged"})
    _error(bad, 400, "invalid_argument")

    stores = [_store(alice) for _ in range(2)]
    page = alice.get("/memory_stores", params={"limit": 1}).json()
    walked = [s["memoryStoreId"] for s in page["items"]]
    while page["nextCursor"]:
        page = alice.get("/memory_stores", params={"limit": 1, "after": page["nextCursor"]}).json()
        walked += [s["memoryStoreId"] for s in page["items"]]
    assert {sid, *stores} <= set(walked)


def test_versions_read_and_redaction_is_for_admins(server: Server) -> None:
    alice, admin = server.client("alice"), server.client("admin")
    sid = _store(alice)
    eid = alice.post(
        f"/memory_stores/{sid}/memories", json={"path": "secret.md", "content": "a secret"}
    ).json()["entryId"]
    alice.put(f"/memory_stores/{sid}/memories/{eid}", json={"content": "clean", "version": 1})
    first = alice.get(f"/memory_stores/{sid}/versions", params={"entryId": eid}).json()["items"][0]
    vid = first["versionId"]
    assert alice.get(f"/memory_stores/{sid}/versions/{vid}").json()["content"] == "a secret"

    _error(alice.post(f"/memory_stores/{sid}/versions/{vid}/redact"), 403, "forbidden")
    redacted = admin.post(f"/memory_stores/{sid}/versions/{vid}/redact")
    assert redacted.status_code == 200 and redacted.json()["redacted"] is True
    again = alice.get(f"/memory_stores/{sid}/versions/{vid}").json()
    assert again["content"] is None and again["redacted"] is True
    _error(admin.post(f"/memory_stores/{sid}/versions/memver_none/redact"), 404, "not_found")
    _error(alice.get(f"/memory_stores/{sid}/versions/memver_none"), 404, "not_found")


def test_moves_and_optimistic_deletes(server: Server) -> None:
    alice = server.client("alice")
    sid = _store(alice)
    eid = alice.post(
        f"/memory_stores/{sid}/memories", json={"path": "a.md", "content": "body"}
    ).json()["entryId"]
    moved = alice.put(f"/memory_stores/{sid}/memories/{eid}", json={"path": "b.md", "version": 1})
    assert moved.json()["path"] == "b.md" and moved.json()["version"] == 2
    assert alice.get(f"/memory_stores/{sid}/memories/{eid}").json()["content"] == "body"
    _error(
        alice.put(f"/memory_stores/{sid}/memories/{eid}", json={"version": 2}),
        400,
        "invalid_argument",
    )
    stale = alice.delete(f"/memory_stores/{sid}/memories/{eid}", params={"version": 1})
    assert _error(stale, 409, "version_conflict")["currentVersion"] == 2
    assert (
        alice.delete(f"/memory_stores/{sid}/memories/{eid}", params={"version": 2}).status_code
        == 200
    )
    _error(
        alice.put(f"/memory_stores/{sid}/memories/{eid}", json={"content": "x", "version": 3}),
        404,
        "not_found",
    )


def test_missing_stores_and_bad_bodies(server: Server) -> None:
    alice = server.client("alice")
    _error(alice.get("/memory_stores/memstore_none"), 404, "not_found")
    _error(alice.get("/memory_stores/memstore_none/memories"), 404, "not_found")
    _error(
        alice.post("/memory_stores/memstore_none/memories", json={"path": "a", "content": "b"}),
        404,
        "not_found",
    )
    assert alice.delete("/memory_stores/memstore_none").status_code == 204
    _error(alice.post("/memory_stores", json={}), 422, "invalid_request")
    _error(alice.post("/memory_stores", json={"name": ""}), 400, "invalid_argument")
    too_long = alice.post("/memory_stores", json={"name": "n", "description": "d" * 4097})
    assert _error(too_long, 400, "invalid_argument")["argument"] == "description"
    sid = _store(alice)
    url = f"/memory_stores/{sid}/memories"
    _error(alice.post(url, json={"path": "a", "content": 3}), 422, "invalid_request")
    eid = alice.post(url, json={"path": "a", "content": "x"}).json()["entryId"]
    huge = alice.put(f"{url}/{eid}", json={"content": "y", "version": 2**70})
    _error(huge, 400, "invalid_argument")
    _error(
        alice.put(f"{url}/{eid}", json={"content": "y", "version": "one"}), 422, "invalid_request"
    )


def test_delete_a_store_with_its_entries(server: Server) -> None:
    alice = server.client("alice")
    sid = _store(alice)
    alice.post(f"/memory_stores/{sid}/memories", json={"path": "a", "content": "x"})
    assert alice.delete(f"/memory_stores/{sid}").status_code == 204
    _error(alice.get(f"/memory_stores/{sid}"), 404, "not_found")
    _error(alice.get(f"/memory_stores/{sid}/versions"), 404, "not_found")
