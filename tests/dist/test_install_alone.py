"""Each adapter installs alone, as a user would before the packages are published:
``make dist`` builds every package into ``dist/``, then ``pip install --find-links dist
convostore-<x>`` in an empty virtual environment brings the adapter with its core and its
framework, and the adapter's README example runs there. The command with the two adapters that
keep tables of their own, installed together as the core README says, migrates both.

Run by ``make test-dist`` (part of ``make test``), which builds ``dist/`` first and passes the
uv command in ``$UV``; uv stands in for pip because it installs from its cache in seconds.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
DIST = ROOT / "dist"
UV = shlex.split(os.environ.get("UV", "uv"))

ADAPTERS = {
    "convostore-langgraph": "examples/langgraph_quickstart.py",
    "convostore-openai": "examples/openai_two_turns.py",
    "convostore-claude": "examples/claude_session_store.py",
    "convostore-crewai": "examples/crewai_quickstart.py",
    "convostore-server": "examples/server_quickstart.py",
}


def _run(*args: str | Path, cwd: Path) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"{shlex.join(map(str, args))}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def constraints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The framework versions the tests run against (the root pyproject's pins)."""
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"][
        "constraint-dependencies"
    ]
    path = tmp_path_factory.mktemp("pins") / "constraints.txt"
    path.write_text("\n".join(pins) + "\n")
    return path


def test_dist_holds_every_package() -> None:
    wheels = {p.name.split("-")[0].replace("_", "-") for p in DIST.glob("*.whl")}
    assert wheels == {"convostore", *ADAPTERS}, "run `make dist` first"


@pytest.mark.parametrize(("package", "example"), ADAPTERS.items())
def test_an_adapter_installs_alone_and_runs_its_example(
    package: str, example: str, tmp_path: Path, constraints: Path
) -> None:
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    _run(*UV, "venv", "-q", "--python", sys.executable, venv, cwd=tmp_path)
    # --refresh-package: uv's cache keeps a wheel it took from dist/ by its path, so a later
    # build of the same version at the same path (a new clone of the checkout) would install
    # the earlier build
    _run(
        *UV, "pip", "install", "-q", "--python", python, "--find-links", DIST,
        "--refresh-package", "convostore", "--refresh-package", package,
        "-c", constraints, package, cwd=tmp_path,
    )  # fmt: skip
    installed = _run(*UV, "pip", "list", "--python", python, cwd=tmp_path)
    ours = sorted(line.split()[0] for line in installed.splitlines() if "convostore" in line)
    assert ours == sorted({"convostore", package})  # the adapter and its core, nothing else of ours
    # Run from an empty directory: nothing of the checkout is importable there.
    out = _run(python, ROOT / example, cwd=tmp_path)
    assert out.strip()
    if package == "convostore-server":  # the web view's files (the client's build in
        # web/client/ too) are package data of the wheel
        listing = (
            "from convostore_server.webview import WEB_DIR;"
            " print(*sorted(p.relative_to(WEB_DIR).as_posix() for p in WEB_DIR.rglob('*')))"
        )
        shipped = _run(python, "-c", listing, cwd=tmp_path).split()
        web = ROOT / "packages/server/src/convostore_server/web"
        assert shipped == sorted(p.relative_to(web).as_posix() for p in web.rglob("*"))
        assert "client/index.js" in shipped


FILL = """
import sys
from convostore import ConversationStore
from convostore_crewai import ConvostoreMemoryStorage
from crewai.memory.types import MemoryRecord
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph

url = sys.argv[1]
with ConversationStore(url) as store:
    store.append_message(conversation_id="c", role="user", content="hello")
    graph = StateGraph(MessagesState)
    graph.add_node("answer", lambda state: {"messages": [AIMessage("hi")]})
    graph.add_edge(START, "answer")
    app = graph.compile(checkpointer=store.langgraph_checkpointer)
    app.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t1"}})
storage = ConvostoreMemoryStorage(url)
storage.save([MemoryRecord(content="SQLite is the default", scope="/crew", categories=["db"])])
storage.close()
"""


def test_the_command_with_langgraph_and_crewai_installs_together_and_migrates_both(
    tmp_path: Path, constraints: Path
) -> None:
    """The install the core README names for a database holding LangGraph and CrewAI data
    (``make install-tools`` builds the same in .venvs/tools): ``migrate`` copies both
    adapters' tables, ``check`` and ``stats`` read them."""
    readme = " ".join((ROOT / "packages" / "core" / "README.md").read_text().split())
    packages = ["convostore[cli,postgres]", "convostore-langgraph", "convostore-crewai"]
    assert f"pip install '{packages[0]}' {packages[1]} {packages[2]}" in readme
    venv = tmp_path / "venv"
    python, convostore = venv / "bin" / "python", venv / "bin" / "convostore"
    _run(*UV, "venv", "-q", "--python", sys.executable, venv, cwd=tmp_path)
    _run(
        *UV, "pip", "install", "-q", "--python", python, "--find-links", DIST, "-c", constraints,
        *packages, cwd=tmp_path,
    )  # fmt: skip
    src, dst = f"sqlite:///{tmp_path / 'src.db'}", f"sqlite:///{tmp_path / 'dst.db'}"
    _run(python, "-c", FILL, src, cwd=tmp_path)
    copied = _run(convostore, "migrate", src, dst, cwd=tmp_path)
    assert "lg_checkpoints" in copied and "crewai_memory_records" in copied
    assert "verified" in copied
    assert "ok: no problem found" in _run(convostore, "check", "--url", dst, cwd=tmp_path)
    stats = _run(convostore, "stats", "--url", dst, cwd=tmp_path)
    assert "LangGraph checkpoints" in stats and "CrewAI memory records" in stats


def test_the_typescript_client_installs_from_its_tarball(tmp_path: Path) -> None:
    """``npm install dist/convostore-client-*.tgz`` in an empty project: the package's ES
    modules, their type declarations and the sources their maps name, no test, and no other
    package (it has no runtime dependency)."""
    tarballs = sorted(DIST.glob("convostore-client-*.tgz"))
    assert len(tarballs) == 1, "run `make dist` first"
    (tmp_path / "package.json").write_text('{"name": "app", "private": true, "type": "module"}')
    _run("npm", "install", "--offline", "--no-audit", "--no-fund", tarballs[0], cwd=tmp_path)
    installed = tmp_path / "node_modules" / "@convostore" / "client"
    assert (installed / "dist" / "index.d.ts").is_file()
    assert (installed / "src" / "client.ts").is_file() and not (installed / "test").exists()
    assert sorted(p.name for p in (tmp_path / "node_modules").iterdir()) == [
        ".package-lock.json",
        "@convostore",
    ]
    script = (
        "import { ConvostoreClient, MemoryValidationError, toOpenAIInput } from '@convostore/client';"
        " const c = new ConvostoreClient({ baseUrl: 'http://127.0.0.1:9' });"
        " console.log(JSON.stringify(toOpenAIInput([{ role: 'user', content: 'hi' }])),"
        " typeof c.appendMessage, MemoryValidationError.name);"
    )
    out = _run("node", "--input-type=module", "-e", script, cwd=tmp_path)
    assert out.split() == ['[{"role":"user","content":"hi"}]', "function", "MemoryValidationError"]
