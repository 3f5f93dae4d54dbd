"""The README's examples run as shipped (offline, scripted model)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.mark.parametrize("name", ["openai_two_turns.py", "openai_tenants.py"])
def test_example_runs(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    out = capsys.readouterr().out
    assert out.strip()
    if name == "openai_tenants.py":
        assert "['Hi from Acme', 'Acme again']" in out
        assert "[('acme:support-chat', 4)]" in out
    else:
        assert "You asked about Paris." in out
