"""Search over messages: the index's answers equal a plain scan of the semantics (every string
of the content, joined with a newline; each term a substring, compared as ``str.lower()``
makes both; newest first by created_at, conversation id, position), on every backend, sync
and async, page by page; and the index follows every write."""

from __future__ import annotations

import json
import random
import sqlite3
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from convostore import (
    AsyncConversationStore,
    ConversationOwnershipError,
    ConversationStore,
    MemoryValidationError,
    Message,
    StorageError,
)
from convostore.backends import search as search_backend

WORDS = {
    "en": ["Order", "number", "refund", "shipping", "The", "customer", "ORDER-42", "invoice"],
    "zh": ["订单", "号码", "退款", "客户", "发货", "中文测试", "你好世界"],
    "ja": ["注文", "番号", "返金", "お客様", "こんにちは", "カタカナ", "ひらがな"],
    "el": ["ΟΔΟΣ", "Σοφία", "ΣΑΣ", "λόγος", "ΆΝΘΡΩΠΟΣ", "ς", "σίσυφος"],
    "meta": ["%", "_", "*", '"', "^", "NEAR", "AND", "OR", "a_b%c", "İstanbul", "ß"],
}
ALL_WORDS = [w for words in WORDS.values() for w in words]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def text_of(content: Any) -> str:
    """The semantics, written again independently of the store's code."""
    return "\n".join(_strings(content))


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(ALL_WORDS) for _ in range(rng.randint(1, 8)))


def content(rng: random.Random) -> Any:
    shape = rng.randrange(5)
    if shape == 0:
        return sentence(rng)
    if shape == 1:
        return [{"type": "text", "text": sentence(rng)}, {"type": "text", "text": sentence(rng)}]
    if shape == 2:
        return {"type": "message", "role": "user", "content": [{"text": sentence(rng), "n": 3}]}
    if shape == 3:
        return {"sentence": sentence(rng), "nested": {"deeper": [sentence(rng), 1.5, True]}}
    return {"Order": 42, "refund": None}  # keys and numbers are no text


def build(store: ConversationStore, rng: random.Random, messages: int) -> None:
    """Conversations of three users and of none, in batches at few distinct times (ties in
    created_at across conversations, and across the index's minutes)."""
    for _ in range(messages // 10):
        cid = f"conv-{rng.randrange(40):02d}"
        user = ["alice", "bob", "carol", None][int(cid[-2:]) % 4]
        at = 1_700_000_000_000 + rng.randrange(30) * rng.choice([1, 59_999, 60_000, 7])
        stamped = store.with_limits()
        stamped.clock = lambda at=at: at
        batch: list[Any] = [
            {"role": rng.choice(["user", "assistant", "tool", "system"]), "content": content(rng)}
            for _ in range(10)
        ]
        stamped.append_messages(conversation_id=cid, messages=batch, user_id=user)


def edit(store: ConversationStore, rng: random.Random) -> None:
    """Updates, deletes, a clear, a fork and a deleted conversation: the index follows."""
    for cid in ("conv-01", "conv-05", "conv-09"):
        history = store.get_history(conversation_id=cid)
        if history:
            store.update_message(
                conversation_id=cid, message_id=history[0].message_id, content="zebra ΣΟΦΊΑ"
            )
            store.delete_message(conversation_id=cid, message_id=history[-1].message_id)
    store.clear_messages(conversation_id="conv-13")
    store.delete_conversation(conversation_id="conv-17")
    if store.get_conversation(conversation_id="conv-02"):
        store.fork_conversation(conversation_id="conv-02", new_conversation_id="fork-02")


def everything(store: ConversationStore) -> list[tuple[str, str | None, int, Message]]:
    """(conversation, owner, position, message) of every stored message."""
    found = []
    cursor = None
    while True:
        page = store.list_conversations(limit=100, after=cursor)
        for meta in page.items:
            history = store.get_history(conversation_id=meta.conversation_id)
            found += [(meta.conversation_id, meta.user_id, i, m) for i, m in enumerate(history)]
        cursor = page.next_cursor
        if cursor is None:
            return found


def expected(
    rows: list[tuple[str, str | None, int, Message]],
    terms: list[str],
    *,
    user: str | None = None,
    conversation: str | None = None,
    roles: list[str] | None = None,
) -> list[tuple[str, str]]:
    kept = [
        (m.created_at, cid, pos, m.message_id)
        for cid, owner, pos, m in rows
        if all(t.lower() in text_of(m.content).lower() for t in terms)
        and (conversation is None or cid == conversation)
        and (user is None or conversation is not None or owner == user)
        and (roles is None or m.role in roles)
    ]
    kept.sort(reverse=True)
    return [(cid, mid) for _, cid, _, mid in kept]


def query_of(terms: list[str]) -> str:
    return " ".join(
        f'"{t}"' if any(c.isspace() for c in t) or t.startswith('"') else t for t in terms
    )


def random_terms(rng: random.Random, rows: list[tuple[str, str | None, int, Message]]) -> list[str]:
    terms = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        text = text_of(rng.choice(rows)[3].content) or "x"
        kind = rng.randrange(6)
        if kind == 0:  # a piece of a stored text, maybe across words, in another case
            start = rng.randrange(len(text))
            piece = text[start : start + rng.randint(1, 12)].strip() or "a"
            terms.append(rng.choice([piece, piece.upper(), piece.lower(), piece.title()]))
        elif kind == 1:
            terms.append(rng.choice(ALL_WORDS))
        elif kind == 2:
            terms.append(rng.choice(ALL_WORDS)[:2] or "a")  # one or two characters
        elif kind == 3:
            terms.append(rng.choice(["zebra", "σοφία", "ΣΟΦΊΑ", "nothing-like-this", "ς"]))
        elif kind == 4:
            terms.append(f"{rng.choice(ALL_WORDS)} {rng.choice(ALL_WORDS)}")  # quoted
        else:
            terms.append(rng.choice(["%", "_", '"', "*", "^", "NEAR", "a_b%c", "\\"]))
    return [t for t in terms if t and writable(t)]


def writable(term: str) -> bool:
    """A term a query can say: bare (no white space, not starting with a quote) or quoted
    (no quote inside)."""
    spaced = any(c.isspace() for c in term)
    return ('"' not in term) if spaced or term.startswith('"') else True


def pages(store: ConversationStore, query: str, limit: int, **kw: Any) -> list[tuple[str, str]]:
    got: list[tuple[str, str]] = []
    after = None
    while True:
        result = store.search_messages(query=query, limit=limit, after=after, **kw)
        assert len(result.items) <= limit
        got += [(h.conversation_id, h.message.message_id) for h in result.items]
        if result.next_cursor is None:
            return got
        assert len(result.items) == limit
        after = result.next_cursor


@pytest.mark.parametrize(("seed", "windows"), [(1, None), (2, None), (3, (40, 120))])
def test_search_equals_a_scan_of_the_semantics(
    backend_url: str, seed: int, windows: tuple[int, ...] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # windows: PostgreSQL's store-wide page reads this many newest messages before the trigram
    # index; small ones make pages come from every read, and from ties at their edges.
    if windows is not None:
        monkeypatch.setattr(search_backend, "RECENT_WINDOWS", windows)
    rng = random.Random(seed)
    with ConversationStore(backend_url) as store:
        build(store, rng, 3000)
        edit(store, rng)
        rows = everything(store)
        for _ in range(120):
            terms = random_terms(rng, rows)
            if not terms:
                continue
            query = query_of(terms)
            scope: dict[str, Any] = rng.choice(
                [
                    {},
                    {"user_id": "alice"},
                    {"conversation_id": "conv-02"},
                    {"roles": ["user", "tool"]},
                    {"user_id": "bob", "roles": ["assistant"]},
                ]
            )
            want = expected(
                rows,
                terms,
                user=scope.get("user_id"),
                conversation=scope.get("conversation_id"),
                roles=scope.get("roles"),
            )
            limit = rng.choice([1, 3, 20, 100])
            assert pages(store, query, limit, **scope) == want, (query, scope, limit)


def test_the_async_store_pages_the_same(backend_url: str) -> None:
    rng = random.Random(7)
    with ConversationStore(backend_url) as store:
        build(store, rng, 600)
        rows = everything(store)

        async def walk(query: str) -> list[tuple[str, str]]:
            astore = AsyncConversationStore(sync=store)
            got: list[tuple[str, str]] = []
            after = None
            while True:
                result = await astore.search_messages(query=query, limit=7, after=after)
                got += [(h.conversation_id, h.message.message_id) for h in result.items]
                if result.next_cursor is None:
                    return got
                after = result.next_cursor

        for word in ["order", "订单", "\u03c3", "\u03c2", "注文 番号"]:  # small and final sigma
            assert anyio.run(walk, word) == expected(rows, word.split())


def test_hits_carry_the_message_and_a_snippet(store: ConversationStore) -> None:
    store.append_message(
        conversation_id="c",
        role="user",
        content=[{"type": "text", "text": "x " * 100 + "My Order Number is 4711." + " y" * 100}],
        user_id="u",
    )
    result = store.search_messages(query="order number", user_id="u")
    (hit,) = result.items
    assert hit.conversation_id == "c" and hit.message.role == "user"
    assert "My Order Number is 4711." in hit.snippet and len(hit.snippet) <= 202
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
    assert result.next_cursor is None


def test_another_users_messages_never_appear(store: ConversationStore) -> None:
    store.append_message(conversation_id="a", role="user", content="secret plan", user_id="alice")
    store.append_message(conversation_id="b", role="user", content="secret plan", user_id="bob")
    store.append_message(conversation_id="n", role="user", content="secret plan")
    assert [
        h.conversation_id for h in store.search_messages(query="secret", user_id="bob").items
    ] == ["b"]
    with pytest.raises(ConversationOwnershipError):
        store.search_messages(query="secret", user_id="bob", conversation_id="a")
    unowned = store.search_messages(query="secret", user_id="bob", conversation_id="n").items
    assert [h.conversation_id for h in unowned] == ["n"]
    with pytest.raises(ConversationOwnershipError):
        store.with_strict_ownership().search_messages(
            query="secret", user_id="bob", conversation_id="n"
        )
    # a cursor from alice's search walks bob's results only
    first = store.search_messages(query="secret", limit=1)
    assert first.next_cursor is not None
    after = store.search_messages(query="secret", user_id="bob", after=first.next_cursor)
    assert {h.conversation_id for h in after.items} <= {"b"}


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("", "no terms"),
        ("   \t\n", "no terms"),
        ('""', "no terms"),
        ("x" * 1001, "over the limit of 1000"),
        (" ".join("t" for _ in range(17)), "over the limit of 16"),
        ("a\x00b", "NUL"),
        ("a\ud800b", "surrogate"),
        ("a\uffffb", "U\\+FFFF"),
        (42, "must be a str"),
        (None, "must be a str"),
    ],
)
def test_a_bad_query_is_refused_naming_it(store: ConversationStore, query: Any, words: str) -> None:
    with pytest.raises(MemoryValidationError, match=words) as caught:
        store.search_messages(query=query)
    assert caught.value.argument == "query"


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"limit": 2**70}, "limit"),
        ({"after": "not-a-cursor"}, "after"),
        ({"after": "W10"}, "after"),  # base64 of []
        ({"after": "WzEsICJjIiwgLTFd"}, "after"),  # [1, "c", -1]
        ({"after": 7}, "after"),
        ({"roles": ["wizard"]}, "roles[]"),
        ({"roles": "user"}, "roles"),
        ({"roles": []}, "roles"),
        ({"user_id": ""}, "user_id"),
        ({"conversation_id": "x" * 300}, "conversation_id"),
    ],
)
def test_bad_arguments_are_refused_before_any_sql(
    store: ConversationStore, kwargs: dict[str, Any], argument: str
) -> None:
    with pytest.raises(MemoryValidationError) as caught:
        store.search_messages(query="x", **kwargs)
    assert caught.value.argument == argument


def test_a_nul_in_a_message_is_searchable_around(store: ConversationStore) -> None:
    store.append_message(conversation_id="c", role="user", content={"key": "left\x00right side"})
    for query in ["left", "right side", "key"]:
        found = store.search_messages(query=query).items
        assert [h.message.content for h in found] == (
            [] if query == "key" else [{"key": "left\x00right side"}]
        )


def test_a_lone_surrogate_in_a_message_is_searchable_around(store: ConversationStore) -> None:
    store.append_message(conversation_id="c", role="user", content=["odd \ud800 text"])
    assert [h.message.content for h in store.search_messages(query="odd").items] == [
        ["odd \ud800 text"]
    ]


def test_metacharacters_are_literal_text(store: ConversationStore) -> None:
    texts = ["100% sure", "a_b", "ab", 'say "hi"', "x*y", "a^b", "NEAR me", "this AND that", "\\d"]
    for i, text in enumerate(texts):
        store.append_message(conversation_id=f"c{i}", role="user", content=text)
    for term, want in [
        ("%", ["100% sure"]),
        ("_", ["a_b"]),
        ('"', ['say "hi"']),
        ("*", ["x*y"]),
        ("^", ["a^b"]),
        ("near", ["NEAR me"]),
        ("and", ["this AND that"]),
        ("\\", ["\\d"]),
        ("a_b", ["a_b"]),
    ]:
        found = [h.message.content for h in store.search_messages(query=term).items]
        assert found == want, term


def test_reindex_indexes_rows_written_before_the_index(backend_url: str) -> None:
    with ConversationStore(backend_url) as store:
        for i in range(5):
            store.append_message(conversation_id="c", role="user", content=f"old message {i}")
        # as an older convostore left them: in the table, not in the index
        column = "search_rid" if store.backend.dialect == "sqlite" else "search_text"
        store.backend.write(
            lambda tx: tx.execute(f"UPDATE convostore_messages SET {column} = NULL")
        )
        if store.backend.dialect == "sqlite":  # and no mark past them, as its migration left
            store.backend.write(lambda tx: tx.execute("DELETE FROM convostore_search"))
            store.backend.write(lambda tx: tx.execute(search_backend.MARK_FROM_SCAN))
        before = [h.message.content for h in store.search_messages(query="old").items]
        assert before == [f"old message {i}" for i in reversed(range(5))]  # read directly
        seen: list[tuple[int, int]] = []
        assert store.reindex(progress=lambda done, total: seen.append((done, total))) == 5
        assert seen == [(5, 5)]
        assert [h.message.content for h in store.search_messages(query="old").items] == before
        assert store.reindex() == 0


@pytest.mark.parametrize("erase", ["delete_message", "delete_conversation", "update_message"])
def test_erased_text_leaves_the_postgresql_index_after_vacuum(
    pg_schema_url: str, erase: str
) -> None:
    """The text is in the message's row (``search_text``) and its trigrams in the GIN index:
    both files hold no copy once ``vacuum()`` rewrote them."""
    import psycopg
    from pg_files import table_copies, wait_for_older_snapshots

    marker = f"secret-{uuid.uuid4().hex}"
    with ConversationStore(pg_schema_url) as store:
        mid = store.append_message(conversation_id="c", role="user", content=f"it is {marker}")
        store.append_message(conversation_id="c", role="user", content="kept")
        assert [h.message.message_id for h in store.search_messages(query=marker).items] == [mid]
        with psycopg.connect(pg_schema_url, autocommit=True) as conn:
            assert table_copies(conn, ["convostore_messages"], marker) >= 2  # content, text
            if erase == "delete_message":
                store.delete_message(conversation_id="c", message_id=mid)
            elif erase == "delete_conversation":
                store.delete_conversation(conversation_id="c")
            else:
                store.update_message(conversation_id="c", message_id=mid, content="gone")
            assert store.search_messages(query=marker).items == []
            wait_for_older_snapshots(conn)
            store.vacuum()
            assert table_copies(conn, ["convostore_messages"], marker) == 0


@pytest.mark.parametrize("how", ["export and import", "migrate"])
@pytest.mark.parametrize("direction", ["sqlite to postgres", "postgres to sqlite"])
def test_a_copy_answers_the_same_queries(
    pg_schema_url: str, tmp_path: Any, how: str, direction: str
) -> None:
    """The index is derived: an export holds none of it, ``migrate`` copies none of it, and
    the destination builds its own, which answers alike."""
    from convostore.commands import export, importing, migrate

    sqlite_url = f"sqlite:///{tmp_path / 'copy.db'}"
    source_url, copy_url = (
        (sqlite_url, pg_schema_url)
        if direction.startswith("sqlite")
        else (pg_schema_url, sqlite_url)
    )
    queries = ["order", "\u8ba2\u5355", "\u03c3", "\u6ce8\u6587 \u756a\u53f7", "%", "zz"]
    with ConversationStore(source_url) as source:
        build(source, random.Random(3), 300)
        want = {q: pages(source, q, 7) for q in queries}
        dump = tmp_path / "export.jsonl"
        if how == "migrate":
            migrate.migrate(source_url, copy_url)
        else:
            with dump.open("wb") as out:
                export.export_jsonl(source, out)
    with ConversationStore(copy_url) as copy:
        if how != "migrate":
            importing.import_jsonl(copy, str(dump))
        assert {q: pages(copy, q, 7) for q in queries} == want
        assert all(want[q] for q in queries[:4])


def test_pg_trgm_outlives_any_one_stores_schema() -> None:
    """In a database without pg_trgm, the first store creates it in a schema of its own: a store
    whose schema is dropped takes no other store's index with it."""
    import os

    import psycopg

    pg_url = os.environ.get("CONVOSTORE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
    name = f"trgm_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    base = pg_url.split("?", 1)[0].rsplit("/", 1)[0] + f"/{name}"
    try:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA a")
            conn.execute("CREATE SCHEMA b")
        for schema in ("a", "b"):
            with ConversationStore(f"{base}?options=-csearch_path%3D{schema}") as store:
                store.append_message(conversation_id="c", role="user", content="keep me")
        with psycopg.connect(base, autocommit=True) as conn:
            where = conn.execute(
                "SELECT n.nspname FROM pg_extension e"
                " JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'"
            ).fetchall()
            assert where == [("convostore_extensions",)]
            conn.execute("DROP SCHEMA a CASCADE")
            indexes = conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = 'b'"
                " AND indexname = 'convostore_messages_search'"
            ).fetchall()
            assert indexes == [("convostore_messages_search",)]
        with ConversationStore(f"{base}?options=-csearch_path%3Db") as store:
            assert [h.message.content for h in store.search_messages(query="eep").items] == [
                "keep me"
            ]
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.mark.parametrize("erase", ["pop_message", "delete_conversation", "delete_user_data"])
def test_sqlite_finds_a_message_written_where_deleted_ones_were(tmp_path: Any, erase: str) -> None:
    """SQLite gives a new row the number after the largest: once the newest rows, indexed,
    are deleted, the next message takes one of their numbers, below where the index stood,
    and is found all the same (before its batch is indexed and after)."""
    url = f"sqlite:///{tmp_path / 'reused.db'}"
    with ConversationStore(url) as store:
        store.append_message(conversation_id="keep", role="user", content="kept needle")
        for i in range(3):
            store.append_message(conversation_id="gone", user_id="u", role="user", content=f"{i}")
        store.reindex()  # every row indexed: the mark at the largest
        if erase == "pop_message":
            for _ in range(3):
                store.pop_message(conversation_id="gone")
        elif erase == "delete_conversation":
            store.delete_conversation(conversation_id="gone")
        else:
            store.delete_user_data(user_id="u")
        store.append_message(conversation_id="new", role="user", content="new needle")
        found = [h.message.content for h in store.search_messages(query="needle").items]
        assert found == ["new needle", "kept needle"]
        assert store.reindex() == 1
    with ConversationStore(url) as store:
        found = [h.message.content for h in store.search_messages(query="needle").items]
        assert found == ["new needle", "kept needle"]


def test_sqlite_a_fork_leaves_nothing_for_a_search_to_read_past_the_mark(tmp_path: Any) -> None:
    """A fork's copies are indexed as they are written: where nothing else waited for its
    batch, the mark moves past them, so that no search reads them row by row."""
    url = f"sqlite:///{tmp_path / 'fork.db'}"

    def mark_and_end(store: ConversationStore) -> list[Any]:
        return store.backend.read(
            lambda tx: tx.execute(
                "SELECT indexed_to, (SELECT max(rowid) FROM convostore_messages)"
                " FROM convostore_search_mark"
            )
        )[0]

    with ConversationStore(url) as store:
        for i in range(5):
            store.append_message(conversation_id="c", role="user", content=f"needle {i}")
        store.reindex()
        store.fork_conversation(conversation_id="c", new_conversation_id="copy")
        mark, end = mark_and_end(store)
        assert mark == end
        hits = store.search_messages(query="needle", conversation_id="copy").items
        assert [h.message.content for h in hits] == [f"needle {i}" for i in reversed(range(5))]
        store.append_message(conversation_id="c", role="user", content="late needle")
        store.fork_conversation(conversation_id="c", new_conversation_id="copy2")
        mark, end = mark_and_end(store)  # the late message waits for its batch: so do the copies
        assert mark < end
        assert len(store.search_messages(query="needle", conversation_id="copy2").items) == 6


def test_sqlite_indexes_appends_a_batch_at_a_time(tmp_path: Any) -> None:
    """On SQLite an append writes no index row; a batch indexes them in one transaction once
    a connection has left INDEX_BATCH, and closing the store indexes the rest. A search finds
    them all along."""
    from convostore.backends.sqlite import INDEX_BATCH

    url = f"sqlite:///{tmp_path / 'batch.db'}"

    def unindexed(store: ConversationStore) -> int:
        return int(store.backend.read(lambda tx: tx.count_unindexed()))

    def found(store: ConversationStore) -> list[Any]:
        return [h.message.content for h in store.search_messages(query="needle").items]

    with ConversationStore(url) as store:
        store.append_message(conversation_id="c", role="user", content="first needle")
        assert unindexed(store) == 1
        assert found(store) == ["first needle"]
        filler = [{"role": "user", "content": f"m {i}"} for i in range(INDEX_BATCH)]
        store.append_messages(conversation_id="c", messages=filler)  # type: ignore[arg-type]
        assert unindexed(store) == 0
        store.append_message(conversation_id="c", role="user", content="last needle")
        assert unindexed(store) == 1
        assert found(store) == ["last needle", "first needle"]
    with ConversationStore(url) as store:
        assert unindexed(store) == 0
        assert found(store) == ["last needle", "first needle"]


def test_a_role_that_may_not_create_pg_trgm_is_told_what_to_run() -> None:
    """A database without pg_trgm, opened by a role that may not create it: the error names
    the statement a superuser runs; after it, the store opens."""
    import os

    import psycopg

    pg_url = os.environ.get("CONVOSTORE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
    suffix = uuid.uuid4().hex[:8]
    name, role = f"trgm_{suffix}", f"plain_{suffix}"
    base = pg_url.split("?", 1)[0].rsplit("/", 1)[0]
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
        admin.execute(f"CREATE ROLE {role} LOGIN")
    try:
        with psycopg.connect(f"{base}/{name}", autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA s AUTHORIZATION {role}")
        url = f"{base.replace('postgres@', f'{role}@')}/{name}?options=-csearch_path%3Ds"
        with pytest.raises(StorageError, match=r"run 'CREATE EXTENSION pg_trgm;'"):
            ConversationStore(url)
        with psycopg.connect(f"{base}/{name}", autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_trgm")
        with ConversationStore(url) as store:
            store.append_message(conversation_id="c", role="user", content="now it opens")
            assert len(store.search_messages(query="opens").items) == 1
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
            admin.execute(f"DROP ROLE {role}")


@pytest.mark.parametrize("damage", ["'{not json'", "x'00ff'"])
def test_sqlite_a_row_damaged_by_hand_leaves_the_others_indexed(tmp_path: Any, damage: str) -> None:
    """A message whose stored content another program broke (not JSON, not text) is not
    searchable; it stops neither a search, nor the batch that indexes the others, nor the
    store's close. A read still names it (``convostore check`` lists it)."""
    url = f"sqlite:///{tmp_path / 'damaged.db'}"

    def found(store: ConversationStore) -> list[Any]:
        return [h.message.content for h in store.search_messages(query="needle").items]

    with ConversationStore(url) as store:
        store.append_message(conversation_id="c", role="user", content="good needle")
        bad = store.append_message(conversation_id="c", role="user", content="bad needle")
        with sqlite3.connect(tmp_path / "damaged.db") as conn:
            conn.execute(f"UPDATE convostore_messages SET content = {damage} WHERE id = ?", [bad])
        assert found(store) == ["good needle"]  # read past the mark, row by row
    with ConversationStore(url) as store:
        assert store.backend.read(lambda tx: tx.count_unindexed()) == 0
        assert found(store) == ["good needle"]
        with pytest.raises(StorageError, match=bad):
            store.get_messages(conversation_id="c")


def test_sqlite_a_batch_gives_each_message_its_own_index_row(tmp_path: Any) -> None:
    """A batch names the index rows of runs of messages (consecutive rows, consecutive index
    rows) in one statement each: messages of several minutes, out of order, around deleted
    rows and a fork's copies (indexed as written) each get the index row of their own text."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    minute = 60_000
    times = [5 * minute, 5 * minute + 1, 9 * minute, 5 * minute + 2, 0, 2**62, 9 * minute]
    with ConversationStore(url) as store:
        store.append_message(conversation_id="src", role="user", content="copied needle")
        store.reindex()
        for n, at in enumerate(times):
            store.append_messages(
                conversation_id=f"c{n % 3}",
                messages=[{"role": "user", "content": f"needle {n}", "created_at": at}],
            )
            if n == 2:
                store.append_message(conversation_id="gone", role="user", content="gone needle")
                store.fork_conversation(conversation_id="src", new_conversation_id=f"copy{n}")
        store.delete_conversation(conversation_id="gone")
        store.append_message(conversation_id="c0", role="user", content="needle last")
        assert store.reindex() == len(times) + 1
        rows = store.backend.read(
            lambda tx: tx.execute(
                "SELECT m.conversation_id, m.seq, s.conversation_id, s.seq, m.content, s.text"
                " FROM convostore_messages m"
                " LEFT JOIN convostore_search s ON s.rowid = m.search_rid ORDER BY m.rowid"
            )
        )
        assert len(rows) == len(times) + 3
        for cid, seq, indexed_cid, indexed_seq, content, text in rows:
            assert (indexed_cid, indexed_seq) == (cid, seq)
            assert text == json.loads(content)
        found = {h.message.content for h in store.search_messages(query="needle").items}
        assert found == {f"needle {n}" for n in range(len(times))} | {
            "needle last",
            "copied needle",
        }
