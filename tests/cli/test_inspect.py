"""``convostore ls`` / ``show`` / ``stats``, ``python -m convostore``, and the command without
its extra."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cli_helpers import fill, run
from convostore import ConversationStore


def test_ls_newest_first_with_counts_titles_and_owners(shared_url: str) -> None:
    with ConversationStore(shared_url) as store:
        fill(store)
    with ConversationStore(shared_url, clock=lambda: 4102444800000) as later:  # in 2100
        later.append_message(conversation_id="c2", role="user", content="latest")
    lines = run("ls", "--url", shared_url).stdout.splitlines()
    rows = [line for line in lines if "│" in line]
    assert "c2" in rows[0] and "Big one" in rows[0] and " 3 " in rows[0]
    assert "2100-01-01 00:00:00" in rows[0]
    assert len(rows) == 6
    mine = run("ls", "--url", shared_url, "--user", "u1", "--limit", "1").stdout
    assert "many1" in mine and "c/1 ünï" not in mine and "c2" not in mine
    assert "c/1 ünï" in run("ls", "--url", shared_url, "--user", "u1").stdout
    bad = run("ls", "--url", shared_url, "--limit", "0", code=2)
    assert "--limit" in bad.stderr


def test_show_pairs_tool_calls_with_their_results(shared_url: str) -> None:
    with ConversationStore(shared_url) as store:
        fill(store)
        expected = [m.model_dump() for m in store.get_history(conversation_id="c/1 ünï")]
    shown = run("show", "c/1 ünï", "--url", shared_url).stdout
    lines = shown.splitlines()
    assert "c/1 ünï, owner u1: 3 messages" in lines[0]
    call = next(i for i, line in enumerate(lines) if line.startswith("→ weather({})"))
    assert lines[call + 1].strip() == "⇐ 8°C"
    assert "── tool" not in shown  # the result was shown under its call
    as_json = json.loads(run("show", "c/1 ünï", "--url", shared_url, "--json").stdout)
    assert as_json == expected
    last = json.loads(run("show", "c/1 ünï", "--url", shared_url, "--json", "--last", "1").stdout)
    assert last == expected[-1:]
    refused = run("show", "c/1 ünï", "--url", shared_url, "--user", "intruder", code=5)
    assert "belongs to another user" in refused.stderr
    missing = run("show", "nope", "--url", shared_url, code=3)
    assert "no conversation 'nope'" in missing.stderr


def test_stats_counts_each_kind_of_data(shared_url: str) -> None:
    with ConversationStore(shared_url) as store:
        fill(store)
        # 2 MB that no compression shrinks (PostgreSQL compresses the 5 MB of "x" to nothing)
        noise = os.urandom(1024 * 1024).hex()
        store.append_message(conversation_id="c2", role="user", content=noise)
    out = run("stats", "--url", shared_url).stdout
    rows = {
        line.split("│")[2].strip(): line.split("│")[3].strip()
        for line in out.splitlines()
        if line.count("│") == 5
    }
    assert rows["conversations"] == "6" and rows["messages"] == "36"
    size = next(line for line in out.splitlines() if "messages" in line).split("│")[4].strip()
    assert int(size.replace(",", "")) > 2 * 1024 * 1024


def test_python_dash_m_is_the_command(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    with ConversationStore(url) as store:
        store.append_message(conversation_id="c", role="user", content="hi")
    done = subprocess.run(
        [sys.executable, "-m", "convostore", "ls", "--url", url],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == run("ls", "--url", url).stdout
    helped = subprocess.run(
        [sys.executable, "-m", "convostore", "--help"], capture_output=True, text=True, check=True
    )
    assert helped.stdout.startswith("Usage: convostore")
    for command in (
        "ls",
        "show",
        "stats",
        "export",
        "import",
        "migrate",
        "prune",
        "check",
        "import-from",
    ):
        assert f"  {command} " in helped.stdout


def test_without_the_extra_the_library_imports_and_the_command_says_how(tmp_path: Path) -> None:
    """Click and Rich made unimportable (as without ``convostore[cli]``)."""
    for name in ("click", "rich"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            f'raise ModuleNotFoundError("No module named {name}", name="{name}")\n'
        )
    env = {"PYTHONPATH": str(tmp_path)}
    code = "import convostore, convostore.commands.export, convostore.commands.importing, convostore.commands.migrate, convostore.commands.maintenance, convostore.commands.importers; print('ok')"
    lib = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert lib.stdout == "ok\n", lib.stderr
    done = subprocess.run(
        [sys.executable, "-m", "convostore", "ls"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 6
    assert "pip install 'convostore[cli]'" in done.stderr


def test_ls_never_cuts_an_id_and_says_when_there_are_more(tmp_path: Path) -> None:
    """An id is printed whole on its line (to paste into ``show``), however narrow the
    terminal; ``--limit`` says when it left conversations out."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    long = "claude/18078123e816669f-" + "0123456789abcdef" * 6 + "/tail"
    owner = "someone-with-a-long-name@example.com"
    with ConversationStore(url) as store:
        for i in range(4):
            store.append_message(conversation_id=f"short{i}", role="user", content="x")
        store.append_message(conversation_id=long, role="user", content="hi", user_id=owner)
        store.update_conversation(conversation_id=long, metadata={"title": "words " * 20})
    narrow = run("ls", "--url", url, env={"COLUMNS": "40"}).stdout
    assert long in narrow and owner in narrow and "…" not in narrow
    assert run("show", long, "--url", url).stdout.splitlines()[-1] == "hi"
    limited = run("ls", "--url", url, "--limit", "3")
    assert "more conversations than the 3 shown: --limit N shows more" in limited.stderr
    assert run("ls", "--url", url, "--limit", "5").stderr == ""
    assert run("ls", "--url", url).stderr == ""


def test_check_and_stats_say_which_package_reads_a_component(shared_url: str) -> None:
    """A database holding tables of an adapter that is not installed: check and stats name
    the ``pip install`` that brings it."""
    with ConversationStore(shared_url) as store:
        store.append_message(conversation_id="c", role="user", content="x")
        for name in ("crewai", "convostore-langgraph", "elsewhere"):
            store.backend.write(
                lambda tx, n=name: tx.execute(
                    "INSERT INTO convostore_schema (component, version) VALUES (?, 1)", [n]
                )
            )
    checked = run("check", "--url", shared_url, code=1).stdout
    assert (
        "component 'crewai': no installed package registers it, so its tables are not checked"
        " (pip install convostore-crewai)" in checked
    )
    assert "(pip install convostore-langgraph)" in checked
    assert "'elsewhere': no installed package registers it" in checked
    stats = run("stats", "--url", shared_url).stdout
    assert "tables no installed package reads: pip install convostore-crewai" in stats
    assert "pip install convostore-langgraph" in stats
