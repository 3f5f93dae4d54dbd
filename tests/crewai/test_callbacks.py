"""``TaskCallback``: the explicit callback flavour, chained with what was there before."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from convostore import ConversationStore, MemoryValidationError
from convostore_crewai import RecordingFailedWarning, TaskCallback, add_task_callback, record
from crews import RESEARCHER, WRITER, make_crew, react_script
from scripted import ScriptedLLM


def stored(store: ConversationStore, cid: str) -> list[tuple[str, Any, Any, Any]]:
    return [
        (m.role, m.content, (m.metadata or {}).get("agent"), (m.metadata or {}).get("task"))
        for m in store.get_history(conversation_id=cid)
    ]


def test_crew_task_callback_appends_each_output_and_chains(backend_url: str) -> None:
    earlier: list[str] = []
    with ConversationStore(backend_url) as store:
        crew = make_crew(
            ScriptedLLM(model="scripted", script=react_script()),
            task_callback=lambda out: earlier.append(out.agent),
        )
        callback = add_task_callback(crew, store, "c", user_id="u")
        assert crew.task_callback is callback
        output = crew.kickoff(inputs={"user_message": "q"})
        assert stored(store, "c") == [
            ("assistant", "Findings 0: SQLite first.", RESEARCHER, "research"),
            ("assistant", "Summary 0: start on SQLite.", WRITER, "write"),
        ]
        assert earlier == [RESEARCHER, WRITER]
        assert output.raw == "Summary 0: start on SQLite."
        meta = store.get_conversation(conversation_id="c")
        assert meta is not None and meta.user_id == "u"


def test_task_callback_on_one_task_and_async_then_under_akickoff() -> None:
    awaited: list[str] = []

    async def then(out: Any) -> None:
        await asyncio.sleep(0)
        awaited.append(out.raw)

    with ConversationStore("memory://") as store:
        crew = make_crew(ScriptedLLM(model="scripted", script=react_script()))
        crew.tasks[1].callback = TaskCallback(store, "c", then=then)
        asyncio.run(crew.akickoff(inputs={"user_message": "q"}))
        assert stored(store, "c") == [
            ("assistant", "Summary 0: start on SQLite.", WRITER, "write"),
        ]
        assert awaited == ["Summary 0: start on SQLite."]


def test_a_failing_store_still_calls_the_chained_callback() -> None:
    chained: list[str] = []
    with ConversationStore("memory://") as store:
        store.append_message(conversation_id="c", role="user", content="x", user_id="owner")
        crew = make_crew(ScriptedLLM(model="scripted", script=react_script()))
        callback = TaskCallback(store, "c", user_id="other", then=lambda o: chained.append(o.raw))
        crew.task_callback = callback
        with pytest.warns(RecordingFailedWarning):
            output = crew.kickoff(inputs={"user_message": "q"})
        assert output.raw == "Summary 0: start on SQLite."
        assert len(callback.errors) == 2
        assert chained == ["Findings 0: SQLite first.", "Summary 0: start on SQLite."]


def test_task_callback_arguments_are_checked() -> None:
    with ConversationStore("memory://") as store:
        with pytest.raises(MemoryValidationError, match="conversation_id"):
            TaskCallback(store, "")
        with pytest.raises(TypeError, match="then must be callable"):
            TaskCallback(store, "c", then="print")
        with pytest.raises(TypeError, match="target must be a crewai Crew or Task"):
            add_task_callback(object(), store, "c")  # type: ignore[arg-type]


def test_record_adds_no_callback_and_no_checkpoint_warning() -> None:
    with ConversationStore("memory://") as store:
        crew = make_crew(ScriptedLLM(model="scripted", script=react_script()))
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            record(crew, store, "c")
            crew.kickoff(inputs={"user_message": "q"})
        assert crew.task_callback is None
        assert all(t.callback is None for t in crew.tasks)
        assert len(store.get_history(conversation_id="c")) == 3
