"""Every ```python block of every README either runs as pasted or is a marked excerpt.

A complete block runs in a fresh interpreter of the environment of the package its README
belongs to (`.venvs/<package>`), in an empty working directory that it must leave empty.

An excerpt starts with the line `# excerpt of examples/<file>.py`: the file must exist and
every other non-blank line of the excerpt must occur in it, in the same order, ignoring
indentation and `# noqa` notes (a line `...` stands for lines left out), so an excerpt cannot drift from the
runnable file it is taken from. The test that runs that file lives with its package's tests.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Each README, and the environment its code runs in (the Makefile builds .venvs/<name>).
READMES = {
    "README.md": "core",
    "ARCHITECTURE.md": "core",
    "packages/core/README.md": "core",
    "packages/langgraph-adapter/README.md": "langgraph",
    "packages/openai-session/README.md": "openai",
    "packages/claude-session/README.md": "claude",
    "packages/crewai-glue/README.md": "crewai",
    "packages/server/README.md": "server",
    # what each README leaves out to read as a getting-started page
    "docs/notes/core.md": "core",
    "docs/notes/langgraph.md": "langgraph",
    "docs/notes/openai.md": "openai",
    "docs/notes/claude.md": "claude",
    "docs/notes/crewai.md": "crewai",
    "docs/notes/server.md": "server",
    # no ```python block: its ```js blocks run in packages/client-ts/test/readme.test.mjs
    "packages/client-ts/README.md": "server",
}
EXCERPT = re.compile(r"# excerpt of (examples/[\w-]+\.py)\b.*")
NOQA = re.compile(r"\s*# noqa\b.*$")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass
class Block:
    readme: str
    line: int  # of the opening fence
    code: str

    @property
    def excerpt_of(self) -> str | None:
        match = EXCERPT.fullmatch(self.code.split("\n", 1)[0].strip())
        return match[1] if match else None

    def __str__(self) -> str:
        return f"{self.readme}:{self.line}"


def python_blocks(readme: str) -> list[Block]:
    text = (ROOT / readme).read_text()
    return [
        Block(readme, text.count("\n", 0, m.start()) + 1, m[2])
        for m in FENCE.finditer(text)
        if m[1] in ("python", "py")
    ]


BLOCKS = [block for readme in READMES for block in python_blocks(readme)]
COMPLETE = [b for b in BLOCKS if b.excerpt_of is None]
EXCERPTS = [b for b in BLOCKS if b.excerpt_of is not None]


def test_every_readme_is_listed() -> None:
    found = {"README.md", "ARCHITECTURE.md"} | {
        str(p.relative_to(ROOT))
        for p in (*ROOT.glob("packages/*/README.md"), *ROOT.glob("docs/notes/*.md"))
    }
    assert found == set(READMES)


def test_no_block_names_a_file_without_the_marker() -> None:
    """A block whose first line mentions examples/ but is not the marker is a typo."""
    for block in BLOCKS:
        first = block.code.split("\n", 1)[0]
        assert "examples/" not in first or block.excerpt_of, f"{block}: {first!r}"


@pytest.mark.parametrize("block", COMPLETE, ids=str)
def test_complete_block_runs_as_pasted(block: Block, tmp_path: Path) -> None:
    python = ROOT / ".venvs" / READMES[block.readme] / "bin" / "python"
    assert python.exists(), f"{python} is missing: run make install"
    script = tmp_path / f"{Path(block.readme).parent.name or 'root'}_line{block.line}.py"
    script.write_text("\n" * block.line + block.code)  # tracebacks give the README's lines
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONVOSTORE_")}
    env["HOME"] = str(tmp_path / "home")  # what a framework keeps under ~ stays in tmp_path
    done = subprocess.run(
        [str(python), str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"{block} failed:\n{done.stderr}", pytrace=False)
    left = sorted(p.name for p in cwd.iterdir())
    if left:
        pytest.fail(f"{block} left files in the working directory: {left}", pytrace=False)


def _norm(line: str) -> str:
    """A line without its indentation and a linter's `# noqa` note."""
    return NOQA.sub("", line).strip()


@pytest.mark.parametrize("block", EXCERPTS, ids=str)
def test_excerpt_occurs_in_its_file(block: Block) -> None:
    source = ROOT / str(block.excerpt_of)
    assert source.is_file(), f"{block} names {block.excerpt_of}, which does not exist"
    remaining = iter(_norm(line) for line in source.read_text().splitlines())
    for line in map(_norm, block.code.splitlines()[1:]):
        if line and line != "..." and line not in remaining:
            pytest.fail(f"{block}: {line!r} is not in {block.excerpt_of} (after the lines before)")


def test_every_excerpted_file_is_run_by_a_test() -> None:
    tests = [p.read_text() for p in ROOT.glob("tests/*/test_*.py") if p.parent.name != "docs"]
    for name in {Path(str(b.excerpt_of)).name for b in EXCERPTS}:
        assert any(name in text for text in tests), f"no test names {name}"


def test_the_readmes_hold_both_kinds() -> None:
    """The collector finds blocks (a changed fence syntax would silently find none)."""
    assert len(COMPLETE) >= 10 and len(EXCERPTS) >= 4
