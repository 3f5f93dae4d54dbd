"""``convostore migrate``: every table copied between any two databases, verified; resumable
after SIGKILL; a destination holding data refused unless ``--force``."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import CONVOSTORE, fill, run, tables
from convostore import ConversationStore

PAIRS = [
    ("sqlite", "postgres"),
    ("postgres", "sqlite"),
    ("postgres", "postgres"),
    ("sqlite", "sqlite"),
]


def _filled(url: str) -> str:
    with ConversationStore(url) as store:
        fill(store)
        store.with_ordered_clock().append_message(
            conversation_id="clocked", role="user", content="t"
        )
    return url


@pytest.mark.parametrize(("src_kind", "dst_kind"), PAIRS, ids=["-".join(p) for p in PAIRS])
def test_migrate_copies_every_table(
    src_kind: str, dst_kind: str, url_of: Callable[[str], str]
) -> None:
    src, dst = _filled(url_of(src_kind)), url_of(dst_kind)
    done = run("migrate", src, dst)
    assert "verified" in done.stdout
    copied = tables(dst)
    assert copied == tables(src)
    assert copied["convostore_clock"][0] == 1 and copied["convostore_messages"][0] == 36
    with ConversationStore(dst) as store:  # the store works on the copy
        store.append_message(conversation_id="c2", role="user", content="after")
        assert store.get_history(conversation_id="c2", last=1)[0].content == "after"
        assert store.get_conversation(conversation_id="c2").message_count == 3  # type: ignore[union-attr]


def test_a_destination_with_data_needs_force(url_of: Callable[[str], str]) -> None:
    src, dst = _filled(url_of("sqlite")), url_of("postgres")
    with ConversationStore(dst) as store:
        store.append_message(conversation_id="theirs", role="user", content="keep me?")
    refused = run("migrate", src, dst, code=5)
    assert "holds data (convostore_conversations, convostore_messages)" in refused.stderr
    with ConversationStore(dst) as store:
        assert [c.conversation_id for c in store.list_conversations().items] == ["theirs"]
    run("migrate", src, dst, "--force")
    assert tables(dst) == tables(src)


def test_killed_half_way_then_run_again_equals_an_uninterrupted_copy(
    url_of: Callable[[str], str],
) -> None:
    src = url_of("sqlite")
    with ConversationStore(src) as store:
        for c in range(30):
            store.append_messages(
                conversation_id=f"conv{c:02}",
                messages=[{"role": "user", "content": f"{c}-{i}" * 20} for i in range(100)],
            )
    dst, whole = url_of("postgres"), url_of("postgres")
    args = [CONVOSTORE, "migrate", src, dst, "-v", "--batch-size", "100"]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("messages: 1000/3000"):
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    with ConversationStore(dst) as store:
        assert (
            1000
            <= store.backend.read(
                lambda tx: tx.execute("SELECT COUNT(*) FROM convostore_messages")
            )[0][0]
            < 3000
        )
    # a new migration into it is refused; the same one continues
    other = url_of("sqlite")
    with ConversationStore(other) as store:
        store.append_message(conversation_id="x", role="user", content="x")
    refused = run("migrate", other, dst, code=5)
    assert "unfinished copy of" in refused.stderr
    again = run("migrate", src, dst, "-v", "--batch-size", "100")
    first = next(line for line in again.stderr.splitlines() if line.startswith("messages:"))
    assert int(first.split()[1].split("/")[0]) >= 1000  # it continued; nothing copied twice
    run("migrate", src, whole)
    assert tables(dst) == tables(whole) == tables(src)


def test_bad_sources_and_destinations(url_of: Callable[[str], str], tmp_path: Path) -> None:
    src = _filled(url_of("sqlite"))
    missing = run("migrate", f"sqlite:///{tmp_path}/nope.db", url_of("sqlite"), code=3)
    assert "there is no database file" in missing.stderr
    same = run("migrate", src, src, code=3)
    assert "the same database" in same.stderr
    down = run("migrate", src, "postgresql://postgres@127.0.0.1:1/x", code=4)
    assert "Connection refused" in down.stderr or "connection failed" in down.stderr
    with ConversationStore(src) as store:  # tables of an adapter this install does not have
        store.backend.write(
            lambda tx: tx.execute(
                "INSERT INTO convostore_schema (component, version) VALUES ('elsewhere', 1)"
            )
        )
    unknown = run("migrate", src, url_of("sqlite"), code=3)
    assert "'elsewhere', which no installed package registers" in unknown.stderr
