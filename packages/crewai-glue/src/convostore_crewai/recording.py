"""Record CrewAI runs into convostore conversations.

Two ways in, as CrewAI users already wire things:

* ``TaskCallback`` / ``add_task_callback``: a callable for ``Task(callback=...)`` and
  ``Crew(task_callback=...)`` that appends each task's output and then calls the callback
  that was there before.
* ``record(crew, store, conversation_id)``: CrewAI's interception hooks make every run of
  that crew land in the conversation (the user's turn, each task's output, tool calls and
  results when asked, a failed run's partial transcript and its error). It leaves the
  crew's callbacks alone and never changes what the crew returns.

A store that fails never breaks the crew: the error is reported (see ``report``) and the
run goes on with its result unchanged.
"""

from __future__ import annotations

import json
import threading
import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from convostore import ConversationStore, MessageInput
from convostore.spi import check_id, check_optional_id, check_optional_int
from crewai.hooks.dispatch import InterceptionPoint, get_hooks, register

from ._common import ErrorHandler, StoreLike, open_store, report
from .history import CHAT_MESSAGES_KEY, history_messages

if TYPE_CHECKING:
    from crewai import Crew, Task
    from crewai.tasks.task_output import TaskOutput

__all__ = ["CrewRecorder", "TaskCallback", "add_task_callback", "record"]

CONVERSATION_KEY = "crewai"
"""The conversation metadata key holding the last run's crew, id and status."""


def _jsonable(value: Any) -> Any:
    """``value`` if JSON can hold it, else its JSON-safe rendering (str for unknown types)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def task_output_message(
    output: TaskOutput, *, task: Task | None = None, run_id: str | None = None
) -> MessageInput:
    """The assistant message that stores one task's output: ``raw`` as content, the agent
    and the task in metadata (with the structured output when there is one)."""
    metadata: dict[str, Any] = {
        "crewai": "task_output",
        "agent": output.agent,
        "task": output.name or output.description,
        "output_format": output.output_format.value,
    }
    if task is not None:
        metadata["task_id"] = str(task.id)
    if run_id is not None:
        metadata["run_id"] = run_id
    if output.json_dict is not None:
        metadata["json"] = _jsonable(output.json_dict)
    elif output.pydantic is not None:
        metadata["json"] = _jsonable(output.pydantic.model_dump(mode="json"))
    return {"role": "assistant", "content": output.raw, "metadata": metadata}


class TaskCallback:
    """A ``Task(callback=...)`` / ``Crew(task_callback=...)`` callable that appends each
    task's output to a conversation, then calls ``then`` (the callback that was there
    before) and returns what it returns, so an async ``then`` is still awaited by CrewAI.

    CrewAI warns that a callable object cannot be checkpointed; ``record`` touches no
    callback and has no such limit.
    """

    def __init__(
        self,
        store: StoreLike,
        conversation_id: str,
        *,
        user_id: str | None = None,
        then: Any = None,
        on_error: ErrorHandler | None = None,
        replicas: Sequence[str] | None = None,
    ) -> None:
        self.store, self._owned = open_store(store, replicas=replicas)
        self.conversation_id = check_id("conversation_id", conversation_id, self.store.limits)
        self.user_id = check_optional_id("user_id", user_id, self.store.limits)
        if then is not None and not callable(then):
            raise TypeError(f"then must be callable or None, got {type(then).__name__}")
        self.then = then
        self.on_error = on_error
        self.errors: list[BaseException] = []

    def __call__(self, output: TaskOutput) -> Any:
        try:
            message = task_output_message(output)
            self.store.append_message(
                conversation_id=self.conversation_id,
                user_id=self.user_id,
                role=message["role"],
                content=message["content"],
                metadata=message.get("metadata"),
            )
        except Exception as exc:
            report("appending a task output", exc, self.errors, self.on_error)
        return None if self.then is None else self.then(output)

    def close(self) -> None:
        """Close the store if it was opened here from a URL."""
        if self._owned:
            self.store.close()
            self._owned = False


def add_task_callback(
    target: Crew | Task,
    store: StoreLike,
    conversation_id: str,
    *,
    user_id: str | None = None,
    on_error: ErrorHandler | None = None,
    replicas: Sequence[str] | None = None,
) -> TaskCallback:
    """Install a ``TaskCallback`` on a crew (``task_callback``) or a task (``callback``),
    chaining the callback it had; return the installed callback."""
    from crewai import Crew, Task

    if isinstance(target, Crew):
        callback = TaskCallback(
            store,
            conversation_id,
            user_id=user_id,
            then=target.task_callback,
            on_error=on_error,
            replicas=replicas,
        )
        target.task_callback = callback
    elif isinstance(target, Task):
        callback = TaskCallback(
            store,
            conversation_id,
            user_id=user_id,
            then=target.callback,
            on_error=on_error,
            replicas=replicas,
        )
        target.callback = callback
    else:
        raise TypeError(f"target must be a crewai Crew or Task, got {type(target).__name__}")
    return callback


# -- recording through interception hooks ---------------------------------------------------


@dataclass
class _Run:
    """One kickoff of a recorded crew, from EXECUTION_START to EXECUTION_END."""

    recorder: CrewRecorder
    run_id: str
    task_ids: frozenset[int]


_lock = threading.Lock()
_recorders: dict[int, CrewRecorder] = {}  # id(crew) -> its recorder
_runs: dict[int, _Run] = {}  # id(crew) -> the run in progress


def _recorder_of(crew: Any) -> CrewRecorder | None:
    if crew is None:
        return None
    with _lock:
        recorder = _recorders.get(id(crew))
    return recorder if recorder is not None and recorder.crew is crew else None


def _run_of(crew: Any) -> _Run | None:
    if crew is None:
        return None
    with _lock:
        run = _runs.get(id(crew))
    return run if run is not None and run.recorder.crew is crew else None


def _run_of_task(task: Any) -> _Run | None:
    if task is None:
        return None
    run = _run_of(getattr(getattr(task, "agent", None), "crew", None))
    if run is not None and id(task) in run.task_ids:
        return run
    with _lock:
        runs = list(_runs.values())
    return next((r for r in runs if id(task) in r.task_ids), None)


# Every hook returns None: a non-None return would replace CrewAI's payload.


def _on_execution_start(ctx: Any) -> None:
    recorder = _recorder_of(getattr(ctx, "crew", None))
    if recorder is not None:
        crew = ctx.crew
        run = _Run(recorder, uuid.uuid4().hex, frozenset(id(t) for t in crew.tasks))
        with _lock:
            _runs[id(crew)] = run
        recorder.last_run_id = run.run_id


def _on_input(ctx: Any) -> None:
    run = _run_of(getattr(ctx, "crew", None))
    if run is not None:
        run.recorder._begin(run, ctx)


def _on_post_step(ctx: Any) -> None:
    if getattr(ctx, "kind", None) != "task":
        return
    run = _run_of_task(getattr(ctx, "task", None))
    if run is not None and ctx.output is not None:
        run.recorder._task_output(run, ctx.task, ctx.output)


def _on_post_tool_call(ctx: Any) -> None:
    run = _run_of(getattr(ctx, "crew", None)) or _run_of_task(getattr(ctx, "task", None))
    if run is not None and run.recorder.tools:
        run.recorder._tool_call(run, ctx)


def _on_execution_end(ctx: Any) -> None:
    crew = getattr(ctx, "crew", None)
    run = _run_of(crew)
    if run is None:
        return
    with _lock:
        _runs.pop(id(crew), None)
    run.recorder._end(run, ctx)


_HOOKS = {
    InterceptionPoint.EXECUTION_START: _on_execution_start,
    InterceptionPoint.INPUT: _on_input,
    InterceptionPoint.POST_TOOL_CALL: _on_post_tool_call,
    InterceptionPoint.POST_STEP: _on_post_step,
    InterceptionPoint.EXECUTION_END: _on_execution_end,
}


def _install_hooks() -> None:
    """Register the recording hooks once (again, if something cleared CrewAI's hooks)."""
    with _lock:
        for point, hook in _HOOKS.items():
            if hook not in get_hooks(point):
                register(point, hook)


class CrewRecorder:
    """Records every run of one crew into one conversation while attached.

    Built by ``record``; ``detach()`` (or leaving its ``with`` block) stops it. Failed store
    writes are kept in ``errors`` and reported (see ``record``).
    """

    def __init__(
        self,
        crew: Crew,
        store: StoreLike,
        conversation_id: str,
        *,
        user_id: str | None = None,
        user_input_key: str = "user_message",
        tools: bool = False,
        continue_history: bool = False,
        history_last: int | None = 20,
        on_error: ErrorHandler | None = None,
        replicas: Sequence[str] | None = None,
    ) -> None:
        from crewai import Crew

        if not isinstance(crew, Crew):
            raise TypeError(f"crew must be a crewai Crew, got {type(crew).__name__}")
        self.store: ConversationStore
        self.store, self._owned = open_store(store, replicas=replicas)
        limits = self.store.limits
        self.conversation_id = check_id("conversation_id", conversation_id, limits)
        self.user_id = check_optional_id("user_id", user_id, limits)
        if not isinstance(user_input_key, str) or not user_input_key:
            raise TypeError(f"user_input_key must be a non-empty str, got {user_input_key!r}")
        self.user_input_key = user_input_key
        self.tools = bool(tools)
        self.continue_history = bool(continue_history)
        self.history_last = check_optional_int("history_last", history_last, minimum=1)
        self.on_error = on_error
        self.errors: list[BaseException] = []
        self.last_run_id: str | None = None
        self._crew = weakref.ref(crew)

    @property
    def crew(self) -> Crew | None:
        """The recorded crew (None once it was garbage-collected)."""
        return self._crew()

    def attach(self) -> Self:
        """Start recording the crew's runs (``record`` does this); replaces an earlier recorder
        of the same crew."""
        crew = self.crew
        if crew is None:
            raise RuntimeError("the recorded crew no longer exists")
        _install_hooks()
        key = id(crew)
        with _lock:
            _recorders[key] = self
        weakref.finalize(crew, _forget, key, weakref.ref(self))
        return self

    def detach(self) -> None:
        """Stop recording; a run in progress is not recorded further."""
        crew = self.crew
        if crew is None:
            return
        with _lock:
            if _recorders.get(id(crew)) is self:
                del _recorders[id(crew)]
            run = _runs.get(id(crew))
            if run is not None and run.recorder is self:
                del _runs[id(crew)]
        if self._owned:
            self.store.close()
            self._owned = False

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.detach()

    # -- what the hooks write ----------------------------------------------------------------

    def _write(self, what: str, messages: list[MessageInput]) -> None:
        try:
            self.store.append_messages(
                conversation_id=self.conversation_id, messages=messages, user_id=self.user_id
            )
        except Exception as exc:
            report(what, exc, self.errors, self.on_error)

    def _set_status(self, run: _Run, status: str, **extra: Any) -> None:
        crew = self.crew
        info: dict[str, Any] = {
            "crew": getattr(crew, "name", None),
            "crew_id": str(getattr(crew, "id", "")),
            "run_id": run.run_id,
            "status": status,
            **extra,
        }
        try:
            self.store.update_conversation(
                conversation_id=self.conversation_id,
                user_id=self.user_id,
                metadata={CONVERSATION_KEY: _jsonable(info)},
            )
        except Exception as exc:
            report("updating the conversation's run status", exc, self.errors, self.on_error)

    def _user_turn(self, inputs: Mapping[str, Any]) -> MessageInput | None:
        """The user's message of a kickoff: ``inputs[user_input_key]`` when given, else the
        inputs as ``key: value`` lines; None without inputs."""
        shown = {k: v for k, v in inputs.items() if k != CHAT_MESSAGES_KEY}
        if not shown:
            return None
        value = shown.get(self.user_input_key)
        if isinstance(value, str):
            content = value
        else:
            content = "\n".join(f"{k}: {v}" for k, v in shown.items())
        metadata = {"crewai": "user_input", "inputs": _jsonable(shown)}
        return {"role": "user", "content": content, "metadata": metadata}

    def _begin(self, run: _Run, ctx: Any) -> None:
        payload = ctx.payload
        inputs: Mapping[str, Any] = payload if isinstance(payload, Mapping) else {}
        if self.continue_history and CHAT_MESSAGES_KEY not in inputs:
            try:
                turns = history_messages(self.store, self.conversation_id, last=self.history_last)
            except Exception as exc:
                turns = []
                report("reading the conversation history", exc, self.errors, self.on_error)
            if turns:
                chat = json.dumps(turns, ensure_ascii=False)
                if isinstance(payload, dict):
                    payload[CHAT_MESSAGES_KEY] = chat
                else:
                    ctx.payload = {**inputs, CHAT_MESSAGES_KEY: chat}
        self._set_status(run, "running")
        user = self._user_turn(inputs)
        if user is not None:
            user["metadata"] = {**(user.get("metadata") or {}), "run_id": run.run_id}
            self._write("appending the user's turn", [user])

    def _task_output(self, run: _Run, task: Task, output: TaskOutput) -> None:
        self._write(
            "appending a task output",
            [task_output_message(output, task=task, run_id=run.run_id)],
        )

    def _tool_call(self, run: _Run, ctx: Any) -> None:
        call_id = f"call_{uuid.uuid4().hex[:24]}"
        name = str(ctx.tool_name)
        arguments = ctx.tool_input if isinstance(ctx.tool_input, Mapping) else {}
        agent = getattr(getattr(ctx, "agent", None), "role", None)
        task = getattr(ctx, "task", None)
        common: dict[str, Any] = {"agent": agent, "run_id": run.run_id}
        if task is not None:
            common["task"] = task.name or task.description
            common["task_id"] = str(task.id)
        call: MessageInput = {
            "role": "assistant",
            "content": "",
            "metadata": {
                "crewai": "tool_call",
                **common,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": name,
                            "arguments": json.dumps(_jsonable(dict(arguments)), ensure_ascii=False),
                        },
                    }
                ],
            },
        }
        result: MessageInput = {
            "role": "tool",
            "content": "" if ctx.tool_result is None else str(ctx.tool_result),
            "metadata": {
                "crewai": "tool_result",
                **common,
                "tool_call_id": call_id,
                "name": name,
            },
        }
        self._write("appending a tool call", [call, result])

    def _end(self, run: _Run, ctx: Any) -> None:
        if getattr(ctx, "status", "completed") == "failed":
            error = getattr(ctx, "error", None)
            text = f"{type(error).__name__}: {error}" if error is not None else "unknown error"
            note: MessageInput = {
                "role": "system",
                "content": f"The crew's run failed: {text}",
                "metadata": {
                    "crewai": "error",
                    "run_id": run.run_id,
                    "error_type": type(error).__name__ if error is not None else None,
                    "error": str(error) if error is not None else None,
                },
            }
            self._write("appending the run's error", [note])
            self._set_status(run, "failed", error=text)
            return
        usage = getattr(getattr(ctx, "output", None), "token_usage", None)
        extra = {"token_usage": usage.model_dump()} if usage is not None else {}
        self._set_status(run, "completed", **extra)


def _forget(key: int, recorder: weakref.ref[CrewRecorder]) -> None:
    with _lock:
        if _recorders.get(key) is recorder():
            _recorders.pop(key, None)
        run = _runs.get(key)
        if run is not None and run.recorder is recorder():
            _runs.pop(key, None)


def record(
    crew: Crew,
    store: StoreLike,
    conversation_id: str,
    *,
    user_id: str | None = None,
    user_input_key: str = "user_message",
    tools: bool = False,
    continue_history: bool = False,
    history_last: int | None = 20,
    on_error: ErrorHandler | None = None,
    replicas: Sequence[str] | None = None,
) -> CrewRecorder:
    """Make every run of ``crew`` land in the conversation ``conversation_id``.

    Each kickoff (``kickoff``, ``kickoff_async``, ``akickoff``) appends the user's turn
    (``inputs[user_input_key]``, or the inputs as ``key: value`` lines), then each task's
    output as an assistant message with the agent and the task in metadata; with
    ``tools=True`` each tool call and its result as well; a failed run ends with a
    ``system`` note naming the error. The conversation's ``"crewai"`` metadata holds the
    crew, the run id and its status (``running``, ``completed``, ``failed``).

    With ``continue_history=True`` the crew also sees the conversation so far (the newest
    ``history_last`` messages) through CrewAI's ``crew_chat_messages`` input.

    A failed store write is reported (``logging``, a ``RecordingFailedWarning``, ``on_error``,
    the recorder's ``errors``) and never reaches the crew. Returns the attached recorder;
    use it as a context manager or call ``detach()`` to stop. ``replicas`` (PostgreSQL
    standbys, as ``ConversationStore(url, replicas=...)``) go with a URL ``store``.
    """
    return CrewRecorder(
        crew,
        store,
        conversation_id,
        user_id=user_id,
        user_input_key=user_input_key,
        tools=tools,
        continue_history=continue_history,
        history_last=history_last,
        on_error=on_error,
        replicas=replicas,
    ).attach()
