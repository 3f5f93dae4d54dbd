"""Instructions a fixed workload of store calls takes, counted by valgrind's callgrind: a cost
that the machine's load does not move (wall times do, on a shared machine), for judging a
change that should cost nothing, such as a change of structure. Each source tree is counted
twice, with the workload and without it (the imports and the open), and the difference printed:

    .venvs/core/bin/python benchmarks/instructions.py --url sqlite \\
        --src packages/core/src --src ../before/packages/core/src

``--src`` is the core's source folder of a checkout (``git worktree add ../before <commit>``
makes one), or several folders joined with ``:``; they are imported ahead of the installed
packages. ``--workload core`` (the default): 300 appends to 10 conversations of one user, 600
pages of 20 (ascending and descending), 150 listings of that user's conversations.
``--workload langgraph`` (run with .venvs/langgraph's Python; ``--src`` names the adapter's and
the core's source folders): a graph of one node answering each turn, 300 turns on 10 threads
with the store's saver. ``--workload server`` (.venvs/server's Python; the server's and the
core's source folders): 300 appends, 600 pages and 150 listings through the ASGI app with a
user's token, in process. ``--url sqlite`` is a new SQLite file; a PostgreSQL URL counts the
client's instructions only (the server is another process). Needs valgrind.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

CALLS = 300


def workload(url: str, n: int) -> None:
    from convostore import ConversationStore

    if url == "sqlite":
        url = f"sqlite:///{tempfile.mkdtemp()}/instructions.db"
    tag = uuid.uuid4().hex[:8]
    with ConversationStore(url) as store:
        for i in range(n):
            store.append_message(
                conversation_id=f"c{tag}{i % 10}",
                role="user",
                content=f"hello there number {i} " * 5,
                user_id=f"u{tag}",
            )
        for i in range(n):
            for order in ("asc", "desc"):
                store.get_messages(conversation_id=f"c{tag}{i % 10}", limit=20, order=order)
        for _ in range(n // 2):
            store.list_conversations(user_id=f"u{tag}", limit=20)


def langgraph_workload(url: str, n: int) -> None:
    from typing import Annotated, Any, TypedDict

    from convostore import ConversationStore
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages

    # The functional form: this module's annotations are strings, which LangGraph would have
    # to resolve in this function's scope.
    State = TypedDict("State", {"messages": Annotated[list[AnyMessage], add_messages]})  # noqa: UP013

    def answer(state: Any) -> dict[str, list[AnyMessage]]:
        return {"messages": [AIMessage(f"answer {len(state['messages'])} " * 5)]}

    if url == "sqlite":
        url = f"sqlite:///{tempfile.mkdtemp()}/instructions.db"
    tag = uuid.uuid4().hex[:8]
    with ConversationStore(url) as store:
        builder = StateGraph(State)
        builder.add_node("answer", answer)
        builder.add_edge(START, "answer")
        graph = builder.compile(checkpointer=store.langgraph_checkpointer)
        for i in range(n):
            config = {"configurable": {"thread_id": f"t{tag}{i % 10}"}}
            graph.invoke({"messages": [HumanMessage(f"question {i} " * 5)]}, config)


def server_workload(url: str, n: int) -> None:
    from convostore_server import create_app
    from convostore_server.auth import Principal
    from starlette.testclient import TestClient

    if url == "sqlite":
        url = f"sqlite:///{tempfile.mkdtemp()}/instructions.db"
    tag = uuid.uuid4().hex[:8]
    app = create_app(url, auth=lambda request: Principal(user_id=f"u{tag}"))
    with TestClient(app) as client:
        for i in range(n):
            client.post(
                f"/conversations/c{tag}{i % 10}/messages",
                json={"role": "user", "content": f"hello there number {i} " * 5},
            ).raise_for_status()
        for i in range(n):
            for order in ("asc", "desc"):
                client.get(
                    f"/conversations/c{tag}{i % 10}/messages", params={"limit": 20, "order": order}
                ).raise_for_status()
        for _ in range(n // 2):
            client.get("/conversations", params={"limit": 20}).raise_for_status()


WORKLOADS = {"core": workload, "langgraph": langgraph_workload, "server": server_workload}


def callgrind(script: str, args: list[str], src: Path) -> int:
    """Instructions of ``python script *args`` under callgrind, with ``src`` imported first."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        run = subprocess.run(
            [
                *("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"),
                *(sys.executable, script, *args),
            ],
            env={**os.environ, "PYTHONPATH": paths(src)},
            capture_output=True,
            text=True,
            check=True,
        )
    found = re.search(r"Collected : (\d+)", run.stderr)
    assert found, run.stderr[-2000:]
    return int(found.group(1))


def paths(src: Path) -> str:
    """``src`` (folders joined with ``:``) as a PYTHONPATH of absolute folders."""
    return os.pathsep.join(str(Path(part).resolve()) for part in str(src).split(os.pathsep))


def count(src: Path, url: str, n: int, kind: str = "core") -> int:
    """Instructions of this script's workload of ``n`` calls, with ``src`` imported."""
    return callgrind(__file__, ["--run", str(n), "--url", url, "--workload", kind], src)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, action="append", default=[])
    parser.add_argument("--url", default="sqlite")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="core")
    parser.add_argument("--run", type=int, help=argparse.SUPPRESS)  # inside valgrind
    args = parser.parse_args()
    if args.run is not None:
        WORKLOADS[args.workload](args.url, args.run)
        return
    first = None
    for src in args.src or [Path("packages/core/src")]:
        took = count(src, args.url, CALLS, args.workload) - count(src, args.url, 0, args.workload)
        first = first or took
        print(f"{src}: {took / 1e6:,.1f} M instructions ({took / first:.4f}× the first)")


if __name__ == "__main__":
    main()
