"""Recording real crew runs (scripted model, offline) into conversations."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from convostore import (
    AsyncConversationStore,
    ConversationStore,
    MemoryValidationError,
    to_openai_input,
)
from convostore_crewai import CrewRecorder, RecordingFailedWarning, record
from crewai import Crew
from crews import RESEARCHER, WRITER, make_crew, native_script, react_script
from scripted import ScriptedLLM, final


def turns(store: ConversationStore, cid: str) -> list[tuple[str, str, str | None]]:
    """(role, content, what crewai wrote) of every stored message, oldest first."""
    return [
        (m.role, m.content, (m.metadata or {}).get("crewai"))
        for m in store.get_history(conversation_id=cid)
    ]


def summary(output: Any) -> tuple[Any, ...]:
    return (
        output.raw,
        output.json_dict,
        [(t.agent, t.name, t.raw) for t in output.tasks_output],
        output.token_usage.total_tokens,
    )


def test_a_run_lands_in_the_conversation_exactly(backend_url: str) -> None:
    with ConversationStore(backend_url) as store:
        crew = make_crew(ScriptedLLM(model="scripted", script=react_script()))
        recorder = record(crew, store, "conv-1", user_id="alice")
        output = crew.kickoff(inputs={"user_message": "Which backend should I use?"})

        assert turns(store, "conv-1") == [
            ("user", "Which backend should I use?", "user_input"),
            ("assistant", "Findings 0: SQLite first.", "task_output"),
            ("assistant", "Summary 0: start on SQLite.", "task_output"),
        ]
        history = store.get_history(conversation_id="conv-1")
        assert [(m.metadata or {}).get("agent") for m in history] == [None, RESEARCHER, WRITER]
        assert [(m.metadata or {}).get("task") for m in history] == [None, "research", "write"]
        assert {(m.metadata or {}).get("run_id") for m in history} == {recorder.last_run_id}
        meta = store.get_conversation(conversation_id="conv-1")
        assert meta is not None and meta.user_id == "alice"
        assert meta.metadata is not None
        assert meta.metadata["crewai"]["status"] == "completed"
        assert meta.metadata["crewai"]["crew"] == "research crew"
        assert meta.metadata["crewai"]["run_id"] == recorder.last_run_id
        assert output.raw == "Summary 0: start on SQLite."
        assert recorder.errors == []


def test_recording_leaves_the_crews_output_unchanged() -> None:
    plain = make_crew(ScriptedLLM(model="scripted", script=react_script()))
    expected = plain.kickoff(inputs={"user_message": "q"})
    with ConversationStore("memory://") as store:
        crew = make_crew(ScriptedLLM(model="scripted", script=react_script()))
        with record(crew, store, "c", tools=True):
            output = crew.kickoff(inputs={"user_message": "q"})
        assert summary(output) == summary(expected)
        assert type(output) is type(expected)


@pytest.mark.parametrize("native", [False, True], ids=["react", "native"])
def test_tool_calls_and_results_are_recorded_when_asked(native: bool) -> None:
    script = native_script() if native else react_script()
    llm = ScriptedLLM(model="scripted", script=script, native_tools=native)
    with ConversationStore("memory://") as store:
        crew = make_crew(llm)
        record(crew, store, "c", tools=True)
        crew.kickoff(inputs={"user_message": "q"})
        assert [(r, w) for r, _, w in turns(store, "c")] == [
            ("user", "user_input"),
            ("assistant", "tool_call"),
            ("tool", "tool_result"),
            ("assistant", "task_output"),
            ("assistant", "task_output"),
        ]
        history = store.get_history(conversation_id="c")
        assert "FACT[storage]" in history[2].content
        # Chat Completions shape: the call and its result pair up in the converters.
        chat = to_openai_input(history)
        assert chat[1]["tool_calls"][0]["function"]["name"] == "lookup_fact"
        assert chat[2] == {
            "role": "tool",
            "tool_call_id": chat[1]["tool_calls"][0]["id"],
            "content": history[2].content,
        }


def test_tool_calls_are_left_out_by_default() -> None:
    with ConversationStore("memory://") as store:
        crew = make_crew(ScriptedLLM(model="scripted", script=react_script()))
        record(crew, store, "c")
        crew.kickoff(inputs={"user_message": "q"})
        assert [w for _, _, w in turns(store, "c")] == ["user_input", "task_output", "task_output"]


def test_a_failed_run_keeps_its_partial_transcript_and_error(backend_url: str) -> None:
    llm = ScriptedLLM(model="scripted", script=react_script(), fail_roles={WRITER})
    with ConversationStore(backend_url) as store:
        crew = make_crew(llm)
        record(crew, store, "c")
        with pytest.raises(RuntimeError, match=f"model exploded for {WRITER}"):
            crew.kickoff(inputs={"user_message": "q"})
        stored = turns(store, "c")
        assert stored[:2] == [
            ("user", "q", "user_input"),
            ("assistant", "Findings 0: SQLite first.", "task_output"),
        ]
        assert len(stored) == 3
        role, content, what = stored[2]
        assert (role, what) == ("system", "error")
        assert "RuntimeError" in content and "model exploded" in content
        meta = store.get_conversation(conversation_id="c")
        assert meta is not None and meta.metadata is not None
        assert meta.metadata["crewai"]["status"] == "failed"
        assert "model exploded" in meta.metadata["crewai"]["error"]


def test_a_failing_store_is_reported_and_the_result_is_unchanged() -> None:
    expected = make_crew(ScriptedLLM(model="scripted", script=react_script())).kickoff(
        inputs={"user_message": "q"}
    )
    with ConversationStore("memory://") as store:
        # A real refusal: the conversation belongs to another user.
        store.append_message(conversation_id="c", role="user", content="hi", user_id="alice")
        crew = make_crew(ScriptedLLM(model="scripted", script=react_script()))
        seen: list[BaseException] = []
        recorder = record(crew, store, "c", user_id="mallory", on_error=seen.append)
        with pytest.warns(RecordingFailedWarning, match="belongs to another user"):
            output = crew.kickoff(inputs={"user_message": "q"})
        assert summary(output) == summary(expected)
        assert len(recorder.errors) >= 3  # status, user turn, two task outputs, final status
        assert seen == recorder.errors
        assert turns(store, "c") == [("user", "hi", None)]


def test_a_closed_store_is_reported_and_the_run_goes_on(tmp_path: Any) -> None:
    store = ConversationStore(f"sqlite:///{tmp_path / 'gone.db'}")
    crew = make_crew(ScriptedLLM(model="scripted", script=react_script()))
    recorder = record(crew, store, "c")
    store.close()
    with pytest.warns(RecordingFailedWarning):
        output = crew.kickoff(inputs={"user_message": "q"})
    assert output.raw == "Summary 0: start on SQLite."
    assert recorder.errors


def test_the_users_own_callbacks_still_fire() -> None:
    calls: list[str] = []
    llm = ScriptedLLM(model="scripted", script=react_script())
    crew = make_crew(
        llm,
        task_callback=lambda out: calls.append(f"task:{out.agent}"),
        step_callback=lambda step: calls.append(f"step:{type(step).__name__}"),
    )
    crew.tasks[0].callback = lambda out: calls.append(f"own:{out.agent}")
    with ConversationStore("memory://") as store:
        record(crew, store, "c", tools=True)
        crew.kickoff(inputs={"user_message": "q"})
        assert len(turns(store, "c")) == 5
    assert calls.count(f"task:{WRITER}") == 1
    assert calls.count(f"own:{RESEARCHER}") == 1
    assert calls.count(f"task:{RESEARCHER}") == 1
    assert "step:ToolResult" in calls and "step:AgentAction" in calls


def test_akickoff_and_kickoff_async_are_recorded(backend_url: str) -> None:
    async def main(store: AsyncConversationStore) -> None:
        crew = make_crew(ScriptedLLM(model="scripted", script=react_script(2)))
        record(crew, store, "c")
        await crew.akickoff(inputs={"user_message": "first"})
        await crew.kickoff_async(inputs={"user_message": "second"})

    store = AsyncConversationStore(backend_url)
    try:
        asyncio.run(main(store))
        assert turns(store.sync, "c") == [
            ("user", "first", "user_input"),
            ("assistant", "Findings 0: SQLite first.", "task_output"),
            ("assistant", "Summary 0: start on SQLite.", "task_output"),
            ("user", "second", "user_input"),
            ("assistant", "Findings 1: SQLite first.", "task_output"),
            ("assistant", "Summary 1: start on SQLite.", "task_output"),
        ]
    finally:
        store.sync.close()


def _rendezvous(barrier: threading.Barrier, answer: str) -> Any:
    def respond(messages: list[dict[str, Any]]) -> str:
        barrier.wait(timeout=60)  # both crews are mid-run here, whatever the scheduling
        return answer

    return respond


def test_two_crews_at_once_land_in_their_own_conversations(backend_url: str) -> None:
    barrier = threading.Barrier(2)
    crews: dict[str, Crew] = {}
    with ConversationStore(backend_url) as store:
        for name in ("a", "b"):
            script = {
                RESEARCHER: [_rendezvous(barrier, final(f"findings {name}"))],
                WRITER: [_rendezvous(barrier, final(f"summary {name}"))],
            }
            crews[name] = make_crew(ScriptedLLM(model="scripted", script=script), name=name)
            record(crews[name], store, f"conv-{name}")
        results: dict[str, str] = {}
        errors: list[BaseException] = []

        def run(name: str) -> None:
            try:
                results[name] = crews[name].kickoff(inputs={"user_message": f"ask {name}"}).raw
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(n,)) for n in crews]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert results == {"a": "summary a", "b": "summary b"}
        for name in crews:
            assert turns(store, f"conv-{name}") == [
                ("user", f"ask {name}", "user_input"),
                ("assistant", f"findings {name}", "task_output"),
                ("assistant", f"summary {name}", "task_output"),
            ]


def test_two_crews_gathered_under_asyncio_stay_apart() -> None:
    async def main(store: ConversationStore) -> None:
        crews = []
        for name in ("a", "b"):
            script = {RESEARCHER: [final(f"findings {name}")], WRITER: [final(f"summary {name}")]}
            crew = make_crew(ScriptedLLM(model="scripted", script=script), name=name)
            record(crew, store, f"conv-{name}")
            crews.append(crew)
        await asyncio.gather(*(c.akickoff(inputs={"user_message": f"ask {c.name}"}) for c in crews))

    with ConversationStore("memory://") as store:
        asyncio.run(main(store))
        for name in ("a", "b"):
            assert [c for _, c, _ in turns(store, f"conv-{name}")] == [
                f"ask {name}",
                f"findings {name}",
                f"summary {name}",
            ]


def test_inputs_without_a_user_message_are_recorded_as_lines() -> None:
    with ConversationStore("memory://") as store:
        crew = make_crew(
            ScriptedLLM(model="scripted", script=react_script()),
            description="Research {topic} for {audience}",
        )
        record(crew, store, "c")
        crew.kickoff(inputs={"topic": "storage", "audience": "developers"})
        first = store.get_history(conversation_id="c")[0]
        assert first.role == "user"
        assert first.content == "topic: storage\naudience: developers"
        assert first.metadata is not None
        assert first.metadata["inputs"] == {"topic": "storage", "audience": "developers"}


def test_detach_stops_recording() -> None:
    with ConversationStore("memory://") as store:
        crew = make_crew(ScriptedLLM(model="scripted", script=react_script(2)))
        with record(crew, store, "c") as recorder:
            assert isinstance(recorder, CrewRecorder)
            crew.kickoff(inputs={"user_message": "one"})
        crew.kickoff(inputs={"user_message": "two"})
        assert turns(store, "c")[0][1] == "one"
        assert len(turns(store, "c")) == 3


def test_bad_arguments_are_refused_before_anything_is_written() -> None:
    with ConversationStore("memory://") as store:
        crew = make_crew(ScriptedLLM(model="scripted", script={}))
        with pytest.raises(MemoryValidationError, match="conversation_id must be 1 to 256 bytes"):
            record(crew, store, "x" * 257)
        with pytest.raises(MemoryValidationError, match="user_id must be 1 to 256 bytes"):
            record(crew, store, "c", user_id="")
        with pytest.raises(MemoryValidationError, match="store must be a ConversationStore"):
            record(crew, 42, "c")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="crew must be a crewai Crew"):
            record("crew", store, "c")  # type: ignore[arg-type]
        assert store.list_conversations().items == []


def test_a_kickoff_without_inputs_records_no_user_turn() -> None:
    with ConversationStore("memory://") as store:
        crew = make_crew(
            ScriptedLLM(model="scripted", script=react_script()), description="Research storage."
        )
        record(crew, store, "c")
        crew.kickoff()
        assert [(r, w) for r, _, w in turns(store, "c")] == [
            ("assistant", "task_output"),
            ("assistant", "task_output"),
        ]


def test_a_streaming_kickoff_is_recorded() -> None:
    with ConversationStore("memory://") as store:
        crew = make_crew(ScriptedLLM(model="scripted", script=react_script()), stream=True)
        record(crew, store, "c")
        streaming = crew.kickoff(inputs={"user_message": "q"})
        for _ in streaming:
            pass
        assert streaming.result.raw == "Summary 0: start on SQLite."
        assert [c for _, c, _ in turns(store, "c")] == [
            "q",
            "Findings 0: SQLite first.",
            "Summary 0: start on SQLite.",
        ]
