"""The example script the README quotes runs: offline, and its live path against the scripted
CLI (tests/claude/fake_claude.py) standing in for the real one."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "claude_session_store.py"
FAKE = Path(__file__).with_name("fake_claude.py")


def test_example_runs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'claude.db'}"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), url], capture_output=True, text=True, check=True
    )
    assert "title: README" in done.stdout
    assert "'role': 'assistant'" in done.stdout


@pytest.mark.anyio
async def test_the_live_turns_mirror_and_resume_through_the_store(
    claude_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = tmp_path / "claude"
    cli.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    cli.chmod(0o755)
    live = runpy.run_path(str(EXAMPLE))["live"]
    await live(
        f"sqlite:///{tmp_path / 'claude.db'}",
        "hello",
        str(claude_home),
        cli_path=str(cli),
        env={"CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK": "1"},
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "user hello"
    assert out[-2:] == [
        "user And in one sentence?",  # the resumed turn saw the first one (Prompt 2)
        "assistant [{'type': 'text', 'text': 'Prompt 2: And in one sentence?'}]",
    ]
