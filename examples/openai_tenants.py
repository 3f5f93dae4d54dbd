"""One session object, a conversation per tenant: the tenant comes from the run context.

.venvs/openai/bin/python examples/openai_tenants.py
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from agents import Agent, Runner, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message
from convostore import AsyncConversationStore
from convostore_openai import ConvostoreSession


@dataclass
class RequestContext:
    tenant_id: str


async def main() -> None:
    set_tracing_disabled(True)
    model = ScriptedModel([[assistant_message(f"reply {n}")] for n in range(3)])
    agent = Agent[RequestContext](name="support", model=model)

    async with AsyncConversationStore("memory://") as store:
        session = ConvostoreSession(
            "support-chat", store=store, tenant=lambda wrapper: wrapper.context.tenant_id
        )
        await Runner.run(agent, "Hi from Acme", session=session, context=RequestContext("acme"))
        await Runner.run(agent, "Hi from Globex", session=session, context=RequestContext("globex"))
        await Runner.run(agent, "Acme again", session=session, context=RequestContext("acme"))

        # Acme's third turn saw Acme's history only.
        print([item.get("content") for item in model.calls[2].input][::2])
        # ['Hi from Acme', 'Acme again']
        # Each tenant owns its conversation "<tenant>:<session_id>".
        listed = await store.list_conversations(user_id="acme")
        print([(c.conversation_id, c.message_count) for c in listed.items])
        # [('acme:support-chat', 4)]


if __name__ == "__main__":
    asyncio.run(main())
