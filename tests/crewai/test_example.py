"""The example script runs offline and does what the README says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "crewai_quickstart.py"


def test_the_quickstart_example_runs(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "CONVOSTORE_URL": f"sqlite:///{tmp_path / 'demo.db'}",
        "XDG_DATA_HOME": str(tmp_path),
        "CREWAI_STORAGE_DIR": "example",
    }
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "crew answered: As we discussed: switch when you need replicas." in out
    assert "last run: completed" in out
    assert "task callback: Start with SQLite." in out
    assert "stored by the callbacks: 1 and 2" in out
    assert "advisor: We start on SQLite and move to PostgreSQL later." in out
    assert "memory recalls: ['The team runs billing on PostgreSQL.']" in out
    assert "researcher, with memory: From memory: billing runs on PostgreSQL." in out
