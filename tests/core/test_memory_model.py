"""Random operation sequences against the memory stores and a plain model of their rules:
every entry's version history is exactly the sequence of operations that succeeded, and the
counters always equal a recount."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from convostore import (
    ConversationStore,
    Limits,
    MemoryEntryNotFoundError,
    MemoryPathConflictError,
    MemoryQuotaExceededError,
    MemoryStoreOwnershipError,
    MemoryValidationError,
    MemoryVersionConflictError,
)
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

QUOTA = 4
PATHS = st.sampled_from(["a.md", "b/c.md", "b/d.md", "é/x", "b"])
TEXT = st.text(max_size=6)
USERS = st.sampled_from([None, "u1", "u2"])
PICK = st.integers(0, 20)


@dataclass
class Ver:
    vid: str
    entry_id: str
    version: int
    operation: str
    path: str
    size: int
    created_at: int
    content: str | None
    redacted: bool = False


@dataclass
class Entry:
    eid: str
    path: str
    version: int
    created_at: int
    updated_at: int
    content: str
    current: Ver


@dataclass
class Store:
    sid: str
    user: str | None
    entries: dict[str, Entry] = field(default_factory=dict)
    versions: list[Ver] = field(default_factory=list)


def run_model_test(url: str) -> None:
    now = [1_000]

    class MemoryVersusModel(RuleBasedStateMachine):
        @initialize()
        def open(self) -> None:
            def opened() -> ConversationStore:
                limits = Limits(max_memory_entries_per_store=QUOTA)
                return ConversationStore(url, clock=lambda: now[0], limits=limits)

            self.store = opened()
            # A second writer on a shared database: each store remembers the rows it wrote
            # last, so writes through the other make what it remembers out of date.
            self.writers = [self.store] + ([] if url.startswith("memory") else [opened()])
            self.model: list[Store] = []

        def teardown(self) -> None:
            for s in self.model:
                self.store.delete_memory_store(s.sid)
            for writer in self.writers:
                writer.close()

        def writer(self, via: int) -> ConversationStore:
            return self.writers[via % len(self.writers)]

        def pick_store(self, pick: int) -> Store | None:
            return self.model[pick % len(self.model)] if self.model else None

        @staticmethod
        def pick_entry(s: Store, pick: int) -> Entry | None:
            entries = sorted(s.entries.values(), key=lambda e: e.eid)
            return entries[pick % len(entries)] if entries else None

        def refused(self, s: Store, user: str | None) -> bool:
            return user is not None and s.user is not None and s.user != user

        def add_version(
            self, s: Store, eid: str, version: int, *, op: str, path: str, content: str | None
        ) -> Ver:
            [got] = [
                v
                for v in self.store.list_memory_versions(s.sid, entry_id=eid, limit=100).items
                if v.version == version
            ]
            size = 0 if content is None else len(content.encode())
            ver = Ver(got.version_id, eid, version, op, path, size, now[0], content)
            s.versions.append(ver)
            return ver

        @rule()
        def tick(self) -> None:
            now[0] += 1

        @rule(user=USERS)
        def create_store(self, user: str | None) -> None:
            made = self.store.create_memory_store("s", user_id=user)
            self.model.append(Store(made.memory_store_id, user))

        @rule(pick=PICK, path=PATHS, content=TEXT, user=USERS, via=PICK)
        def create(self, pick: int, path: str, content: str, user: str | None, via: int) -> None:
            s = self.pick_store(pick)
            if s is None:
                return
            store = self.writer(via)
            call = lambda: store.create_memory(s.sid, path, content, user_id=user)  # noqa: E731
            if self.refused(s, user):
                with pytest.raises(MemoryStoreOwnershipError):
                    call()
            elif any(e.path == path for e in s.entries.values()):
                with pytest.raises(MemoryPathConflictError):
                    call()
            elif len(s.entries) >= QUOTA:
                with pytest.raises(MemoryQuotaExceededError):
                    call()
            else:
                got = call()
                ver = self.add_version(s, got.entry_id, 1, op="create", path=path, content=content)
                s.entries[got.entry_id] = Entry(got.entry_id, path, 1, now[0], now[0], content, ver)

        @rule(
            pick=PICK,
            which=PICK,
            content=st.none() | TEXT,
            path=st.none() | PATHS,
            skew=st.sampled_from([0, 0, -1, 1]),
            via=PICK,
        )
        def update(
            self,
            *,
            pick: int,
            which: int,
            content: str | None,
            path: str | None,
            skew: int,
            via: int,
        ) -> None:
            s = self.pick_store(pick)
            e = self.pick_entry(s, which) if s else None
            if s is None or e is None:
                return
            version = e.version + skew
            store = self.writer(via)

            def call() -> object:
                return store.update_memory(s.sid, e.eid, content, version, path=path)

            if (content is None and path is None) or version < 1:
                with pytest.raises(MemoryValidationError):
                    call()
            elif skew:
                with pytest.raises(MemoryVersionConflictError) as caught:
                    call()
                assert caught.value.current_version == e.version
            elif (
                path is not None
                and path != e.path
                and any(x.path == path for x in s.entries.values())
            ):
                with pytest.raises(MemoryPathConflictError):
                    call()
            elif content is None and e.current.redacted:
                with pytest.raises(MemoryValidationError):
                    call()
            else:
                call()
                e.version += 1
                e.path = path or e.path
                e.content = e.content if content is None else content
                e.updated_at = now[0]
                e.current = self.add_version(
                    s, e.eid, e.version, op="update", path=e.path, content=e.content
                )

        @rule(
            pick=PICK,
            which=PICK,
            with_version=st.booleans(),
            skew=st.sampled_from([0, 0, 1]),
            via=PICK,
        )
        def delete(self, *, pick: int, which: int, with_version: bool, skew: int, via: int) -> None:
            s = self.pick_store(pick)
            e = self.pick_entry(s, which) if s else None
            if s is None:
                return
            store = self.writer(via)
            if e is None:
                with pytest.raises(MemoryEntryNotFoundError):
                    store.delete_memory(s.sid, "mem_missing")
                return
            version = e.version + skew if with_version else None
            if version is not None and skew:
                with pytest.raises(MemoryVersionConflictError):
                    store.delete_memory(s.sid, e.eid, version=version)
                return
            got = store.delete_memory(s.sid, e.eid, version=version)
            del s.entries[e.eid]
            ver = self.add_version(s, e.eid, e.version + 1, op="delete", path=e.path, content=None)
            assert (got.version_id, got.operation, got.size) == (ver.vid, "delete", 0)
            # a retry answers with the same deletion version
            assert self.store.delete_memory(s.sid, e.eid) == got

        @rule(pick=PICK, which=PICK, via=PICK)
        def redact(self, pick: int, which: int, via: int) -> None:
            s = self.pick_store(pick)
            if s is None or not s.versions:
                return
            ver = s.versions[which % len(s.versions)]
            got = self.writer(via).redact_memory_version(s.sid, ver.vid)
            ver.redacted, ver.content = True, None
            assert got.redacted and got.content is None

        @rule(pick=PICK)
        def delete_store(self, pick: int) -> None:
            s = self.pick_store(pick)
            if s is not None:
                self.store.delete_memory_store(s.sid)
                self.model.remove(s)

        @rule(user=st.sampled_from(["u1", "u2"]))
        def delete_user(self, user: str) -> None:
            self.store.delete_user_data(user_id=user)
            self.model = [s for s in self.model if s.user != user]

        @rule(pick=PICK, limit=st.integers(1, 3), prefix=st.sampled_from([None, "b", "b/", "é"]))
        def walk_entries(self, pick: int, limit: int, prefix: str | None) -> None:
            s = self.pick_store(pick)
            if s is None:
                return
            expected = sorted(
                e.path for e in s.entries.values() if prefix is None or e.path.startswith(prefix)
            )
            seen: list[str] = []
            cursor = None
            while True:
                page = self.store.list_memories(
                    s.sid, path_prefix=prefix, limit=limit, after=cursor
                )
                seen += [e.path for e in page.items]
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert seen == expected

        @invariant()
        def same_state(self) -> None:
            listed = self.store.list_memory_stores(limit=100).items
            assert sorted(m.memory_store_id for m in listed) == sorted(s.sid for s in self.model)
            for s in self.model:
                meta = self.store.get_memory_store(s.sid)
                assert meta is not None
                sizes = [len(e.content.encode()) for e in s.entries.values()]
                assert (meta.entry_count, meta.total_size) == (len(sizes), sum(sizes))
                entries = self.store.list_memories(s.sid, limit=100).items
                assert [(e.path, e.entry_id, e.version, e.redacted) for e in entries] == sorted(
                    (e.path, e.eid, e.version, e.current.redacted) for e in s.entries.values()
                )
                for e in s.entries.values():
                    got = self.store.get_memory(s.sid, e.eid)
                    assert got is not None
                    assert (got.content, got.created_at, got.updated_at, got.size) == (
                        None if e.current.redacted else e.content,
                        e.created_at,
                        e.updated_at,
                        len(e.content.encode()),
                    )
                versions = self.store.list_memory_versions(s.sid, limit=100).items
                assert [
                    (v.version_id, v.entry_id, v.version, v.operation, v.path, v.size, v.redacted)
                    for v in versions
                ] == [
                    (v.vid, v.entry_id, v.version, v.operation, v.path, v.size, v.redacted)
                    for v in s.versions
                ]
                for v in s.versions:
                    got_version = self.store.get_memory_version(s.sid, v.vid)
                    assert got_version is not None
                    assert (got_version.content, got_version.created_at) == (
                        v.content,
                        v.created_at,
                    )

    run_state_machine_as_test(
        MemoryVersusModel,
        settings=settings(
            max_examples=30,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


def test_memory_stores_behave_like_the_model(backend_url: str) -> None:
    run_model_test(backend_url)
