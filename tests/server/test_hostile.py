"""Hostile input to the server beyond the request bodies of ``test_conversations.py`` (whose
``test_hostile_values_in_paths_queries_and_bodies`` and ``test_bad_bodies_...`` stay there):
user ids in tokens, ..."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest
from convostore_server import Principal, TokenTable, hash_token, new_token
from served import BIN, clean_env, free_port, spawn, stop

# User ids as an attacker would pick them: a comment sign, line breaks of every kind (one
# that forges an admin's line), white space at either end, controls, invisible formatting, a
# lone surrogate. The first list is carried exactly, the second refused.
FORGED_ADMIN = "\n" + "0" * 64 + " admin"
CARRIED = ["alice#1", "#alice", "admin", "user", "ünïcødé/ïd", "a%2Fb?c=d", "'\"<>&;"]
REFUSED = [
    "alice" + FORGED_ADMIN,
    "a\rb",
    "a\r\n" + "1" * 64 + " admin",
    "a\u2028b",
    "a\u2029b",
    "a\x85b",
    "a\x0bb",
    "a\x0cb",
    "a\x1cb",
    " alice",
    "alice ",
    "al ice",
    "a\tb",
    "a\u00a0b",
    "a\x00b",
    "a\x1b[31mb",
    "a\u200bb",
    "a\u202eb",
    "\ud800",
    "",
]


@pytest.mark.parametrize("user_id", CARRIED)
def test_a_new_tokens_line_reads_back_as_exactly_its_user(user_id: str) -> None:
    """The line ``new_token`` prints is one line that the table reads back as that user and
    no one else."""
    token, line = new_token(f"user:{user_id}")
    table = TokenTable.parse(f"# header\n{line}\n")
    assert [p for _, p in table.entries] == [Principal(user_id=user_id)]
    assert table.entries[0][0] == hash_token(token)


@pytest.mark.parametrize("user_id", REFUSED)
def test_a_user_id_a_line_cannot_carry_is_refused_before_any_token(user_id: str) -> None:
    with pytest.raises(ValueError, match="user id in the tokens file"):
        new_token(f"user:{user_id}")


def test_a_user_id_holding_hash_authenticates_as_itself(tmp_path: Path) -> None:
    """``--new-token 'user:alice#1'``: its token is alice#1's (it once was alice's)."""
    done = subprocess.run(
        [str(BIN / "convostore-server"), "--new-token", "user:alice#1"],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
        check=True,
    )
    token = done.stdout.splitlines()[0].rsplit(" ", 1)[1]
    line = done.stdout.splitlines()[1].split(": ", 1)[1]
    (tmp_path / "tokens.txt").write_text(line + "\n")
    port = free_port()
    args = [str(BIN / "convostore-server"), "--url", f"sqlite:///{tmp_path / 's.db'}"]
    process, _ = spawn(
        [*args, "--port", str(port), "--tokens", str(tmp_path / "tokens.txt")], tmp_path, port
    )
    try:
        me = httpx.get(f"http://127.0.0.1:{port}/me", headers={"Authorization": f"Bearer {token}"})
        assert me.json() == {"userId": "alice#1", "admin": False}
    finally:
        stop(process)


def test_a_user_id_with_a_line_break_mints_no_admin() -> None:
    done = subprocess.run(
        [str(BIN / "convostore-server"), "--new-token", "user:alice" + FORGED_ADMIN],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode != 0 and done.stdout == ""
    assert "user id" in done.stderr and "white space" in done.stderr


GOOD = hash_token("t")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (f"{GOOD} user alice # laptop", 1),  # no comment after an entry
        (f"# ok\n{GOOD}  admin", 2),  # one space between fields
        (f"\n{GOOD} admin ", 2),  # nothing after the role
        (f"{GOOD} admin\n{GOOD}\tuser bob", 2),
        (f"{GOOD} user ", 1),  # no user id
        (f"{GOOD} user a\x0bb", 1),
        (f"{GOOD} user a\u2028{GOOD} admin", 1),
        (f"{GOOD} user a\x85b", 1),
        (f"{GOOD} users bob", 1),
        (f"{GOOD} ADMIN", 1),
        (f"{GOOD[:-1]} admin", 1),
        (f"{GOOD}0 admin", 1),
        (f" {GOOD} admin", 1),
        (f"{GOOD} user bob\r\n{GOOD} user a\rb\r\n", 2),
    ],
)
def test_a_malformed_tokens_line_is_refused_with_its_number(text: str, line: int) -> None:
    with pytest.raises(ValueError, match=f"^tokens, line {line}: "):
        TokenTable.parse(text)


def test_blank_and_comment_lines_and_windows_line_ends() -> None:
    text = f"# tokens\r\n\r\n   \r\n  # indented comment\r\n{GOOD} user bob\r\n{GOOD.upper()} admin"
    table = TokenTable.parse(text)
    assert [p for _, p in table.entries] == [Principal(user_id="bob"), Principal(admin=True)]
    assert {d for d, _ in table.entries} == {GOOD}
