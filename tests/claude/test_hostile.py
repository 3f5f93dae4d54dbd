"""Hostile input, ordering and erasure at the session store's entry points, on every backend:
keys with NUL, lone surrogates or 1 MiB; huge integers; entries nested deeper than JSON goes;
another user's sessions; mtimes that must follow the order of writes; deletes racing appends;
deleted transcripts left in the database file."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result
from convostore import ConversationStore, MemoryValidationError
from convostore.commands.cli import app
from convostore_claude import ConvostoreSessionStore

pytestmark = pytest.mark.anyio
FROZEN = 1_700_000_000_000


def _key(session: str = "s", project: str = "proj", **extra: Any) -> Any:
    return {"project_key": project, "session_id": session, **extra}


def _entry(text: str = "hi", **extra: Any) -> Any:
    return {"type": "user", "uuid": str(uuid.uuid4()), "message": {"content": text}, **extra}


def _deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("project_key", "a\x00b", "must not contain NUL"),
        ("session_id", "\ud800", "lone surrogate"),
        ("project_key", "p" * (1 << 20), "must be 1 to 1024 bytes"),
        ("subpath", "x\x00", "must not contain NUL"),
    ],
)
async def test_bad_keys_are_refused_everywhere(
    session_store: ConvostoreSessionStore, field: str, value: str, message: str
) -> None:
    await session_store.append(_key(), [_entry()])
    key = {**_key(), field: value}
    for call in (
        lambda: session_store.append(key, [_entry()]),
        lambda: session_store.load(key),
        lambda: session_store.delete(key),
    ):
        with pytest.raises(MemoryValidationError, match=message):
            await call()
    assert await session_store.load(_key()) is not None


@pytest.mark.parametrize("value", [2**63, -(2**70), True, "1"])
async def test_huge_or_wrong_integers_are_refused(
    session_store: ConvostoreSessionStore, conversation_store: ConversationStore, value: Any
) -> None:
    with pytest.raises(MemoryValidationError, match="older_than_ms"):
        await session_store.prune("proj", older_than_ms=value)
    with pytest.raises(MemoryValidationError, match="max_entries"):
        ConvostoreSessionStore(store=conversation_store, max_entries=value)


async def test_entries_nested_too_deeply_are_refused(session_store: ConvostoreSessionStore) -> None:
    with pytest.raises(MemoryValidationError, match=r"entries\[1\]: nested deeper than 900"):
        await session_store.append(_key(), [_entry(), {"type": "user", "deep": _deep(10_000)}])
    assert await session_store.load(_key()) is None


async def test_another_users_sessions_are_out_of_reach(
    conversation_store: ConversationStore,
) -> None:
    alice = ConvostoreSessionStore(store=conversation_store, user_id="alice")
    mallory = ConvostoreSessionStore(store=conversation_store, user_id="mallory")
    await alice.append(_key(), [_entry("alice's secret")])
    assert await mallory.load(_key()) is None
    assert await mallory.list_sessions("proj") == []
    await mallory.delete(_key())
    assert await alice.load(_key()) is not None


async def test_mtime_follows_the_order_of_writes_even_within_a_millisecond(
    backend_url: str,
) -> None:
    """Appends in one millisecond (a frozen clock here) still get strictly increasing mtimes,
    so the newest session is the one written last."""
    with ConversationStore(backend_url, clock=lambda: FROZEN) as core:
        store = ConvostoreSessionStore(store=core)
        for session in ("a", "b", "c", "a"):
            await store.append(_key(session), [_entry(session)])
        listed = {s["session_id"]: s["mtime"] for s in await store.list_sessions("proj")}
        assert listed == {"b": FROZEN + 1, "c": FROZEN + 2, "a": FROZEN + 3}
        summaries = {
            s["session_id"]: s["mtime"] for s in await store.list_session_summaries("proj")
        }
        assert summaries == listed


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_mtimes_from_several_writers_never_tie(shared_url: str) -> None:
    """Writers on their own connections (as separate processes are), appending to their own
    sessions at once: every append gets an mtime of its own."""
    per_writer, writers = 15, 3

    def write(n: int) -> None:
        import anyio

        async def run() -> None:
            async with ConvostoreSessionStore(shared_url) as store:
                for i in range(per_writer):
                    await store.append(_key(f"w{n}-{i}"), [_entry()])

        anyio.run(run)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    async with ConvostoreSessionStore(shared_url) as store:
        mtimes = [s["mtime"] for s in await store.list_sessions("proj")]
    assert len(mtimes) == per_writer * writers == len(set(mtimes))


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_deleting_a_session_while_its_subagents_append_leaves_no_orphans(
    shared_url: str,
) -> None:
    stop = threading.Event()
    errors: list[BaseException] = []

    def append(sub: str) -> None:
        import anyio

        async def run() -> None:
            async with ConvostoreSessionStore(shared_url) as store:
                while not stop.is_set():
                    await store.append(_key(subpath=sub), [_entry()])

        try:
            anyio.run(run)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    writers = [threading.Thread(target=append, args=(f"subagents/agent-{n}",)) for n in range(3)]
    for w in writers:
        w.start()
    async with ConvostoreSessionStore(shared_url) as store:
        try:
            for _ in range(30):
                await store.delete(_key())
        finally:
            stop.set()
            for w in writers:
                w.join()
        assert errors == []
        orphans = store.store.backend.read(
            lambda tx: tx.execute(
                "SELECT count(*) FROM convostore_messages m WHERE NOT EXISTS"
                " (SELECT 1 FROM convostore_conversations c WHERE c.id = m.conversation_id)"
            )
        )
        assert orphans == [(0,)]


def _copies(path: Path, marker: str) -> int:
    return sum(f.read_bytes().count(marker.encode()) for f in path.parent.glob(path.name + "*"))


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_deleted_session_leaves_no_copy_in_the_files(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    marker = uuid.uuid4().hex
    with ConversationStore(f"sqlite:///{db}"):  # another connection keeps the WAL alive
        async with ConvostoreSessionStore(f"sqlite:///{db}") as store:
            await store.append(_key(), [_entry(f"my code is {marker}")])
            await store.append(_key(subpath="subagents/agent-1"), [_entry(f"again {marker}")])
            await store.append(_key("kept"), [_entry("kept")])
            assert _copies(db, marker)
            await store.delete(_key())
            assert _copies(db, marker) == 0
            assert await store.load(_key("kept")) is not None


# -- convostore import-from claude-code: a folder someone else wrote -------------------------

SID = "5db98735-aaaa-4bbb-8ccc-ddddeeeeffff"


def _cli(*args: str, code: int = 0) -> Result:
    """``convostore ARGS`` through Click's runner (in this process: no start-up per case)."""
    done = CliRunner().invoke(app, list(args), env={"CONVOSTORE_URL": None})
    assert done.exit_code == code, (done.stdout, done.stderr, done.exception)
    return done


def _lines(n: int, first: int = 0) -> list[bytes]:
    return [json.dumps(_entry(f"line {first + i}")).encode() + b"\n" for i in range(n)]


def _projects(tmp_path: Path, *lines: bytes, name: str = SID) -> tuple[Path, Path]:
    """A projects folder with one transcript of ``lines`` (and a second, well-formed
    session before it); returns the folder and the transcript."""
    projects = tmp_path / "claude" / "projects"
    (projects / "-work-app").mkdir(parents=True)
    good = projects / "-work-app" / "0badc0de-0000-4000-8000-000000000000.jsonl"
    good.write_bytes(b"".join(_lines(3)))
    path = projects / "-work-app" / f"{name}.jsonl"
    path.write_bytes(b"".join(lines))
    return projects, path


def _imported(url: str, session: str = SID, user_id: str | None = None) -> list[Any]:
    with ConversationStore(url) as store:
        sessions = ConvostoreSessionStore(store=store, user_id=user_id)

        async def load() -> Any:
            return await sessions.load({"project_key": "-work-app", "session_id": session})

        return anyio.run(load) or []


DEEP = b'{"type": "user", "v": ' + b"[" * 5000 + b"]" * 5000 + b"}\n"
BAD_LINES: dict[str, tuple[bytes, str]] = {
    "invalid UTF-8": (b'{"type": "user", "text": "\xff\xfe"}\n', "line 3: not valid UTF-8"),
    "invalid JSON": (b'{"type": "user", "text": }\n', "line 3: not JSON (Expecting value"),
    "5,000 deep": (DEEP, "line 3: nested too deeply to read"),
    "not an object": (b"[1, 2, 3]\n", "line 3: a JSON list, not an entry (an object)"),
}


@pytest.mark.parametrize("case", list(BAD_LINES), ids=list(BAD_LINES))
def test_import_from_claude_code_names_the_line_it_cannot_read(
    case: str, tmp_path: Path, shared_url: str
) -> None:
    """One line naming the file, the line and the cause; nothing of that transcript written
    although 600 good lines come after it (the SDK's importer commits every 500), the
    session before it written whole, and said so."""
    bad, cause = BAD_LINES[case]
    projects, _ = _projects(tmp_path, *_lines(2), bad, *_lines(600, 2))
    done = _cli("import-from", "claude-code", str(projects), "--url", shared_url, code=3)
    [line] = done.stderr.strip().splitlines()
    assert f"transcript '-work-app/{SID}.jsonl', {cause}" in line, line
    assert "imported before it, whole: 1 Claude Code sessions (3 transcript entries)" in line
    assert _imported(shared_url) == []
    assert len(_imported(shared_url, "0badc0de-0000-4000-8000-000000000000")) == 3


def test_import_from_claude_code_skips_a_cut_off_last_line_and_resumes(
    tmp_path: Path, shared_url: str
) -> None:
    """What a crash of Claude Code leaves: every complete line is imported, the cut one is
    reported; once the session goes on, importing again adds what is new, nothing twice."""
    lines = _lines(4)
    projects, path = _projects(tmp_path, *lines[:3], lines[3][:25])
    done = _cli("import-from", "claude-code", str(projects), "--url", shared_url)
    assert done.stdout.splitlines() == [
        "imported 2 Claude Code sessions",
        "imported 6 transcript entries",
        f"skipped 1 cut-off last line (a crash leaves one) of '-work-app/{SID}.jsonl'",
    ]
    assert [e["message"] for e in _imported(shared_url)] == [
        {"content": f"line {i}"} for i in range(3)
    ]
    path.write_bytes(b"".join([*lines, *_lines(2, 4)]))
    again = _cli("import-from", "claude-code", str(projects), "--url", shared_url)
    assert again.stdout.splitlines() == [
        "imported 1 Claude Code sessions",
        "imported 3 transcript entries",
    ]
    assert len(_imported(shared_url)) == 6
    once_more = _cli("import-from", "claude-code", str(projects), "--url", shared_url)
    assert once_more.stdout.splitlines()[:2] == [
        "imported 0 Claude Code sessions",
        "imported 0 transcript entries",
    ]


def test_import_from_claude_code_follows_no_link_out_of_the_folder(tmp_path: Path) -> None:
    """A link that leads out of the projects folder is not read (its target holds
    well-formed lines: they must not arrive), and is named; a link inside to a file that is
    not JSON is read, and its first line named."""
    outside = tmp_path / "secret.jsonl"
    outside.write_bytes(b"".join(_lines(2)))
    projects, path = _projects(tmp_path, *_lines(1))
    path.unlink()
    path.symlink_to(outside)
    (projects / "elsewhere").symlink_to(tmp_path, target_is_directory=True)
    dst = f"sqlite:///{tmp_path / 'ours.db'}"
    done = _cli("import-from", "claude-code", str(projects), "--url", dst)
    assert done.stdout.splitlines() == [
        "imported 1 Claude Code sessions",
        "imported 3 transcript entries",
        "skipped 1 link out of the projects folder 'elsewhere'",
        f"skipped 1 link out of the projects folder '-work-app/{SID}.jsonl'",
    ]
    assert _imported(dst) == []
    notes = projects / "-work-app" / "notes.txt"
    notes.write_bytes(b"\x7fELF\x02\x01\x01\x00 not a transcript\n")
    path.unlink()
    path.symlink_to(notes)
    bad = _cli("import-from", "claude-code", str(projects), "--url", dst, code=3)
    [line] = bad.stderr.strip().splitlines()
    assert f"transcript '-work-app/{SID}.jsonl', line 1: not JSON" in line, line


def test_import_from_claude_code_for_a_user(tmp_path: Path, shared_url: str) -> None:
    projects, _ = _projects(tmp_path, *_lines(2))
    _cli("import-from", "claude-code", str(projects), "--url", shared_url, "--user", "alice")
    assert len(_imported(shared_url, user_id="alice")) == 2
    assert _imported(shared_url) == []  # another scope: the default store does not see it
    with ConversationStore(shared_url) as store:
        owned = store.list_conversations(user_id="alice", limit=10).items
        assert len(owned) == 2 and all(c.user_id == "alice" for c in owned)
