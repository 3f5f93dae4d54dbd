"""The real Runner (run, run_sync, run_streamed) with a scripted model and a function tool."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from agents import (
    GuardrailFunctionOutput,
    InputGuardrailTripwireTriggered,
    RunConfig,
    RunContextWrapper,
    Runner,
    RunState,
    input_guardrail,
)
from agents.memory import SessionSettings
from agents.testing import ScriptedModel, assistant_message, function_call
from convostore import (
    AsyncConversationStore,
    Limits,
    MemoryQuotaExceededError,
    MemoryValidationError,
)
from convostore_openai import ConvostoreSession
from oa_helpers import RUNNERS, agent_for, run_agent, tool_turn
from oa_worker import processes, second_turns

pytestmark = pytest.mark.anyio
Make = Callable[..., ConvostoreSession]


def kinds(items: list[Any]) -> list[str]:
    return [i.get("type") or f"role:{i['role']}" for i in items]


def orphan_outputs(items: list[Any]) -> list[Any]:
    """Tool outputs whose call is not in front of them."""
    calls: set[str] = set()
    orphans = []
    for item in items:
        if item.get("type") == "function_call":
            calls.add(item["call_id"])
        elif item.get("type") == "function_call_output" and item["call_id"] not in calls:
            orphans.append(item)
    return orphans


USER_1 = {"role": "user", "content": "What's the weather in Paris?"}
TURN_1_KINDS = ["role:user", "reasoning", "function_call", "function_call_output", "message"]


@pytest.mark.parametrize("method", RUNNERS)
async def test_two_turns_the_model_sees_the_stored_history(make_session: Make, method: str) -> None:
    session = make_session("two-turns")
    model = ScriptedModel([*tool_turn(1, "Paris", "It is sunny."), [assistant_message("Bye!")]])
    agent = agent_for(model)
    result = await run_agent(method, agent, USER_1["content"], session=session)
    assert result.final_output == "It is sunny."
    stored = await session.get_items()
    assert kinds(stored) == TURN_1_KINDS
    assert stored[0] == USER_1
    assert stored[3] == {
        "call_id": "call_1",
        "output": "Sunny, 22C in Paris",
        "type": "function_call_output",
    }
    # The model's second call of turn 1 saw the user message and the tool round, as stored.
    assert model.calls[1].input == stored[:4]

    result = await run_agent(method, agent, "Thanks!", session=session)
    assert result.final_output == "Bye!"
    assert model.calls[2].input == [*stored, {"role": "user", "content": "Thanks!"}]
    assert kinds(await session.get_items()) == [*TURN_1_KINDS, "role:user", "message"]


JOBS: list[tuple[str, str, int | None]] = [
    ("proc-run", "run", None),
    ("proc-streamed", "run_streamed", None),
    ("proc-run-2", "run", 2),
    ("proc-streamed-2", "run_streamed", 2),
    ("proc-run-4", "run", 4),
]


@pytest.mark.slow
async def test_second_turn_in_a_new_process(shared_url: str) -> None:
    """Turn 1 here, turn 2 in a fresh process: the model sees exactly the stored history (the
    newest max_items of it, less a leading orphan tool output)."""
    first_turns = {}
    for session_id, method, max_items in JOBS:
        async with ConvostoreSession(session_id, url=shared_url, max_items=max_items) as session:
            model = ScriptedModel(tool_turn(1, "Paris", "It is sunny."))
            await run_agent(method, agent_for(model), USER_1["content"], session=session)
            first_turns[session_id] = await session.get_items(limit=100)
        assert kinds(first_turns[session_id]) == TURN_1_KINDS

    context = processes()
    out = context.Queue()
    proc = context.Process(target=second_turns, args=(shared_url, JOBS, "And in Rome?", out))
    proc.start()
    reports = out.get(timeout=120)
    proc.join(timeout=120)
    assert proc.exitcode == 0

    new = {"role": "user", "content": "And in Rome?"}
    for (session_id, _, max_items), report in zip(JOBS, reports, strict=True):
        turn_1 = first_turns[session_id]
        assert report["final"] == "Rome is sunny too."
        first, second = report["inputs"]
        if max_items is None:
            assert first == [*turn_1, new]  # exactly the stored history, then the new input
        elif max_items == 2:
            # The window [function_call_output, message] starts with an orphan output: dropped.
            assert first == [turn_1[-1], new]
        else:
            assert first == [*turn_1[-4:], new]
        for model_input in (first, second):
            assert orphan_outputs(model_input) == []
        async with ConvostoreSession(session_id, url=shared_url) as session:
            stored = await session.get_items()
        assert stored[:5] == turn_1
        assert kinds(stored[5:]) == TURN_1_KINDS
        # The second model call of turn 2 saw the tool round as it was stored.
        assert second[-3:] == stored[6:9]


@pytest.mark.parametrize("method", ["run", "run_streamed"])
async def test_max_items_never_sends_an_orphan_output(make_session: Make, method: str) -> None:
    session = make_session("window", max_items=3)
    model = ScriptedModel(
        [
            [function_call("get_weather", {"city": "Oslo"}, call_id="c1")],
            [function_call("get_weather", {"city": "Rome"}, call_id="c2")],
            [assistant_message("Done.")],
            [assistant_message("Again.")],
        ]
    )
    agent = agent_for(model)
    await run_agent(method, agent, "Two cities please", session=session)
    assert kinds(await session.get_items(limit=10)) == [
        "role:user",
        "function_call",
        "function_call_output",
        "function_call",
        "function_call_output",
        "message",
    ]
    await run_agent(method, agent, "Once more", session=session)
    # The newest 3 are [call c2, output c2, message]; with 4 the output c1 would be orphaned.
    seen = model.calls[3].input
    assert orphan_outputs(seen) == []
    assert seen[-1] == {"role": "user", "content": "Once more"}


async def test_runconfig_limit_overrides_max_items(make_session: Make) -> None:
    session = make_session("override", max_items=100)
    await session.add_items([{"role": "user", "content": f"Turn {i}"} for i in range(10)])
    model = ScriptedModel([[assistant_message("Got it")]])
    await Runner.run(
        agent_for(model),
        "New question",
        session=session,
        run_config=RunConfig(session_settings=SessionSettings(limit=2)),
    )
    assert [i["content"] for i in model.calls[0].input] == ["Turn 8", "Turn 9", "New question"]


@pytest.mark.parametrize("method", RUNNERS)
async def test_session_input_callback_persists_only_new_items(
    make_session: Make, method: str
) -> None:
    session = make_session("callback")
    history: list[Any] = [
        {"role": "user", "content": "Hello there."},
        {"role": "assistant", "content": "Hi, I'm here to assist you."},
    ]
    await session.add_items(history)

    def only_user(old: list[Any], new: list[Any]) -> list[Any]:
        return [i for i in old if i["role"] == "user"] + new

    model = ScriptedModel([[assistant_message("I'm a model")]])
    new_input = [{"role": "user", "content": "What's your name?"}]
    await run_agent(
        method,
        agent_for(model),
        new_input,
        session=session,
        run_config=RunConfig(session_input_callback=only_user),
    )
    assert model.calls[0].input == [history[0], new_input[0]]
    assert kinds(await session.get_items()) == [
        "role:user",
        "role:assistant",
        "role:user",
        "message",
    ]


async def test_session_none_means_no_memory() -> None:
    model = ScriptedModel([[assistant_message("Hello")], [assistant_message("No memory")]])
    agent = agent_for(model)
    await Runner.run(agent, "Hi there")
    await Runner.run(agent, "Do you remember?")
    assert len(model.calls[1].input) == 1


async def test_human_approval_interrupts_and_resumes_through_the_session(
    store: AsyncConversationStore,
) -> None:
    model = ScriptedModel(
        [
            [function_call("delete_file", {"path": "/tmp/x"}, call_id="del_1")],
            [assistant_message("Deleted it.")],
        ]
    )
    agent = agent_for(model)
    session = ConvostoreSession("approve", store=store)
    result = await Runner.run(agent, "Delete /tmp/x", session=session)
    assert [i.raw_item.name for i in result.interruptions] == ["delete_file"]  # type: ignore[union-attr]
    assert kinds(await session.get_items()) == ["role:user", "function_call"]
    saved = result.to_state().to_string()

    # Later, with a new session object, the approval comes in and the run resumes.
    state = await RunState.from_string(agent, saved)
    state.approve(state.get_interruptions()[0])
    resumed_session = ConvostoreSession("approve", store=store.sync)
    result = await Runner.run(agent, state, session=resumed_session)
    assert result.final_output == "Deleted it."
    stored = await resumed_session.get_items()
    assert kinds(stored) == ["role:user", "function_call", "function_call_output", "message"]
    assert stored[2]["output"] == "deleted /tmp/x"  # type: ignore[typeddict-item]
    assert model.calls[1].input == stored[:3]


async def test_input_guardrail_trip_stores_only_the_input(make_session: Make) -> None:
    @input_guardrail
    def always_trip(ctx: Any, agent: Any, input: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

    session = make_session("guard")
    model = ScriptedModel([[assistant_message("never")]])
    with pytest.raises(InputGuardrailTripwireTriggered):
        await Runner.run(agent_for(model, input_guardrails=[always_trip]), "Hi", session=session)
    assert await session.get_items() == [{"role": "user", "content": "Hi"}]


@pytest.mark.parametrize("method", ["run", "run_streamed"])
async def test_a_failing_add_items_propagates(backend_url: str, method: str) -> None:
    """The quota refuses the tool round: the run fails with that error (streamed: no hang)."""
    async with AsyncConversationStore(
        backend_url, limits=Limits(max_messages_per_conversation=2)
    ) as store:
        session = ConvostoreSession("full", store=store)
        model = ScriptedModel(tool_turn(1, "Paris", "never"))
        with pytest.raises(MemoryQuotaExceededError):
            await run_agent(method, agent_for(model), "Weather?", session=session)
        assert await session.get_items() == [{"role": "user", "content": "Weather?"}]


@pytest.mark.parametrize("method", RUNNERS)
async def test_session_settings_given_as_a_dict_window_the_history(
    make_session: Make, method: str
) -> None:
    session = make_session("dict-settings", session_settings={"limit": 1})
    model = ScriptedModel([[assistant_message("first")], [assistant_message("second")]])
    await run_agent(method, agent_for(model), "one", session=session)
    await run_agent(method, agent_for(model), "two", session=session)
    stored = await session.get_items(limit=4)
    assert kinds(stored) == ["role:user", "message", "role:user", "message"]
    assert model.calls[1].input == stored[1:3]


async def test_sessions_scoped_per_tenant_from_the_run_context(
    store: AsyncConversationStore,
) -> None:
    session = ConvostoreSession("chat", store=store, tenant=lambda w: w.context["tenant"])
    model = ScriptedModel(
        [
            [assistant_message("hi acme")],
            [assistant_message("hi globex")],
            [assistant_message("again")],
        ]
    )
    agent = agent_for(model)
    await Runner.run(agent, "I am acme", session=session, context={"tenant": "acme"})
    await Runner.run(agent, "I am globex", session=session, context={"tenant": "globex"})
    await Runner.run(agent, "Who am I?", session=session, context={"tenant": "acme"})
    # acme's second run saw acme's history only.
    assert model.calls[2].input[0] == {"role": "user", "content": "I am acme"}
    assert "I am globex" not in json.dumps(model.calls[2].input)

    acme = RunContextWrapper(context={"tenant": "acme"})
    assert len(await session.get_items(wrapper=acme)) == 4
    assert session.conversation_id(acme) == "acme:chat"
    listed = await store.list_conversations(user_id="globex")
    assert [c.conversation_id for c in listed.items] == ["globex:chat"]
    assert await session.pop_item(wrapper=acme) is not None
    await session.clear_session(wrapper=acme)
    assert await session.get_items(wrapper=acme) == []
    globex = RunContextWrapper(context={"tenant": "globex"})
    assert len(await session.get_items(wrapper=globex)) == 2

    with pytest.raises(MemoryValidationError, match="wrapper: this session is scoped per tenant"):
        await session.get_items()
    with pytest.raises(MemoryValidationError, match="tenant 'a:b' must not contain ':'"):
        await session.get_items(wrapper=RunContextWrapper(context={"tenant": "a:b"}))
    with pytest.raises(MemoryValidationError, match="tenant must be a str, got NoneType"):
        await session.add_items([], wrapper=RunContextWrapper(context={"tenant": None}))


async def test_encrypted_session_wraps_it(make_session: Make) -> None:
    """The SDK's EncryptedSession over ours: the wrapper reaches us, items stay opaque."""
    from agents.extensions.memory.encrypt_session import EncryptedSession

    inner = make_session("enc")
    session = EncryptedSession("enc", underlying_session=inner, encryption_key="k" * 32)
    model = ScriptedModel([*tool_turn(1, "Oslo", "Cold."), [assistant_message("Still cold.")]])
    agent = agent_for(model)
    await Runner.run(agent, "Oslo?", session=session)
    await Runner.run(agent, "And now?", session=session)
    stored = await inner.get_items()
    assert all(set(i) == {"__enc__", "v", "kid", "payload"} for i in stored)
    clear = await session.get_items()
    assert kinds(clear) == [*TURN_1_KINDS, "role:user", "message"]
    assert model.calls[2].input == [*clear[:5], {"role": "user", "content": "And now?"}]
