"""``convostore stats``: rows and bytes of every component's tables."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..backends import transfer as sql
from ..backends.keys import prefix_upper
from ..components import (
    components_named,
    install_hint,
    registered_components,
)
from ..store import ConversationStore

# -- stats -----------------------------------------------------------------------------------


@dataclass
class Stat:
    component: str
    what: str
    rows: int | None  # None: a component this install cannot read
    bytes: int | None  # on disk with its indexes; None where the database cannot tell


def stats(store: ConversationStore) -> list[Stat]:
    """Rows and bytes of every registered component's tables the database holds, and the
    conversations an adapter keeps under its id prefix (``Component.conversation_kinds``);
    a component whose tables the database holds but no installed package registers is a
    row saying which ``pip install`` brings it."""
    backend = store.backend
    present = set(backend.read(lambda tx: sql.table_names(tx, backend.dialect)))
    held = backend.read(sql.schema_versions)
    result: list[Stat] = []
    for component in registered_components():
        tables = [t for t in component.tables if t.name in present]
        sizes = backend.read(
            functools.partial(
                sql.table_bytes, dialect=backend.dialect, tables=[t.name for t in tables]
            )
        )
        for table in tables:
            rows = backend.read(functools.partial(sql.count_rows, table=table.name))
            size = None if sizes is None else sizes.get(table.name, 0)
            result.append(Stat(component.name, table.label or table.name, rows, size))
        for label, prefix in component.conversation_kinds.items():
            count, messages = backend.read(
                functools.partial(
                    sql.conversations_by_prefix_stats, prefix=prefix, upper=prefix_upper(prefix)
                )
            )
            result.append(Stat(component.name, label, count, None))
            result.append(Stat(component.name, f"{label}: entries", messages, None))
    _, missing = components_named(held)
    for name in missing:
        result.append(
            Stat(name, f"tables no installed package reads: {install_hint(name)}", None, None)
        )
    return result
