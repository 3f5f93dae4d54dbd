"""The ``convostore`` command with CrewAI memory: its tables are a registered component, and
``migrate`` carries the records (keyword index and categories included) to the destination."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from convostore import ConversationStore
from convostore.commands.migrate import uncovered_tables
from convostore.components import registered_components
from convostore_crewai import ConvostoreMemoryStorage, keyword_embedder
from crewai.memory.types import MemoryRecord

CONVOSTORE = str(Path(sys.executable).parent / "convostore")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CONVOSTORE_URL"}
    done = subprocess.run(
        [CONVOSTORE, *args], capture_output=True, text=True, env=env, check=False, timeout=600
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done


def _records() -> list[MemoryRecord]:
    when = datetime(2026, 1, 2, 3, 4, 5, 678901)
    return [
        MemoryRecord(
            content="PostgreSQL scales across machines",
            scope="/crew/research",
            categories=["db", "scale"],
            metadata={"k": 1},
            importance=0.9,
            created_at=when,
            last_accessed=when,
        ),
        MemoryRecord(content="SQLite is the embedded default", scope="/crew", categories=["db"]),
    ]


def test_memory_tables_are_a_registered_component(shared_url: str) -> None:
    storage = ConvostoreMemoryStorage(shared_url)
    try:
        assert "crewai" in [c.name for c in registered_components()]
        with ConversationStore(shared_url) as store:
            assert uncovered_tables(store.backend) == []
    finally:
        storage.close()


@pytest.mark.parametrize("direction", ["sqlite-postgres", "postgres-sqlite"])
def test_migrate_carries_memory(direction: str, tmp_path: Path, pg_schema_url: str) -> None:
    sqlite = f"sqlite:///{tmp_path / 'crew.db'}"
    src, dst = (
        (sqlite, pg_schema_url) if direction == "sqlite-postgres" else (pg_schema_url, sqlite)
    )
    records = _records()
    storage = ConvostoreMemoryStorage(src)
    storage.save(records)
    storage.close()
    out = run("migrate", src, dst).stdout
    assert "crewai_memory_terms" in out
    storage = ConvostoreMemoryStorage(dst)
    try:
        got = storage.get_record(records[0].id)
        assert got is not None and got.model_dump() == records[0].model_dump()
        query = keyword_embedder(["Which database scales? PostgreSQL"])[0]
        assert storage.search(query, limit=5)[0][0].id == records[0].id
        assert [r.id for r, _ in storage.search(query, categories=["scale"])] == [records[0].id]
    finally:
        storage.close()


def test_the_component_is_read_without_importing_crewai() -> None:
    """``convostore migrate`` / ``check`` / ``prune`` load this package's component; importing
    CrewAI with it took most of a two-minute ``migrate`` of 81 rows on a busy machine."""
    code = (
        "import sys\n"
        "from convostore.components import component_named\n"
        "assert component_named('crewai') is not None\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('crewai', 'litellm')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"
    import convostore_crewai

    assert convostore_crewai.record is not None and "record" in dir(convostore_crewai)
