"""Hostile input at the LangGraph store's entry points, on every backend (memory, SQLite,
PostgreSQL): keys and namespace labels with NUL, lone surrogates or 1 MiB; huge integers and
TTLs; values nested deeper than JSON encoding recurses; filter keys. Each is refused before
anything of the batch is written, with the same error on every backend; dotted filter keys
read as SqliteStore, InMemoryStore and PostgresStore users expect."""

from __future__ import annotations

import math
import uuid
from pathlib import Path
from typing import Any

import pytest
from convostore import ConversationStore, MemoryValidationError
from convostore_langgraph import ConvostoreStore
from langgraph.store.base import InvalidNamespaceError, PutOp


def _all(store: ConvostoreStore) -> list[tuple[tuple[str, ...], str, Any]]:
    return sorted((i.namespace, i.key, i.value) for i in store.search(("docs",), limit=1000))


@pytest.fixture
def seeded(lgstore: ConvostoreStore) -> ConvostoreStore:
    lgstore.put(("docs", "a"), "kept", {"text": "kept"})
    return lgstore


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("a\x00b", "must not contain NUL"),
        ("\ud800", "lone surrogate"),
        ("k" * (1 << 20), "must be 1 to 1024 bytes"),
        ("", "must be 1 to 1024 bytes"),
    ],
)
def test_bad_keys_are_refused_on_every_backend(
    seeded: ConvostoreStore, key: str, message: str
) -> None:
    before = _all(seeded)
    with pytest.raises(MemoryValidationError, match=f"key .*{message}"):
        seeded.put(("docs", "a"), key, {"x": 1})
    with pytest.raises(MemoryValidationError, match=message):
        seeded.get(("docs", "a"), key)
    with pytest.raises(MemoryValidationError, match=message):  # a batch: nothing of it written
        seeded.batch([PutOp(("docs", "a"), "fine", {"x": 1}), PutOp(("docs", "a"), key, {"x": 2})])
    assert _all(seeded) == before


@pytest.mark.parametrize(
    "namespace",
    [("docs", "a\x00b"), ("docs", "\udfff"), ("docs", "n" * 2000)],
    ids=["nul", "surrogate", "huge"],
)
def test_bad_namespaces_are_refused(seeded: ConvostoreStore, namespace: tuple[str, ...]) -> None:
    before = _all(seeded)
    with pytest.raises(InvalidNamespaceError):
        seeded.put(namespace, "k", {"x": 1})
    with pytest.raises(InvalidNamespaceError):
        seeded.get(namespace, "k")
    with pytest.raises(InvalidNamespaceError):
        seeded.search(namespace)
    assert _all(seeded) == before


@pytest.mark.parametrize("ttl", [1e300, math.inf, math.nan, -1, 0, 10**30])
def test_bad_ttls_are_refused(seeded: ConvostoreStore, ttl: float) -> None:
    before = _all(seeded)
    with pytest.raises(MemoryValidationError, match="ttl must be a number of minutes"):
        seeded.put(("docs", "a"), "t", {"x": 1}, ttl=ttl)
    assert _all(seeded) == before


def test_the_longest_ttl_is_stored(seeded: ConvostoreStore) -> None:
    seeded.put(("docs", "a"), "t", {"x": 1}, ttl=1000 * 365.25 * 24 * 60)
    assert seeded.get(("docs", "a"), "t") is not None


@pytest.mark.parametrize("value", [2**63, 2**70, -1, True, "5"])
def test_huge_or_wrong_limits_are_refused(seeded: ConvostoreStore, value: Any) -> None:
    for kwargs in ({"limit": value}, {"offset": value}):
        with pytest.raises(MemoryValidationError):
            seeded.search(("docs",), **kwargs)
        with pytest.raises(MemoryValidationError):
            seeded.list_namespaces(**kwargs)
    with pytest.raises(MemoryValidationError, match="max_depth"):
        seeded.list_namespaces(max_depth=-1 if value == -1 else 0)


def test_the_largest_limit_reads_everything(seeded: ConvostoreStore) -> None:
    assert len(seeded.search(("docs",), limit=2**63 - 1)) == 1
    assert seeded.list_namespaces(limit=2**63 - 1, offset=0) == [("docs", "a")]


def test_values_nested_too_deeply_are_refused(seeded: ConvostoreStore) -> None:
    deep: Any = "bottom"
    for _ in range(10_000):
        deep = {"d": deep}
    before = _all(seeded)
    with pytest.raises(MemoryValidationError, match="nested too deeply"):
        seeded.batch([PutOp(("docs", "a"), "ok", {"x": 1}), PutOp(("docs", "a"), "deep", deep)])
    assert _all(seeded) == before


@pytest.mark.parametrize("text", ["nul \x00 inside", "lone \ud800", "é"])
def test_awkward_text_inside_values_round_trips(lgstore: ConvostoreStore, text: str) -> None:
    lgstore.put(("docs",), "k", {"text": text, text: "as a key"})
    item = lgstore.get(("docs",), "k")
    assert item is not None and item.value == {"text": text, text: "as a key"}
    assert [i.key for i in lgstore.search(("docs",), filter={"text": text})] == ["k"]


# -- dotted filter keys --------------------------------------------------------------------


@pytest.fixture
def people(lgstore: ConvostoreStore) -> ConvostoreStore:
    lgstore.put(("users",), "nested", {"user": {"access-level": "admin", "age": 40}})
    lgstore.put(("users",), "literal", {"user.access-level": "admin", "user": {"age": 7}})
    lgstore.put(("users",), "other", {"user": {"access-level": "guest", "age": 20}})
    return lgstore


def _keys(store: ConvostoreStore, **filter: Any) -> list[str]:
    return sorted(i.key for i in store.search(("users",), filter=filter))


def test_a_dotted_key_is_a_path_unless_the_item_has_the_literal_key(
    people: ConvostoreStore,
) -> None:
    assert _keys(people, **{"user.access-level": "admin"}) == ["literal", "nested"]
    assert _keys(people, **{"user.access-level": {"$eq": "guest"}}) == ["other"]
    assert _keys(people, **{"user.age": {"$gte": 20}}) == ["nested", "other"]
    assert _keys(people, **{"user.missing": None}) == ["literal", "nested", "other"]
    assert _keys(people, **{"user.access-level": "nobody"}) == []


@pytest.mark.parametrize("key", ["", ".user", "user.", "user..age", "a\x00b"])
def test_a_filter_key_that_can_only_be_a_mistake_is_refused(
    people: ConvostoreStore, key: str
) -> None:
    with pytest.raises(ValueError, match="Invalid filter key"):
        people.search(("users",), filter={key: 1})


# -- erasure ---------------------------------------------------------------------------------


def _copies(path: Path, marker: str) -> int:
    return sum(f.read_bytes().count(marker.encode()) for f in path.parent.glob(path.name + "*"))


def test_a_deleted_item_leaves_no_copy_in_the_files(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    marker = uuid.uuid4().hex
    with ConversationStore(f"sqlite:///{db}"), ConversationStore(f"sqlite:///{db}") as store:
        kv = ConvostoreStore(store)
        kv.put(("docs",), "secret", {"text": f"the code is {marker}"})
        kv.put(("docs",), "kept", {"text": "kept"})
        assert _copies(db, marker)
        kv.delete(("docs",), "secret")
        assert _copies(db, marker) == 0
        assert kv.get(("docs",), "kept") is not None
