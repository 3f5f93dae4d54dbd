"""A stored conversation continues: the model of the next run sees it."""

from __future__ import annotations

import json

import pytest
from convostore import ConversationStore, MemoryValidationError
from convostore_crewai import (
    CHAT_MESSAGES_KEY,
    agent_messages,
    crew_history_inputs,
    history_messages,
    record,
)
from crewai import Agent
from crews import RESEARCHER, WRITER, make_crew, react_script
from scripted import ScriptedLLM


def test_a_second_kickoff_continues_from_the_stored_history(backend_url: str) -> None:
    llm = ScriptedLLM(model="scripted", script=react_script(2))
    with ConversationStore(backend_url) as store:
        crew = make_crew(llm)
        record(crew, store, "c", continue_history=True)
        crew.kickoff(inputs={"user_message": "Which backend first?"})
        first_prompts = llm.prompts_of(RESEARCHER) + llm.prompts_of(WRITER)
        assert not any("Summary 0" in p for p in first_prompts)

        crew.kickoff(inputs={"user_message": "And when PostgreSQL?"})
        for role in (RESEARCHER, WRITER):
            prompt = llm.prompts_of(role)[-1]
            assert "User: Which backend first?" in prompt
            assert "Assistant: Findings 0: SQLite first." in prompt
            assert "Assistant: Summary 0: start on SQLite." in prompt
        contents = [m.content for m in store.get_history(conversation_id="c")]
        assert contents == [
            "Which backend first?",
            "Findings 0: SQLite first.",
            "Summary 0: start on SQLite.",
            "And when PostgreSQL?",
            "Findings 1: SQLite first.",
            "Summary 1: start on SQLite.",
        ]
        # The history is not stored as part of the user's turn.
        assert store.get_history(conversation_id="c")[3].metadata == {
            "crewai": "user_input",
            "inputs": {"user_message": "And when PostgreSQL?"},
            "run_id": store.get_history(conversation_id="c")[3].metadata["run_id"],  # type: ignore[index]
        }


def test_crew_history_inputs_feed_a_plain_kickoff() -> None:
    llm = ScriptedLLM(model="scripted", script=react_script())
    with ConversationStore("memory://") as store:
        store.append_message(conversation_id="c", role="user", content="Earlier question")
        store.append_message(conversation_id="c", role="assistant", content="Earlier answer")
        inputs = crew_history_inputs(store, "c")
        assert json.loads(inputs[CHAT_MESSAGES_KEY]) == [
            {"role": "user", "content": "Earlier question"},
            {"role": "assistant", "content": "Earlier answer"},
        ]
        make_crew(llm).kickoff(inputs={"user_message": "Next?", **inputs})
        assert "User: Earlier question\nAssistant: Earlier answer" in llm.prompts_of(WRITER)[0]
        assert crew_history_inputs(store, "empty") == {}


def test_history_leaves_out_tools_and_failures_and_fits_a_budget() -> None:
    with ConversationStore("memory://") as store:
        cid = "c"
        store.append_message(conversation_id=cid, role="user", content="one")
        store.append_message(
            conversation_id=cid,
            role="assistant",
            content="",
            metadata={"tool_calls": [{"id": "t", "function": {"name": "f", "arguments": "{}"}}]},
        )
        store.append_message(
            conversation_id=cid, role="tool", content="result", metadata={"tool_call_id": "t"}
        )
        store.append_message(
            conversation_id=cid,
            role="system",
            content="The crew's run failed",
            metadata={"crewai": "error"},
        )
        store.append_message(
            conversation_id=cid, role="assistant", content=[{"type": "text", "text": "two"}]
        )
        store.append_message(conversation_id=cid, role="user", content="three!")
        assert history_messages(store, cid) == [
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "two"},
            {"role": "user", "content": "three!"},
        ]
        assert history_messages(store, cid, max_chars=9) == [
            {"role": "assistant", "content": "two"},
            {"role": "user", "content": "three!"},
        ]
        assert history_messages(store, cid, last=1) == [{"role": "user", "content": "three!"}]
        with pytest.raises(MemoryValidationError, match="max_chars"):
            history_messages(store, cid, max_chars=0)
        with pytest.raises(MemoryValidationError, match="last"):
            history_messages(store, cid, last=-1)


def test_agent_kickoff_continues_with_roles(backend_url: str) -> None:
    with ConversationStore(backend_url) as store:
        crew = make_crew(ScriptedLLM(model="scripted", script=react_script()))
        record(crew, store, "c", tools=True)
        crew.kickoff(inputs={"user_message": "Which backend?"})

        messages = agent_messages(store, "c", user_message="Why SQLite?")
        assert [m["role"] for m in messages] == [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
        ]
        assert messages[1]["tool_calls"][0]["function"]["name"] == "lookup_fact"
        assert messages[3]["content"] == "Findings 0: SQLite first.\n\nSummary 0: start on SQLite."
        plain = agent_messages(store, "c", user_message="Why SQLite?", include_tools=False)
        assert [m["role"] for m in plain] == ["user", "assistant", "user"]

        llm = ScriptedLLM(model="scripted", script={"Advisor": ["Because it is embedded."]})
        advisor = Agent(role="Advisor", goal="Advise", backstory="An advisor.", llm=llm)
        result = advisor.kickoff(messages=plain)  # type: ignore[arg-type]
        assert result.raw == "Because it is embedded."
        sent = llm.seen[-1][1]
        roles_and_text = [(m["role"], str(m.get("content"))) for m in sent]
        assert ("user", "Which backend?") in roles_and_text
        assert any(r == "assistant" and "Summary 0" in t for r, t in roles_and_text)
        assert any("Why SQLite?" in t for _, t in roles_and_text)
