"""The command line's library functions refuse hostile arguments with a
``MemoryValidationError`` naming the argument, before anything is read or written."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from convostore import ConversationStore, MemoryValidationError, maintenance, transfer


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
                transfer.export_jsonl(store, out, **kwargs)  # type: ignore[arg-type]
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
        transfer.migrate(src, f"sqlite:///{tmp_path / 'd.db'}", batch_rows=0)
    assert not (tmp_path / "d.db").exists()
    with ConversationStore("memory://") as store, pytest.raises(MemoryValidationError) as caught:
        transfer.import_jsonl(store, str(tmp_path))  # a directory
    assert caught.value.argument == "file"
    with pytest.raises(MemoryValidationError, match="not an importer"):
        maintenance.importer("../../etc")
