"""``ConvostoreSession``: an OpenAI Agents SDK ``Session`` whose items are convostore messages."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from agents.memory.session_settings import (
    SessionSettings,
    coerce_session_settings,
    resolve_session_limit,
)
from convostore import (
    AsyncConversationStore,
    ClosedError,
    ConversationExistsError,
    ConversationNotFoundError,
    ConversationStore,
    MemoryValidationError,
    MessageInput,
    responses_item_role,
    telemetry,
)
from convostore.spi import MAX_INT64, check_id, check_optional_int

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.run_context import RunContextWrapper

__all__ = ["SESSION_FIELD", "ConvostoreSession", "item_role"]

TenantOf = Callable[["RunContextWrapper[Any]"], str]
"""Reads the tenant (a user id) from the run context: ``lambda w: w.context.tenant_id``."""

TENANT_SEPARATOR = ":"

SESSION_FIELD = "openai_agents"
"""Conversation metadata field recording the SDK's session id (``{"session_id": ...}``), written
with the first items: it tells what wrote the conversation (the server's web view reads it)."""

item_role = responses_item_role
"""The convostore role of a Responses item (``convostore.responses_item_role``): a message
keeps its role (``developer`` is stored as ``system``), tool outputs are ``tool``, everything
else the model produced (calls, reasoning, hosted tool calls, compaction) is ``assistant``."""


class ConvostoreSession:
    """An Agents SDK ``Session`` over one convostore conversation.

    ``session_id`` is the conversation id: every item is one message of that conversation, in
    order, so the history is readable with ``store.get_messages`` and convertible with
    ``store.to_openai_input`` / ``store.to_anthropic_messages``.

    ``store`` is a ``ConversationStore`` or an ``AsyncConversationStore``; otherwise ``url``
    (or the default store) is opened and owned by the session (``close()`` closes it).
    ``max_items`` becomes ``session_settings=SessionSettings(limit=max_items)``, so the Runner
    reads only the newest items and drops tool outputs whose call fell out of the window;
    ``session_settings`` may be a dict, coerced as the SDK does.
    ``user_id`` makes the conversation owned (``list_conversations(user_id=...)``), and every
    call refuses a conversation another user owns (``ConversationOwnershipError``).
    ``tenant`` reads a tenant id from the run context: each call that carries the Runner's
    ``wrapper`` then works on the conversation ``"<tenant>:<session_id>"`` owned by that tenant.
    After ``close()`` every call raises ``ClosedError("the session is closed")``, a
    ``ConvostoreError`` and a ``RuntimeError`` (what the SDK's own sessions raise).
    """

    session_id: str
    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str,
        *,
        store: ConversationStore | AsyncConversationStore | None = None,
        url: str | None = None,
        max_items: int | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        user_id: str | None = None,
        tenant: TenantOf | None = None,
        replicas: Sequence[str] | None = None,
    ) -> None:
        if store is not None and url is not None:
            raise MemoryValidationError("store and url are mutually exclusive; pass one of them")
        if store is not None and replicas is not None:
            raise MemoryValidationError(
                "replicas goes with url; a store passed in keeps its own", argument="replicas"
            )
        if max_items is not None and session_settings is not None:
            raise MemoryValidationError(
                "max_items and session_settings are mutually exclusive; pass one of them"
            )
        if isinstance(store, ConversationStore):
            self._store = AsyncConversationStore(sync=store)
            self._owns_store = False
        elif isinstance(store, AsyncConversationStore):
            self._store = store
            self._owns_store = False
        elif store is None:
            self._store = AsyncConversationStore(url, replicas=replicas)
            self._owns_store = True
        else:
            raise MemoryValidationError(
                "store must be a ConversationStore or an AsyncConversationStore,"
                f" got {type(store).__name__}"
            )
        self._closed = False
        try:
            self.session_id = check_id("session_id", session_id, self._store.limits)
            self.session_settings = self._check_arguments(
                max_items, session_settings, user_id, tenant
            )
        except BaseException:
            self.close()  # a store this session opened is not left open
            raise
        self.user_id = user_id
        self.tenant = tenant

    def _check_arguments(
        self,
        max_items: object,
        settings: SessionSettings | dict[str, Any] | None,
        user_id: object,
        tenant: object,
    ) -> SessionSettings:
        if user_id is not None:
            check_id("user_id", user_id, self._store.limits)
        if tenant is not None and not callable(tenant):
            raise MemoryValidationError(
                f"tenant must be a callable taking the run context wrapper, got {tenant!r}"
            )
        if settings is None:
            return SessionSettings(limit=check_optional_int("max_items", max_items))
        # The SDK's coercion: a dict becomes SessionSettings, unknown keys raise TypeError.
        coerced = coerce_session_settings(settings)
        check_optional_int("session_settings.limit", coerced.limit)
        return coerced

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the session is closed")

    @property
    def store(self) -> AsyncConversationStore:
        """The store the items live in."""
        return self._store

    def conversation_id(self, wrapper: RunContextWrapper[Any] | None = None) -> str:
        """The conversation holding this session's items (for a call carrying ``wrapper``)."""
        return self._target(wrapper)[0]

    def _target(self, wrapper: RunContextWrapper[Any] | None) -> tuple[str, str | None]:
        """The conversation id and owner a call works on."""
        if self.tenant is None:
            return self.session_id, self.user_id
        if wrapper is None:
            raise MemoryValidationError(
                "wrapper: this session is scoped per tenant, so every call needs the run"
                " context wrapper (the Runner passes it; pass wrapper=... when calling directly)"
            )
        tenant = self.tenant(wrapper)
        check_id("tenant", tenant, self._store.limits)
        if TENANT_SEPARATOR in tenant:
            raise MemoryValidationError(
                f"tenant {tenant!r} must not contain {TENANT_SEPARATOR!r}"
                " (it separates the tenant from the session id)"
            )
        cid = f"{tenant}{TENANT_SEPARATOR}{self.session_id}"
        check_id("conversation_id (tenant:session_id)", cid, self._store.limits)
        return cid, tenant

    def _mark(self, metadata: dict[str, Any] | None, added: object) -> dict[str, Any] | None:
        """The conversation's ``SESSION_FIELD``, folded into the append that first needs it."""
        info = {"session_id": self.session_id}
        return None if (metadata or {}).get(SESSION_FIELD) == info else {SESSION_FIELD: info}

    # -- the Session protocol --------------------------------------------------------------

    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[TResponseInputItem]:
        """The newest ``limit`` items (all when None and no ``max_items``), oldest first.

        An explicit ``limit`` is never clamped; ``limit <= 0`` gives ``[]``; a limit outside
        a signed 64-bit int raises ``MemoryValidationError``.
        """
        self._check_open()
        cid, owner = self._target(wrapper)
        limit = check_optional_int(
            "limit",
            resolve_session_limit(limit, self.session_settings),
            minimum=-MAX_INT64 - 1,
        )
        last = None if limit is None else max(limit, 0)  # 0: [] (from an open store)
        return await self._store.get_contents(conversation_id=cid, last=last, user_id=owner)

    async def add_items(
        self,
        items: list[TResponseInputItem],
        *,
        wrapper: RunContextWrapper[Any] | None = None,
    ) -> None:
        """Append ``items`` in one transaction: all of them are stored, or none."""
        self._check_open()
        cid, owner = self._target(wrapper)
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
            raise MemoryValidationError(
                f"items must be a list of item dicts, got {type(items).__name__}"
            )
        messages: list[MessageInput] = []
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise MemoryValidationError(
                    f"items[{index}] must be a dict (a Responses input item),"
                    f" got {type(item).__name__}"
                )
            content = item if isinstance(item, dict) else dict(item)
            messages.append({"role": item_role(item), "content": content})
        try:  # no items: nothing is written (an open store is all the core checks)
            await self._store.append_messages(
                conversation_id=cid, messages=messages, user_id=owner, fold=self._mark
            )
        except MemoryValidationError as exc:
            if exc.argument != "content":
                raise
            label = f"items[{exc.index or 0}]"  # the item, in the caller's words
            raise MemoryValidationError(
                label + exc.detail, argument="items", index=exc.index or 0, label=label
            ) from None

    async def pop_item(
        self, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> TResponseInputItem | None:
        """Remove and return the newest item atomically; None when the session is empty."""
        self._check_open()
        cid, owner = self._target(wrapper)
        message = await self._store.pop_message(conversation_id=cid, user_id=owner)
        return None if message is None else message.content

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Delete every item; the conversation (its metadata and owner) stays."""
        self._check_open()
        cid, owner = self._target(wrapper)
        await self._store.clear_messages(conversation_id=cid, user_id=owner)

    # -- beyond the protocol ----------------------------------------------------------------

    async def fork(
        self,
        new_session_id: str,
        *,
        up_to: int | None = None,
        wrapper: RunContextWrapper[Any] | None = None,
    ) -> ConvostoreSession:
        """A new session holding this one's items (all, or up to and including the item at
        position ``up_to`` as ``get_items()`` lists them; negative counts from the newest,
        ``-1`` being the newest), copied inside the database in one transaction by the
        core's ``fork_conversation``; the two then live apart. The new session has this one's
        store, settings, owner and tenant scope; its conversation's metadata names the
        source (``forkedFrom``). A ``new_session_id`` in use raises
        ``ConversationExistsError``; an ``up_to`` past the items ``MemoryValidationError``."""
        self._check_open()
        cid, owner = self._target(wrapper)
        twin = ConvostoreSession(
            new_session_id,
            store=self._store,
            session_settings=self.session_settings,
            user_id=self.user_id,
            tenant=self.tenant,
        )
        new_cid, _ = twin._target(wrapper)
        position = check_optional_int("up_to", up_to, minimum=-MAX_INT64 - 1)
        mid = await self._item_id(cid, owner, position)
        try:
            await self._store.fork_conversation(
                conversation_id=cid, new_conversation_id=new_cid, up_to=mid, user_id=owner
            )
        except ConversationNotFoundError:
            if position is not None:  # an empty session has no item there
                raise MemoryValidationError(
                    f"up_to: session {self.session_id!r} holds no item", argument="up_to"
                ) from None
            found = await self._store.get_conversation(conversation_id=new_cid)
            if found is not None:
                raise ConversationExistsError(
                    f"new_session_id {new_session_id!r} is a session already"
                ) from None
        return twin

    async def _item_id(self, cid: str, owner: str | None, position: int | None) -> str | None:
        """The message id of the item at ``position`` (None: no cut)."""
        if position is None:
            return None
        store = self._store
        if position < 0:
            wanted = -position
            page = await store.get_messages(
                conversation_id=cid,
                limit=min(wanted, store.limits.max_page_size),
                order="desc",
                user_id=owner,
            )
            if wanted > len(page):
                page = list(reversed(await store.get_history(conversation_id=cid, user_id=owner)))
        else:
            wanted = position + 1
            page = await store.get_messages(
                conversation_id=cid,
                limit=min(wanted, store.limits.max_page_size),
                user_id=owner,
            )
            if wanted > len(page):
                page = await store.get_history(conversation_id=cid, user_id=owner)
        if wanted > len(page):
            raise MemoryValidationError(
                f"up_to: session {self.session_id!r} holds {len(page)} items, so there is no"
                f" item at position {position}",
                argument="up_to",
            )
        return page[wanted - 1].message_id

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the session, and the store if the session opened it (a store you passed in
        stays open)."""
        self._closed = True
        if self._owns_store:
            self._store.sync.close()

    async def aclose(self) -> None:
        """``close()`` on a worker thread."""
        self._closed = True
        if self._owns_store:
            await self._store.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        limit = self.session_settings.limit if self.session_settings else None
        return f"ConvostoreSession(session_id={self.session_id!r}, max_items={limit!r})"


# Each call the Runner makes of the session is a span ``openai_session.<method>``, the parent of
# the store's.
telemetry.trace_methods(
    ConvostoreSession,
    "openai_session",
    ("get_items", "add_items", "pop_item", "clear_session", "fork"),
    lambda session: {"db.system.name": session.store.sync.backend.dialect},
)
