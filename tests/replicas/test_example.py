"""examples/replicas.py (the core README quotes it) runs against the real pair."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "replicas.py"


def test_the_example_runs(urls: tuple[str, str], tmp_path: Path) -> None:
    primary, standby = urls
    env = {**os.environ, "CONVOSTORE_URL": primary, "CONVOSTORE_REPLICAS": standby}
    for _ in range(2):  # and again
        done = subprocess.run(
            [sys.executable, str(EXAMPLE)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0] == "Where is my order?"
        assert lines[1].startswith("position to hand on: ") and "/" in lines[1]
