"""Hostile input at each public entry point of ``ConvostoreSession``, on every backend.

What belongs here, by entry point: huge and wrongly typed integers, ids with NUL / lone
surrogates / 1 MiB, items nested 10,000 deep, NaN, huge sizes, non-dict items, bad tenants from
the run context, and another user's session. Each is refused with a named error before anything
is written: the stored conversations and items are compared before and after.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from agents import RunContextWrapper, Runner, SQLiteSession
from agents.testing import ScriptedModel, assistant_message
from click.testing import CliRunner, Result
from convostore import (
    AsyncConversationStore,
    ConversationOwnershipError,
    ConversationStore,
    Limits,
    MemoryQuotaExceededError,
    MemoryValidationError,
)
from convostore.commands.cli import app
from convostore_openai import ConvostoreSession
from oa_helpers import agent_for
from pydantic import ValidationError

pytestmark = pytest.mark.anyio
Make = Callable[..., ConvostoreSession]

BEFORE: list[Any] = [
    {"role": "user", "content": "before"},
    {"role": "assistant", "content": "kept"},
]
MIB = 1 << 20
# (id, the error it gets): NUL, a lone surrogate, 1 MiB, not a str.
BAD_IDS = [
    pytest.param("a\x00b", "must not contain NUL characters", id="nul"),
    pytest.param("a\ud800b", r"is not valid UTF-8 \(lone surrogate\)", id="surrogate"),
    pytest.param("x" * MIB, f"must be 1 to 256 bytes of UTF-8, got {MIB} bytes", id="1MiB"),
    pytest.param(7, "must be a str, got int", id="int"),
]
INT64 = "between -9223372036854775808 and 9223372036854775807"


def nested(depth: int) -> list[Any]:
    """``[[[...]]]``, ``depth`` lists deep."""
    root: list[Any] = []
    inner = root
    for _ in range(depth - 1):
        inner.append([])
        inner = inner[0]
    return root


async def snapshot(store: AsyncConversationStore) -> dict[str, Any]:
    """Every conversation with its owner, count and items."""
    page = await store.list_conversations(limit=100)
    return {
        c.conversation_id: (
            c.user_id,
            c.message_count,
            await store.get_contents(conversation_id=c.conversation_id),
        )
        for c in page.items
    }


@pytest.fixture
async def seeded(store: AsyncConversationStore) -> AsyncIterator[dict[str, Any]]:
    """The store holds alice's ``chat-42`` and the tenant acme's ``acme:chat``; yields the
    snapshot every refusal must leave as it is."""
    await ConvostoreSession("chat-42", store=store, user_id="alice").add_items(BEFORE)
    await ConvostoreSession("acme:chat", store=store, user_id="acme").add_items(BEFORE)
    before = await snapshot(store)
    yield before
    assert await snapshot(store) == before


def tenant_session(store: AsyncConversationStore) -> ConvostoreSession:
    return ConvostoreSession("chat", store=store, tenant=lambda w: w.context["tenant"])


def context(tenant: object) -> RunContextWrapper[Any]:
    return RunContextWrapper(context={"tenant": tenant})


# -- ConvostoreSession(...) ----------------------------------------------------------------


@pytest.mark.parametrize(("bad", "error"), BAD_IDS)
@pytest.mark.parametrize("argument", ["session_id", "user_id"])
async def test_constructor_refuses_bad_ids(
    store: AsyncConversationStore, seeded: dict[str, Any], argument: str, bad: Any, error: str
) -> None:
    kwargs = {"session_id": "chat-42", argument: bad}
    with pytest.raises(MemoryValidationError, match=f"^{argument} {error}$"):
        ConvostoreSession(store=store, **kwargs)


@pytest.mark.parametrize(
    ("max_items", "error"),
    [
        (2**63, "max_items must be between 0 and 9223372036854775807, got 9223372036854775808"),
        (
            2**10_000,
            "max_items must be between 0 and 9223372036854775807, got an int of 10001 bits",
        ),
        (-1, "max_items must be between 0 and 9223372036854775807, got -1"),
        (True, "max_items must be None or an int, got bool"),
        (2.0, "max_items must be None or an int, got float"),
    ],
    ids=["2**63", "2**10000", "-1", "bool", "float"],
)
async def test_constructor_refuses_bad_max_items(
    store: AsyncConversationStore, seeded: dict[str, Any], max_items: Any, error: str
) -> None:
    with pytest.raises(MemoryValidationError, match=f"^{error}$"):
        ConvostoreSession("chat-42", store=store, max_items=max_items)


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        # The SDK's own coercion (agents.memory.session_settings.coerce_session_settings).
        ({"limit": 3, "window": 5}, TypeError, "^Unknown session settings: window$"),
        (["limit", 3], TypeError, "must be a SessionSettings instance or a dict, got list"),
        ({"limit": "many"}, ValidationError, "limit"),
        # Then the same bounds as max_items.
        ({"limit": 2**63}, MemoryValidationError, "^session_settings.limit must be between 0 and"),
        ({"limit": -1}, MemoryValidationError, "^session_settings.limit must be between 0 and"),
    ],
    ids=["unknown-key", "list", "str-limit", "2**63", "-1"],
)
async def test_constructor_refuses_bad_session_settings(
    store: AsyncConversationStore,
    seeded: dict[str, Any],
    settings: Any,
    error: type[Exception],
    message: str,
) -> None:
    with pytest.raises(error, match=message):
        ConvostoreSession("chat-42", store=store, session_settings=settings)


# -- get_items -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "error"),
    [
        (2**63, f"limit must be {INT64}, got 9223372036854775808"),
        (-(2**63) - 1, f"limit must be {INT64}, got -9223372036854775809"),
        (2**10_000, f"limit must be {INT64}, got an int of 10001 bits"),
        (True, "limit must be None or an int, got bool"),
        (1.5, "limit must be None or an int, got float"),
        ("3", "limit must be None or an int, got str"),
    ],
    ids=["2**63", "-2**63-1", "2**10000", "bool", "float", "str"],
)
async def test_get_items_refuses_bad_limits(
    store: AsyncConversationStore, seeded: dict[str, Any], limit: Any, error: str
) -> None:
    session = ConvostoreSession("chat-42", store=store, user_id="alice")
    with pytest.raises(MemoryValidationError, match=f"^{error}$"):
        await session.get_items(limit=limit)


async def test_get_items_at_the_int64_bounds(
    store: AsyncConversationStore, seeded: dict[str, Any]
) -> None:
    session = ConvostoreSession("chat-42", store=store, user_id="alice")
    assert await session.get_items(limit=2**63 - 1) == BEFORE
    assert await session.get_items(limit=-(2**63)) == []


async def test_get_items_refuses_a_settings_limit_set_out_of_range(
    store: AsyncConversationStore, seeded: dict[str, Any]
) -> None:
    session = ConvostoreSession("chat-42", store=store, user_id="alice")
    session.session_settings = {"limit": 2**63}  # type: ignore[assignment]
    with pytest.raises(MemoryValidationError, match=f"^limit must be {INT64}"):
        await session.get_items()


# -- add_items -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "error"),
    [
        ("text", r"^items must be a list of item dicts, got str$"),
        (BEFORE[0], r"^items must be a list of item dicts, got dict$"),
        (None, r"^items must be a list of item dicts, got NoneType$"),
        ([BEFORE[0], ["role", "user"]], r"^items\[1\] must be a dict .*, got list$"),
        ([BEFORE[0], 42], r"^items\[1\] must be a dict .*, got int$"),
        (
            [BEFORE[0], {"type": "function_call_output", "output": float("nan")}],
            r"^items\[1\]\['output'\]: nan is not valid JSON \(NaN and Infinity\)$",
        ),
        (
            [{"role": "user", "content": nested(10_000)}],
            r"^items\[0\]: nested deeper than 900 levels$",
        ),
        ([{"role": "user", "content": "x", 3: "int key"}], r"^items\[0\]: keys must be str"),
    ],
    ids=["str", "dict", "None", "list-item", "int-item", "nan", "nested-10000", "int-key"],
)
async def test_add_items_refuses_bad_items(
    store: AsyncConversationStore, seeded: dict[str, Any], items: Any, error: str
) -> None:
    session = ConvostoreSession("chat-42", store=store, user_id="alice")
    with pytest.raises(MemoryValidationError, match=error):
        await session.add_items(items)


async def test_add_items_refuses_huge_items_and_batches(backend_url: str) -> None:
    limits = Limits(max_content_bytes=MIB, max_messages_per_conversation=5)
    async with AsyncConversationStore(backend_url, limits=limits) as store:
        session = ConvostoreSession("chat-42", store=store)
        await session.add_items(BEFORE)
        before = await snapshot(store)
        huge: Any = [BEFORE[0], {"role": "user", "content": "x" * MIB}]
        with pytest.raises(
            MemoryValidationError,
            match=rf"^items\[1\] is \d+ bytes serialized; the limit is {MIB} bytes$",
        ):
            await session.add_items(huge)
        with pytest.raises(MemoryQuotaExceededError):
            await session.add_items([BEFORE[0]] * 4)
        assert await snapshot(store) == before


# -- a tenant from the run context (every method) ------------------------------------------


@pytest.mark.parametrize(
    ("bad", "error"), [*BAD_IDS, pytest.param("a:b", "'a:b' must not contain ':'", id="colon")]
)
async def test_every_method_refuses_a_bad_tenant(
    store: AsyncConversationStore, seeded: dict[str, Any], bad: Any, error: str
) -> None:
    session = tenant_session(store)
    wrapper = context(bad)
    match = f"^tenant {error}"
    with pytest.raises(MemoryValidationError, match=match):
        await session.get_items(wrapper=wrapper)
    with pytest.raises(MemoryValidationError, match=match):
        await session.add_items([BEFORE[0]], wrapper=wrapper)
    with pytest.raises(MemoryValidationError, match=match):
        await session.pop_item(wrapper=wrapper)
    with pytest.raises(MemoryValidationError, match=match):
        await session.clear_session(wrapper=wrapper)
    with pytest.raises(MemoryValidationError, match=match):
        session.conversation_id(wrapper)


# -- another user's session ----------------------------------------------------------------


async def refused_everywhere(
    session: ConvostoreSession, wrapper: RunContextWrapper[Any] | None = None
) -> None:
    """Every method that touches the conversation raises ConversationOwnershipError."""
    match = "belongs to another user"
    with pytest.raises(ConversationOwnershipError, match=match):
        await session.get_items(wrapper=wrapper)
    with pytest.raises(ConversationOwnershipError, match=match):
        await session.get_items(limit=1, wrapper=wrapper)
    with pytest.raises(ConversationOwnershipError, match=match):
        await session.add_items([{"role": "user", "content": "mine now"}], wrapper=wrapper)
    with pytest.raises(ConversationOwnershipError, match=match):
        await session.pop_item(wrapper=wrapper)
    with pytest.raises(ConversationOwnershipError, match=match):
        await session.clear_session(wrapper=wrapper)


async def test_another_users_session_is_refused(
    store: AsyncConversationStore, seeded: dict[str, Any]
) -> None:
    await refused_everywhere(ConvostoreSession("chat-42", store=store, user_id="mallory"))
    # Through the sync store too, and with a window.
    await refused_everywhere(
        ConvostoreSession("chat-42", store=store.sync, user_id="mallory", max_items=1)
    )
    alice = ConvostoreSession("chat-42", store=store, user_id="alice")
    assert await alice.get_items() == BEFORE


async def test_another_tenants_conversation_is_refused(
    store: AsyncConversationStore, seeded: dict[str, Any]
) -> None:
    # "mallory:chat" is alice's own conversation; the tenant mallory must not reach it.
    alice = ConvostoreSession("mallory:chat", store=store, user_id="alice")
    await alice.add_items(BEFORE)
    seeded.update(await snapshot(store))
    await refused_everywhere(tenant_session(store), context("mallory"))
    assert await alice.get_items() == BEFORE
    assert await tenant_session(store).get_items(wrapper=context("acme")) == BEFORE


async def test_the_runner_with_another_users_session_is_refused(
    store: AsyncConversationStore, seeded: dict[str, Any]
) -> None:
    mallory = ConvostoreSession("chat-42", store=store, user_id="mallory")
    model = ScriptedModel([[assistant_message("never")]])
    with pytest.raises(ConversationOwnershipError):
        await Runner.run(agent_for(model), "show me alice's chat", session=mallory)
    assert model.calls == ()  # the model never saw alice's items


async def test_an_unowned_conversation_stays_usable_by_a_user(
    store: AsyncConversationStore,
) -> None:
    await ConvostoreSession("shared", store=store).add_items(BEFORE)
    session = ConvostoreSession("shared", store=store, user_id="bob")
    assert await session.get_items() == BEFORE
    assert await session.pop_item() == BEFORE[-1]


# -- convostore import-from openai-sqlite: a file someone else wrote --------------------------


def _cli(*args: str, code: int) -> Result:
    """``convostore ARGS`` through Click's runner (in this process: no start-up per case)."""
    done = CliRunner().invoke(app, list(args), env={"CONVOSTORE_URL": None})
    assert done.exit_code == code, (done.stdout, done.stderr, done.exception)
    return done


def _agents_file(path: Path) -> int:
    """A ``SQLiteSession`` file with sessions ``alpha`` (2 items) and ``beta`` (3), written
    by the SDK; returns the id of beta's second row."""
    for sid, n in (("alpha", 2), ("beta", 3)):
        session = SQLiteSession(sid, str(path))
        asyncio.run(
            session.add_items([{"role": "user", "content": f"{sid} {i}"} for i in range(n)])
        )
        session.close()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT id FROM agent_messages WHERE session_id = 'beta' ORDER BY id")
        return int(rows.fetchall()[1][0])


DEEP_JSON = "[" * 5000 + "]" * 5000
BROKEN_ROWS: dict[str, tuple[str, tuple[Any, ...], str]] = {
    "not JSON": (
        'UPDATE agent_messages SET message_data = \'{"role": "user", \' WHERE id = ?',
        (),
        "message_data is not JSON (Expecting property name",
    ),
    "invalid UTF-8": (
        "UPDATE agent_messages SET message_data = CAST(? AS TEXT) WHERE id = ?",
        (b'{"role": "user", "content": "\xff"}',),
        "message_data is not UTF-8 ('utf-8' codec can't decode byte 0xff",
    ),
    "5,000 deep": (
        "UPDATE agent_messages SET message_data = ? WHERE id = ?",
        (DEEP_JSON,),
        "message_data is nested too deeply",
    ),
    "a JSON list": (
        "UPDATE agent_messages SET message_data = '[1, 2]' WHERE id = ?",
        (),
        "message_data is a JSON list, not an item (an object)",
    ),
    "no time": (
        "UPDATE agent_messages SET created_at = 'yesterday' WHERE id = ?",
        (),
        "created_at 'yesterday' is not a timestamp",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN_ROWS), ids=list(BROKEN_ROWS))
def test_import_from_openai_sqlite_names_the_row_it_cannot_read(
    case: str, tmp_path: Path, shared_url: str
) -> None:
    """The SDK's own ``get_items`` skips a row it cannot parse (and a traceback came for the
    rest); the importer names the file, the session, the row and the cause, and writes
    nothing of that session (those before it are written whole, and it says so)."""
    statement, args, cause = BROKEN_ROWS[case]
    path = tmp_path / "agents.db"
    row = _agents_file(path)
    with sqlite3.connect(path) as conn:
        conn.execute(statement, [*args, row])
    done = _cli("import-from", "openai-sqlite", str(path), "--url", shared_url, code=3)
    [line] = done.stderr.strip().splitlines()
    assert f"{str(path)!r}: session 'beta', agent_messages row {row}: {cause}" in line, line
    assert "imported before it, whole: 1 OpenAI Agents sessions (2 items)" in line
    with ConversationStore(shared_url) as store:
        assert store.get_conversation(conversation_id="beta") is None
        assert len(store.get_history(conversation_id="alpha")) == 2


BROKEN_FILES: dict[str, tuple[Callable[[Path], object], str]] = {
    "not a database": (
        lambda p: p.write_bytes(b"not an SQLite file " * 100),
        "is not an OpenAI Agents SQLiteSession database (file is not a database)",
    ),
    "wrong schema": (
        lambda p: sqlite3.connect(p).execute("CREATE TABLE agent_messages (a, b)"),
        "is not an OpenAI Agents SQLiteSession database (no such column: session_id)",
    ),
    "a session id that is not text": (
        lambda p: [
            _agents_file(p),
            sqlite3.connect(p, isolation_level=None).execute(
                "UPDATE agent_messages SET session_id = X'FF' WHERE session_id = 'beta'"
            ),
        ],
        "a session_id is not UTF-8",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN_FILES), ids=list(BROKEN_FILES))
def test_import_from_openai_sqlite_names_the_file_it_cannot_read(case: str, tmp_path: Path) -> None:
    make, cause = BROKEN_FILES[case]
    path = tmp_path / "agents.db"
    make(path)
    before = path.read_bytes()
    dst = f"sqlite:///{tmp_path / 'ours.db'}"
    done = _cli("import-from", "openai-sqlite", str(path), "--url", dst, code=3)
    [line] = done.stderr.strip().splitlines()
    assert str(path) in line and cause in line, line
    assert path.read_bytes() == before  # the source is only read
