"""The contract between the core and its adapters (ARCHITECTURE.md), checked on the sources:
adapters import ``convostore`` and ``convostore.spi`` only, never query the core's tables, and
register their framework entry points instead of being imported by name."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import convostore
import pytest
from convostore import spi

ROOT = Path(__file__).parents[2]
CORE_SRC = ROOT / "packages" / "core" / "src" / "convostore"
ADAPTERS = sorted(
    p
    for p in (ROOT / "packages").iterdir()
    # the Python packages (packages/client-ts is the TypeScript client, built by npm)
    if p.name not in ("core", "server") and (p / "pyproject.toml").is_file()
)
ADAPTER_FILES = sorted(f for a in ADAPTERS for f in (a / "src").rglob("*.py"))
# The HTTP server is no framework adapter: it registers no view and uses the public API only.
SERVER_FILES = sorted((ROOT / "packages" / "server" / "src").rglob("*.py"))
ALLOWED = {"convostore", "convostore.spi"}
CORE_TABLES = (
    "convostore_conversations",
    "convostore_messages",
    "convostore_schema",
    "convostore_clock",
    "convostore_memory_",
)


def _core_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [n for n in names if n == "convostore" or n.startswith("convostore.")]
    return found


def test_there_are_adapters_to_check() -> None:
    assert len(ADAPTERS) >= 4 and len(ADAPTER_FILES) >= 10


@pytest.mark.parametrize("path", ADAPTER_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_adapters_import_the_public_api_and_the_spi_only(path: Path) -> None:
    private = [m for m in _core_imports(path) if m not in ALLOWED]
    assert private == [], f"{path.name} imports {private}; use convostore or convostore.spi"


@pytest.mark.parametrize("path", ADAPTER_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_adapters_never_query_the_core_tables(path: Path) -> None:
    text = path.read_text()
    assert [t for t in CORE_TABLES if t in text] == []


@pytest.mark.parametrize("path", SERVER_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_server_uses_the_public_api_only(path: Path) -> None:
    private = [m for m in _core_imports(path) if m != "convostore"]
    assert private == [], f"{path.name} imports {private}; the server uses convostore only"
    assert [t for t in CORE_TABLES if t in path.read_text()] == []


def test_the_core_imports_no_adapter() -> None:
    for path in CORE_SRC.rglob("*.py"):
        text = path.read_text()
        for adapter in (
            "convostore_langgraph",
            "convostore_openai",
            "convostore_claude",
            "convostore_crewai",
            "convostore_server",
        ):
            assert adapter not in text, f"{path.name} names {adapter}"


def test_every_adapter_registers_its_views() -> None:
    """Each adapter's pyproject names factories that exist in its sources."""
    for adapter in ADAPTERS:
        project = tomllib.loads((adapter / "pyproject.toml").read_text())["project"]
        views = project.get("entry-points", {}).get("convostore.views", {})
        assert views, f"{adapter.name} registers no convostore.views entry point"
        for target in views.values():
            module, func = target.split(":")
            source = adapter / "src" / Path(*module.split(".")).with_suffix(".py")
            assert f"def {func}(" in source.read_text(), target


def test_the_spi_is_what_architecture_md_names() -> None:
    assert sorted(spi.__all__) == sorted(
        [
            "Backend",
            "Component",
            "Limits",
            "MAX_INT64",
            "MemoryStoreBinding",
            "PruneRequest",
            "POSTGRESQL_ONLY",
            "SQLITE_ONLY",
            "StartedSync",
            "StoreLike",
            "Table",
            "Tx",
            "WouldBlock",
            "check_id",
            "check_int",
            "check_optional_id",
            "check_optional_int",
            "check_text",
            "encode_json",
            "normalize_memory_path",
            "open_store",
            "run_in_thread",
            "run_sync",
        ]
    )
    architecture = (ROOT / "ARCHITECTURE.md").read_text()
    for name in (
        "Backend",
        "Tx",
        "run_sync",
        "run_in_thread",
        "open_store",
        "MemoryStoreBinding",
        "check_id",
        "check_int",
        "normalize_memory_path",
    ):
        assert f"`{name}`" in architecture


def test_the_public_names_of_the_core() -> None:
    """Pinned, as httpx pins its exports: a name added or removed here is an API change."""
    assert sorted(convostore.__all__) == sorted(
        [
            "AsyncConversationStore",
            "SEARCH_HISTORY_AFTER_HELP",
            "SEARCH_HISTORY_DESCRIPTION",
            "SEARCH_HISTORY_NAME",
            "SEARCH_HISTORY_QUERY_HELP",
            "asearch_history",
            "bind_recall",
            "RecallBinding",
            "search_history",
            "MANAGED_BY_KEY",
            "ChangeKind",
            "ClosedError",
            "ConflictError",
            "ContentTooLargeError",
            "ConversationChange",
            "ConversationChanges",
            "ConversationExistsError",
            "ConversationManagedError",
            "ConversationMeta",
            "ConversationNotFoundError",
            "ConversationOwnershipError",
            "ConversationStore",
            "ConvostoreError",
            "Limits",
            "ListConversationsResult",
            "ListMemoriesResult",
            "ListMemoryStoresResult",
            "ListMemoryVersionsResult",
            "MEMORY_STORES_KEY",
            "MemoryEntry",
            "MemoryEntryNotFoundError",
            "MemoryOperation",
            "MemorySearchHit",
            "MemorySearchResult",
            "MemoryPathConflictError",
            "MemoryQuotaExceededError",
            "MemoryStore",
            "MemoryStoreNotFoundError",
            "MemoryStoreOwnershipError",
            "MemoryValidationError",
            "MemoryVersion",
            "MemoryVersionConflictError",
            "MemoryVersionNotFoundError",
            "Message",
            "MessageIdConflictError",
            "MessageInput",
            "MessageNotFoundError",
            "NotFoundError",
            "Order",
            "OwnershipError",
            "PromptContext",
            "Role",
            "SearchHit",
            "SearchResult",
            "TITLE_KEY",
            "StorageError",
            "aensure_title",
            "afold_summary",
            "aprompt_context",
            "amemory_context",
            "ensure_title",
            "first_exchange",
            "fold_summary",
            "memory_context",
            "prompt_context",
            "responses_item_role",
            "run_in_thread",
            "run_sync",
            "to_anthropic_messages",
            "to_anthropic_system",
            "to_openai_input",
        ]
    )
    for name in convostore.__all__:
        assert getattr(convostore, name) is not None
    public = {n for n in dir(convostore) if not n.startswith("_")}
    modules = {
        "async_store",
        "backends",
        "changes",
        "commands",
        "components",
        "conventions",
        "conversations",
        "convert",
        "engine",
        "errors",
        "forks",
        "ids",
        "memory",
        "messages",
        "models",
        "recent",
        "search",
        "search_text",
        "spi",
        "store",
        "sync",
        "telemetry",
        "threads",
        "validation",
        "views",
    }
    assert public - set(convostore.__all__) <= modules
