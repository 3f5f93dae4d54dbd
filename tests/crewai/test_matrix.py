"""The writer x reader matrix (tests/matrix/readers.py) for CrewAI as the writer: a crew of
two agents recorded with ``record(..., tools=True)`` (the user's turn, a native tool call and
its result, each task's output); every reader on SQLite and PostgreSQL.

CrewAI has no conversation title, so none is written; a recorded crew's conversation is an
ordinary one, forked by the core's ``fork_conversation`` like any other (the fork reader)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from convostore import ConversationStore
from convostore_crewai import record
from crews import RESEARCHER, WRITER, make_crew, native_script
from scripted import ScriptedLLM

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "matrix"))
from readers import READERS, Written, check

FACT = "FACT[storage]: SQLite is the default, PostgreSQL scales out."


def written(db: ConversationStore) -> Written:
    crew = make_crew(ScriptedLLM(model="scripted", script=native_script(), native_tools=True))
    recorder = record(crew, db, "crew-chat", user_id="alice", tools=True)
    crew.kickoff(inputs={"user_message": "Which backend?"})
    recorder.detach()
    run = recorder.last_run_id
    research, write = (str(t.id) for t in crew.tasks)
    # the one value the recorder makes up: the call's id (CrewAI's hook gives none)
    [call_id] = [
        c["id"]
        for m in db.get_history(conversation_id="crew-chat")
        for c in (m.metadata or {}).get("tool_calls", [])
    ]
    assert re.fullmatch(r"call_[0-9a-f]{24}", call_id)
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "lookup_fact", "arguments": '{"topic": "storage"}'},
    }
    by_researcher: dict[str, Any] = {
        "agent": RESEARCHER,
        "run_id": run,
        "task": "research",
        "task_id": research,
    }
    return Written(
        conversation_id="crew-chat",
        user_id="alice",
        metadata_keys={"crewai"},
        messages=[
            (
                "user",
                "Which backend?",
                {
                    "crewai": "user_input",
                    "inputs": {"user_message": "Which backend?"},
                    "run_id": run,
                },
            ),
            ("assistant", "", {"crewai": "tool_call", **by_researcher, "tool_calls": [call]}),
            (
                "tool",
                FACT,
                {
                    "crewai": "tool_result",
                    **by_researcher,
                    "tool_call_id": call_id,
                    "name": "lookup_fact",
                },
            ),
            (
                "assistant",
                "Findings 0.",
                {
                    "crewai": "task_output",
                    "agent": RESEARCHER,
                    "task": "research",
                    "output_format": "raw",
                    "task_id": research,
                    "run_id": run,
                },
            ),
            (
                "assistant",
                "Summary 0.",
                {
                    "crewai": "task_output",
                    "agent": WRITER,
                    "task": "write",
                    "output_format": "raw",
                    "task_id": write,
                    "run_id": run,
                },
            ),
        ],
        anthropic=[
            {"role": "user", "content": "Which backend?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": call_id,
                        "name": "lookup_fact",
                        "input": {"topic": "storage"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call_id, "content": FACT}],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Findings 0."},
                    {"type": "text", "text": "Summary 0."},
                ],
            },
        ],
        openai=[
            {"role": "user", "content": "Which backend?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": FACT},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Findings 0."},
                    {"type": "text", "text": "Summary 0."},
                ],
            },
        ],
    )


@pytest.fixture
def db(shared_url: str) -> Iterator[ConversationStore]:
    with ConversationStore(shared_url) as store:
        store.append_message(conversation_id="other", role="user", content="x", user_id="bob")
        yield store


@pytest.mark.parametrize("reader", READERS)
def test_crewai_recorded_crew_writer(db: ConversationStore, reader: str) -> None:
    what = written(db)
    db.append_message(conversation_id="newest", role="user", content="y")
    check(db, what, reader)
