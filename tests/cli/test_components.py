"""The component registry: the core's component describes every table its migrations make,
with its primary key, and ``Backend.migrate`` takes a component."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import run
from convostore import ConversationStore
from convostore.backends import transfer as sql
from convostore.commands.migrate import uncovered_tables
from convostore.components import CORE, Component, Table, registered_components


def test_every_table_is_described_by_a_component(shared_url: str) -> None:
    """Every table the installed components' migrations create is in some component's list
    (so `convostore migrate` copies it); a table added to a migration without that fails."""
    with ConversationStore(shared_url) as store:
        for component in registered_components():
            store.backend.migrate(component)
        assert uncovered_tables(store.backend) == []
        names = store.backend.read(lambda tx: sql.table_names(tx, store.backend.dialect))
        described = {t.name for c in registered_components() for t in c.tables}
        assert described <= set(names)


def test_a_table_no_component_describes_is_found(shared_url: str) -> None:
    extra = Component("extra", steps=[["CREATE TABLE extra_things (id TEXT PRIMARY KEY)"]])
    with ConversationStore(shared_url) as store:
        store.backend.migrate(extra)
        assert uncovered_tables(store.backend) == ["extra_things"]


def test_keys_are_the_primary_keys(tmp_path: object) -> None:
    """Rows are copied in key order a batch at a time: the key must be the primary key."""
    with ConversationStore("memory://") as store:
        for component in registered_components():
            store.backend.migrate(component)
            for table in component.tables:
                rows = store.backend.read(
                    lambda tx, t=table: tx.execute(
                        "SELECT name, pk FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk",
                        [t.name],
                    )
                )
                assert tuple(r[0] for r in rows) == table.key, table.name


def test_migrate_takes_a_component_or_a_name_and_steps() -> None:
    steps = [
        ["CREATE TABLE a_one (id INTEGER PRIMARY KEY)"],
        ["CREATE TABLE a_two (id INTEGER PRIMARY KEY)"],
    ]
    with ConversationStore("memory://") as store:
        store.backend.migrate("a", steps[:1])
        store.backend.migrate(Component("a", steps=steps, tables=(Table("a_one", ("id",)),)))
        versions = store.backend.read(sql.schema_versions)
        assert versions["a"] == 2 and versions["core"] == CORE.version


def test_names_are_checked() -> None:
    import pytest

    with pytest.raises(ValueError, match="lowercase identifiers"):
        Table("x; DROP TABLE y", ("id",))
    with pytest.raises(ValueError, match="at least one column"):
        Table("x", ())


def test_commands_import_only_the_components_the_database_holds(tmp_path: Path) -> None:
    """Importing an adapter brings its framework (seconds, for CrewAI tens of seconds on a busy
    machine): ``migrate``, ``check``, ``prune`` and ``export`` of a database import only the
    components it holds. Here an installed adapter whose import fails stands for a slow one."""
    site = tmp_path / "site"
    (site / "heavy_adapter").mkdir(parents=True)
    (site / "heavy_adapter" / "__init__.py").write_text(
        "raise RuntimeError('the heavy adapter was imported')\n"
    )
    (site / "light_adapter.py").write_text(
        "from convostore.spi import Component, Table\n"
        "COMPONENT = Component('light', steps=[['CREATE TABLE light_things (id TEXT PRIMARY"
        " KEY)']], tables=(Table('light_things', ('id',)),))\n"
    )
    dist = site / "fake_adapters-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-adapters\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[convostore.components]\nheavy = heavy_adapter:COMPONENT\n"
        "light = light_adapter:COMPONENT\n"
    )
    env = {"PYTHONPATH": str(site)}
    src = f"sqlite:///{tmp_path / 'src.db'}"
    with ConversationStore(src) as store:
        store.append_message(conversation_id="c", role="user", content="x")
        store.backend.migrate(
            Component(
                "light",
                steps=[["CREATE TABLE light_things (id TEXT PRIMARY KEY)"]],
                tables=(Table("light_things", ("id",)),),
            )
        )
        store.backend.write(lambda tx: tx.execute("INSERT INTO light_things VALUES ('t')"))
    copied = run("migrate", src, f"sqlite:///{tmp_path / 'dst.db'}", env=env).stdout
    assert "light_things" in copied and "verified" in copied
    assert "ok: no problem found" in run("check", "--url", src, env=env).stdout
    run("prune", "--url", src, "--keep-last", "1", env=env)
    done = run("export", "--url", src, "-o", str(tmp_path / "e.jsonl"), env=env)
    assert "light_things (1 rows)" in done.stderr
