"""The package README's code and the examples run as written."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "packages" / "langgraph-adapter" / "README.md"


def test_readme_code_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)  # the blocks open sqlite:///app.db in the working directory
    for i, block in enumerate(blocks):
        module = types.ModuleType(f"readme_block_{i}")  # type hints resolve in a real module
        monkeypatch.setitem(sys.modules, module.__name__, module)
        exec(compile(block, str(README), "exec"), module.__dict__)


def test_quickstart_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import langgraph_quickstart
    finally:
        sys.path.remove(str(ROOT / "examples"))
    langgraph_quickstart.main()
    assert capsys.readouterr().out.startswith("ok: approved: yes")
