"""The core README's command-line blocks run as pasted, in order, in an empty folder."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from cli_helpers import BIN

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "packages" / "core" / "README.md"
BLOCKS = re.findall(r"```sh\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_the_command_blocks_run_as_pasted(tmp_path: Path, pg_schema_url: str) -> None:
    assert len(BLOCKS) >= 2
    env = {k: v for k, v in os.environ.items() if k != "CONVOSTORE_URL"}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PG_URL"] = pg_schema_url
    outputs = []
    for block in BLOCKS:
        done = subprocess.run(
            ["bash", "-e", "-c", block],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, (block, done.stdout, done.stderr)
        outputs.append(done.stdout + done.stderr)
    assert "Oslo weather" in outputs[0] and "⇐ 8°C" in outputs[0]
    assert "ok: no problem found" in outputs[0]
    assert "imported 1 conversations, 0 new messages" in outputs[1]
    assert "would delete 0 conversations" in outputs[1]
