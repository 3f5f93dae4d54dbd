"""A memory-store writer process for the concurrency tests.

``race URL SID EID NAME``: for each line ``VERSION`` on stdin, update the entry from that
version and print ``ok <new version>`` or ``conflict <current version>``.
``churn URL SID NAME COUNT``: create, update and delete entries of its own; print ``done``.
"""

from __future__ import annotations

import sys

from convostore import ConversationStore, MemoryVersionConflictError


def race(store: ConversationStore, sid: str, eid: str, name: str) -> None:
    print("ready", flush=True)
    for n, line in enumerate(sys.stdin):
        try:
            entry = store.update_memory(sid, eid, f"{name} {n}", int(line))
        except MemoryVersionConflictError as exc:
            print(f"conflict {exc.current_version}", flush=True)
        else:
            print(f"ok {entry.version}", flush=True)


def churn(store: ConversationStore, sid: str, name: str, count: int) -> None:
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(count):
        entry = store.create_memory(sid, f"{name}/{i}.md", "x" * (i % 7))
        entry = store.update_memory(sid, entry.entry_id, "é" * (i % 5), 1)
        if i % 3 == 0:
            store.delete_memory(sid, entry.entry_id)
        elif i % 3 == 1:
            store.update_memory(sid, entry.entry_id, None, 2, path=f"{name}/moved/{i}.md")
    print("done", flush=True)


def main() -> None:
    mode, url = sys.argv[1], sys.argv[2]
    with ConversationStore(url) as store:
        if mode == "race":
            race(store, sys.argv[3], sys.argv[4], sys.argv[5])
        else:
            churn(store, sys.argv[3], sys.argv[4], int(sys.argv[5]))


if __name__ == "__main__":
    main()
