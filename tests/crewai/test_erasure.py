"""Deleted memory records leave the SQLite files (see tests/core/test_erasure.py)."""

from __future__ import annotations

import uuid
from pathlib import Path

from convostore import ConversationStore
from convostore_crewai import ConvostoreMemoryStorage
from crewai.memory.types import MemoryRecord


def copies(path: Path, marker: str) -> int:
    return sum(f.read_bytes().count(marker.encode()) for f in path.parent.glob(path.name + "*"))


def test_a_deleted_record_leaves_no_copy_in_the_files(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    marker = uuid.uuid4().hex
    with ConversationStore(f"sqlite:///{db}"):  # another connection keeps the WAL alive
        storage = ConvostoreMemoryStorage(f"sqlite:///{db}")
        try:
            secret = MemoryRecord(content=f"the code is {marker}", scope="/s")
            storage.save([secret, MemoryRecord(content="kept", scope="/s")])
            assert copies(db, marker)
            assert storage.delete(record_ids=[secret.id]) == 1
            assert copies(db, marker) == 0
            assert [r.content for r in storage.list_records("/s")] == ["kept"]
        finally:
            storage.close()
