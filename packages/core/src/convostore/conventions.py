"""The metadata keys convostore reads and writes by convention (the reference's and Mastra's):
a conversation's ``title``, its running ``summary`` with ``summarizedUntil`` (the id of the last
message folded in), the ``memoryStoreIds`` attached to it, and ``forkedFrom`` on a fork."""

from __future__ import annotations

TITLE_KEY = "title"
SUMMARY_KEY = "summary"
UNTIL_KEY = "summarizedUntil"
MEMORY_STORES_KEY = "memoryStoreIds"
FORKED_FROM_KEY = "forkedFrom"
