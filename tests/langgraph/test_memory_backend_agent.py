"""A real DeepAgent (create_deep_agent, a scripted model calling its file tools) whose
/memories/ route is a ConvostoreMemoryBackend: memory written, edited and read across runs and
processes, the whole history in the memory store's versions, concurrent edits that never lose a
change, and a redacted version unreadable through every path."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from convostore import ConversationStore
from convostore_langgraph import ConvostoreMemoryBackend
from langchain_core.messages import HumanMessage

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "langgraph_memory_backend.py"
WORKER = str(Path(__file__).with_name("memory_backend_worker.py"))
sys.path.insert(0, str(EXAMPLE.parent))

from langgraph_memory_backend import (  # noqa: E402
    END,
    USER,
    ask,
    history,
    make_agent,
    memory_store_id,
)


def run_example(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def notes(url: str) -> tuple[str, list[str | None]]:
    """The id of /memories/notes.md and the content of each of its versions, oldest first."""
    with ConversationStore(url) as db:
        sid = memory_store_id(db)
        entry = db.get_memory_by_path(sid, "notes.md", user_id=USER)
        assert entry is not None
        listed = db.list_memory_versions(sid, entry_id=entry.entry_id, limit=100).items
        found = [db.get_memory_version(sid, v.version_id) for v in listed]
        return entry.entry_id, [v.content if v else None for v in found]


def test_the_agent_writes_edits_and_reads_its_memory_with_every_version_kept(
    backend_url: str,
) -> None:
    if backend_url == "memory://":  # each ask() opens the URL again: keep one store instead
        with ConversationStore(backend_url) as db:
            agent = make_agent(db)
            for text in ["remember: dark mode", "remember: large fonts"]:
                agent.invoke({"messages": [HumanMessage(text)]})
            answer = agent.invoke({"messages": [HumanMessage("recall")]})["messages"][-1].content
            assert "- dark mode\n- large fonts" in str(answer)
        return
    assert "Updated file /memories/notes.md" in ask(backend_url, "remember: dark mode")
    assert "Successfully replaced 1 instance" in ask(backend_url, "remember: large fonts")
    ask(backend_url, "forget: dark mode")
    recalled = ask(backend_url, "recall")
    assert "- large fonts" in recalled and "dark mode" not in recalled
    assert history(backend_url) == [
        "create v1 (33 bytes)",
        "update v2 (47 bytes)",
        "update v3 (35 bytes)",
    ]
    assert notes(backend_url)[1] == [
        f"# Notes\n- dark mode\n{END}\n",
        f"# Notes\n- dark mode\n- large fonts\n{END}\n",
        f"# Notes\n- large fonts\n{END}\n",
    ]


def test_memory_written_in_one_process_is_read_in_another(shared_url: str) -> None:
    ask(shared_url, "remember: tabs, not spaces")  # this process
    assert "- tabs, not spaces" in run_example("--url", shared_url, "recall")  # a new one
    run_example("--url", shared_url, "remember: the deploy is on Tuesday")  # and back
    assert "- the deploy is on Tuesday" in ask(shared_url, "recall")
    assert len(notes(shared_url)[1]) == 2


def test_the_example_runs_as_a_script() -> None:
    out = run_example()
    assert "'recall': tool result:" in out and "- large fonts" in out
    assert "history: create v1 (33 bytes), update v2 (47 bytes), update v3 (35 bytes)" in out


def test_the_async_agent_uses_the_async_twins(backend_url: str) -> None:
    async def go() -> str:
        with ConversationStore(backend_url) as db:
            agent = make_agent(db)
            await agent.ainvoke({"messages": [HumanMessage("remember: async works")]})
            await agent.ainvoke({"messages": [HumanMessage("remember: twice")]})
            result = await agent.ainvoke({"messages": [HumanMessage("search: async")]})
            return str(result["messages"][-1].content)

    assert "/memories/notes.md" in asyncio.run(go())


# -- concurrent edits ------------------------------------------------------------------------


class Interleaved(ConversationStore):
    """A real store on which another writer gets in between a read and the update that follows
    it: before each of the next ``times`` calls of ``update_memory``, ``meanwhile()`` runs."""

    meanwhile: Callable[[], Any] = staticmethod(lambda: None)
    times = 0

    def update_memory(self, *args: Any, **kwargs: Any) -> Any:
        if self.times > 0:
            self.times -= 1
            self.meanwhile()
        return super().update_memory(*args, **kwargs)


def setup_shared(url: str, content: str) -> tuple[str, ConversationStore, ConvostoreMemoryBackend]:
    db = ConversationStore(url)
    sid = db.create_memory_store("shared").memory_store_id
    db.create_memory(sid, "shared.md", content)
    return sid, db, ConvostoreMemoryBackend(db, sid)


def contents(db: ConversationStore, sid: str) -> list[str | None]:
    out = []
    for v in db.list_memory_versions(sid, limit=100).items:
        full = db.get_memory_version(sid, v.version_id)
        out.append(None if full is None else full.content)
    return out


def test_an_edit_from_a_stale_version_is_reapplied_on_the_new_one(shared_url: str) -> None:
    sid, db, other = setup_shared(shared_url, "END\n")
    with db, Interleaved(shared_url) as mine_db:
        mine = ConvostoreMemoryBackend(mine_db, sid)
        mine_db.meanwhile = lambda: other.edit("/shared.md", "END", "- theirs\nEND")
        mine_db.times = 1
        result = mine.edit("/shared.md", "END", "- mine\nEND")  # read v1; theirs lands as v2
        assert (result.error, result.occurrences) == (None, 1)
        assert contents(db, sid) == ["END\n", "- theirs\nEND\n", "- theirs\n- mine\nEND\n"]


def test_an_edit_whose_text_was_changed_concurrently_fails_and_writes_nothing(
    shared_url: str,
) -> None:
    sid, db, other = setup_shared(shared_url, "colour: blue\n")
    with db, Interleaved(shared_url) as mine_db:
        mine = ConvostoreMemoryBackend(mine_db, sid)
        mine_db.meanwhile = lambda: other.edit("/shared.md", "blue", "green")
        mine_db.times = 1
        result = mine.edit("/shared.md", "blue", "red")
        assert result.error == "Error: String not found in file: 'blue'"
        assert contents(db, sid) == ["colour: blue\n", "colour: green\n"]  # theirs kept


def test_an_edit_that_keeps_conflicting_gives_up_cleanly(shared_url: str) -> None:
    sid, db, other = setup_shared(shared_url, "n")
    with db, Interleaved(shared_url) as mine_db:
        mine = ConvostoreMemoryBackend(mine_db, sid, max_attempts=3)
        mine_db.meanwhile = lambda: other.edit("/shared.md", "n", "nn", replace_all=True)
        mine_db.times = 3
        result = mine.edit("/shared.md", "n", "m", replace_all=True)
        assert result.error is not None and "changed 3 times" in result.error
        assert contents(db, sid) == ["n", "nn", "nnnn", "nnnnnnnn"]  # only theirs
        write = ConvostoreMemoryBackend(mine_db, sid, max_attempts=2)
        mine_db.times = 2
        assert "changed 2 times" in str(write.write("/shared.md", "replaced").error)
        assert "replaced" not in contents(db, sid)


@pytest.mark.slow
def test_processes_editing_one_file_lose_no_change(shared_url: str) -> None:
    sid, db, _ = setup_shared(shared_url, "END\n")
    with db:
        procs = [
            subprocess.Popen(
                [sys.executable, WORKER, shared_url, sid, f"p{n}", "15"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for n in range(3)
        ]
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        outs = [json.loads(proc.communicate("go\n", timeout=300)[0]) for proc in procs]
        added = [line for out in outs for line in out["added"]]
        failed = [line for out in outs for line in out["failed"]]
        assert len(added) + len(failed) == 45
        entry = db.get_memory_by_path(sid, "shared.md")
        assert entry is not None and entry.content is not None
        lines = entry.content.splitlines()
        assert sorted(lines) == sorted([*added, "END"])  # every success kept, no failure written
        for n, out in enumerate(outs):  # each process's lines in the order it added them
            assert [line for line in lines if line.startswith(f"- p{n} ")] == out["added"]
        history = db.list_memory_versions(sid, entry_id=entry.entry_id, limit=100).items
        assert [v.version for v in history] == list(range(1, len(added) + 2))


# -- redaction -------------------------------------------------------------------------------

SECRET = "MARKER-7f3a9c"


def every_path(mb: ConvostoreMemoryBackend) -> list[Any]:
    """What the backend gives through each of its read paths."""

    async def twins() -> list[Any]:
        return [
            await mb.aread("/s.md"),
            await mb.agrep(SECRET),
            await mb.adownload_files(["/s.md"]),
            await mb.als("/"),
        ]

    return [
        mb.read("/s.md"),
        mb.read("/s.md", offset=0, limit=1),
        mb.grep(SECRET),
        mb.grep("", glob="s.md"),
        mb.glob("*.md"),
        mb.ls("/"),
        mb.download_files(["/s.md"]),
        *asyncio.run(twins()),
    ]


def test_a_redacted_version_is_unreadable_through_every_path(backend_url: str) -> None:
    with ConversationStore(backend_url) as db:
        sid = db.create_memory_store("r", user_id=USER).memory_store_id
        mb = ConvostoreMemoryBackend(db, sid, user_id=USER)
        mb.write("/s.md", f"token: {SECRET}\n")
        assert SECRET in repr(every_path(mb))  # readable before
        first = db.list_memory_versions(sid).items[0]
        db.redact_memory_version(sid, first.version_id)  # the current version
        seen = every_path(mb)
        assert SECRET not in repr(seen)
        assert "was redacted" in str(seen[0].error) and "was redacted" in str(seen[7].error)
        assert seen[6][0].content is None and "was redacted" in str(seen[6][0].error)
        assert [i["path"] for i in seen[5].entries] == ["/s.md"]  # listed, metadata only
        assert "was redacted" in str(mb.edit("/s.md", "token", "t").error)  # nothing to edit
        assert len(db.list_memory_versions(sid).items) == 1
        assert db.get_memory_version(sid, first.version_id).content is None  # type: ignore[union-attr]
        # a new write replaces it; the redacted version stays redacted in the history
        mb.write("/s.md", "token: rotated\n")
        assert SECRET not in repr(every_path(mb))
        assert [v.redacted for v in db.list_memory_versions(sid).items] == [True, False]


def test_an_older_redacted_version_is_out_of_the_agents_reach(shared_url: str) -> None:
    ask(shared_url, f"remember: the code is {SECRET}")
    ask(shared_url, f"forget: the code is {SECRET}")
    entry_id, before = notes(shared_url)
    assert SECRET in (before[0] or "")
    with ConversationStore(shared_url) as db:
        sid = memory_store_id(db)
        first = db.list_memory_versions(sid, entry_id=entry_id).items[0]
        db.redact_memory_version(sid, first.version_id)
    out = run_example("--url", shared_url, f"search: {SECRET}")  # another process
    assert SECRET not in out.replace(f"search: {SECRET}", "")
    assert notes(shared_url)[1] == [None, f"# Notes\n{END}\n"]
