"""Run by the multi-process edit test: COUNT edits of /shared.md through a
ConvostoreMemoryBackend, each adding its own line before END; prints the lines it added."""

from __future__ import annotations

import json
import sys

from convostore import ConversationStore
from convostore_langgraph import ConvostoreMemoryBackend


def main() -> None:
    url, sid, name, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    added, failed = [], []
    with ConversationStore(url) as db:
        backend = ConvostoreMemoryBackend(db, sid, max_attempts=3)
        print("ready", flush=True)
        sys.stdin.readline()  # every worker starts editing at once
        for i in range(count):
            line = f"- {name} {i}"
            result = backend.edit("/shared.md", "END", f"{line}\nEND")
            (failed if result.error else added).append(line)
    print(json.dumps({"added": added, "failed": failed}))


if __name__ == "__main__":
    main()
