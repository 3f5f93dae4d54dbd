"""A writer process for the multi-process test: appends batches to one shared session."""

from __future__ import annotations

import sys

import anyio
from convostore_claude import ConvostoreSessionStore

KEY = {"project_key": "proj", "session_id": "shared"}


async def main() -> None:
    url, name, batches = sys.argv[1], sys.argv[2], int(sys.argv[3])
    async with ConvostoreSessionStore(url) as store:
        await store.append(KEY, [{"type": "user", "uuid": "common", "n": 0}])  # type: ignore[arg-type]
        print("ready", flush=True)
        sys.stdin.readline()  # start together
        for i in range(batches):
            batch = [
                {"type": "user", "uuid": f"{name}-{i}-{j}", "customTitle": f"{name} {i}"}
                for j in range(5)
            ]
            batch.append(
                {"type": "last-prompt", "lastPrompt": f"{name} {i}", "sessionId": "shared"}
            )
            batch.append({"type": "user", "uuid": "common", "n": 0})  # every writer sends it
            await store.append(KEY, batch)  # type: ignore[arg-type]
        print("done", flush=True)


if __name__ == "__main__":
    anyio.run(main)
