"""``convostore backup`` and ``restore``: a consistent copy while 4 processes append, a restore
that checks what it restores and writes nothing when it fails, and PostgreSQL sent to its own
tools."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from cli_helpers import fill, on_a_terminal, run, tables
from convostore import ConversationStore

WRITERS = 4
WRITER = """
import sys
from convostore import ConversationStore
store = ConversationStore(sys.argv[1])
i = 0
while True:
    store.append_message(conversation_id=sys.argv[2], role="user", content=str(i))
    print(i, flush=True)  # acknowledged: committed
    i += 1
"""


class Writer:
    """A process appending "0", "1", ... to its conversation; ``acked`` holds how many it
    reported committed."""

    def __init__(self, url: str, cid: str) -> None:
        self.cid = cid
        self.acked = 0
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, url, cid], stdout=subprocess.PIPE, text=True
        )
        self.started = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            assert int(line) == self.acked
            self.acked += 1
            if self.acked >= 20:
                self.started.set()

    def stop(self) -> int:
        self.process.terminate()
        self.process.wait(30)
        return self.acked


def _contents(url: str, cid: str) -> list[str]:
    with ConversationStore(url) as store:
        return [m.content for m in store.get_history(conversation_id=cid)]  # type: ignore[misc]


def test_a_backup_taken_while_4_processes_append_is_a_consistent_prefix(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    with ConversationStore(url) as store:  # some volume, so the copy takes several steps
        for i in range(24):
            store.append_message(conversation_id="bulk", role="user", content=f"{i}" * 1_000_000)
    writers = [Writer(url, f"w{n}") for n in range(WRITERS)]
    try:
        for w in writers:
            assert w.started.wait(120)
        before = {w.cid: w.acked for w in writers}  # acknowledged before the backup began
        done = run("backup", str(tmp_path / "copy.db"), "--url", url)
        during = {w.cid: w.acked for w in writers}
    finally:
        after = {w.cid: w.stop() for w in writers}
    assert "backed up" in done.stderr
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    assert "ok: no problem found" in run("check", "--url", copy).stdout
    for cid, acked in before.items():
        held = _contents(copy, cid)
        # every acknowledged append made before the backup, in order, and nothing invented
        assert held == [str(i) for i in range(len(held))]
        assert acked <= len(held) <= after[cid]
    assert any(during[cid] > before[cid] for cid in before)  # the writers went on meanwhile
    assert len(_contents(copy, "bulk")) == 24


def test_restore_checks_the_backup_and_replaces_a_store_only_when_told(tmp_path: Path) -> None:
    live = f"sqlite:///{tmp_path / 'live.db'}"
    with ConversationStore(live) as store:
        fill(store)
    backup_file = tmp_path / "backup.db"
    run("backup", str(backup_file), "--url", live)
    expected = tables(live)
    # a new store from the backup: every table equal, checked
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    done = run("restore", str(backup_file), "--url", fresh)
    assert "check passed" in done.stderr
    assert tables(fresh) == expected
    # an existing store is kept unless --force
    other = f"sqlite:///{tmp_path / 'other.db'}"
    with ConversationStore(other) as store:
        store.append_message(conversation_id="mine", role="user", content="keep me")
    kept = tables(other)
    refused = run("restore", str(backup_file), "--url", other, code=5)
    assert "--force" in refused.stderr
    assert tables(other) == kept
    run("restore", str(backup_file), "--url", other, "--force")
    assert tables(other) == expected
    # while a store is open on it (a server), a forced restore replaces what it reads
    with ConversationStore(other) as open_store:
        open_store.append_message(conversation_id="late", role="user", content="x")
        run("restore", str(backup_file), "--url", other, "--force")
        assert open_store.get_conversation(conversation_id="late") is None
    assert tables(other) == expected
    # the existing backup file is kept unless --force
    assert "--force" in run("backup", str(backup_file), "--url", live, code=5).stderr
    run("backup", str(backup_file), "--url", live, "--force")


def test_a_backup_that_fails_the_check_restores_nothing(tmp_path: Path) -> None:
    live = f"sqlite:///{tmp_path / 'live.db'}"
    with ConversationStore(live) as store:
        fill(store)
    backup_file = tmp_path / "backup.db"
    run("backup", str(backup_file), "--url", live)
    with sqlite3.connect(backup_file) as conn:  # a broken tool edited the backup
        conn.execute("UPDATE convostore_conversations SET message_count = 7 WHERE id = 'many0'")
    target = tmp_path / "target.db"
    failed = run("restore", str(backup_file), "--url", f"sqlite:///{target}", code=1)
    assert "fails the check, nothing was restored" in failed.stderr
    assert "message_count is 7" in failed.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in tmp_path.iterdir() if not p.name.startswith(("target", ".convostore"))
    )
    other = f"sqlite:///{tmp_path / 'other.db'}"
    with ConversationStore(other) as store:
        store.append_message(conversation_id="mine", role="user", content="keep me")
    kept = tables(other)
    run("restore", str(backup_file), "--url", other, "--force", code=1)
    assert tables(other) == kept
    assert not list(tmp_path.glob(".convostore-*"))


def test_bad_sources_and_destinations_are_named(tmp_path: Path) -> None:
    live = f"sqlite:///{tmp_path / 'live.db'}"
    ConversationStore(live).close()
    not_sqlite = tmp_path / "notes.txt"
    not_sqlite.write_text("hello " * 1000)
    target = f"sqlite:///{tmp_path / 'target.db'}"
    cases = [
        (("restore", str(not_sqlite), "--url", target), "is not an SQLite database"),
        (("restore", str(tmp_path / "nothing.db"), "--url", target), "there is no such file"),
        (("backup", str(tmp_path / "no" / "dir.db"), "--url", live), "does not exist"),
        (("backup", str(tmp_path), "--url", live), "is a directory"),
        (("backup", "sqlite:///x.db", "--url", live), "a file path, not a URL"),
        (("backup", str(tmp_path / "live.db"), "--url", live), "the store itself"),
        (("backup", str(tmp_path / "c.db"), "--url", target), "there is no database file"),
    ]
    with sqlite3.connect(tmp_path / "plain.db") as conn:
        conn.execute("CREATE TABLE t (x)")
    cases.append(
        (("restore", str(tmp_path / "plain.db"), "--url", target), "not a convostore store")
    )
    for args, words in cases:
        assert words in run(*args, code=3).stderr, args
    assert not (tmp_path / "target.db").exists()


def test_postgresql_is_sent_to_its_own_tools(pg_schema_url: str, tmp_path: Path) -> None:
    refused = run("backup", str(tmp_path / "b.db"), "--url", pg_schema_url, code=3).stderr
    assert "pg_dump" in refused and "pg_basebackup" in refused
    refused = run("restore", str(tmp_path / "b.db"), "--url", pg_schema_url, code=3).stderr
    assert "pg_restore" in refused and "WAL" in refused
    assert not (tmp_path / "b.db").exists()


def test_backup_and_restore_show_their_progress_on_a_terminal(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    with ConversationStore(url) as store:  # 3 steps of the copy
        for i in range(10):
            store.append_message(conversation_id="bulk", role="user", content=f"{i}" * 1_000_000)
    status, shown = on_a_terminal("backup", str(tmp_path / "copy.db"), "--url", url)
    assert status == 0, shown
    assert re.search(r"pages .*(?<!\d)(\d+)/\1(?!\d)", shown) and "backed up" in shown  # the bar
    target = f"sqlite:///{tmp_path / 'back.db'}"
    status, shown = on_a_terminal("restore", str(tmp_path / "copy.db"), "--url", target)
    assert status == 0, shown
    assert re.search(r"pages restored .*(?<!\d)(\d+)/\1(?!\d)", shown) and "check passed" in shown
