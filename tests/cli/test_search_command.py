"""``convostore search`` and ``convostore reindex``: the core's search on the command line, the
matches marked on a terminal, everything printed through ``printable``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import on_a_terminal, run
from convostore import ConversationStore


@pytest.fixture
def url(shared_url: str) -> str:
    with ConversationStore(shared_url) as store:
        store.append_message(
            conversation_id="c1", role="user", content="My Order number is 4711", user_id="ann"
        )
        store.append_message(
            conversation_id="c2", role="assistant", content="order \x1b]0;pwned\x07 shipped"
        )
        for i in range(25):
            store.append_message(conversation_id="many", role="tool", content=f"order {i}")
    return shared_url


def test_search_prints_hits_newest_first_and_says_when_there_are_more(url: str) -> None:
    done = run("search", "order", "--url", url, "--limit", "3")
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and all(" many  tool: order " in line for line in lines)
    assert "more: convostore search ... --after " in done.stderr
    cursor = done.stderr.split("--after ")[1].strip()
    following = run("search", "order", "--url", url, "--limit", "3", "--after", cursor)
    assert following.stdout.splitlines()[0] not in lines


def test_search_scopes_escapes_and_answers_json(url: str) -> None:
    owned = run("search", "ORDER NUMBER", "--url", url, "--user", "ann").stdout
    assert owned.count("\n") == 1 and "c1  user: My Order number is 4711" in owned
    escaped = run("search", "shipped", "--url", url, "--role", "assistant").stdout
    assert "\x1b" not in escaped and "\\x1b]0;pwned\\x07" in escaped
    page = json.loads(run("search", "order", "--url", url, "--conversation", "c2", "--json").stdout)
    assert [hit["conversation_id"] for hit in page["items"]] == ["c2"]
    assert page["items"][0]["message"]["content"] == "order \x1b]0;pwned\x07 shipped"


def test_search_marks_the_matches_on_a_terminal(url: str) -> None:
    code, shown = on_a_terminal("search", "4711", "--url", url)
    assert code == 0
    assert "\x1b[1;7m4711" in shown  # bold reverse


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["search", ""], "query has no terms"),
        (["search", "x" * 1001], "over the limit of 1000"),
        (["search", "ok", "--after", "forged"], "not a cursor"),
        (["search", "ok", "--conversation", "c1", "--user", "bob"], "another user"),
    ],
)
def test_a_bad_search_is_one_line_and_writes_nothing(url: str, args: list[str], words: str) -> None:
    done = run(*args, "--url", url, code=5 if "another user" in words else 3)
    assert words in done.stderr and done.stderr.count("\n") == 1 and not done.stdout


def test_reindex_indexes_what_an_older_store_wrote(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with ConversationStore(url) as store:
        store.append_message(conversation_id="c", role="user", content="written long ago")
    with ConversationStore(url) as store:  # as a store older than the index left it
        store.backend.write(
            lambda tx: tx.execute("UPDATE convostore_messages SET search_rid = NULL")
        )
        store.backend.write(lambda tx: tx.execute("DELETE FROM convostore_search"))
    assert run("reindex", "--url", url).stderr == "indexed 1 messages and memory entries\n"
    assert "written long ago" in run("search", "long ago", "--url", url).stdout
    assert run("reindex", "--url", url).stderr == "indexed 0 messages and memory entries\n"
