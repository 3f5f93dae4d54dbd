"""The Session contract, direct calls (ported from the Agents SDK's tests/memory/test_session.py
and test_session_limit.py where they apply to a third-party session), on every backend."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from agents import RunContextWrapper
from agents.memory import Session, SessionSettings
from agents.memory.session import _session_accepts_wrapper
from convostore import AsyncConversationStore, ClosedError, ConvostoreError
from convostore_openai import ConvostoreSession

pytestmark = pytest.mark.anyio
Make = Callable[..., ConvostoreSession]


def texts(items: list[Any]) -> list[Any]:
    return [item.get("content") for item in items]


async def test_is_a_session_without_subclassing(make_session: Make) -> None:
    session = make_session()
    assert isinstance(session, Session)
    assert type(session).__mro__ == (ConvostoreSession, object)
    assert _session_accepts_wrapper(session)
    for name in ("get_items", "add_items", "pop_item", "clear_session"):
        parameter = inspect.signature(getattr(ConvostoreSession, name)).parameters["wrapper"]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
        assert parameter.default is None
    # The Runner probes these duck-typed hooks: defining one by accident changes its behaviour.
    for hook in (
        "run_compaction",
        "_defer_compaction",
        "_get_deferred_compaction_response_id",
        "_get_items_with_generation",
        "_add_items_with_generation",
        "_get_compaction_snapshot",
        "_atomic_replace_items",
        "_read_compaction_items",
        "_ignore_ids_for_matching",
    ):
        assert not hasattr(session, hook), hook


async def test_direct_add_get_clear(make_session: Make) -> None:
    session = make_session("direct_test")
    items: list[Any] = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there!"},
    ]
    await session.add_items(items)
    assert await session.get_items() == items
    await session.clear_session()
    assert await session.get_items() == []


async def test_pop_item_until_empty(make_session: Make) -> None:
    session = make_session("pop_test")
    assert await session.pop_item() is None
    await session.add_items(
        [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi there!"},
            {"role": "user", "content": "How are you?"},
        ]
    )
    assert len(await session.get_items()) == 3
    assert await session.pop_item() == {"role": "user", "content": "How are you?"}
    assert texts(await session.get_items()) == ["Hello", "Hi there!"]
    assert await session.pop_item() == {"role": "assistant", "content": "Hi there!"}
    assert await session.pop_item() == {"role": "user", "content": "Hello"}
    assert await session.pop_item() is None
    assert await session.get_items() == []


async def test_sessions_are_isolated(make_session: Make) -> None:
    one, two = make_session("session_1"), make_session("session_2")
    await one.add_items([{"role": "user", "content": "Session 1 message"}])
    await two.add_items(
        [
            {"role": "user", "content": "Session 2 message 1"},
            {"role": "user", "content": "Session 2 message 2"},
        ]
    )
    popped = await two.pop_item()
    assert popped is not None
    assert popped["content"] == "Session 2 message 2"  # type: ignore[typeddict-item]
    assert texts(await one.get_items()) == ["Session 1 message"]
    assert texts(await two.get_items()) == ["Session 2 message 1"]
    await two.clear_session()
    assert texts(await one.get_items()) == ["Session 1 message"]


async def test_get_items_limit(make_session: Make) -> None:
    session = make_session("count_test")
    contents = ["Message 1", "Response 1", "Message 2", "Response 2", "Message 3", "Response 3"]
    await session.add_items(
        [
            {"role": "user" if i % 2 == 0 else "assistant", "content": c}
            for i, c in enumerate(contents)
        ]
    )
    assert texts(await session.get_items()) == contents
    assert texts(await session.get_items(limit=2)) == contents[-2:]
    assert texts(await session.get_items(4)) == contents[-4:]  # positional too
    assert texts(await session.get_items(limit=10)) == contents
    assert await session.get_items(limit=0) == []
    assert await session.get_items(limit=-1) == []
    # An explicit limit is never clamped: the compaction wrapper reads with 2**31 - 1.
    assert texts(await session.get_items(limit=2147483647)) == contents


async def test_session_settings(make_session: Make) -> None:
    assert make_session("a").session_settings == SessionSettings()
    assert make_session("b", max_items=5).session_settings == SessionSettings(limit=5)
    limited = make_session("c", session_settings=SessionSettings(limit=3))
    await limited.add_items([{"role": "user", "content": f"Message {i}"} for i in range(10)])
    # No limit: the settings' limit; an explicit limit wins over it, larger or smaller.
    assert texts(await limited.get_items()) == ["Message 7", "Message 8", "Message 9"]
    assert texts(await limited.get_items(limit=2)) == ["Message 8", "Message 9"]
    assert len(await limited.get_items(limit=5)) == 5


async def test_session_settings_as_a_dict(make_session: Make) -> None:
    """The SDK takes ``SessionSettings | dict`` and coerces the dict; so does this session."""
    assert make_session("empty", session_settings={}).session_settings == SessionSettings()
    session = make_session("dict", session_settings={"limit": 3})
    assert session.session_settings == SessionSettings(limit=3)
    await session.add_items([{"role": "user", "content": f"Message {i}"} for i in range(10)])
    assert texts(await session.get_items()) == ["Message 7", "Message 8", "Message 9"]
    assert len(await session.get_items(limit=5)) == 5


CALLS: list[Callable[[ConvostoreSession], Awaitable[Any]]] = [
    lambda s: s.get_items(),
    lambda s: s.get_items(limit=0),
    lambda s: s.add_items([{"role": "user", "content": "after close"}]),
    lambda s: s.add_items([]),
    lambda s: s.pop_item(),
    lambda s: s.clear_session(),
]


async def refuses_every_call(session: ConvostoreSession, message: str = "session") -> None:
    """As the SDK's sessions do (``RuntimeError("SQLiteSession is closed")``, its
    ``test_sqlite_session_closed_rejects_empty_add_items``), and a ``ConvostoreError`` too."""
    for call in CALLS:
        with pytest.raises(RuntimeError, match=rf"^the {message} is closed$") as info:
            await call(session)
        assert isinstance(info.value, ConvostoreError)
        assert type(info.value) is ClosedError


async def test_a_closed_session_refuses_every_call(store: AsyncConversationStore) -> None:
    """Also when the store was passed in and stays open."""
    session = ConvostoreSession("closed", store=store)
    await session.add_items([{"role": "user", "content": "kept"}])
    session.close()
    await refuses_every_call(session)
    await session.aclose()  # closing again is harmless
    again = ConvostoreSession("closed", store=store)
    assert await again.get_items() == [{"role": "user", "content": "kept"}]


async def test_a_session_closed_with_its_own_store_refuses_every_call(backend_url: str) -> None:
    async with ConvostoreSession("owned", url=backend_url) as session:
        await session.add_items([{"role": "user", "content": "kept"}])
    await refuses_every_call(session)


async def test_a_session_on_a_closed_store_refuses_every_call(backend_url: str) -> None:
    """The store passed in was closed: the core's error, the same two kinds."""
    store = AsyncConversationStore(backend_url)
    session = ConvostoreSession("gone", store=store)
    await store.aclose()
    await refuses_every_call(session, "store")


async def test_unicode_and_sql_injection_round_trip(make_session: Make) -> None:
    session = make_session("special_chars_test")
    contents = [
        "こんにちは",
        "😊👍",
        "Привет",
        "O'Reilly",
        "DROP TABLE sessions;",
        '"SELECT * FROM users WHERE name = "admin";"',
        "Robert'); DROP TABLE students;--",
    ]
    await session.add_items([{"role": "user", "content": c} for c in contents])
    assert texts(await session.get_items()) == contents


async def test_add_items_from_threads_loses_nothing(make_session: Make) -> None:
    session = make_session("concurrent_test")
    items = [{"role": "user", "content": f"Message {i}"} for i in range(20)]

    def add_item(item: Any) -> None:
        asyncio.run(session.add_items([item]))

    with concurrent.futures.ThreadPoolExecutor(max_workers=5) as executor:
        list(executor.map(add_item, items))
    assert sorted(texts(await session.get_items()), key=lambda t: int(t.split()[1])) == [
        f"Message {i}" for i in range(20)
    ]


async def test_wrapper_is_accepted_and_ignored_without_tenant(make_session: Make) -> None:
    session = make_session("direct-call-test")
    wrapper = RunContextWrapper(context={"tenant": "t1"})
    await session.add_items([{"role": "user", "content": "hello"}], wrapper=wrapper)
    assert await session.get_items(wrapper=wrapper) == await session.get_items()
    assert len(await session.get_items()) == 1
    assert await session.pop_item(wrapper=wrapper) == {"role": "user", "content": "hello"}
    await session.clear_session(wrapper=wrapper)


async def test_add_empty_batch_is_a_no_op(make_session: Make) -> None:
    session = make_session("empty")
    await session.add_items([])
    assert await session.get_items() == []
    assert await session.store.get_conversation(conversation_id="empty") is None


async def test_each_read_returns_fresh_dicts(make_session: Make) -> None:
    session = make_session("fresh")
    await session.add_items([{"role": "user", "content": [{"type": "input_text", "text": "x"}]}])
    first = await session.get_items()
    first[0]["content"][0]["text"] = "changed"  # type: ignore[index]
    assert (await session.get_items())[0]["content"][0]["text"] == "x"  # type: ignore[index]


def test_direct_calls_work_under_trio(tmp_path: Any) -> None:
    import trio

    async def main() -> list[Any]:
        async with ConvostoreSession("trio", url=f"sqlite:///{tmp_path / 't.db'}") as session:
            await session.add_items([{"role": "user", "content": "from trio"}])
            popped = await session.pop_item()
            return [popped, await session.get_items()]

    assert trio.run(main) == [{"role": "user", "content": "from trio"}, []]
