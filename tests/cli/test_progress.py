"""Progress: ``export``, ``import``, ``migrate`` and ``prune`` draw a Rich progress bar (rows,
rate, a row per kind of data or per table) when stderr is a terminal, and print only their
last lines in a pipe."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import on_a_terminal, run
from convostore import ConversationStore

BAR = "━"


def _store(url: str) -> None:
    with ConversationStore(url) as store:
        for c in range(3):
            store.append_messages(
                conversation_id=f"c{c}",
                messages=[{"role": "user", "content": f"{c}-{i}"} for i in range(50)],
            )


def _commands(tmp_path: Path) -> list[tuple[str, ...]]:
    src = f"sqlite:///{tmp_path / 'src.db'}"
    _store(src)
    export = str(tmp_path / "e.jsonl")
    return [
        ("export", "--url", src, "-o", export),
        ("import", export, "--url", f"sqlite:///{tmp_path / 'imported.db'}"),
        ("migrate", src, f"sqlite:///{tmp_path / 'copy.db'}"),
        ("prune", "--url", src, "--keep-last", "1"),
    ]


def test_a_pipe_gets_the_last_lines_and_no_bar(tmp_path: Path) -> None:
    export, load, migrate, prune = (run(*args) for args in _commands(tmp_path))
    assert export.stderr == "exported 3 conversations, 150 messages, 0 memory stores (0 versions)\n"
    assert (
        load.stderr
        == "imported 3 conversations, 150 new messages, 0 memory stores (0 new versions)\n"
    )
    assert migrate.stderr == "" and migrate.stdout.endswith("row count and checksum match\n")
    assert prune.stderr == "" and prune.stdout == "deleted 147 messages\n"


def test_a_terminal_gets_a_bar_per_kind_of_rows_with_the_rate(tmp_path: Path) -> None:
    shown = {}
    for args in _commands(tmp_path):
        status, text = on_a_terminal(*args)
        assert status == 0, text
        assert BAR in text and "/s" in text, text
        shown[args[0]] = text
    assert "messages" in shown["export"] and "150/150" in shown["export"]
    for line in ("conversations", "3/3", "messages", "150/150", "bytes checked"):
        assert line in shown["import"]
    for label in ("conversations", "messages", "memory stores", "conversation changes"):
        assert label in shown["migrate"]  # a bar per table
    assert "messages trimmed" in shown["prune"] and "147" in shown["prune"]
