"""``ConvostoreSessionStore``: the Claude Agent SDK's ``SessionStore`` on a convostore database."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar, cast

from claude_agent_sdk import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
    fold_session_summary,
)
from convostore import (
    AsyncConversationStore,
    ConversationStore,
    MemoryValidationError,
    Message,
    MessageIdConflictError,
    MessageInput,
    telemetry,
)
from convostore.spi import Limits, check_id, check_int, run_in_thread, run_sync

from ._keys import (
    Key,
    Scope,
    check_field,
    message_id,
    parse_key,
    role_of,
    session_of,
    title_of,
)

T = TypeVar("T")

KEY_FIELD = "claude_session"
"""Conversation metadata field recording the session key (project_key, session_id, ...)."""
SUMMARY_FIELD = "claude_summary"
"""Conversation metadata field holding the SDK's summary ``data`` (main transcripts only)."""
DEFAULT_MAX_ENTRIES = 1_000_000


class ConvostoreSessionStore(SessionStore):
    """A ``SessionStore`` whose sessions are convostore conversations.

    ``ConvostoreSessionStore()`` opens the default store, ``ConvostoreSessionStore(url)`` the
    database a URL names, and ``ConvostoreSessionStore(store=store)`` (what
    ``store.claude_session_store()`` does) works on an open ``ConversationStore`` or
    ``AsyncConversationStore``. ``tenant`` and ``user_id`` scope every key: stores built with
    different values never see each other's sessions on one database, and ``user_id`` also
    owns the conversations (``delete_user_data`` removes them). ``max_entries`` bounds one
    transcript (the core's per-conversation message limit, raised for transcripts).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        store: ConversationStore | AsyncConversationStore | None = None,
        tenant: str | None = None,
        user_id: str | None = None,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        replicas: Sequence[str] | None = None,
    ) -> None:
        if url is not None and store is not None:
            raise MemoryValidationError("pass url or store, not both")
        if store is not None and replicas is not None:
            raise MemoryValidationError(
                "replicas goes with url; a store passed in keeps its own", argument="replicas"
            )
        check_int("max_entries", max_entries, minimum=1)
        if tenant is not None:
            check_field("tenant", tenant)
        if user_id is not None:  # a conversation owner: the core's id limits
            check_id("user_id", user_id, Limits())
        self._owned = store is None
        base = ConversationStore(url, replicas=replicas) if store is None else store
        sync = base.sync if isinstance(base, AsyncConversationStore) else base
        if not isinstance(sync, ConversationStore):
            raise MemoryValidationError(
                f"store must be a ConversationStore or AsyncConversationStore, got {type(store).__name__}"
            )
        # mtime is the conversation's last_message_at: from the database-wide ordered clock,
        # so it increases strictly with every append, across sessions and processes
        self.store: ConversationStore = sync.with_limits(
            max_messages_per_conversation=max_entries
        ).with_ordered_clock()
        self.scope = Scope(tenant, user_id)

    @property
    def tenant(self) -> str | None:
        return self.scope.tenant

    @property
    def user_id(self) -> str | None:
        return self.scope.user_id

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close the database if this object opened it (a store passed in stays open)."""
        if self._owned:
            self.store.close()

    async def aclose(self) -> None:
        await run_in_thread(self.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _run(self, fn: Callable[[], T], *, inline: bool = False) -> T:
        # A thread's transaction finishes (or rolls back) before a cancellation is delivered:
        # an append is stored whole or not at all. ``inline``: small enough for the event loop
        # when its locks are free (``convostore.run_sync``).
        return await run_sync(fn, self.store.backend, inline=inline)

    # -- SessionStore ------------------------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Append entries in order; an entry whose ``uuid`` the key already holds is skipped."""
        parsed = parse_key(key)
        batch, origins = _messages(entries)
        if batch:
            await self._run(lambda: self._append_sync(parsed, batch, origins), inline=True)

    def _append_sync(self, key: Key, batch: list[MessageInput], origins: list[int]) -> None:
        """The blocking body of ``append`` (``batch`` and ``origins`` from ``_messages``)."""
        cid = self.scope.conversation_id(key)
        batch, origins = self._without_replays(cid, batch, origins)
        if not batch:
            return
        fold = self._fold(key)
        for _ in range(10):
            try:
                self.store.append_messages(
                    conversation_id=cid, messages=batch, user_id=self.user_id, fold=fold
                )
            except MemoryValidationError as exc:
                raise _entry_error(exc, origins) from None
            except MessageIdConflictError:
                # Same uuid, different entry: the stored one wins, as with any duplicate uuid.
                ids = [m["message_id"] for m in batch if m.get("message_id")]
                present = self.store.existing_message_ids(
                    conversation_id=cid, message_ids=cast("list[str]", ids)
                )
                keep = [i for i, m in enumerate(batch) if m.get("message_id") not in present]
                batch, origins = [batch[i] for i in keep], [origins[i] for i in keep]
                if not batch:
                    return
            else:
                return
        raise MessageIdConflictError(f"append to {cid!r} kept conflicting with concurrent writers")

    def _without_replays(
        self, cid: str, batch: list[MessageInput], origins: list[int]
    ) -> tuple[list[MessageInput], list[int]]:
        """Drop the uuid-less entries of a replayed batch (a retry, a re-import).

        A uuid-less entry belongs to the nearest uuid entry before it in the batch (leading
        ones to the first): it is a replay when that entry is already stored. A batch with no
        uuid at all is a replay when the key already ends with exactly these entries. Entries
        with a uuid are left to the core, which skips those already stored, atomically.
        """
        ids = [m.get("message_id") for m in batch]
        if all(ids):
            return batch, origins
        known = [i for i in ids if i]
        if not known:
            tail = self.store.get_contents(conversation_id=cid, last=len(batch))
            same = tail == [m["content"] for m in batch]
            return ([], []) if same else (batch, origins)
        present = self.store.existing_message_ids(conversation_id=cid, message_ids=known)
        anchor = known[0]
        keep = []
        for i, mid in enumerate(ids):
            anchor = mid or anchor
            if mid or anchor not in present:
                keep.append(i)
        return [batch[i] for i in keep], [origins[i] for i in keep]

    def _fold(
        self, key: Key
    ) -> Callable[[dict[str, Any] | None, Sequence[Message]], dict[str, Any]]:
        info = self.scope.describe(key)
        sdk_key: SessionKey = {"project_key": key.project_key, "session_id": key.session_id}

        def fold(metadata: dict[str, Any] | None, added: Sequence[Message]) -> dict[str, Any]:
            metadata = metadata or {}
            key_patch: dict[str, Any] = {} if metadata.get(KEY_FIELD) == info else {KEY_FIELD: info}
            if key.subpath is not None:  # subagent transcripts never touch the summary
                return key_patch
            data = metadata.get(SUMMARY_FIELD)
            prev: SessionSummaryEntry | None = None
            if isinstance(data, dict):
                prev = {"session_id": key.session_id, "mtime": 0, "data": data}
            folded = fold_session_summary(prev, sdk_key, [m.content for m in added])
            # the summary first: a new session's metadata starts with it, so the summaries
            # listing decodes it alone (``find_conversation_briefs(metadata=SUMMARY_FIELD)``)
            patch: dict[str, Any] = {SUMMARY_FIELD: folded["data"], **key_patch}
            title = title_of(folded["data"])
            if title is not None:
                patch["title"] = title
            return patch

        return fold

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """The key's entries in append order, or None if it holds none."""
        cid = self.scope.conversation_id(parse_key(key))
        entries = await self._run(lambda: self.store.get_contents(conversation_id=cid))
        return cast("list[SessionStoreEntry]", entries) or None

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """Main transcripts of the project with their last write time (epoch ms)."""
        rows = await self._run(lambda: self._main_rows(project_key, None))
        return [{"session_id": sid, "mtime": mtime} for _, sid, mtime, _ in rows]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The summaries ``append`` maintains; ``mtime`` equals ``list_sessions``' for each."""

        def run() -> list[SessionSummaryEntry]:
            return [
                {"session_id": sid, "mtime": mtime, "data": summary}
                for _, sid, mtime, summary in self._main_rows(project_key, SUMMARY_FIELD)
                if isinstance(summary, dict)
            ]

        return await self._run(run)

    def _main_rows(
        self, project_key: str, field: str | None, *, whole: bool = False
    ) -> list[tuple[str, str, int, Any]]:
        """The project's non-empty main transcripts as (conversation id, session id, mtime,
        the metadata's ``field``), from one read of the project's id range that decodes no
        other metadata. A hashed session id (the metadata's ``KEY_FIELD`` names it) makes it
        read the range again, ``whole``."""
        project_key = check_field("project_key", project_key)
        prefix = self.scope.project_prefix(project_key)
        start = len(prefix)
        rows = self.store.find_conversation_briefs(
            id_prefix=prefix, metadata=True if whole else (field or False)
        )
        found = []
        for cid, mtime, count, read in rows:
            sid = session_of(cid[start:])
            if sid is None or not count:
                continue  # a subkey, or emptied
            value = read
            if whole:
                metadata: dict[str, Any] = read or {}
                value = None if field is None else metadata.get(field)
                if not sid:  # hashed: the metadata has it
                    info = metadata.get(KEY_FIELD)
                    if not isinstance(info, dict) or not isinstance(info.get("session_id"), str):
                        continue
                    sid = info["session_id"]
            elif not sid:
                return self._main_rows(project_key, field, whole=True)
            found.append((cid, sid, mtime, value))
        return found

    async def delete(self, key: SessionKey) -> None:
        """Delete the key; a main key takes every subkey of its session with it."""
        parsed = parse_key(key)
        cid = self.scope.conversation_id(parsed)
        prefix = cid + "/" if parsed.subpath is None else None
        await self._run(
            lambda: self.store.delete_conversations(conversation_ids=[cid], id_prefix=prefix)
        )

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """The session's subpaths (never the main transcript)."""
        parsed = parse_key(key, allow_subpath=False)
        prefix = self.scope.session_prefix(parsed.project_key, parsed.session_id)
        rows = await self._run(
            lambda: self.store.find_conversation_briefs(id_prefix=prefix, metadata=KEY_FIELD)
        )
        subpaths = []
        for _, _, count, info in rows:
            if count and isinstance(info, dict) and isinstance(info.get("subpath"), str):
                subpaths.append(info["subpath"])
        return subpaths

    # -- beyond the protocol -----------------------------------------------------------------

    def conversation_id(self, key: SessionKey) -> str:
        """The id of the conversation holding ``key``'s entries (for the core's methods)."""
        return self.scope.conversation_id(parse_key(key))

    async def prune(self, project_key: str, *, older_than_ms: int) -> list[str]:
        """Retention: delete the project's sessions (with their subkeys) last written before
        ``older_than_ms`` (epoch ms); return their ids. The SDK itself never deletes."""
        check_int("older_than_ms", older_than_ms, minimum=-(2**63))

        def run() -> list[str]:
            gone = []
            for cid, sid, mtime, _ in self._main_rows(project_key, None):
                if mtime < older_than_ms:
                    self.store.delete_conversations(conversation_ids=[cid], id_prefix=cid + "/")
                    gone.append(sid)
            return gone

        return await self._run(run)


# Each call the Claude Agent SDK makes of the session store is a span ``claude_session.<method>``,
# the parent of the store's.
telemetry.trace_methods(
    ConvostoreSessionStore,
    "claude_session",
    (
        "append",
        "load",
        "list_sessions",
        "list_session_summaries",
        "delete",
        "list_subkeys",
        "prune",
    ),
    lambda sessions: {"db.system.name": sessions.store.backend.dialect},
)


def _entry_error(error: MemoryValidationError, origins: list[int]) -> MemoryValidationError:
    """The core names the batch's ``messages[i].content``; the caller passed
    ``entries[origins[i]]``."""
    if error.argument != "content":
        return error
    index = origins[error.index or 0]
    label = f"entries[{index}]"
    return MemoryValidationError(label + error.detail, argument="entries", index=index, label=label)


def _messages(entries: object) -> tuple[list[MessageInput], list[int]]:
    """Entries as core messages and the index of each in ``entries``; a uuid repeated within
    the batch keeps its first entry."""
    if isinstance(entries, (str, bytes, Mapping)) or not isinstance(entries, Sequence):
        raise MemoryValidationError(
            f"entries must be a list of entry dicts, got {type(entries).__name__}"
        )
    batch: list[MessageInput] = []
    origins: list[int] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise MemoryValidationError(f"entries[{i}] must be a dict, got {type(entry).__name__}")
        mid = message_id(entry.get("uuid"))
        if mid is not None:
            if mid in seen:
                continue
            seen.add(mid)
        message: MessageInput = {"role": role_of(entry), "content": dict(entry)}  # type: ignore[typeddict-item]
        if mid is not None:
            message["message_id"] = mid
        batch.append(message)
        origins.append(i)
    return batch, origins
