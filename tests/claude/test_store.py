"""What the conformance suite does not cover: idempotency, ordering, mtime, scoping, limits."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from convostore import ConversationStore
from convostore.errors import ConversationOwnershipError, MemoryValidationError, StorageError
from convostore_claude import ConvostoreSessionStore

pytestmark = pytest.mark.anyio

KEY: Any = {"project_key": "proj", "session_id": "sess"}


def e(uuid: str | None = None, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "user", **fields}
    if uuid is not None:
        entry["uuid"] = uuid
    return entry


async def test_uuid_is_an_idempotency_key_per_key(session_store: ConvostoreSessionStore) -> None:
    await session_store.append(KEY, [e("a", n=1), e("b", n=2)])
    await session_store.append(KEY, [e("a", n=1), e("b", n=2)])  # a retried batch
    await session_store.append(KEY, [e("b", n=2), e("c", n=3)])  # overlapping a stored one
    await session_store.append(KEY, [e("d", n=4), e("d", n=4)])  # repeated inside one batch
    await session_store.append(KEY, [e("a", n=99)])  # same uuid, other entry: stored one wins
    assert await session_store.load(KEY) == [e("a", n=1), e("b", n=2), e("c", n=3), e("d", n=4)]
    # the same uuid under another key is another entry
    sub = {**KEY, "subpath": "subagents/agent-1"}
    await session_store.append(sub, [e("a", n=1)])
    assert await session_store.load(sub) == [e("a", n=1)]


async def test_entries_without_uuid_always_append(session_store: ConvostoreSessionStore) -> None:
    await session_store.append(KEY, [e(mode="plan")])
    await session_store.append(KEY, [e("a"), e(mode="default")])
    await session_store.append(KEY, [e(mode="plan")])
    await session_store.append(KEY, [e("b"), e(mode="plan")])
    assert await session_store.load(KEY) == [
        e(mode="plan"),
        e("a"),
        e(mode="default"),
        e(mode="plan"),
        e("b"),
        e(mode="plan"),
    ]


async def test_replayed_batches_do_not_repeat_uuidless_entries(
    session_store: ConvostoreSessionStore,
) -> None:
    # A retry (or re-import) resends whole batches: their uuid-less lines are not new either.
    batch = [e(mode="default"), e("a"), e(title="t"), e("b")]
    await session_store.append(KEY, batch)
    await session_store.append(KEY, batch)
    await session_store.append(KEY, [e(meta="x")])
    await session_store.append(KEY, [e(meta="x")])  # a batch that replays the key's tail
    # a catch-up batch: what follows a stored entry is skipped, what follows a new one kept
    await session_store.append(KEY, [e("b"), e(title="t"), e("c"), e(title="u")])
    assert await session_store.load(KEY) == [*batch, e(meta="x"), e("c"), e(title="u")]


async def test_order_is_append_order(session_store: ConvostoreSessionStore) -> None:
    entries = [e(uuid, i=i) for i, uuid in enumerate(["z", "a", "m", "b", "0"])]
    for entry in entries:
        await session_store.append(KEY, [entry])
    await session_store.append(KEY, [e("y", timestamp="1999-01-01T00:00:00Z")])
    loaded = await session_store.load(KEY)
    assert loaded == [*entries, e("y", timestamp="1999-01-01T00:00:00Z")]
    assert loaded is not None
    loaded.clear()  # a fresh list each time
    assert len(await session_store.load(KEY) or []) == 6


async def test_nested_and_empty_subpaths(session_store: ConvostoreSessionStore) -> None:
    nested = {**KEY, "subpath": "subagents/workflows/run-1/agent-x"}
    flat = {**KEY, "subpath": "subagents/agent-y"}
    await session_store.append(KEY, [e("m")])
    await session_store.append(nested, [e("n")])
    await session_store.append(flat, [e("f")])
    await session_store.append({**KEY, "subpath": ""}, [e("main2")])  # "" is the main transcript
    assert await session_store.load(KEY) == [e("m"), e("main2")]
    assert sorted(await session_store.list_subkeys(KEY)) == [flat["subpath"], nested["subpath"]]
    await session_store.delete(nested)
    assert await session_store.list_subkeys(KEY) == [flat["subpath"]]
    await session_store.delete({**KEY, "subpath": ""})  # cascades like the main key
    assert await session_store.load(flat) is None
    assert await session_store.list_subkeys(KEY) == []


async def test_mtime_and_summary_share_one_clock(session_store: ConvostoreSessionStore) -> None:
    times = []
    for i in range(3):
        await session_store.append(KEY, [e(str(i), customTitle=f"title {i}")])
        [listed] = await session_store.list_sessions("proj")
        [summary] = await session_store.list_session_summaries("proj")
        assert summary["mtime"] == listed["mtime"] > 1e12
        assert summary["data"]["custom_title"] == f"title {i}"
        times.append(listed["mtime"])
    assert times == sorted(times)
    # a subagent append touches neither the session's mtime nor its summary
    await session_store.append({**KEY, "subpath": "subagents/agent-1"}, [e("s", customTitle="x")])
    assert await session_store.list_sessions("proj") == [{"session_id": "sess", "mtime": times[-1]}]
    [summary] = await session_store.list_session_summaries("proj")
    assert summary["data"]["custom_title"] == "title 2"
    # a replayed batch neither: its entries are not folded twice
    await session_store.append(KEY, [e("1", customTitle="title 1")])
    assert await session_store.list_session_summaries("proj") == [summary]


async def test_a_listing_decodes_only_what_it_returns(
    session_store: ConvostoreSessionStore,
) -> None:
    """``list_sessions`` reads no metadata (the session id is in the conversation id), unless
    a session id is hashed; ``list_session_summaries`` reads it and names a damaged row."""
    await session_store.append(KEY, [e("1", customTitle="t")])
    await session_store.append({**KEY, "session_id": "other"}, [e("2")])
    cid = session_store.conversation_id(KEY)
    session_store.store.backend.write(
        lambda tx: tx.execute(
            "UPDATE convostore_conversations SET metadata = '[1]' WHERE id = ?", [cid]
        )
    )
    assert sorted(s["session_id"] for s in await session_store.list_sessions("proj")) == [
        "other",
        "sess",
    ]
    with pytest.raises(StorageError, match=f"conversation {cid!r}: its stored metadata"):
        await session_store.list_session_summaries("proj")
    # a hashed session id is named by the metadata: the listing reads it after all
    hashed: Any = {"project_key": "proj", "session_id": "s/" * 300}
    await session_store.append(hashed, [e("3")])
    with pytest.raises(StorageError, match=f"conversation {cid!r}: its stored metadata"):
        await session_store.list_sessions("proj")


async def test_the_summary_is_the_metadatas_first_key(
    session_store: ConvostoreSessionStore,
) -> None:
    """The summaries listing decodes a summary alone when it comes first (new sessions); a
    session whose metadata holds it later (written before) is listed the same."""
    await session_store.append(KEY, [e("1", customTitle="t")])
    cid = session_store.conversation_id(KEY)
    meta = session_store.store.get_conversation(conversation_id=cid)
    assert meta is not None and meta.metadata is not None
    assert list(meta.metadata) == ["claude_summary", "claude_session", "title"]
    [listed] = await session_store.list_session_summaries("proj")
    older = json.dumps(
        {k: meta.metadata[k] for k in ("claude_session", "claude_summary", "title")},
        separators=(",", ":"),
    )
    session_store.store.backend.write(
        lambda tx: tx.execute(
            "UPDATE convostore_conversations SET metadata = ? WHERE id = ?", [older, cid]
        )
    )
    assert await session_store.list_session_summaries("proj") == [listed]
    assert listed["data"]["custom_title"] == "t"


async def test_large_unicode_and_nul_entries_round_trip(
    session_store: ConvostoreSessionStore,
) -> None:
    big = "x" * (6 * 1024 * 1024)
    entries = [
        e("big", toolUseResult={"stdout": big}),
        e("nul", text="a\u0000b", nested={"k\u0000": ["\u0000"]}),
        e("uni", text="\U0001f600 \u00e9\u4e2d \u2028", empty="", n=1.5, none=None, t=True),
    ]
    await session_store.append(KEY, entries)
    assert await session_store.load(KEY) == entries


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # storage, not the event loop
async def test_a_hundred_thousand_entries(session_store: ConvostoreSessionStore) -> None:
    batch = 2_000
    for start in range(0, 100_000, batch):
        await session_store.append(KEY, [e(f"u{i}", i=i) for i in range(start, start + batch)])
    loaded = await session_store.load(KEY)
    assert loaded is not None and len(loaded) == 100_000
    assert [x["i"] for x in loaded] == list(range(100_000))


async def test_tenants_and_users_are_kept_apart(conversation_store: ConversationStore) -> None:
    stores = {
        (t, u): ConvostoreSessionStore(store=conversation_store, tenant=t, user_id=u)
        for t in (None, "acme", "globex")
        for u in (None, "ann")
    }
    for (t, u), store in stores.items():
        await store.append(KEY, [e("same-uuid", owner=f"{t}/{u}")])
    for (t, u), store in stores.items():
        assert await store.load(KEY) == [e("same-uuid", owner=f"{t}/{u}")]
        assert [s["session_id"] for s in await store.list_sessions("proj")] == ["sess"]
    await stores["acme", "ann"].delete(KEY)
    assert await stores["acme", "ann"].load(KEY) is None
    assert await stores["acme", None].load(KEY) is not None
    # user_id owns the conversations: the core's per-user listing and erasure see them
    owned = conversation_store.list_conversations(user_id="ann", limit=10).items
    assert len(owned) == 2
    assert conversation_store.delete_user_data(user_id="ann") == 2
    assert await stores["globex", "ann"].load(KEY) is None
    assert await stores["globex", None].load(KEY) is not None


async def test_user_store_cannot_write_into_another_users_session(
    conversation_store: ConversationStore,
) -> None:
    ann = ConvostoreSessionStore(store=conversation_store, user_id="ann")
    await ann.append(KEY, [e("a")])
    cid = ann.conversation_id(KEY)
    with pytest.raises(ConversationOwnershipError):
        conversation_store.append_message(
            conversation_id=cid, role="user", content="x", user_id="bob"
        )


async def test_long_keys(session_store: ConvostoreSessionStore) -> None:
    long_key = {"project_key": "p" * 900, "session_id": "s/" * 300, "subpath": "sub/" * 250}
    main = {k: long_key[k] for k in ("project_key", "session_id")}
    await session_store.append(main, [e("m")])
    await session_store.append(long_key, [e("s")])  # type: ignore[arg-type]
    assert len(session_store.conversation_id(long_key).encode()) <= 256  # type: ignore[arg-type]
    assert await session_store.load(long_key) == [e("s")]  # type: ignore[arg-type]
    assert await session_store.list_subkeys(main) == [long_key["subpath"]]  # type: ignore[arg-type]
    assert await session_store.list_sessions("p" * 900) == [
        {
            "session_id": "s/" * 300,
            "mtime": (await session_store.list_sessions("p" * 900))[0]["mtime"],
        }
    ]
    summaries = await session_store.list_session_summaries("p" * 900)
    assert [s["session_id"] for s in summaries] == ["s/" * 300]  # hashed: named by its metadata
    # a session id that looks like another session's subkey stays its own session
    await session_store.append({"project_key": "q", "session_id": "a/b"}, [e("1")])
    await session_store.append({"project_key": "q", "session_id": "a", "subpath": "b"}, [e("2")])
    assert sorted(s["session_id"] for s in await session_store.list_sessions("q")) == ["a/b"]
    assert await session_store.list_subkeys({"project_key": "q", "session_id": "a"}) == ["b"]


@pytest.mark.parametrize(
    ("key", "entries", "message"),
    [
        ({"project_key": "", "session_id": "s"}, [e()], r"key\['project_key'\] must be 1 to 1024"),
        ({"project_key": "p" * 1025, "session_id": "s"}, [e()], "got 1025 bytes"),
        ({"project_key": "p", "session_id": 3}, [e()], r"key\['session_id'\] must be a str"),
        ({"project_key": "p", "session_id": "s\u0000"}, [e()], "NUL"),
        ({"project_key": "p"}, [e()], r"key\['session_id'\] must be a str, got NoneType"),
        ("p/s", [e()], "key must be a SessionKey dict"),
        (KEY, {"type": "user"}, "entries must be a list"),
        (KEY, [e("a"), "line"], r"entries\[1\] must be a dict"),
        (KEY, [e("a"), e("b", n=float("nan"))], r"entries\[1\]\['n'\]: nan is not valid JSON"),
        (KEY, [e(x={1, 2})], r"entries\[0\]\['x'\]: set is not JSON-serializable"),
    ],
)
async def test_bad_input_is_refused_before_anything_is_written(
    session_store: ConvostoreSessionStore, key: Any, entries: Any, message: str
) -> None:
    with pytest.raises(MemoryValidationError, match=message):
        await session_store.append(key, entries)
    assert session_store.store.list_conversations(limit=10).items == []


async def test_entry_limits(conversation_store: ConversationStore) -> None:
    store = ConvostoreSessionStore(store=conversation_store, max_entries=3)
    await store.append(KEY, [e("a"), e("b")])
    with pytest.raises(Exception, match="limit of 3 messages"):
        await store.append(KEY, [e("c"), e("d")])
    assert await store.load(KEY) == [e("a"), e("b")]
    with pytest.raises(MemoryValidationError, match="max_entries must be between 1 and"):
        ConvostoreSessionStore(store=conversation_store, max_entries=0)
    with pytest.raises(MemoryValidationError, match="pass url or store, not both"):
        ConvostoreSessionStore("memory://", store=conversation_store)
    with pytest.raises(MemoryValidationError, match="user_id must be 1 to 256 bytes"):
        ConvostoreSessionStore(store=conversation_store, user_id="u" * 257)
    with pytest.raises(MemoryValidationError, match="tenant must be a str"):
        ConvostoreSessionStore(store=conversation_store, tenant=7)  # type: ignore[arg-type]
    with pytest.raises(MemoryValidationError, match="store must be a ConversationStore"):
        ConvostoreSessionStore(store="memory://")  # type: ignore[arg-type]


async def test_cancelled_append_is_all_or_nothing(session_store: ConvostoreSessionStore) -> None:
    batch = [e(f"u{i}", payload="y" * 1000) for i in range(3000)]
    with anyio.move_on_after(0.001) as scope:
        await session_store.append(KEY, batch)
    loaded = await session_store.load(KEY) or []
    assert len(loaded) in (0, 3000)
    assert scope.cancel_called or len(loaded) == 3000


async def test_prune_deletes_old_sessions_with_their_subkeys(backend_url: str) -> None:
    now = [1_800_000_000_000]
    with ConversationStore(backend_url, clock=lambda: now[0]) as conversations:
        store = ConvostoreSessionStore(store=conversations)
        await store.append({"project_key": "p", "session_id": "old"}, [e("1")])
        await store.append({"project_key": "p", "session_id": "old", "subpath": "s"}, [e("2")])
        now[0] += 60_000
        await store.append({"project_key": "p", "session_id": "new"}, [e("3")])
        await store.append({"project_key": "other", "session_id": "old"}, [e("4")])
        assert await store.prune("p", older_than_ms=now[0]) == ["old"]
        assert await store.list_sessions("p") == [{"session_id": "new", "mtime": now[0]}]
        assert await store.load({"project_key": "p", "session_id": "old", "subpath": "s"}) is None
        assert await store.load({"project_key": "other", "session_id": "old"}) == [e("4")]
        with pytest.raises(MemoryValidationError, match="older_than_ms must be an int"):
            await store.prune("p", older_than_ms="yesterday")  # type: ignore[arg-type]


async def test_reached_from_the_core(conversation_store: ConversationStore) -> None:
    store = conversation_store.claude_session_store(tenant="acme")
    assert isinstance(store, ConvostoreSessionStore) and store.tenant == "acme"
    await store.append(KEY, [e("a")])
    direct = ConvostoreSessionStore(store=conversation_store, tenant="acme")
    assert await direct.load(KEY) == [e("a")]
