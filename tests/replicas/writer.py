"""Another process: appends to c1 through its own store with the standby as a replica, and
prints the position its reads follow (what a server hands back in a response header)."""

from __future__ import annotations

import sys

from convostore import ConversationStore

with ConversationStore(sys.argv[1], replicas=[]) as store:
    store.append_message(conversation_id="c1", role="user", content="from another process")
    print(store.replica_position())
