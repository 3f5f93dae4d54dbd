"""The metadata keys convostore reads and writes by convention (the reference's and Mastra's):
a conversation's ``title``, its running ``summary`` with ``summarizedUntil`` (the id of the last
message folded in), the ``memoryStoreIds`` attached to it, ``forkedFrom`` on a fork, and
``managedBy`` on a conversation whose messages a component keeps (``{"component": name, ...}``:
the component's name plus keys of its own; see ``ConversationStore.as_component``)."""

from __future__ import annotations

TITLE_KEY = "title"
SUMMARY_KEY = "summary"
UNTIL_KEY = "summarizedUntil"
MEMORY_STORES_KEY = "memoryStoreIds"
FORKED_FROM_KEY = "forkedFrom"
MANAGED_BY_KEY = "managedBy"
