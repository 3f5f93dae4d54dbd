"""The quickstart demo (`make demo`) runs as written; the README's blocks: tests/docs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_runs_twice_on_the_default_file(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CONVOSTORE_URL"}
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "quickstart.py")],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    # a tool call reads as one, not as its empty text
    assert (
        """oldest two: ["What's the weather in Oslo?", 'calls weather({"city": "Oslo"})']""" in out
    )
    assert "u_123's conversations: ['demo']" in out
    assert "'type': 'tool_use'" in out and "'tool_call_id': 'call_1'" in out
    assert (tmp_path / "convostore.db").exists()
    assert "stored in sqlite:///convostore.db" in out
    # the files beside the database are said where the data went
    assert "convostore.db-writers, an empty lock file on which writers queue" in out
    assert (tmp_path / "convostore.db-writers").exists()
