"""The examples run as written (the README's blocks: tests/docs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import langgraph_quickstart
    finally:
        sys.path.remove(str(ROOT / "examples"))
    langgraph_quickstart.main()
    assert capsys.readouterr().out.startswith("ok: approved: yes")
