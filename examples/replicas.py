"""Read replicas: writes on the primary, reads on its streaming standbys, and every read still
sees the writes made before it.

    CONVOSTORE_URL=postgresql://primary/app CONVOSTORE_REPLICAS="postgresql://standby/app" \\
        python examples/replicas.py
"""

import logging
import os

from convostore import ConversationStore

logging.basicConfig(level=logging.WARNING)  # a standby leaving or rejoining the reads is logged

primary = os.environ["CONVOSTORE_URL"]
replicas = os.environ["CONVOSTORE_REPLICAS"].split()

with ConversationStore(primary, replicas=replicas, max_replica_lag=2.0) as store:
    store.delete_conversation(conversation_id="support-42")  # so the demo can run again
    store.append_message(
        conversation_id="support-42", role="user", content="Where is my order?", user_id="u_1"
    )
    # Read right after the write: a standby answers once it has replayed it (it is asked in the
    # read's own round trip), else the read waits up to max_replica_lag, then asks the primary.
    history = store.get_history(conversation_id="support-42", user_id="u_1")
    print(history[-1].content)  # Where is my order?

    # Another process (a second server, a worker) reads these writes after read_after(position).
    position = store.replica_position()  # "0/3000148": the primary's WAL position
    print("position to hand on:", position)
