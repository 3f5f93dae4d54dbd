"""``convostore export`` / ``import``: the round trip is exact on every pair of databases (memory
stores included), a second import changes nothing, a file that is not a whole valid export
writes nothing, and an import that fails while writing leaves no conversation or memory store
half written, says what it wrote, and continues when run again."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import fill, rewrite, run, tables, write_export
from convostore import ConversationStore

PAIRS = [
    ("sqlite", "sqlite"),
    ("sqlite", "postgres"),
    ("postgres", "sqlite"),
    ("postgres", "postgres"),
]


@pytest.mark.parametrize(("src_kind", "dst_kind"), PAIRS, ids=["-".join(p) for p in PAIRS])
def test_round_trip_is_exact(
    src_kind: str, dst_kind: str, url_of: Callable[[str], str], tmp_path: Path
) -> None:
    src, dst = url_of(src_kind), url_of(dst_kind)
    with ConversationStore(src) as store:
        fill(store)
    out = tmp_path / "export.jsonl"
    run("export", "--url", src, "-o", str(out))
    done = run("import", str(out), "--url", dst)
    assert "imported 6 conversations" in done.stderr and "2 memory stores" in done.stderr
    # every column of every row, byte for byte: ids, times, seqs (with their gap), owners
    assert tables(dst) == tables(src)
    again = tmp_path / "again.jsonl"
    run("export", "--url", dst, "-o", str(again))
    assert out.read_text().splitlines()[1:-1] == again.read_text().splitlines()[1:-1]
    with ConversationStore(dst) as store:
        history = store.get_history(conversation_id="c/1 ünï")
        assert history[0].content == "a\u0000b" and history[0].metadata is not None
        assert len(store.get_history(conversation_id="c2")[0].content) == 5 * 1024 * 1024
    # a second import adds nothing and changes nothing
    before = tables(dst)
    done = run("import", str(out), "--url", dst)
    assert "0 new messages" in done.stderr and "(0 new versions)" in done.stderr
    assert tables(dst) == before


def test_export_streams_to_stdout_and_filters(cli: Callable[..., object], shared_url: str) -> None:
    with ConversationStore(shared_url) as store:
        fill(store)
    lines = run("export", "--url", shared_url, "--user", "u1").stdout.splitlines()
    records = [json.loads(line) for line in lines]
    assert records[0]["format"] == "convostore-export" and records[0]["version"] == 2
    assert records[-1]["type"] == "end" and records[-1]["memory_stores"] == 1
    ids = [r["id"] for r in records if r.get("type") == "conversation"]
    assert ids == ["c/1 ünï", "many1"]
    assert [r["name"] for r in records if r.get("type") == "memory_store"] == ["notes"]
    one = run(
        "export", "--url", shared_url, "--conversation", "c2", "--conversation", "c2"
    ).stdout.splitlines()
    assert [json.loads(x).get("id") for x in one if '"conversation"' in x[:30]] == ["c2"]
    assert not [x for x in one if '"memory_store"' in x[:30]]
    missing = run("export", "--url", shared_url, "--conversation", "nope", code=3)
    assert "no conversation 'nope'" in missing.stderr


def _export(url: str, path: Path) -> None:
    with ConversationStore(url) as store:
        fill(store)
    run("export", "--url", url, "-o", str(path))


def _empty(url: str) -> bool:
    with ConversationStore(url) as store:
        return not store.list_conversations().items


def test_a_truncated_export_writes_nothing(shared_url: str, tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _export(f"sqlite:///{tmp_path / 'src.db'}", path)
    data = path.read_bytes()
    for cut in (len(data) // 2, data.rindex(b'{"type":"end"')):
        (tmp_path / "cut.jsonl").write_bytes(data[:cut])
        done = run("import", str(tmp_path / "cut.jsonl"), "--url", shared_url, code=3)
        assert "truncated" in done.stderr
    assert _empty(shared_url)


def test_a_damaged_or_foreign_file_writes_nothing(shared_url: str, tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _export(f"sqlite:///{tmp_path / 'src.db'}", path)
    damaged = path.read_bytes().replace(b'"m1"', b'"m2"', 1)
    (tmp_path / "damaged.jsonl").write_bytes(damaged)
    done = run("import", str(tmp_path / "damaged.jsonl"), "--url", shared_url, code=3)
    assert "checksum does not match" in done.stderr
    (tmp_path / "foreign.csv").write_text("id,name\n1,x\n")
    done = run("import", str(tmp_path / "foreign.csv"), "--url", shared_url, code=3)
    assert "not a convostore export" in done.stderr
    (tmp_path / "bin").write_bytes(bytes(range(256)) * 10)
    done = run("import", str(tmp_path / "bin"), "--url", shared_url, code=3)
    assert "not a convostore export" in done.stderr
    done = run("import", str(tmp_path / "missing.jsonl"), "--url", shared_url, code=3)
    assert "No such file" in done.stderr
    assert _empty(shared_url)


def test_an_export_that_breaks_the_store_rules_is_refused(shared_url: str, tmp_path: Path) -> None:
    """A file with a valid checksum but invalid data (written by hand) is validated like any
    input: the line and the rule are named."""
    import hashlib

    lines = [
        '{"format":"convostore-export","version":1}',
        '{"type":"conversation","id":"c","user_id":null,"created_at":1,"last_message_at":1,'
        '"message_count":1,"next_seq":2,"metadata":null}',
        '{"type":"message","conversation_id":"c","seq":1,"id":"m","role":"wizard",'
        '"content":"x","metadata":null,"created_at":1,"updated_at":null}',
    ]
    body = "".join(f"{line}\n" for line in lines).encode()
    end = {
        "type": "end",
        "conversations": 1,
        "messages": 1,
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    (tmp_path / "bad.jsonl").write_bytes(body + json.dumps(end).encode() + b"\n")
    done = run("import", str(tmp_path / "bad.jsonl"), "--url", shared_url, code=3)
    assert "line 3" in done.stderr and "role must be one of" in done.stderr
    assert _empty(shared_url)


def test_import_refuses_to_overwrite_another_owners_conversation(
    shared_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "e.jsonl"
    _export(f"sqlite:///{tmp_path / 'src.db'}", path)
    with ConversationStore(shared_url) as store:
        store.append_message(conversation_id="c2", role="user", content="mine", user_id="other")
    done = run("import", str(path), "--url", shared_url, code=5)
    assert "'c2' already exists" in done.stderr


def test_wrong_urls_fail_fast_with_the_cause(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _export(f"sqlite:///{tmp_path / 'src.db'}", path)
    refused = run("import", str(path), "--url", "postgresql://postgres@127.0.0.1:1/x", code=4)
    assert "cannot connect to PostgreSQL" in refused.stderr
    nodb = run("export", "--url", "postgresql://postgres@127.0.0.1:5432/no_such_db_x", code=4)
    assert 'database "no_such_db_x" does not exist' in nodb.stderr
    nodir = run("import", str(path), "--url", f"sqlite:///{tmp_path}/no/dir.db", code=3)
    assert "does not exist" in nodir.stderr
    nofile = run("export", "--url", f"sqlite:///{tmp_path}/none.db", code=3)
    assert "there is no database file" in nofile.stderr
    assert not (tmp_path / "none.db").exists()
    scheme = run("ls", "--url", "mysql://x/y", code=3)
    assert "not supported" in scheme.stderr


def _conversations(url: str, count: int, messages: int) -> None:
    with ConversationStore(url) as store:
        for c in range(count):
            store.append_messages(
                conversation_id=f"c{c}",
                messages=[{"role": "user", "content": f"{c}-{i}"} for i in range(messages)],
            )


def test_a_bad_record_deep_in_a_valid_file_writes_nothing(shared_url: str, tmp_path: Path) -> None:
    """The issue's case: a checksum-valid export whose line 7,509 breaks a rule. The whole
    file is checked before anything is written."""
    src, path = f"sqlite:///{tmp_path / 'src.db'}", tmp_path / "e.jsonl"
    _conversations(src, 8, 1000)
    run("export", "--url", src, "-o", str(path))

    def wizard(lines: list[bytes]) -> list[bytes]:
        record = json.loads(lines[7509 - 2])
        assert record["type"] == "message"
        lines[7509 - 2] = json.dumps({**record, "role": "wizard"}).encode() + b"\n"
        return lines

    rewrite(path, wizard)
    done = run("import", str(path), "--url", shared_url, code=3)
    assert "line 7509" in done.stderr and "role must be one of" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert _empty(shared_url)
    assert "ok: no problem found" in run("check", "--url", shared_url).stdout


def test_an_end_line_in_the_middle_is_an_error(shared_url: str, tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _export(f"sqlite:///{tmp_path / 'src.db'}", path)
    early = b'{"type":"end","conversations":1,"messages":3,"sha256":"0"}\n'
    rewrite(path, lambda lines: [*lines[:5], early, *lines[5:]])
    done = run("import", str(path), "--url", shared_url, code=3)
    assert "line 7: an end line before the end of the file" in done.stderr
    assert _empty(shared_url)


def test_a_failure_while_writing_leaves_whole_conversations_says_what_and_continues(
    shared_url: str, tmp_path: Path
) -> None:
    """A conflict in the second of three conversations, past its first batch of 5,000
    messages: the first conversation stays imported (its own transaction), nothing of the
    second or third is written, the error says so, and the same import continues once the
    conflict is gone."""
    src, path = f"sqlite:///{tmp_path / 'src.db'}", tmp_path / "e.jsonl"
    with ConversationStore(src) as store:
        for cid, count in (("a", 5000), ("b", 6000), ("c", 3)):
            store.append_messages(
                conversation_id=cid,
                messages=[{"role": "user", "content": f"{cid}{i}"} for i in range(count)],
            )
        b = store.get_conversation(conversation_id="b")
        assert b is not None
    run("export", "--url", src, "-o", str(path))
    # the destination holds "b" (same creation time) with another message at seq 5999
    theirs = tmp_path / "theirs.jsonl"
    write_export(
        theirs,
        [
            {
                "type": "conversation",
                "id": "b",
                "user_id": None,
                "created_at": b.created_at,
                "last_message_at": b.created_at,
                "message_count": 1,
                "next_seq": 6000,
                "metadata": None,
            },
            {
                "type": "message",
                "conversation_id": "b",
                "seq": 5999,
                "id": "msg_theirs",
                "role": "user",
                "content": "theirs",
                "metadata": None,
                "created_at": b.created_at,
                "updated_at": None,
            },
        ],
    )
    run("import", str(theirs), "--url", shared_url)
    done = run("import", str(path), "--url", shared_url, code=5)
    assert "the stored message at seq 5999 differs" in done.stderr
    assert (
        "1 conversations (5000 new messages) and 0 memory stores (0 new versions) were"
        " imported before it (through line 5002)" in done.stderr
    )
    assert len(done.stderr.strip().splitlines()) == 1
    with ConversationStore(shared_url) as store:
        counts = {c.conversation_id: c.message_count for c in store.list_conversations().items}
    assert counts == {"a": 5000, "b": 1}  # nothing of b's first 5,000 messages, nothing of c
    with ConversationStore(shared_url) as store:
        store.delete_conversation(conversation_id="b")
    done = run("import", str(path), "--url", shared_url)
    assert "imported 3 conversations, 6003 new messages" in done.stderr
    assert tables(shared_url) == tables(src)


def test_memory_stores_are_continued_never_unredacted_and_refused_when_they_moved_on(
    shared_url: str, tmp_path: Path
) -> None:
    src, path = f"sqlite:///{tmp_path / 'src.db'}", tmp_path / "e.jsonl"
    _export(src, path)
    run("import", str(path), "--url", shared_url)
    with ConversationStore(shared_url) as store:
        notes = next(s for s in store.list_memory_stores().items if s.name == "notes")
        sid = notes.memory_store_id
        versions = store.list_memory_versions(sid).items
        store.redact_memory_version(sid, versions[1].version_id)
    run("import", str(path), "--url", shared_url)  # the redacted version stays redacted
    with ConversationStore(shared_url) as store:
        again = store.get_memory_version(sid, versions[1].version_id)
        assert again is not None and again.redacted and again.content is None
        store.create_memory(sid, "new.md", "written after the export")
    done = run("import", str(path), "--url", shared_url, code=5)
    assert f"memory_store_id {sid!r}" in done.stderr and "changed after the export" in done.stderr


def test_a_version_1_export_is_read(shared_url: str, tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    conversation = {
        "type": "conversation",
        "id": "old",
        "user_id": "u",
        "created_at": 1,
        "last_message_at": 2,
        "message_count": 1,
        "next_seq": 2,
        "metadata": {"title": "from version 1"},
    }
    message = {
        "type": "message",
        "conversation_id": "old",
        "seq": 1,
        "id": "m1",
        "role": "user",
        "content": "hi",
        "metadata": None,
        "created_at": 2,
        "updated_at": None,
    }
    write_export(path, [conversation, message], version=1)
    run("import", str(path), "--url", shared_url)
    with ConversationStore(shared_url) as store:
        meta = store.get_conversation(conversation_id="old")
        assert meta is not None and meta.metadata == {"title": "from version 1"}
    write_export(path, [conversation, message], version=3)
    done = run("import", str(path), "--url", shared_url, code=3)
    assert "export format version 3; this convostore reads versions 1, 2" in done.stderr


def test_export_names_what_it_leaves_out(shared_url: str, tmp_path: Path) -> None:
    """The adapters' own tables are not in an export: it says which hold rows."""
    with ConversationStore(shared_url) as store:
        store.append_message(conversation_id="c", role="user", content="x")
        store.backend.write(
            lambda tx: tx.execute("CREATE TABLE lg_checkpoints (thread_id TEXT PRIMARY KEY)")
        )
        store.backend.write(lambda tx: tx.execute("INSERT INTO lg_checkpoints VALUES ('t1')"))
    done = run("export", "--url", shared_url, "-o", str(tmp_path / "e.jsonl"))
    assert "not in the export (convostore migrate copies them): lg_checkpoints (1 rows)" in (
        done.stderr
    )


def test_export_help_says_what_an_export_holds() -> None:
    helped = " ".join(run("export", "--help").stdout.split())
    assert "every memory store with its versions and entries" in helped
    assert "The adapters' own tables (LangGraph checkpoints and store items, CrewAI memory)" in (
        helped
    )
