"""A prompt section from the memory stores attached to a conversation (``memory_context``).

In the spirit of ``prompt_context`` for summaries: the store assembles text, it never calls a
model. The section lists each attached store's paths and includes the content of its small
entries, within a byte budget, so an agent starts its session with what it remembered.
"""

from __future__ import annotations

from html import escape

from ..async_store import AsyncConversationStore
from ..models import MemoryEntry, MemoryStore
from ..store import ConversationStore
from ..threads import run_in_thread
from ..validation import check_int

_PAGE = 100


def _store_section(
    store: ConversationStore,
    memory: MemoryStore,
    *,
    user_id: str | None,
    max_entry_bytes: int,
    budget: list[int],
    max_paths: int,
) -> str:
    listed: list[MemoryEntry] = []
    cursor = None
    while len(listed) < max_paths:
        page = store.list_memories(
            memory.memory_store_id,
            limit=min(_PAGE, max_paths - len(listed)),
            after=cursor,
            user_id=user_id,
        )
        listed += page.items
        cursor = page.next_cursor
        if cursor is None:
            break
    lines = [f'<memory_store id="{escape(memory.memory_store_id)}" name="{escape(memory.name)}">']
    if memory.description:
        lines.append(escape(memory.description, quote=False))
    files: list[str] = []
    for entry in listed:
        note = ""
        if entry.redacted:
            note = ", redacted"
        elif entry.size > max_entry_bytes or entry.size > budget[0]:
            note = ", not shown"
        else:
            full = store.get_memory(memory.memory_store_id, entry.entry_id, user_id=user_id)
            if full is not None and full.content is not None:
                budget[0] -= full.size
                files.append(f'<file path="{escape(full.path)}">\n{full.content}\n</file>')
        lines.append(f"- {entry.path} ({entry.size} bytes{note})")
    if cursor is not None:
        lines.append(f"- ... {memory.entry_count - len(listed)} more entries not listed")
    return "\n".join([*lines, *files, "</memory_store>"])


def memory_context(
    store: ConversationStore,
    *,
    conversation_id: str,
    user_id: str | None = None,
    max_entry_bytes: int = 4096,
    max_total_bytes: int = 32768,
    max_paths: int = 200,
) -> str:
    """A prompt section (``<memory_stores>...</memory_stores>``) for the memory stores attached
    to the conversation: each store's paths (at most ``max_paths``), and the content of each
    entry of at most ``max_entry_bytes`` while the contents shown stay within
    ``max_total_bytes``. ``""`` when no store is attached; stores deleted since are skipped."""
    check_int("max_entry_bytes", max_entry_bytes)
    check_int("max_total_bytes", max_total_bytes)
    check_int("max_paths", max_paths, minimum=1)
    sections: list[str] = []
    budget = [max_total_bytes]
    for sid in store.attached_memory_stores(conversation_id, user_id=user_id):
        memory = store.get_memory_store(sid, user_id=user_id)
        if memory is None:
            continue
        sections.append(
            _store_section(
                store,
                memory,
                user_id=user_id,
                max_entry_bytes=max_entry_bytes,
                budget=budget,
                max_paths=max_paths,
            )
        )
    if not sections:
        return ""
    return "\n".join(["<memory_stores>", *sections, "</memory_stores>"])


async def amemory_context(
    store: AsyncConversationStore,
    *,
    conversation_id: str,
    user_id: str | None = None,
    max_entry_bytes: int = 4096,
    max_total_bytes: int = 32768,
    max_paths: int = 200,
) -> str:
    """``memory_context`` for an ``AsyncConversationStore``."""
    return await run_in_thread(
        lambda: memory_context(
            store.sync,
            conversation_id=conversation_id,
            user_id=user_id,
            max_entry_bytes=max_entry_bytes,
            max_total_bytes=max_total_bytes,
            max_paths=max_paths,
        )
    )
