"""A writer process for the concurrency and crash tests: prints each acknowledged append."""

from __future__ import annotations

import sys

from convostore import ConversationStore, Limits, MemoryQuotaExceededError


def main() -> None:
    url, name, count, quota = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    limits = Limits(max_messages_per_conversation=quota)
    with ConversationStore(url, limits=limits) as store:
        print("ready", flush=True)
        sys.stdin.readline()  # start together
        i = 0
        while count < 0 or i < count:
            try:
                mid = store.append_message(
                    conversation_id="shared", role="user", content={"writer": name, "i": i}
                )
            except MemoryQuotaExceededError:
                print("quota", flush=True)
            else:
                print(mid, flush=True)
            i += 1


if __name__ == "__main__":
    main()
