"""A process that writes and reads back through a store with a replica: prints how many of
its reads missed one of its own writes, and how many the standby answered."""

from __future__ import annotations

import sys

from convostore import ConversationStore
from convostore.backends.replicas import ReplicatedBackend


def write_and_read(store: ConversationStore, name: str, count: int) -> int:
    """Append ``count`` messages to conversation ``name``, reading the history after each:
    the number of reads that did not see every message written before them."""
    stale = 0
    for i in range(count):
        store.append_message(conversation_id=name, role="user", content=str(i), user_id=name)
        history = store.get_history(conversation_id=name, user_id=name)
        listed = store.list_conversations(user_id=name).items
        if [m.content for m in history] != [str(n) for n in range(i + 1)] or listed[
            0
        ].message_count != i + 1:
            stale += 1
    return stale


def main() -> None:
    primary, replica, name, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with ConversationStore(primary, replicas=[replica], max_replica_lag=0.5) as store:
        stale = write_and_read(store, name, count)
        backend = store.backend
        assert isinstance(backend, ReplicatedBackend)
        on_standby = sum(n for k, n in backend.routed.items() if k != "primary")
        print(stale, on_standby, flush=True)


if __name__ == "__main__":
    main()
