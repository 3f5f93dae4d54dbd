"""convostore-crewai in one screen: record a crew's runs into a conversation, continue it,
and give the crew a memory with no vector database. Offline: a scripted model answers.

    .venvs/crewai/bin/python examples/crewai_quickstart.py
"""

import logging
import os

for key in ("CREWAI_DISABLE_TELEMETRY", "CREWAI_DISABLE_TRACKING", "OTEL_SDK_DISABLED"):
    os.environ.setdefault(key, "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from typing import Any  # noqa: E402

from convostore import ConversationStore  # noqa: E402
from convostore_crewai import (  # noqa: E402
    TaskCallback,
    add_task_callback,
    agent_messages,
    convostore_memory,
    record,
)
from crewai import Agent, BaseLLM, Crew, Task, TaskOutput  # noqa: E402

logging.getLogger("crewai.llms.base_llm").setLevel(logging.ERROR)  # token-count notes


class ScriptedLLM(BaseLLM):
    """Stands in for a real model: answers from what it is shown, never goes online."""

    def supports_function_calling(self) -> bool:
        return False

    def call(self, messages: Any, *args: Any, from_agent: Any = None, **kwargs: Any) -> str:
        prompt = messages if isinstance(messages, str) else str(messages)
        if from_agent is None:  # CrewAI's memory asks for JSON
            if "extract discrete" in prompt:
                return '{"memories": ["The team runs billing on PostgreSQL."]}'
            return (
                '{"suggested_scope": "/decisions", "categories": ["db"], "importance": 0.8,'
                ' "keywords": [], "suggested_scopes": [], "complexity": "simple",'
                ' "recall_queries": ["billing database"]}'
            )
        if from_agent.role == "Researcher":
            if "Relevant memories" in prompt:  # what CrewAI's memory recalled for the task
                return "Thought: done\nFinal Answer: From memory: billing runs on PostgreSQL."
            return "Thought: done\nFinal Answer: SQLite first, PostgreSQL when it grows."
        if from_agent.role == "Advisor":
            return "Thought: done\nFinal Answer: We start on SQLite and move to PostgreSQL later."
        if "conversation history" in prompt:  # what continue_history shows every task
            return "Thought: done\nFinal Answer: As we discussed: switch when you need replicas."
        return "Thought: done\nFinal Answer: Start with SQLite."


llm = ScriptedLLM(model="scripted")


def new_crew() -> Crew:
    researcher = Agent(role="Researcher", goal="Find facts", backstory="Careful.", llm=llm)
    writer = Agent(role="Writer", goal="Answer briefly", backstory="Concise.", llm=llm)
    return Crew(
        agents=[researcher, writer],
        tasks=[
            Task(
                description="Research: {user_message}", expected_output="Facts.", agent=researcher
            ),
            Task(description="Answer the user.", expected_output="One line.", agent=writer),
        ],
    )


def previous_callback(output: TaskOutput) -> None:
    print("task callback:", output.raw)


crew = new_crew()

with ConversationStore() as store:  # sqlite:///convostore.db, or $CONVOSTORE_URL
    for old in ("crew-demo", "one-task", "all-tasks"):  # so the demo can run again
        store.delete_conversation(conversation_id=old)

    # Recording: every run of this crew lands in the conversation; with continue_history
    # the next run sees the conversation so far.
    with record(crew, store, "crew-demo", user_id="u_123", continue_history=True):
        crew.kickoff(inputs={"user_message": "Which database should we start with?"})
        result = crew.kickoff(inputs={"user_message": "When do we switch?"})
    print("crew answered:", result.raw)
    for m in store.get_history(conversation_id="crew-demo"):
        agent = (m.metadata or {}).get("agent") or "user"
        print(f"  {m.role:9} {agent:10} {m.content}")
    meta = store.get_conversation(conversation_id="crew-demo")
    print("last run:", meta.metadata["crewai"]["status"] if meta and meta.metadata else None)

    # Task callbacks, for code that already wires them: each stores the task's output, then
    # calls the callback that was there before.
    callback_crew = new_crew()
    callback_crew.tasks[1].callback = TaskCallback(store, "one-task", then=previous_callback)
    add_task_callback(callback_crew, store, "all-tasks", user_id="u_123")
    callback_crew.kickoff(inputs={"user_message": "Which database?"})
    print(
        "stored by the callbacks:",
        len(store.get_history(conversation_id="one-task")),
        "and",
        len(store.get_history(conversation_id="all-tasks")),
    )

    # Continuing with a single agent: the stored conversation, then the new question.
    advisor = Agent(role="Advisor", goal="Advise", backstory="Experienced.", llm=llm)
    messages = agent_messages(store, "crew-demo", user_message="Summarize our decision.")
    print("advisor sees", len(messages), "messages; last:", messages[-1]["content"])
    print("advisor:", advisor.kickoff(messages=messages).raw)

    # Memory without a vector database: keyword search in the same database.
    memory = convostore_memory(store, llm=llm)
    memory.reset()
    memory.remember(
        "The team runs billing on PostgreSQL.",
        scope="/decisions",
        categories=["db"],
        importance=0.9,
    )
    hits = memory.recall("billing database", depth="shallow")
    print("memory recalls:", [m.record.content for m in hits])
    memory_crew = Crew(agents=crew.agents, tasks=crew.tasks, memory=memory)
    output = memory_crew.kickoff(inputs={"user_message": "Which database runs billing?"})
    print("researcher, with memory:", output.tasks_output[0].raw)
