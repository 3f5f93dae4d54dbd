"""Random operation sequences against the store and a plain model of the reference semantics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from convostore import (
    ConversationOwnershipError,
    ConversationStore,
    Limits,
    MemoryQuotaExceededError,
    MemoryValidationError,
    MessageIdConflictError,
    MessageNotFoundError,
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

QUOTA = 3
CIDS = st.sampled_from(["c0", "c1", "c2"])
USERS = st.sampled_from([None, "u1", "u2"])
ROLES = st.sampled_from(["user", "assistant", "system", "tool"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
CONTENT = (
    st.text(max_size=8)
    | st.lists(st.text(max_size=4), max_size=3)
    | st.dictionaries(st.text(max_size=3), JSON, max_size=3)
)
METADATA = st.none() | st.dictionaries(st.text(max_size=3), JSON, max_size=3)
CLIENT_IDS = st.one_of(st.none(), st.none(), st.none(), st.sampled_from(["k1", "k2"]))


@dataclass
class Msg:
    id: str
    role: str
    content: Any
    metadata: Any
    created_at: int
    updated_at: int | None = None

    def view(self) -> tuple[Any, ...]:
        return (self.id, self.role, self.content, self.metadata, self.created_at, self.updated_at)


@dataclass
class Conv:
    user: str | None
    created_at: int
    last: int
    metadata: dict[str, Any] | None = None
    messages: list[Msg] = field(default_factory=list)


def views(messages: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (m.message_id, m.role, m.content, m.metadata, m.created_at, m.updated_at) for m in messages
    ]


def run_model_test(url: str) -> None:
    now = [1_000]

    class StoreVersusModel(RuleBasedStateMachine):
        @initialize()
        def open(self) -> None:
            self.store = ConversationStore(
                url, clock=lambda: now[0], limits=Limits(max_messages_per_conversation=QUOTA)
            )
            self.model: dict[str, Conv] = {}

        def teardown(self) -> None:
            for cid in ["c0", "c1", "c2"]:
                self.store.delete_conversation(conversation_id=cid)
            self.store.close()

        @rule()
        def tick(self) -> None:
            now[0] += 1

        def ids(self, cid: str) -> list[str]:
            conv = self.model.get(cid)
            return [m.id for m in conv.messages] if conv else []

        @rule(
            cid=CIDS,
            batch=st.lists(st.tuples(ROLES, CONTENT, METADATA, CLIENT_IDS), min_size=1, max_size=3),
            user=USERS,
        )
        def append(self, cid: str, batch: list[tuple[Any, ...]], user: str | None) -> None:
            messages = [
                {"role": r, "content": c, "metadata": m, **({"message_id": k} if k else {})}
                for r, c, m, k in batch
            ]
            keys = [k for *_, k in batch if k]
            conv = self.model.get(cid)
            expected: type[Exception] | None = None
            existing = {m.id: m for m in conv.messages} if conv else {}
            new = [m for m in messages if m.get("message_id") not in existing]
            if len(keys) != len(set(keys)):
                expected = MemoryValidationError
            elif conv and user and conv.user and conv.user != user:
                expected = ConversationOwnershipError
            elif any(
                (
                    existing[m["message_id"]].role,
                    existing[m["message_id"]].content,
                    existing[m["message_id"]].metadata,
                )
                != (m["role"], m["content"], m["metadata"])
                for m in messages
                if m.get("message_id") in existing
            ):
                expected = MessageIdConflictError
            elif new and (len(conv.messages) if conv else 0) + len(new) > QUOTA:
                expected = MemoryQuotaExceededError
            if expected is not None:
                with pytest.raises(expected):
                    self.store.append_messages(conversation_id=cid, messages=messages, user_id=user)  # type: ignore[arg-type]
                return
            ids = self.store.append_messages(conversation_id=cid, messages=messages, user_id=user)  # type: ignore[arg-type]
            assert len(ids) == len(messages)
            for k, mid in zip([m.get("message_id") for m in messages], ids, strict=True):
                assert k is None or k == mid
            if conv is None:
                conv = self.model[cid] = Conv(user=user, created_at=now[0], last=now[0])
            if new:
                conv.user = conv.user or user
                conv.last = max(conv.last, now[0])
                for m, mid in zip(messages, ids, strict=True):
                    if mid not in existing:
                        conv.messages.append(
                            Msg(mid, m["role"], m["content"], m["metadata"], now[0])
                        )

        @rule(cid=CIDS, role=ROLES, content=CONTENT, user=USERS)
        def append_one(self, cid: str, role: str, content: Any, user: str | None) -> None:
            self.append(cid, [(role, content, None, None)], user)

        @rule(
            cid=CIDS,
            limit=st.integers(1, 8),
            order=st.sampled_from(["asc", "desc"]),
            side=st.sampled_from([None, "after", "before"]),
            pick=st.integers(0, 10),
        )
        def get_messages(
            self, cid: str, limit: int, order: str, side: str | None, pick: int
        ) -> None:
            msgs = self.model[cid].messages if cid in self.model else []
            if side and not msgs:
                return
            if side is None:
                page = msgs[:limit] if order == "asc" else msgs[::-1][:limit]
                got = self.store.get_messages(conversation_id=cid, limit=limit, order=order)  # type: ignore[arg-type]
            else:
                at = pick % len(msgs)
                page = (
                    msgs[at + 1 : at + 1 + limit]
                    if side == "after"
                    else msgs[max(at - limit, 0) : at]
                )
                if order == "desc":
                    page = page[::-1]
                got = self.store.get_messages(
                    conversation_id=cid,
                    limit=limit,
                    order=order,
                    **{side: msgs[at].id},  # type: ignore[arg-type]
                )
            assert views(got) == [m.view() for m in page]

        @rule(cid=CIDS, pick=st.integers(0, 10), content=CONTENT | st.none(), metadata=METADATA)
        def update_message(self, cid: str, pick: int, content: Any, metadata: Any) -> None:
            msgs = self.model[cid].messages if cid in self.model else []
            if content is None and metadata is None:
                return
            if not msgs:
                with pytest.raises(MessageNotFoundError):
                    self.store.update_message(conversation_id=cid, message_id="k1", content="x")
                return
            target = msgs[pick % len(msgs)]
            got = self.store.update_message(
                conversation_id=cid, message_id=target.id, content=content, metadata=metadata
            )
            if content is not None:
                target.content = content
            if metadata is not None:
                target.metadata = metadata
            target.updated_at = now[0]
            assert views([got]) == [target.view()]

        @rule(cid=CIDS, pick=st.integers(0, 10))
        def delete_message(self, cid: str, pick: int) -> None:
            msgs = self.model[cid].messages if cid in self.model else []
            mid = msgs[pick % len(msgs)].id if msgs else "k2"
            self.store.delete_message(conversation_id=cid, message_id=mid)
            if msgs:
                del msgs[pick % len(msgs)]

        @rule(cid=CIDS)
        def pop(self, cid: str) -> None:
            msgs = self.model[cid].messages if cid in self.model else []
            got = self.store.pop_message(conversation_id=cid)
            assert (got and views([got])[0]) == (msgs and msgs.pop().view()) or (
                got is None and not msgs
            )

        @rule(cid=CIDS)
        def clear(self, cid: str) -> None:
            self.store.clear_messages(conversation_id=cid)
            if cid in self.model:
                self.model[cid].messages.clear()

        @rule(
            cid=CIDS,
            patch=st.dictionaries(st.sampled_from(["a", "b", "c"]), st.none() | JSON, max_size=3),
            user=USERS,
        )
        def update_conversation(self, cid: str, patch: dict[str, Any], user: str | None) -> None:
            conv = self.model.get(cid)
            if conv and user and conv.user and conv.user != user:
                with pytest.raises(ConversationOwnershipError):
                    self.store.update_conversation(
                        conversation_id=cid, metadata=patch, user_id=user
                    )
                return
            got = self.store.update_conversation(conversation_id=cid, metadata=patch, user_id=user)
            if conv is None:
                conv = self.model[cid] = Conv(user=user, created_at=now[0], last=now[0])
            conv.user = conv.user or user
            merged = {**(conv.metadata or {}), **patch}
            conv.metadata = {k: v for k, v in merged.items() if v is not None}
            assert got.metadata == conv.metadata

        @rule(cid=CIDS)
        def delete_conversation(self, cid: str) -> None:
            self.store.delete_conversation(conversation_id=cid)
            self.model.pop(cid, None)

        @rule(user=st.sampled_from(["u1", "u2"]))
        def delete_user(self, user: str) -> None:
            gone = [cid for cid, c in self.model.items() if c.user == user]
            assert self.store.delete_user_data(user_id=user) == len(gone)
            for cid in gone:
                del self.model[cid]

        @rule(user=USERS, limit=st.integers(1, 3), order=st.sampled_from(["asc", "desc"]))
        def list_walk(self, user: str | None, limit: int, order: str) -> None:
            rows = sorted(
                ((c.last, cid) for cid, c in self.model.items() if user is None or c.user == user),
                reverse=order == "desc",
            )
            expected = [cid for _, cid in rows]
            seen: list[str] = []
            cursor = None
            while True:
                page = self.store.list_conversations(
                    limit=limit, order=order, after=cursor, user_id=user
                )  # type: ignore[arg-type]
                seen += [c.conversation_id for c in page.items]
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
            assert seen == expected

        @invariant()
        def same_state(self) -> None:
            for cid in ["c0", "c1", "c2"]:
                got = self.store.get_conversation(conversation_id=cid)
                conv = self.model.get(cid)
                if conv is None:
                    assert got is None
                    continue
                assert got is not None
                assert (
                    got.user_id,
                    got.created_at,
                    got.last_message_at,
                    got.message_count,
                    got.metadata,
                ) == (conv.user, conv.created_at, conv.last, len(conv.messages), conv.metadata)
                history = self.store.get_history(conversation_id=cid)
                assert views(history) == [m.view() for m in conv.messages]

    run_state_machine_as_test(
        StoreVersusModel,
        settings=settings(
            max_examples=60,
            stateful_step_count=50,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


def test_store_behaves_like_the_model(backend_url: str) -> None:
    run_model_test(backend_url)
