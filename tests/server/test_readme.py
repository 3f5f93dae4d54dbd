"""The README's curl calls ("Try it") run, in order, against a live server; the example in
examples/ runs as shipped."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from served import Server, clean_env

ROOT = Path(__file__).parents[2]
README = ROOT / "packages" / "server" / "README.md"
FENCE = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _try_it_blocks() -> list[str]:
    text = README.read_text()
    section = text.split("## Try it", 1)[1].split("\n## ", 1)[0]
    return FENCE.findall(section)


def test_the_readme_curl_calls_work(server: Server, tmp_path: Path) -> None:
    for tool in ("curl", "jq"):
        assert shutil.which(tool), f"{tool} is needed (the project's machines have it)"
    blocks = _try_it_blocks()
    assert len(blocks) >= 4 and sum(b.count("curl ") for b in blocks) >= 25
    script = "set -euo pipefail\n" + "\n".join(blocks)
    done = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(BASE=server.base, TOKEN=server.tokens["alice"], ADMIN=server.tokens["admin"]),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert '"messageIds":["turn-7:0","turn-7:1"]' in out
    assert '"title":"Greetings"' in out
    assert '"forkedFrom":{"conversationId":"chat-42","messageId":"turn-7:0"}' in out
    assert '"code":"version_conflict"' in out and '"currentVersion":2' in out
    assert '"redacted":true' in out
    assert '"snippet":"My order number is A-1234"' in out
    assert '"snippet":"notes/deploys.md Deploys on Fridays: no."' in out
    assert ": subscribed" in out
    assert list(tmp_path.iterdir()) == []


def test_the_example_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "server_quickstart.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(),
        timeout=120,
        check=True,
    )
    assert done.stdout.splitlines()[1:] == [
        "     user: What's the weather in Paris?",
        "assistant: Sunny, 22C in Paris.",
        "conversations: [('chat-1', 2)]",
    ]
