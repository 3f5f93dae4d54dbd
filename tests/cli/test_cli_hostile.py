"""Hostile input to the command line: its library functions refuse hostile arguments with a
``MemoryValidationError`` naming the argument, before anything is read or written; what the
commands print never carries a stored control character to the terminal; a hostile export
file gets one line and its exit status."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sqlite3
import unicodedata
from pathlib import Path

import pytest
from cli_helpers import on_a_terminal, run, write_export
from convostore import ConversationStore, MemoryValidationError
from convostore.commands import export, importers, importing, maintenance, migrate


def test_export_arguments(shared_url: str) -> None:
    with ConversationStore(shared_url) as store:
        for kwargs, argument in (
            ({"user_id": "a\x00b"}, "user_id"),
            ({"user_id": "x" * 300}, "user_id"),
            ({"conversation_ids": ["\ud800"]}, "conversation_ids[]"),
            ({"conversation_ids": [7]}, "conversation_ids[]"),
        ):
            out = io.BytesIO()
            with pytest.raises(MemoryValidationError) as caught:
                export.export_jsonl(store, out, **kwargs)  # type: ignore[arg-type]
            assert caught.value.argument == argument
            assert out.getvalue() == b""


def test_prune_arguments(shared_url: str) -> None:
    with ConversationStore(shared_url) as store:
        store.append_message(conversation_id="c", role="user", content="stays")
        for kwargs, argument in (
            ({"keep_last": -1}, "keep_last"),
            ({"keep_last": 2**63}, "keep_last"),
            ({"older_than_ms": -5}, "older_than_ms"),
            ({"older_than_ms": True}, "older_than_ms"),
            ({"keep_last": 1, "user_id": "\x00"}, "user_id"),
        ):
            with pytest.raises(MemoryValidationError) as caught:
                maintenance.prune(store, **kwargs)  # type: ignore[arg-type]
            assert caught.value.argument == argument
        assert store.get_history(conversation_id="c")[0].content == "stays"


def test_migrate_and_import_arguments(tmp_path: Path) -> None:
    src = f"sqlite:///{tmp_path / 's.db'}"
    ConversationStore(src).close()
    with pytest.raises(MemoryValidationError, match="batch_rows"):
        migrate.migrate(src, f"sqlite:///{tmp_path / 'd.db'}", batch_rows=0)
    assert not (tmp_path / "d.db").exists()
    with ConversationStore("memory://") as store, pytest.raises(MemoryValidationError) as caught:
        importing.import_jsonl(store, str(tmp_path))  # a directory
    assert caught.value.argument == "file"
    with pytest.raises(MemoryValidationError, match="not an importer"):
        importers.importer("../../etc")


# -- the command line -------------------------------------------------------------------------

UNSAFE_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs"}
EVIL = (
    "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\"
    " \x9b31m \u202egnp.exe \u200b\x7f\u2028\r\x08"
)


def _unsafe(text: str, allowed: str = "\n") -> list[str]:
    return [c for c in text if unicodedata.category(c) in UNSAFE_CATEGORIES and c not in allowed]


def test_printable_escapes_exactly_the_unsafe_categories() -> None:
    """The command's one escaping rule covers C0, DEL, C1, bidi and invisible formatting
    characters, line and paragraph separators and surrogates: every character of Unicode's
    Cc, Cf, Zl, Zp and Cs, and nothing else (newlines and tabs stay in a message's text)."""
    from convostore.commands.cli import printable

    for code in range(0x110000):
        c = chr(code)
        unsafe = unicodedata.category(c) in UNSAFE_CATEGORIES
        assert (printable(c) != c) == unsafe, hex(code)
        assert (printable(c, lines=True) != c) == (unsafe and c not in "\n\t"), hex(code)
    assert printable("\x1b]0;x\x07 \x9b \u202e \U000e0041") == (
        "\\x1b]0;x\\x07 \\x9b \\u202e \\U000e0041"
    )


def _evil_store(url: str) -> str:
    cid = f"conv {EVIL}"
    with ConversationStore(url) as store:
        store.append_message(
            conversation_id=cid, role="user", content=f"line one\n{EVIL}", user_id=f"u {EVIL}"
        )
        call = {"id": f"call {EVIL}", "type": "function", "function": {"name": f"fn {EVIL}"}}
        call["function"]["arguments"] = json.dumps({"q": EVIL})
        store.append_message(
            conversation_id=cid, role="assistant", content="", metadata={"tool_calls": [call]}
        )
        store.append_message(
            conversation_id=cid,
            role="tool",
            content=f"result {EVIL}",
            metadata={"tool_call_id": call["id"]},
        )
        store.append_message(
            conversation_id=cid, role="user", content=[{"type": "mystery", "x": EVIL}]
        )
        store.update_conversation(conversation_id=cid, metadata={"title": f"title {EVIL}"})
    return cid


def test_stored_escape_sequences_reach_no_terminal_and_no_pipe(shared_url: str) -> None:
    """ESC sequences, OSC 0 and 8, a C1 CSI, bidi and zero-width characters stored in an id,
    an owner, a title, a message, a tool call and its result are printed as visible escapes
    by ls, show and show --json (whose JSON still reads back to the same messages)."""
    cid = _evil_store(shared_url)
    outputs = [
        run("ls", "--url", shared_url),
        run("show", cid, "--url", shared_url),
        run("show", cid, "--url", shared_url, "--user", f"u {EVIL}"),
        run("show", f"nope {EVIL}", "--url", shared_url, code=3),
        run("stats", "--url", shared_url),
        run("check", "--url", shared_url),
    ]
    for done in outputs:
        assert _unsafe(done.stdout + done.stderr) == [], done.args
    ls, show = outputs[0].stdout, outputs[1].stdout
    assert "\\x1b]0;pwned\\x07" in ls and "\\x9b31m" in ls and "\\u202egnp.exe" in ls
    for shown in ("conv \\x1b[31mred", "u \\x1b[31mred", "title \\x1b[31mred"):
        assert shown in ls and shown in show
    assert "line one\n\\x1b[31mred" in show  # a message's newlines stay
    assert "→ fn \\x1b[31mred" in show and "⇐ result \\x1b[31mred" in show
    assert "\\x1b]8;;https://evil.example\\x1b\\link" in show
    as_json = run("show", cid, "--url", shared_url, "--json").stdout
    assert _unsafe(as_json) == []
    with ConversationStore(shared_url) as store:
        expected = [m.model_dump() for m in store.get_history(conversation_id=cid)]
    assert json.loads(as_json) == expected


def test_on_a_terminal_only_the_commands_own_styles_are_sequences(shared_url: str) -> None:
    cid = _evil_store(shared_url)
    for args in (("ls",), ("show", cid), ("show", cid, "--json")):
        status, text = on_a_terminal(*args, "--url", shared_url)
        assert status == 0, text
        bare = re.sub(r"\x1b\[[0-9;]*m", "", text).replace("\r\n", "\n")
        assert _unsafe(bare) == [], (args, bare)
        assert "\\x1b]0;pwned\\x07" in bare or "\\u001b]0;pwned\\u0007" in bare


def test_export_refuses_a_terminal(tmp_path: Path) -> None:
    """An export is data: written to a terminal it would print stored control characters."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    _evil_store(url)
    status, text = on_a_terminal("export", "--url", url)
    assert status == 2 and "give -o FILE or redirect stdout" in text
    assert "pwned" not in text


@pytest.mark.parametrize("count", ["null", '"x"', "1e400", "true", "-1", "[]", "2"])
def test_an_end_line_with_a_hostile_count(count: str, tmp_path: Path) -> None:
    """The end line is read like any input: one line naming it, exit 3, no traceback."""
    path = tmp_path / "e.jsonl"
    write_export(path, [])
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"conversations": 0', f'"conversations": {count}'.encode()))
    done = run("import", str(path), "--url", f"sqlite:///{tmp_path / 'd.db'}", code=3)
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "line 2" in done.stderr and "conversations" in done.stderr


def test_a_backup_holding_code_of_its_own_restores_nothing(tmp_path: Path) -> None:
    """A backup file is foreign data: a trigger (which would run on the restored store's
    writes) or a view that no convostore migration makes is refused before any store opens
    the copy, and nothing is written."""
    live = f"sqlite:///{tmp_path / 'live.db'}"
    with ConversationStore(live) as store:
        store.append_message(conversation_id="c", role="user", content="x")
    clean = tmp_path / "clean.db"
    run("backup", str(clean), "--url", live)
    for name, statement in [
        (
            "steal",
            "CREATE TRIGGER steal AFTER INSERT ON convostore_messages"
            " BEGIN DELETE FROM convostore_conversations; END",
        ),
        ("peek", "CREATE VIEW peek AS SELECT content FROM convostore_messages"),
        (
            "convostore_search_gone",  # a name of the store's, with other code
            "CREATE TRIGGER convostore_search_gone AFTER UPDATE ON convostore_messages"
            " BEGIN DELETE FROM convostore_messages; END",
        ),
    ]:
        forged = tmp_path / f"{name}.db"
        forged.write_bytes(clean.read_bytes())
        with contextlib.closing(sqlite3.connect(forged)) as conn:
            if name == "convostore_search_gone":
                conn.execute("DROP TRIGGER convostore_search_gone")
            conn.execute(statement)
            conn.commit()
        target = tmp_path / f"target-{name}.db"
        failed = run("restore", str(forged), "--url", f"sqlite:///{target}", code=1).stderr
        assert f"{name!r} that no convostore migration makes" in failed, failed
        assert not target.exists()
    run("restore", str(clean), "--url", f"sqlite:///{tmp_path / 'fine.db'}")
