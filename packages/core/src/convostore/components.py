"""The component registry: every set of tables in a convostore database, described once.

A ``Component`` is what ``Backend.migrate`` creates (its versioned migration steps) and what
``convostore migrate`` copies (its tables, each walked in the order of its primary key). The
core's own component is ``CORE``; an adapter registers its own under the entry-point group
``convostore.components`` (``my-adapter = "my_adapter._commands:COMPONENT"``),
so a new adapter's tables are migrated and copied without the command knowing it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .backends.schema import MIGRATIONS

if TYPE_CHECKING:
    from .backends.base import Tx
    from .models import ConversationMeta

COMPONENTS_GROUP = "convostore.components"
"""The entry-point group under which adapter packages register their ``Component``."""

_NAME = re.compile(r"[a-z_][a-z0-9_]*\Z")


@dataclass(frozen=True)
class Table:
    """One table of a component: its name, its primary key's columns (the order rows are
    copied in, a batch at a time: text key columns must compare bytewise, ``{collate}``), a
    label for listings (``"LangGraph checkpoints"``), and the columns derived from the others
    (an index's, which ``migrate`` leaves for the destination to make)."""

    name: str
    key: tuple[str, ...]
    label: str = ""
    derived: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in (self.name, *self.key, *self.derived):
            if not _NAME.match(name):
                raise ValueError(f"table and column names are lowercase identifiers: {name!r}")
        if not self.key:
            raise ValueError(f"table {self.name!r}: key names at least one column")


PruneHook = Callable[[Any, "PruneRequest"], list[tuple[str, int]]]
"""``prune(store, request) -> [(what, how many), ...]``: a component's own retention, given the
``ConversationStore`` (typed loosely here: the registry sits below the store it serves)."""


DeleteHook = Callable[["Tx", "list[ConversationMeta]"], None]
"""``on_delete(tx, conversations)``: a component's own data of conversations it manages, deleted
inside the core's delete transaction (see ``Component.on_delete``)."""


@dataclass(frozen=True)
class PruneRequest:
    """What ``convostore prune`` asks each component to remove (see ``maintenance.prune``)."""

    older_than_ms: int | None  # delete what was last active before this time (epoch ms)
    keep_last: int | None  # trim histories to their newest ``keep_last`` entries
    user_id: str | None
    dry_run: bool


@dataclass(frozen=True)
class Component:
    """A named set of tables with its own migration version.

    ``steps``: the migration steps (``Backend.migrate`` runs the ones a database lacks).
    ``tables``: every table the steps create, so that ``migrate`` copies all of them (a test
    compares them with the database's own list). ``conversation_kinds``: labels for
    conversations an adapter keeps under an id prefix (``{"Claude sessions": "claude/"}``),
    counted by ``convostore stats``. ``prune``: the component's retention, if it keeps data of
    its own that ages (LangGraph threads). ``on_delete``: for a component that manages
    conversations (their metadata's ``managedBy`` names it, ``ConversationStore.as_component``),
    called by ``delete_conversation``, ``delete_conversations`` and ``delete_user_data`` inside
    their transaction with the managed conversations being deleted, so the component deletes
    what it keeps for them (a LangGraph thread) atomically with them. It runs only where the
    database holds the component's tables. ``derived_tables``: see below."""

    name: str
    steps: Sequence[Sequence[str]] = ()
    tables: tuple[Table, ...] = ()
    conversation_kinds: Mapping[str, str] = field(default_factory=dict)
    prune: PruneHook | None = None
    on_delete: DeleteHook | None = None
    package: str = ""  # the distribution to install for it, for error messages
    # Tables the database makes from the others (a full-text index and the tables it keeps,
    # named ``<name>`` and ``<name>_*``): never copied, and no table of the component's.
    derived_tables: tuple[str, ...] = ()

    def derives(self, table: str) -> bool:
        """Whether ``table`` is one of ``derived_tables`` or a table one of them keeps."""
        return any(table == d or table.startswith(f"{d}_") for d in self.derived_tables)

    @property
    def version(self) -> int:
        return len(self.steps)


CORE = Component(
    name="core",
    steps=MIGRATIONS,
    # Every table of the core's migrations: a table added to MIGRATIONS is added here too
    # (tests/cli/test_components.py fails otherwise), and `convostore migrate` copies it.
    tables=(
        Table("convostore_conversations", ("id",), "conversations"),
        Table(
            "convostore_messages",
            ("conversation_id", "seq"),
            "messages",
            derived=("search_rid", "search_text"),
        ),
        Table("convostore_clock", ("id",), "ordered clock"),
        Table("convostore_changes", ("conversation_id", "seq"), "conversation changes"),
        Table("convostore_memory_stores", ("id",), "memory stores", derived=("indexed_seq",)),
        Table(
            "convostore_memory_entries",
            ("store_id", "path"),
            "memory entries",
            derived=("search_rid", "search_text"),
        ),
        Table("convostore_memory_versions", ("store_id", "seq"), "memory versions"),
    ),
    package="convostore",
    # The search index (SQLite's FTS5 table and the tables it keeps): made from the messages
    # by each database itself, never copied (``convostore migrate`` builds it at the end).
    derived_tables=("convostore_search", "convostore_memory_search"),
)

SCHEMA_TABLE = "convostore_schema"
"""The registry's own table (component -> version): written by ``Backend.migrate``, never
copied (the destination's migrations write their own)."""


KNOWN_PACKAGES = {
    "convostore-langgraph": "convostore-langgraph",
    "crewai": "convostore-crewai",
    "claude": "convostore-claude",
}
"""This project's adapters' components and the distribution that registers each, to name the
``pip install`` when a database holds tables of one that is not installed."""


def install_hint(name: str) -> str:
    """What brings the component ``name``: the ``pip install`` of this project's adapter that
    registers it (``"pip install convostore-crewai"``), else words saying so."""
    package = KNOWN_PACKAGES.get(name)
    return f"pip install {package}" if package else "install the adapter that wrote them"


def _load(entry: importlib.metadata.EntryPoint) -> Component:
    loaded: Any = entry.load()
    component = loaded() if callable(loaded) and not isinstance(loaded, Component) else loaded
    if not isinstance(component, Component):
        raise TypeError(f"entry point {entry.value!r} ({COMPONENTS_GROUP}) is not a Component")
    return component


@functools.cache
def _entries() -> dict[str, importlib.metadata.EntryPoint]:
    return {e.name: e for e in importlib.metadata.entry_points(group=COMPONENTS_GROUP)}


@functools.cache
def registered_components() -> tuple[Component, ...]:
    """The core's component, then every installed adapter's, by name (each adapter's module
    is imported: ``components_named`` imports only those asked for)."""
    found = {c.name: c for c in map(_load, _entries().values())}
    found.pop(CORE.name, None)
    return (CORE, *(found[name] for name in sorted(found)))


@functools.cache
def component_named(name: str) -> Component | None:
    """The registered component ``name``, importing only the module that registers it where
    its entry point bears its name (as this project's do), else looking through them all."""
    if name == CORE.name:
        return CORE
    entry = _entries().get(name)
    if entry is not None:
        component = _load(entry)
        if component.name == name:
            return component
    return next((c for c in registered_components() if c.name == name), None)


def components_named(names: Iterable[str]) -> tuple[list[Component], list[str]]:
    """The registered components among ``names`` (the core first, then by name), and the
    names no installed package registers. Importing an adapter can take seconds (its
    framework comes with it): commands ask for the components a database holds only."""
    found: list[Component] = []
    missing: list[str] = []
    for name in sorted(set(names), key=lambda n: (n != CORE.name, n)):
        component = component_named(name)
        if component is None:
            missing.append(name)
        else:
            found.append(component)
    return found, missing
