"""Two turns of an OpenAI Agents SDK agent whose memory is a convostore conversation.

    .venvs/openai/bin/python examples/openai_two_turns.py

Offline: a scripted model stands in for OpenAI (swap in a real model name to use the API).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from convostore import AsyncConversationStore


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny, 22C in {city}"


async def main(url: str) -> None:
    set_tracing_disabled(True)
    model = ScriptedModel(
        [
            [function_call("get_weather", {"city": "Paris"}, call_id="call_1")],
            [assistant_message("It is sunny in Paris (22C).")],
            [assistant_message("You asked about Paris.")],
        ]
    )
    agent = Agent(name="assistant", model=model, tools=[get_weather])

    # url: "sqlite:///chat.db", "postgresql://..." or "memory://"
    async with AsyncConversationStore(url) as store:
        session = store.openai_session("chat-42", max_items=50)
        first = await Runner.run(agent, "What's the weather in Paris?", session=session)
        second = await Runner.run(agent, "Which city did I ask about?", session=session)
        print(first.final_output)
        print(second.final_output)

        # The session is a conversation: page it, list it, convert it for another API.
        page = await store.get_messages(conversation_id="chat-42", limit=100)
        print([m.role for m in page])
        # ['user', 'assistant', 'tool', 'assistant', 'user', 'assistant']
        print(store.to_anthropic_messages(page)[1])
        # {'role': 'assistant', 'content': [{'type': 'tool_use', 'id': 'call_1',
        #   'name': 'get_weather', 'input': {'city': 'Paris'}}]}

    assert model.calls[2].input[0] == {"role": "user", "content": "What's the weather in Paris?"}


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(f"sqlite:///{Path(tmp) / 'chat.db'}"))
