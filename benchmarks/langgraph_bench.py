"""ConvostoreSaver / ConvostoreStore against LangGraph's own savers and stores, side by side.

Run: .venvs/langgraph/bin/python benchmarks/langgraph_bench.py [--turns 200] [--no-pg]

Three parts, each interleaved (every saver does turn i before any does turn i+1; in the
200-turn thread the sides take turns in a new random order each round, so none always runs
right after the same other one), so machine noise hits every side alike:
1. the research note's 200-turn thread: a 3-node graph (plan, act, reflect) whose ``messages``
   use ``add_messages``, one thread; time per invoke (wall, and this process's CPU) and bytes
   on disk; ours with the thread shown as a core conversation (the default) and without
   (``messages_key=None``), on PostgreSQL also with statements prepared on the server
   (``?prepare_threshold=5``); and LangGraph alone (a saver that keeps the last checkpoint
   as given): the framework's own time, under every saver's;
2. raw saver calls: chained ``put`` + ``put_writes`` + ``get_tuple``, and ``list(limit=10)``;
3. the store: ``put``, ``get`` and filtered ``search``.
PostgreSQL parts use 127.0.0.1:5432 (set CONVOSTORE_TEST_PG), each saver in its own schema.
"""

from __future__ import annotations

import argparse
import operator
import os
import random
import secrets
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any, TypedDict

from convostore_langgraph import ConvostoreSaver, ConvostoreStore
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import _messages_delta_reducer, add_messages
from langgraph.store.base import BaseStore
from langgraph.store.sqlite import SqliteStore
from report import markdown_report


def anchor_of(names: list[str], name: str) -> str:
    """The first side on the same database as ``name``: ratios compare like with like."""
    pg = ("Postgres", "postgresql", "pg,")
    on_pg = any(p in name for p in pg)
    return next(n for n in names if any(p in n for p in pg) == on_pg)


NO_VIEW = ", no conversation)"
PG_URL = os.environ.get("CONVOSTORE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: Annotated[int, operator.add]


class DeltaState(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)]
    turns: Annotated[int, operator.add]


def payload() -> str:
    return secrets.token_hex(90)  # 180 incompressible characters


def build(schema: type[Any]) -> StateGraph[Any]:
    def node(name: str) -> Callable[[Any], dict[str, Any]]:
        def run(state: Any) -> dict[str, Any]:
            out: dict[str, Any] = {"messages": [AIMessage(f"{name}: {payload()}")]}
            if name == "reflect":
                out["turns"] = 1
            return out

        return run

    graph = StateGraph(schema)
    for name in ("plan", "act", "reflect"):
        graph.add_node(name, node(name))
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "act")
    graph.add_edge("act", "reflect")
    graph.add_edge("reflect", END)
    return graph


# -- opening each side -------------------------------------------------------------------------


def sqlite_file(tmp: Path, name: str) -> Path:
    return tmp / f"{name}.db"


def file_bytes(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def pg_schema(stack: ExitStack) -> tuple[str, Callable[[], int]]:
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")

    def drop() -> None:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")

    def size() -> int:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute("VACUUM")
            row = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relkind = 'r'",
                [schema],
            ).fetchone()
            return int(row[0]) if row else 0

    stack.callback(drop)
    sep = "&" if "?" in PG_URL else "?"
    return f"{PG_URL}{sep}options=-csearch_path%3D{schema}", size


def pg_reachable() -> bool:
    try:
        import psycopg

        with psycopg.connect(PG_URL, connect_timeout=3):
            return True
    except Exception:
        return False


def official_sqlite_saver(stack: ExitStack, path: Path, *, normal: bool) -> SqliteSaver:
    conn = sqlite3.connect(path, check_same_thread=False)
    stack.callback(conn.close)
    saver = SqliteSaver(conn)
    saver.setup()
    if normal:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    return saver


def official_pg_saver(stack: ExitStack, url: str) -> BaseCheckpointSaver[Any]:
    from langgraph.checkpoint.postgres import PostgresSaver

    saver = stack.enter_context(PostgresSaver.from_conn_string(url))
    saver.setup()
    return saver


class LastCheckpoint(BaseCheckpointSaver[str]):
    """LangGraph's own cost, the floor under every saver: the last checkpoint kept as given
    (no storage, no copies, no history; correct only for this benchmark's one thread)."""

    last: CheckpointTuple | None = None

    def get_tuple(self, config: Any) -> CheckpointTuple | None:
        return self.last

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        conf = config["configurable"]
        saved = {"configurable": {**conf, "checkpoint_id": checkpoint["id"]}}
        self.last = CheckpointTuple(saved, checkpoint, metadata, config, [])
        return saved

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        return None


def ours(stack: ExitStack, url: str, **options: Any) -> ConvostoreSaver:
    saver = ConvostoreSaver(url, **options)
    stack.callback(saver.close)
    return saver


# -- 1. the 200-turn thread --------------------------------------------------------------------


def turns_bench(sides: dict[str, tuple[Any, type[Any], Callable[[], int]]], turns: int) -> None:
    graphs = {name: build(schema).compile(checkpointer=s) for name, (s, schema, _) in sides.items()}
    times: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}  # this process's CPU time
    # a side and its twin without the conversation run back to back (in either order), so
    # what the machine does meanwhile hits both alike; the pairs in a new order each round
    units: dict[str, list[tuple[str, Any]]] = {}
    for name, graph in graphs.items():
        units.setdefault(name.removesuffix(NO_VIEW).removesuffix(")"), []).append((name, graph))
    groups = list(units.values())
    shuffle = random.Random(7).shuffle
    for i in range(turns):
        shuffle(groups)  # no side always runs right after the same other side
        for group in groups:
            shuffle(group)
        for name, graph in (side for group in groups for side in group):
            cfg: Any = {"configurable": {"thread_id": "bench"}}
            start, start_cpu = time.perf_counter(), time.process_time()
            graph.invoke({"messages": [HumanMessage(f"turn {i}: {payload()}")], "turns": 0}, cfg)
            times[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    names = list(sides)
    print(
        f"\n{turns}-turn thread (4 messages per invoke); ratios against the first side on the same database"
    )
    print(
        f"{'side':<38}{'total s':>9}{'x anchor':>10}{'first20 ms':>12}{'last20 ms':>11}"
        f"{'last/first':>12}{'MB on disk':>12}{'x anchor':>10}"
    )
    sizes = {name: size() for name, (_, _, size) in sides.items()}
    for name, t in times.items():
        if name.endswith(NO_VIEW):
            continue
        base = anchor_of(names, name)
        first, last = statistics.median(t[:20]), statistics.median(t[-20:])
        print(
            f"{name:<38}{sum(t):>9.2f}{sum(t) / sum(times[base]):>10.2f}{first * 1e3:>12.1f}"
            f"{last * 1e3:>11.1f}{last / first:>12.2f}{sizes[name] / 1e6:>12.2f}"
            f"{sizes[name] / max(sizes[base], 1):>10.3f}"
        )
    print(
        "\nthe same turns by this process's CPU time (the database server's not included):"
        " less moved by other jobs than wall time, which runs later for the last 20 turns"
    )
    print(f"{'side':<38}{'first20 ms':>12}{'last20 ms':>11}{'last/first':>12}")
    for name, t in cpu.items():
        if name.endswith(NO_VIEW):
            continue
        first, last = statistics.median(t[:20]), statistics.median(t[-20:])
        print(f"{name:<38}{first * 1e3:>12.2f}{last * 1e3:>11.2f}{last / first:>12.2f}")
    print(
        "\nthe thread as a core conversation (written in each checkpoint's transaction):"
        " time with it over time without (messages_key=None), interleaved in this run"
    )
    print(
        f"{'side':<38}{'on s':>9}{'off s':>9}{'on/off':>9}{'median turn on/off':>20}"
        f"{'MB on':>9}{'MB off':>9}"
    )
    for name in names:
        off = name[:-1] + NO_VIEW if name.endswith(")") else None
        if off not in times:
            continue
        on_s, off_s = sum(times[name]), sum(times[off])
        paired = statistics.median(a / b for a, b in zip(times[name], times[off], strict=True))
        print(
            f"{name:<38}{on_s:>9.2f}{off_s:>9.2f}{on_s / off_s:>9.2f}{paired:>20.2f}"
            f"{sizes[name] / 1e6:>9.2f}{sizes[off] / 1e6:>9.2f}"
        )


# -- 2. raw saver calls ------------------------------------------------------------------------


def raw_bench(sides: dict[str, BaseCheckpointSaver[Any]], n: int) -> None:
    big = "x" * 2000
    state: dict[str, dict[str, Any]] = {}
    for name in sides:
        state[name] = {"cfg": {"configurable": {"thread_id": "raw", "checkpoint_ns": ""}}}
    put_t: dict[str, list[float]] = {k: [] for k in sides}
    get_t: dict[str, list[float]] = {k: [] for k in sides}
    list_t: dict[str, list[float]] = {k: [] for k in sides}
    for i in range(n):
        for name, saver in sides.items():
            cfg = state[name]["cfg"]
            ckpt = empty_checkpoint()
            ckpt["channel_values"] = {"big": f"{big}{i // 10}", "small": list(range(i % 7))}
            versions: dict[str, Any] = {"small": saver.get_next_version(None, None)}
            if i % 10 == 0:
                versions["big"] = saver.get_next_version(None, None)
            ckpt["channel_versions"] = {**state[name].get("versions", {}), **versions}
            state[name]["versions"] = ckpt["channel_versions"]
            start = time.perf_counter()
            cfg = saver.put(cfg, ckpt, {"source": "loop", "step": i}, versions)
            saver.put_writes(cfg, [("small", [i]), ("big", "w")], task_id=f"t{i}")
            saver.get_tuple(cfg)
            put_t[name].append(time.perf_counter() - start)
            state[name]["cfg"] = cfg
            if i % 10 == 0:
                start = time.perf_counter()
                saver.get_tuple({"configurable": {"thread_id": "raw", "checkpoint_ns": ""}})
                get_t[name].append(time.perf_counter() - start)
                start = time.perf_counter()
                list(saver.list({"configurable": {"thread_id": "raw"}}, limit=10))
                list_t[name].append(time.perf_counter() - start)
    names = list(sides)
    print(f"\nraw saver calls ({n} chained put + put_writes + get_tuple), medians")
    print(
        f"{'side':<38}{'put+writes+get ms':>19}{'ops/s':>9}{'speed x':>10}"
        f"{'get latest ms':>15}{'list(10) ms':>13}"
    )
    for name in sides:
        base = anchor_of(names, name)
        m = statistics.median(put_t[name])
        print(
            f"{name:<38}{m * 1e3:>19.3f}{1 / m:>9.0f}{statistics.median(put_t[base]) / m:>10.2f}"
            f"{statistics.median(get_t[name]) * 1e3:>15.3f}"
            f"{statistics.median(list_t[name]) * 1e3:>13.3f}"
        )


# -- 3. the store --------------------------------------------------------------------------------


def store_bench(sides: dict[str, BaseStore], n: int) -> None:
    put_t: dict[str, list[float]] = {k: [] for k in sides}
    get_t: dict[str, list[float]] = {k: [] for k in sides}
    search_t: dict[str, list[float]] = {k: [] for k in sides}
    for i in range(n):
        for name, store in sides.items():
            ns = ("users", f"u{i % 10}", "memories")
            value = {"content": payload(), "kind": "x" if i % 3 else "y", "score": i}
            start = time.perf_counter()
            store.put(ns, f"k{i}", value)
            put_t[name].append(time.perf_counter() - start)
            start = time.perf_counter()
            store.get(ns, f"k{i}")
            get_t[name].append(time.perf_counter() - start)
            if i % 10 == 0:
                start = time.perf_counter()
                store.search(("users", f"u{i % 10}"), filter={"kind": "y"}, limit=10)
                search_t[name].append(time.perf_counter() - start)
    names = list(sides)
    print(f"\nstore ({n} puts over 10 namespaces, a get after each, a filtered search every 10th)")
    print(f"{'side':<38}{'put ms':>9}{'speed x':>10}{'get ms':>9}{'search ms':>11}{'speed x':>10}")
    for name in sides:
        base = anchor_of(names, name)
        p, g, s = (statistics.median(t[name]) for t in (put_t, get_t, search_t))
        print(
            f"{name:<38}{p * 1e3:>9.3f}{statistics.median(put_t[base]) / p:>10.2f}{g * 1e3:>9.3f}"
            f"{s * 1e3:>11.3f}{statistics.median(search_t[base]) / s:>10.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--raw", type=int, default=1000)
    parser.add_argument("--store", type=int, default=1000)
    parser.add_argument("--no-pg", action="store_true")
    args = parser.parse_args()
    use_pg = not args.no_pg and pg_reachable()
    print(
        "'x anchor': time (or bytes) over the anchor's, lower is better; 'speed x': the anchor's"
        f" time over ours, higher is better. PostgreSQL: {use_pg}"
    )
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        d = Path(tmp)

        def sq(name: str) -> tuple[Path, str]:
            path = sqlite_file(d, name)
            return path, f"sqlite:///{path}"

        a, b, c, e = sq("official"), sq("official_delta"), sq("ours"), sq("ours_off")
        sides: dict[str, tuple[Any, type[Any], Callable[[], int]]] = {
            "SqliteSaver": (
                official_sqlite_saver(stack, a[0], normal=False),
                State,
                lambda: file_bytes(a[0]),
            ),
            "SqliteSaver + DeltaChannel": (
                official_sqlite_saver(stack, b[0], normal=False),
                DeltaState,
                lambda: file_bytes(b[0]),
            ),
            "ConvostoreSaver (sqlite)": (ours(stack, c[1]), State, lambda: file_bytes(c[0])),
            "ConvostoreSaver (sqlite, no conversation)": (
                ours(stack, e[1], messages_key=None),
                State,
                lambda: file_bytes(e[0]),
            ),
            "InMemorySaver (floor, no storage)": (InMemorySaver(), State, lambda: 0),
            "LangGraph alone (keeps the last checkpoint)": (LastCheckpoint(), State, lambda: 0),
        }
        if use_pg:
            pa, pa_size = pg_schema(stack)
            pb, pb_size = pg_schema(stack)
            pc, pc_size = pg_schema(stack)
            pd, pd_size = pg_schema(stack)
            pe, pe_size = pg_schema(stack)
            sides["PostgresSaver"] = (official_pg_saver(stack, pa), State, pa_size)
            sides["PostgresSaver + DeltaChannel"] = (
                official_pg_saver(stack, pb),
                DeltaState,
                pb_size,
            )
            sides["ConvostoreSaver (postgresql)"] = (ours(stack, pc), State, pc_size)
            sides["ConvostoreSaver (postgresql, no conversation)"] = (
                ours(stack, pe, messages_key=None),
                State,
                pe_size,
            )
            sides["ConvostoreSaver (pg, durable_commits=False)"] = (
                ours(stack, pd, durable_commits=False),
                State,
                pd_size,
            )
            # statements prepared on the server, as PostgresSaver's are (prepare_threshold=0)
            pf, pf_size = pg_schema(stack)
            pg, pg_size = pg_schema(stack)
            sides["ConvostoreSaver (pg, prepared statements)"] = (
                ours(stack, f"{pf}&prepare_threshold=5"),
                State,
                pf_size,
            )
            sides["ConvostoreSaver (pg, prepared statements, no conversation)"] = (
                ours(stack, f"{pg}&prepare_threshold=5", messages_key=None),
                State,
                pg_size,
            )
        turns_bench(sides, args.turns)

        r1, r2 = sq("raw_official"), sq("raw_ours")
        raw: dict[str, BaseCheckpointSaver[Any]] = {
            "SqliteSaver (WAL, NORMAL)": official_sqlite_saver(stack, r1[0], normal=True),
            "ConvostoreSaver (sqlite)": ours(stack, r2[1]),
        }
        if use_pg:
            raw["PostgresSaver"] = official_pg_saver(stack, pg_schema(stack)[0])
            raw["ConvostoreSaver (postgresql)"] = ours(stack, pg_schema(stack)[0])
            raw["ConvostoreSaver (pg, durable_commits=False)"] = ours(
                stack, pg_schema(stack)[0], durable_commits=False
            )
        raw_bench(raw, args.raw)

        s1, s2 = sq("store_official"), sq("store_ours")
        conn = sqlite3.connect(s1[0], check_same_thread=False, isolation_level=None)
        stack.callback(conn.close)
        official_store = SqliteStore(conn)
        official_store.setup()
        stores: dict[str, BaseStore] = {
            "SqliteStore": official_store,
            "ConvostoreStore (sqlite)": ConvostoreStore(s2[1]),
        }
        if use_pg:
            from langgraph.store.postgres import PostgresStore

            pg_store = stack.enter_context(PostgresStore.from_conn_string(pg_schema(stack)[0]))
            pg_store.setup()
            stores["PostgresStore"] = pg_store
            stores["ConvostoreStore (postgresql)"] = ConvostoreStore(pg_schema(stack)[0])
        store_bench(stores, args.store)


if __name__ == "__main__":
    packages = [
        "convostore-langgraph",
        "langgraph",
        "langgraph-checkpoint-sqlite",
        "langgraph-checkpoint-postgres",
    ]
    with markdown_report("convostore-langgraph benchmarks", packages, preformatted=True):
        main()
