"""The crews the tests run: two agents, two tasks, a tool, a scripted model."""

from __future__ import annotations

from typing import Any

from crewai import Agent, Crew, Process, Task
from crewai.tools import tool
from scripted import ScriptedLLM, act, final, tool_call


@tool("lookup_fact")
def lookup_fact(topic: str) -> str:
    """Look up a fact about a topic."""
    return f"FACT[{topic}]: SQLite is the default, PostgreSQL scales out."


RESEARCHER = "Researcher"
WRITER = "Writer"


def react_script(n: int = 1) -> dict[str, list[Any]]:
    """Answers for ``n`` kickoffs on the ReAct path: the researcher uses the tool once."""
    return {
        RESEARCHER: [
            a
            for i in range(n)
            for a in (act("lookup_fact", topic="storage"), final(f"Findings {i}: SQLite first."))
        ],
        WRITER: [final(f"Summary {i}: start on SQLite.") for i in range(n)],
    }


def native_script(n: int = 1) -> dict[str, list[Any]]:
    """Answers for ``n`` kickoffs on the native function-calling path."""
    return {
        RESEARCHER: [
            a
            for i in range(n)
            for a in (tool_call(f"call_{i}", "lookup_fact", topic="storage"), f"Findings {i}.")
        ],
        WRITER: [f"Summary {i}." for i in range(n)],
    }


def make_crew(
    llm: ScriptedLLM,
    *,
    name: str = "research crew",
    description: str = "Research this question: {user_message}",
    **crew_options: Any,
) -> Crew:
    researcher = Agent(
        role=RESEARCHER,
        goal="Find facts",
        backstory="A careful researcher.",
        llm=llm,
        tools=[lookup_fact],
        max_retry_limit=0,
        allow_delegation=False,
    )
    writer = Agent(
        role=WRITER,
        goal="Write answers",
        backstory="A concise writer.",
        llm=llm,
        max_retry_limit=0,
        allow_delegation=False,
    )
    research = Task(
        name="research",
        description=description,
        expected_output="Findings.",
        agent=researcher,
    )
    write = Task(
        name="write",
        description="Answer the user from the findings.",
        expected_output="A short answer.",
        agent=writer,
    )
    return Crew(
        name=name,
        agents=[researcher, writer],
        tasks=[research, write],
        process=Process.sequential,
        **crew_options,
    )
