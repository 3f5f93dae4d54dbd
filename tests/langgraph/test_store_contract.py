"""The store contract: the same operations against LangGraph's InMemoryStore (the reference the
LangChain docs name) and ConvostoreStore on every backend, results compared.

Where we deliberately differ, the difference is listed in DIVERGENCES (and in the README) and
tested on our side alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from convostore_langgraph import ConvostoreStore
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

DIVERGENCES = {
    "search order": "ours: updated_at DESC, then namespace, then key (deterministic);"
    " InMemoryStore: insertion order",
    "created_at on overwrite": "ours keep the first created_at; InMemoryStore resets it",
    "ordered operators ($gt...) on values of another type or missing": " ours do not match; InMemoryStore casts with float() (TypeError on None or text)",
    "integers above 2**53 under $gt...": "ours compare exactly; InMemoryStore casts to float",
    "ops passed straight to batch()": "ours validate namespaces (as SqliteStore and"
    " PostgresStore do) and refuse an empty or 'langgraph'-rooted PutOp namespace;"
    " InMemoryStore validates nothing",
    "non-JSON values": "ours raise ValueError before writing; InMemoryStore keeps the object",
    "TTL": "ours support it; InMemoryStore raises NotImplementedError",
}


def item_view(item: Any) -> Any:
    if item is None:
        return None
    return (item.namespace, item.key, item.value)


def result_view(result: Any) -> Any:
    if isinstance(result, list):
        views = [item_view(r) if hasattr(r, "key") else r for r in result]
        return sorted(views, key=repr)  # order is a listed divergence; compared separately
    return item_view(result) if hasattr(result, "key") else result


def load(store: BaseStore) -> None:
    store.put(("docs",), "a", {"score": 9, "kind": "x", "tags": ["p", "q"], "d": {"a": 1, "b": 2}})
    store.put(("docs",), "b", {"score": 10, "kind": "y", "flag": True, "none": None})
    store.put(("docs",), "c", {"score": 2.5, "kind": "x", "name": "zed"})
    store.put(("docs", "sub"), "d", {"score": 7, "kind": "y"})
    store.put(("docsbar",), "e", {"score": 100, "kind": "x"})
    store.put(("users", "u1", "memories"), "/prefs.md", {"content": "dark mode"})
    store.put(("users", "u2", "memories"), "/prefs.md", {"content": "light mode"})
    store.put(("langgraph-ok", "x"), "k", {"v": 1})


QUERIES: list[Callable[[BaseStore], Any]] = [
    lambda s: s.get(("docs",), "a"),
    lambda s: s.get(("docs",), "missing"),
    lambda s: s.search(("docs",), limit=100),
    lambda s: s.search(("doc",), limit=100),
    lambda s: s.search((), limit=100),
    lambda s: s.search(("docs",), filter={"kind": "x"}, limit=100),
    lambda s: s.search(("docs",), filter={"score": {"$gt": 5}}, limit=100),
    lambda s: s.search(("docs",), filter={"score": {"$gte": 9, "$lt": 10}}, limit=100),
    lambda s: s.search(("docs",), filter={"score": {"$lte": 2.5}}, limit=100),
    lambda s: s.search(("docs",), filter={"score": {"$ne": 9}}, limit=100),
    lambda s: s.search(("docs",), filter={"score": {"$eq": 10}}, limit=100),
    lambda s: s.search(("docs",), filter={"score": 10.0}, limit=100),
    lambda s: s.search(("docs",), filter={"d": {"a": 1}}, limit=100),
    lambda s: s.search(("docs",), filter={"tags": ["p", "q"]}, limit=100),
    lambda s: s.search(("docs",), filter={"tags": ["p"]}, limit=100),
    lambda s: s.search(("docs",), filter={"flag": True}, limit=100),
    lambda s: s.search(("docs",), filter={"none": None}, limit=100),
    lambda s: s.search(("docs",), filter={"zzz": None}, limit=100),
    lambda s: s.search(("docs",), filter={"a.b": 1}, limit=100),
    lambda s: s.search(("docs",), filter={"kind": "x", "score": {"$gt": 3}}, limit=100),
    lambda s: s.search(("docs",), query="ignored without an index", limit=100),
    lambda s: len(s.search(("docs",), limit=2)),
    lambda s: len(s.search(("docs",), limit=2, offset=3)),
    lambda s: len(s.search(("docs",), limit=0)),
    lambda s: s.list_namespaces(),
    lambda s: s.list_namespaces(prefix=("users",)),
    lambda s: s.list_namespaces(prefix=("users", "*", "memories")),
    lambda s: s.list_namespaces(suffix=("memories",)),
    lambda s: s.list_namespaces(prefix=("docs",), max_depth=1),
    lambda s: s.list_namespaces(max_depth=2),
    lambda s: s.list_namespaces(limit=2, offset=1),
    lambda s: s.batch(
        [
            PutOp(("docs",), "new", {"v": 1}),
            GetOp(("docs",), "new"),  # reads see the state before the batch's writes
            SearchOp(("docs",), filter={"v": 1}),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("docs",)),)),
        ]
    ),
    lambda s: s.get(("docs",), "new"),
    lambda s: s.batch(
        [
            PutOp(("docs",), "twice", {"v": 1}),
            PutOp(("docs",), "twice", {"v": 2}),  # the last put of a key wins
            PutOp(("docs",), "gone", None),  # deleting a missing key does nothing
        ]
    ),
    lambda s: s.get(("docs",), "twice"),
    lambda s: s.delete(("docs",), "a"),
    lambda s: s.get(("docs",), "a"),
    lambda s: s.search(("docs",), limit=100),
    lambda s: s.put(("docs",), "b", {"score": 11}),
    lambda s: s.get(("docs",), "b"),
    # last: InMemoryStore's get creates an empty namespace that list_namespaces then shows
    lambda s: s.get(("langgraph",), "k"),  # the reserved root is allowed on reads
]


def run_all(store: BaseStore) -> list[Any]:
    load(store)
    return [result_view(q(store)) for q in QUERIES]


def test_same_results_as_in_memory_store(lgstore: ConvostoreStore) -> None:
    expected = run_all(InMemoryStore())
    got = run_all(lgstore)
    for i, (mine, theirs) in enumerate(zip(got, expected, strict=True)):
        assert mine == theirs, f"query {i}"


def test_async_methods_agree(lgstore: ConvostoreStore) -> None:
    async def go(store: BaseStore) -> list[Any]:
        await store.aput(("a", "b"), "k", {"n": 1})
        await store.aput(("a", "c"), "k", {"n": 2})
        out = [item_view(await store.aget(("a", "b"), "k"))]
        out.append(result_view(await store.asearch(("a",), filter={"n": {"$gte": 2}})))
        out.append(await store.alist_namespaces(prefix=("a",)))
        await store.adelete(("a", "b"), "k")
        out.append(item_view(await store.aget(("a", "b"), "k")))
        return out

    assert asyncio.run(go(lgstore)) == asyncio.run(go(InMemoryStore()))


# -- our side of the listed divergences -------------------------------------------------------


def test_search_order_is_newest_first_then_namespace_then_key(backend_url: str) -> None:
    ticks = iter(range(1_000_000, 2_000_000, 1000))
    store = ConvostoreStore(backend_url, clock=lambda: next(ticks))
    store.put(("n",), "a", {"i": 1})
    store.put(("n",), "b", {"i": 2})
    store.put(("n",), "c", {"i": 3})
    store.put(("n",), "a", {"i": 4})  # updated: moves to the front
    assert [i.key for i in store.search(("n",))] == ["a", "c", "b"]
    assert [i.key for i in store.search(("n",), limit=2, offset=1)] == ["c", "b"]
    store.close()


def test_created_at_survives_an_overwrite(lgstore: ConvostoreStore) -> None:
    lgstore.put(("n",), "k", {"v": 1})
    first = lgstore.get(("n",), "k")
    lgstore.put(("n",), "k", {"v": 2})
    second = lgstore.get(("n",), "k")
    assert first is not None and second is not None
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    assert second.created_at.tzinfo is not None


def test_ordered_operators_compare_values_not_text(lgstore: ConvostoreStore) -> None:
    for key, score in {"a": 9, "b": 10, "c": 2, "d": "10", "e": None, "big": 2**53 + 1}.items():
        lgstore.put(("s",), key, {"score": score})
    lgstore.put(("s",), "missing", {})
    found = {i.key for i in lgstore.search(("s",), filter={"score": {"$gt": 5}}, limit=100)}
    assert found == {"a", "b", "big"}  # 10 > 5 as numbers, not "10" < "5" as text
    big = lgstore.search(("s",), filter={"score": {"$gt": 2**53}}, limit=100)
    assert [i.key for i in big] == ["big"]
    text = lgstore.search(("s",), filter={"score": {"$gte": "1"}}, limit=100)
    assert [i.key for i in text] == ["d"]


def test_ttl_expiry_refresh_and_sweep(backend_url: str) -> None:
    now = [1_000_000_000]
    minute = 60_000_000
    ttl: Any = {"default_ttl": 1.0, "omit_expired": True}
    store = ConvostoreStore(backend_url, ttl=ttl, clock=lambda: now[0])
    store.put(("t",), "default", {"v": 1})  # default_ttl: 1 minute
    store.put(("t",), "long", {"v": 2}, ttl=10)
    store.put(("t",), "forever", {"v": 3}, ttl=None)
    now[0] += minute // 2
    assert store.get(("t",), "default") is not None  # refresh_on_read: lives another minute
    now[0] += minute * 3 // 4
    assert store.get(("t",), "default", refresh_ttl=False) is not None
    now[0] += minute // 2
    assert store.get(("t",), "default") is None  # expired: not returned (omit_expired)
    assert {i.key for i in store.search(("t",))} == {"long", "forever"}
    assert store.sweep_ttl() == 1
    now[0] += minute * 20
    assert store.list_namespaces() == [("t",)]
    assert store.sweep_ttl() == 1
    assert [i.key for i in store.search(("t",))] == ["forever"]
    store.close()


def test_refresh_on_read_can_be_turned_off(backend_url: str) -> None:
    now = [1_000_000_000]
    ttl: Any = {"refresh_on_read": False, "omit_expired": True}
    store = ConvostoreStore(backend_url, ttl=ttl, clock=lambda: now[0])
    store.put(("t",), "k", {"v": 1}, ttl=1)
    now[0] += 40_000_000
    assert store.get(("t",), "k") is not None
    now[0] += 40_000_000
    assert store.get(("t",), "k") is None
    store.close()


# -- omit_expired: ported from PostgresStore's tests (libs/checkpoint-postgres/tests/test_store.py)
# An item past its TTL that no sweep has deleted yet is returned unless the TTL config says
# "omit_expired": True (TTLConfig's default is False; SqliteStore always returns it). The
# upstream tests backdate expires_at with SQL; here the store's clock moves on instead.

MINUTE = 60_000_000  # the store's clock counts microseconds


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000_000_000

    def __call__(self) -> int:
        return self.now


def _ttl_store(url: str, clock: Clock, omit: bool | None) -> ConvostoreStore:
    ttl: Any = {} if omit is None else {"omit_expired": omit}
    return ConvostoreStore(url, ttl=ttl, clock=clock)


def _row(store: ConvostoreStore, ns: tuple[str, ...], key: str) -> Any:
    """The stored row (expires_at), swept or not, read with SQL."""
    rows = store.backend.read(
        lambda tx: tx.execute(
            "SELECT expires_at FROM lg_store WHERE prefix = ? AND key = ?", [".".join(ns), key]
        )
    )
    return rows[0] if rows else None


def test_omit_expired_filters_read_paths(backend_url: str) -> None:
    clock = Clock()
    store = _ttl_store(backend_url, clock, omit=True)
    expired_ns = ("omit", "expired")
    control_ns = ("omit", "control")
    store.put(expired_ns, "e", {"data": "gone"}, ttl=1)
    store.put(control_ns, "c", {"data": "keep"}, ttl=None)
    clock.now += 2 * MINUTE
    assert _row(store, expired_ns, "e") is not None  # expired, physically still there
    assert store.get(expired_ns, "e") is None
    assert store.get(control_ns, "c") is not None
    assert store.search(expired_ns) == []
    assert [i.key for i in store.search(control_ns)] == ["c"]
    namespaces = store.list_namespaces(prefix=("omit",))
    assert expired_ns not in namespaces
    assert control_ns in namespaces
    store.close()


@pytest.mark.parametrize("omit", [None, False], ids=["default", "explicit-false"])
def test_omit_expired_disabled_preserves_expired_rows(backend_url: str, omit: bool | None) -> None:
    clock = Clock()
    store = _ttl_store(backend_url, clock, omit)
    ns = ("keep",)
    store.put(ns, "k", {"data": "still-here"}, ttl=1)
    clock.now += 2 * MINUTE
    assert store.get(ns, "k", refresh_ttl=False) is not None
    assert [i.key for i in store.search(ns, refresh_ttl=False)] == ["k"]
    assert ns in store.list_namespaces(prefix=("keep",))
    assert store.sweep_ttl() == 1  # until a sweep deletes it
    assert store.get(ns, "k") is None
    store.close()


def test_omit_expired_refresh_ttl_only_refreshes_live_rows(backend_url: str) -> None:
    clock = Clock()
    store = _ttl_store(backend_url, clock, omit=True)
    ns = ("refresh",)
    store.put(ns, "expired", {"n": 0}, ttl=1)
    clock.now += 2 * MINUTE
    store.put(ns, "live_get", {"n": 1}, ttl=1)
    store.put(ns, "live_search", {"n": 2}, ttl=1)
    expired_before = _row(store, ns, "expired")
    get_before = _row(store, ns, "live_get")
    search_before = _row(store, ns, "live_search")
    clock.now += MINUTE // 2
    # refresh_ttl=True must not resurrect the expired row (via get or search)...
    assert store.get(ns, "expired", refresh_ttl=True) is None
    assert "expired" not in [i.key for i in store.search(ns, refresh_ttl=True)]
    assert _row(store, ns, "expired") == expired_before
    # ...but must still extend the live rows that were read
    assert store.get(ns, "live_get", refresh_ttl=True) is not None
    assert _row(store, ns, "live_get")[0] > get_before[0]
    assert _row(store, ns, "live_search")[0] > search_before[0]
    store.close()


def test_omit_expired_search_pagination(backend_url: str) -> None:
    """Expired items are left out before LIMIT and OFFSET: full live pages."""
    clock = Clock()
    store = _ttl_store(backend_url, clock, omit=True)
    ns = ("page",)
    # updated_at newest first: a, expired, b, c; the expired item sits inside the first page
    for key in ("c", "b", "expired", "a"):
        store.put(ns, key, {"k": key}, ttl=1 if key == "expired" else 10)
        clock.now += 1_000_000
    clock.now += 2 * MINUTE
    page1 = store.search(ns, limit=2, offset=0)
    page2 = store.search(ns, limit=2, offset=2)
    assert [i.key for i in page1] == ["a", "b"]
    assert [i.key for i in page2] == ["c"]
    store.close()


def test_sweeper_thread_starts_and_stops(lgstore: ConvostoreStore) -> None:
    future = lgstore.start_ttl_sweeper(sweep_interval_minutes=60)
    assert not future.done()
    assert lgstore.stop_ttl_sweeper(timeout=10)
    assert future.result(timeout=10) is None


def test_in_memory_store_has_no_ttl() -> None:
    with pytest.raises(NotImplementedError):
        InMemoryStore().put(("t",), "k", {"v": 1}, ttl=1)


# -- bad input: LangGraph's own error types or a clear ValueError, and nothing changes -----------


def everything(store: ConvostoreStore) -> list[Any]:
    return [item_view(i) for i in store.search((), limit=1000)]


BAD_CALLS: list[tuple[Callable[[ConvostoreStore], Any], type[Exception], str]] = [
    (lambda s: s.put((), "k", {"v": 1}), InvalidNamespaceError, "empty"),
    (lambda s: s.put(("a", ""), "k", {"v": 1}), InvalidNamespaceError, "empty"),
    (lambda s: s.put(("a.b",), "k", {"v": 1}), InvalidNamespaceError, "periods"),
    (lambda s: s.put(("langgraph",), "k", {"v": 1}), InvalidNamespaceError, "langgraph"),
    (lambda s: s.put(("a\x00",), "k", {"v": 1}), InvalidNamespaceError, "NUL"),
    (lambda s: s.get(("a.b",), "k"), InvalidNamespaceError, "periods"),
    (lambda s: s.search(("a.b",)), InvalidNamespaceError, "periods"),
    (lambda s: s.batch([PutOp((), "k", {"v": 1})]), InvalidNamespaceError, "empty"),
    (lambda s: s.batch([PutOp(("langgraph",), "k", {"v": 1})]), InvalidNamespaceError, "langgraph"),
    (
        lambda s: s.batch([PutOp(("ok",), "k", {"v": 1}), PutOp(("x.y",), "k", {"v": 1})]),
        InvalidNamespaceError,
        "periods",
    ),
    (lambda s: s.search(("a",), filter={"v": {"$regex": "x"}}), ValueError, "$regex"),
    (
        lambda s: s.batch(
            [PutOp(("ok",), "k", {"v": 1}), SearchOp(("a",), filter={"v": {"$in": [1]}})]
        ),
        ValueError,
        "$in",
    ),
    (lambda s: s.put(("ok",), "k", {"v": object()}), ValueError, "not JSON"),
    (lambda s: s.put(("ok",), "k", {"v": float("nan")}), ValueError, "not JSON"),
    (
        lambda s: s.batch([PutOp(("ok",), "k", {"v": 1}), PutOp(("ok",), "j", {"v": {1, 2}})]),
        ValueError,
        "not JSON",
    ),
    (lambda s: s.put(("ok",), "k", {"v": 1}, ttl=-1), ValueError, "ttl"),
    (lambda s: s.search(("a",), limit=-1), ValueError, "limit"),
]


@pytest.mark.parametrize("case", range(len(BAD_CALLS)))
def test_bad_input_is_refused_before_anything_changes(lgstore: ConvostoreStore, case: int) -> None:
    call, error, words = BAD_CALLS[case]
    lgstore.put(("ok",), "k", {"v": 0})
    before = everything(lgstore)
    with pytest.raises(error, match=__import__("re").escape(words)):
        call(lgstore)
    assert everything(lgstore) == before


# Text that LIKE or JSON escaping could get wrong: its wildcards and escape, quotes, case,
# non-ASCII, NUL, and the pair itself nested one level down.
TRICKY = ["y", "Y", "%", "_", "\\", '"', "a%b", "a_b", 'q"uo\\te', "é", "日本", "\x00", "", "y "]


def tricky_values() -> list[tuple[str, dict[str, Any]]]:
    rows: list[tuple[str, dict[str, Any]]] = []
    for i, text in enumerate(TRICKY):
        for key in ("kind", "k_%", 'k"\\', "ключ"):
            rows.append((f"{i}-{key}", {key: text, "n": i}))
            rows.append((f"{i}-{key}-nested", {"inner": {key: text}, key: 1}))
            rows.append((f"{i}-{key}-list", {key: [text]}))
    return rows


@pytest.mark.parametrize("key", ["kind", "k_%", 'k"\\', "ключ"])
def test_string_filters_match_in_memory_store(lgstore: ConvostoreStore, key: str) -> None:
    """String conditions are narrowed in SQL by the value's JSON text: never a row missed or
    one too many, whatever the text holds."""
    ref = InMemoryStore()
    for store in (ref, lgstore):
        for k, value in tricky_values():
            store.put(("t",), k, value)
    for text in [*TRICKY, "absent"]:
        for wanted in (text, {"$eq": text}):
            for extra in ({}, {"n": {"$gte": 3}}):
                flt = {key: wanted, **extra}
                got = lgstore.search(("t",), filter=flt, limit=1000)
                assert result_view(got) == result_view(ref.search(("t",), filter=flt, limit=1000))
    # and the limit and offset apply after the filter
    page = lgstore.search(("t",), filter={key: "y"}, limit=1, offset=0)
    assert [i.value for i in page] == [{key: "y", "n": 0}]
