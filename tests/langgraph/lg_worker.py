"""Run by the multi-process tests: turns of the scripted graph on one thread of a database."""

from __future__ import annotations

import json
import sys
from typing import Any

from convostore_langgraph import ConvostoreSaver
from langgraph.types import Command
from lg_graphs import three_node_graph, user


def main() -> None:
    url, thread, action, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with ConvostoreSaver(url) as saver:
        graph = three_node_graph().compile(checkpointer=saver)
        cfg: Any = {"configurable": {"thread_id": thread}}
        if action == "turns":
            for i in range(count):
                graph.invoke(user(f"{thread} turn {i}", i), cfg)
        elif action == "ask":
            graph.invoke(user("please ask", 0), cfg)
        else:
            graph.invoke(Command(resume=action), cfg)
        state = graph.get_state(cfg)
        print(json.dumps({"turns": state.values["turns"], "next": list(state.next)}))


if __name__ == "__main__":
    main()
