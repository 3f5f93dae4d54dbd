"""``convostore export`` / ``import``: the round trip is exact on every pair of databases, a
second import changes nothing, and a file that is not a whole export writes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import fill, run, tables
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
    assert "imported 6 conversations" in done.stderr
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
    assert "0 new messages" in done.stderr
    assert tables(dst) == before


def test_export_streams_to_stdout_and_filters(cli: Callable[..., object], shared_url: str) -> None:
    with ConversationStore(shared_url) as store:
        fill(store)
    lines = run("export", "--url", shared_url, "--user", "u1").stdout.splitlines()
    records = [json.loads(line) for line in lines]
    assert records[0]["format"] == "convostore-export" and records[0]["version"] == 1
    assert records[-1]["type"] == "end"
    ids = [r["id"] for r in records if r.get("type") == "conversation"]
    assert ids == ["c/1 ünï", "many1"]
    one = run("export", "--url", shared_url, "--conversation", "c2").stdout.splitlines()
    assert [json.loads(x).get("id") for x in one if '"conversation"' in x[:30]] == ["c2"]
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
