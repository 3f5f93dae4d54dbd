"""The example script the README quotes runs, offline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "claude_session_store.py"


def test_example_runs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'claude.db'}"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), url], capture_output=True, text=True, check=True
    )
    assert "title: README" in done.stdout
    assert "'role': 'assistant'" in done.stdout
