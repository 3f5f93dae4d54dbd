"""The README's examples and the quickstart demo run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "packages" / "core" / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})


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
    assert "oldest two: [\"What's the weather in Oslo?\", '']" in out
    assert "u_123's conversations: ['demo']" in out
    assert "'type': 'tool_use'" in out and "'tool_call_id': 'call_1'" in out
    assert (tmp_path / "convostore.db").exists()
    assert "stored in sqlite:///convostore.db" in out
