"""The memory backend against a plain Python model of the same semantics (hypothesis)."""

from __future__ import annotations

import math

from convostore_crewai import ConvostoreMemoryStorage, keyword_embedder
from convostore_crewai.memory import terms
from crewai.memory.types import MemoryRecord
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

VOCAB = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
SCOPES = ["/", "/a", "/a/b", "/a/b/c", "/ab", "/x/y"]
CATEGORIES = ["red", "green", "blue"]
assert len({t for w in VOCAB for t in terms(w)}) == len(VOCAB)  # no hash collisions here

records_strategy = st.lists(
    st.tuples(
        st.lists(st.sampled_from(VOCAB), min_size=1, max_size=5),
        st.sampled_from(SCOPES),
        st.lists(st.sampled_from(CATEGORIES), max_size=2, unique=True),
    ),
    max_size=12,
)


def under(scope: str, prefix: str) -> bool:
    return prefix in ("/", scope) or scope.startswith(prefix + "/")


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    data=records_strategy,
    query=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3),
    prefix=st.sampled_from(SCOPES),
    category=st.sampled_from(CATEGORIES),
)
def test_storage_matches_the_model(
    backend_url: str,
    data: list[tuple[list[str], str, list[str]]],
    query: list[str],
    prefix: str,
    category: str,
) -> None:
    storage = ConvostoreMemoryStorage(backend_url)
    try:
        storage.reset()
        records = [
            MemoryRecord(content=" ".join(words), scope=scope, categories=cats)
            for words, scope, cats in data
        ]
        storage.save(records)
        inside = [r for r in records if under(r.scope, prefix)]

        assert storage.count(prefix) == len(inside)
        assert {r.id for r in storage.list_records(prefix, limit=100)} == {r.id for r in inside}
        expected_categories: dict[str, int] = {}
        for r in inside:
            for c in r.categories:
                expected_categories[c] = expected_categories.get(c, 0) + 1
        assert storage.list_categories(prefix) == expected_categories
        children = {
            (prefix.rstrip("/") + "/" + r.scope[len(prefix.rstrip("/")) + 1 :].split("/")[0])
            for r in records
            if r.scope.startswith(prefix.rstrip("/") + "/") and r.scope != prefix
        }
        assert storage.list_scopes(prefix) == sorted(children)

        q = set(query)
        expected = {}
        for r in inside:
            words = set(r.content.split())
            if q & words:
                expected[r.id] = len(q & words) / math.sqrt(len(q) * len(words))
        found = storage.search(keyword_embedder([" ".join(query)])[0], prefix, limit=100)
        assert {r.id: round(s, 9) for r, s in found} == {
            k: round(v, 9) for k, v in expected.items()
        }
        scores = [s for _, s in found]
        assert scores == sorted(scores, reverse=True)

        doomed = [r for r in inside if category in r.categories]
        assert storage.delete(scope_prefix=prefix, categories=[category]) == len(doomed)
        assert storage.count() == len(records) - len(doomed)
    finally:
        storage.close()
