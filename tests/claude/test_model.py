"""Property test: random appends and deletes against a plain model of the documented semantics
(append order per key, uuid dedup per key, subkeys independent, main delete cascades)."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
from convostore import ConversationStore
from convostore_claude import ConvostoreSessionStore
from hypothesis import given, settings
from hypothesis import strategies as st

KEYS: list[dict[str, str]] = [
    {"project_key": p, "session_id": s, **({"subpath": sub} if sub else {})}
    for p in ("A", "B")
    for s in ("s1", "s/2")
    for sub in (None, "subagents/agent-1", "subagents/w/r/agent-2")
]
entries = st.lists(
    st.builds(
        lambda uuid, n: {"type": "x", "uuid": uuid, "n": n},
        st.sampled_from(["a", "b", "c", "d", "e"]),
        st.integers(0, 3),
    ),
    max_size=4,
)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, len(KEYS) - 1), entries),
        st.tuples(st.just("delete"), st.integers(0, len(KEYS) - 1), st.just([])),
    ),
    max_size=12,
)
STORE = ConversationStore("memory://")
TENANTS = itertools.count()


def name(key: dict[str, str]) -> tuple[str, ...]:
    return (key["project_key"], key["session_id"], key.get("subpath", ""))


@settings(max_examples=60, deadline=None)
@given(ops)
def test_store_matches_the_model(operations: list[tuple[str, int, list[dict[str, Any]]]]) -> None:
    store = ConvostoreSessionStore(store=STORE, tenant=f"t{next(TENANTS)}")
    model: dict[tuple[str, ...], list[dict[str, Any]]] = {}

    async def run() -> None:
        for op, index, batch in operations:
            key: Any = KEYS[index]
            k = name(key)
            if op == "append":
                stored = model.setdefault(k, [])
                for entry in batch:
                    if all(e["uuid"] != entry["uuid"] for e in stored):
                        stored.append(entry)
                await store.append(key, batch)
            else:
                for other in list(model):
                    if other == k or (not k[2] and other[:2] == k[:2]):
                        del model[other]
                await store.delete(key)
        for key in KEYS:
            assert await store.load(key) == (model.get(name(key)) or None)  # type: ignore[arg-type]
        for project in ("A", "B"):
            listed = sorted(s["session_id"] for s in await store.list_sessions(project))
            assert listed == sorted(
                k[1] for k, v in model.items() if k[0] == project and not k[2] and v
            )
            for sid in ("s1", "s/2"):
                subkeys = await store.list_subkeys({"project_key": project, "session_id": sid})
                expected = [
                    k[2] for k, v in model.items() if k[:2] == (project, sid) and k[2] and v
                ]
                assert sorted(subkeys) == sorted(expected)

    anyio.run(run)
