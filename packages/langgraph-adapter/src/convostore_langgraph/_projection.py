"""LangGraph threads as core conversations: each thread's root namespace is a conversation
whose messages are the thread's current ``messages`` channel, kept equal to it after every
checkpoint the saver writes.

LangChain messages become the core's message form (``message_of``): the role from the message
class, the content as LangChain holds it (``tool_use`` blocks left to the tool calls, standard
image blocks as ``image_url`` parts), tool calls as Chat-Completions ``tool_calls`` in the
assistant message's metadata and ``tool_call_id`` on tool messages (what the core's converters
pair), the LangChain message id as the message id.

The conversation is written with the core's ``sync_messages`` on the component's own store
(``as_component``): the saver knows how much of the list it writes equals the version before
(``_codec``), so after a checkpoint only the changed tail is converted and sent, after the
message before it. That holds only when the conversation shows that previous version: the
versions projected are remembered per thread, and anything else (a thread this process did
not project last, a fork, a failure) sends the whole list, which the core compares and
writes only where it differs. A projection that fails never fails the graph: it warns
(``ConversationProjectionWarning``) and the next checkpoint sends the whole list again.
"""

from __future__ import annotations

import datetime
import json
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from convostore import (
    MANAGED_BY_KEY,
    TITLE_KEY,
    ConflictError,
    ConversationMeta,
    ConversationStore,
    ConvostoreError,
    MessageInput,
    Role,
    StorageError,
)
from convostore.spi import StartedSync, Tx
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from ._copies import _common_prefix
from ._schema import COMPONENT, THREAD_KEY

_ABSENT: Any = object()  # a channel the checkpoint holds no value of (a DeltaChannel's)


INTERRUPT_KEY = "interrupt"
"""The conversation metadata key saying where the thread waits for a human:
``{"node": ..., "value": ...}``, written when a node calls ``interrupt()`` and removed by the
thread's next checkpoint."""

INTERRUPT = "__interrupt__"  # the channel of a node's interrupt() (a key of WRITES_IDX_MAP)
_PREVIEW = 500  # characters of an interrupt's value kept in the mark


class ConversationProjectionWarning(UserWarning):
    """A thread's conversation could not be written; the graph went on. The next checkpoint
    of the thread writes it whole again."""


_CHAT_ROLES: dict[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}


def role_of(message: BaseMessage) -> Role:
    """The core role of a LangChain message (chunks count as their message class)."""
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, (ToolMessage, FunctionMessage)):
        return "tool"
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, ChatMessage):
        return _CHAT_ROLES.get(message.role, "user")
    return _CHAT_ROLES.get(message.type, "user")


def message_id(message: Any, index: int) -> str:
    """A message's id: its LangChain id (``add_messages`` gives every message one), else its
    position in the list (stable while a list without ids only grows)."""
    mid = getattr(message, "id", None)
    return mid if isinstance(mid, str) and mid else f"lc-{index}"


def _image(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """A LangChain standard image block as a Chat Completions ``image_url`` part."""
    url = block.get("url")
    data = block.get("base64") or block.get("data")
    if block.get("source_type") == "url" and isinstance(data, str):
        url = data
    elif isinstance(data, str) and block.get("source_type", "base64") == "base64":
        mime = block.get("mime_type") or "image/png"
        url = f"data:{mime};base64,{data}"
    if isinstance(url, str):
        return {"type": "image_url", "image_url": {"url": url}}
    return None


def _content(content: Any, calls: set[str]) -> Any:
    """LangChain content for the core: text as is; in a list, ``tool_use`` blocks that the
    message's tool calls carry are left out and standard image blocks become ``image_url``."""
    if not isinstance(content, list):
        return content if isinstance(content, (str, dict)) else str(content)
    out: list[Any] = []
    for block in content:
        if isinstance(block, Mapping):
            kind = block.get("type")
            if kind == "tool_use" and block.get("id") in calls:
                continue
            if kind == "image" and "source" not in block:
                image = _image(block)
                if image is not None:
                    out.append(image)
                    continue
            out.append(dict(block))
        else:
            out.append(block)
    return out


def _arguments(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)


def message_of(message: Any, index: int) -> MessageInput:
    """One LangChain message (or message-like dict) as a core message at ``index``."""
    if not isinstance(message, BaseMessage):
        message = convert_to_messages([message])[0]
    metadata: dict[str, Any] = {}
    calls: set[str] = set()
    if isinstance(message, AIMessage) and message.tool_calls:
        tool_calls = []
        for k, call in enumerate(message.tool_calls):
            cid = call.get("id") or f"call-{index}-{k}"
            calls.add(cid)
            tool_calls.append(
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": call["name"], "arguments": _arguments(call["args"])},
                }
            )
        metadata["tool_calls"] = tool_calls
    elif isinstance(message, ToolMessage):
        metadata["tool_call_id"] = message.tool_call_id
        if message.status == "error":
            metadata["status"] = "error"
    if message.name:
        metadata["name"] = message.name
    out: MessageInput = {
        "role": role_of(message),
        "content": _content(message.content, calls),
        "message_id": message_id(message, index),
    }
    if metadata:
        out["metadata"] = metadata
    return out


def reduce_messages(state: list[Any] | None, writes: Sequence[Any]) -> list[Any]:
    """The messages of a ``DeltaChannel`` after ``writes`` (each a message or a list of
    them), by the rule of LangGraph's messages reducers: a message replaces the one with its
    id or is appended, ``RemoveMessage`` removes one, ``REMOVE_ALL_MESSAGES`` empties."""
    flat: list[Any] = []
    for write in writes:
        flat.extend(write if isinstance(write, list) else [write])
    result: list[Any] = list(state or [])
    new = convert_to_messages(flat) if flat else []
    for k, message in enumerate(new):
        if isinstance(message, RemoveMessage) and message.id == REMOVE_ALL_MESSAGES:
            result, new = [], new[k + 1 :]
    index = {m.id: i for i, m in enumerate(result) if getattr(m, "id", None) is not None}
    for message in new:
        mid = message.id
        if mid is None:
            result.append(message)
        elif isinstance(message, RemoveMessage):
            if mid in index:
                result[index.pop(mid)] = None
        elif mid in index:
            result[index[mid]] = message
        else:
            index[mid] = len(result)
            result.append(message)
    return [m for m in result if m is not None]


def snapshot_value(value: Any) -> list[Any] | None:
    """The list a ``DeltaChannel`` snapshot (``_DeltaSnapshot``) or a stored list holds."""
    if isinstance(value, list):
        return value
    inner = getattr(value, "value", None) if type(value).__name__ == "_DeltaSnapshot" else None
    return inner if isinstance(inner, list) else None


class DeltaReader:
    """What the saver reads for a ``DeltaChannel`` thread: the messages written on top of a
    checkpoint (its pending writes), and the messages at a checkpoint (its history)."""

    def writes(self, thread_id: str, checkpoint_id: str) -> list[Any]:
        raise NotImplementedError

    def value_at(self, thread_id: str, checkpoint_id: str) -> list[Any]:
        raise NotImplementedError


def node_of(task_path: str) -> str | None:
    """The node of a task path as LangGraph writes it (``~__pregel_pull, ask_human``), or
    None for a task that no one node names (a ``Send``)."""
    parts = task_path.removeprefix("~").split(", ")
    return parts[1] if len(parts) >= 2 and parts[0] == "__pregel_pull" and parts[1] else None


def _ms(ts: object) -> int | None:
    """A checkpoint's ``ts`` (ISO 8601) in epoch milliseconds."""
    if not isinstance(ts, str):
        return None
    try:
        return int(datetime.datetime.fromisoformat(ts).timestamp() * 1000)
    except ValueError:
        return None


class Projection:
    """The conversations of one saver's threads (see the module's docstring)."""

    def __init__(
        self,
        store: ConversationStore,
        *,
        messages_key: str,
        owner_key: str | None,
        title_key: str | None,
        prefix: str,
        max_messages: int,
        size: int,
    ) -> None:
        self.store = store.as_component(COMPONENT).with_limits(
            max_messages_per_conversation=max_messages
        )
        self.messages_key = messages_key
        self.owner_key = owner_key
        self.title_key = title_key
        self.prefix = prefix
        self.size = max(size, 1)
        self.reader: DeltaReader | None = None
        self._lock = threading.Lock()
        # thread_id -> what the conversation shows: the messages' version, or for a
        # DeltaChannel the checkpoint id, with the messages
        self._projected: OrderedDict[str, str] = OrderedDict()
        self._lists: dict[str, list[Any]] = {}
        # thread_id -> the checkpoint an interrupt's mark rests on (its conversation shows it)
        self._interrupted: dict[str, str] = {}

    def conversation_id(self, thread_id: str) -> str:
        return self.prefix + thread_id

    def _shown(self, thread_id: str) -> str | None:
        with self._lock:
            return self._projected.get(thread_id)

    def _remember(
        self, thread_id: str, version: str | None, messages: list[Any] | None = None
    ) -> None:
        with self._lock:
            self._lists.pop(thread_id, None)
            if version is None:
                self._projected.pop(thread_id, None)
                return
            self._projected[thread_id] = version
            self._projected.move_to_end(thread_id)
            if messages is not None:
                self._lists[thread_id] = messages
            while len(self._projected) > self.size:
                gone, _ = self._projected.popitem(last=False)
                self._lists.pop(gone, None)

    def _shown_list(self, thread_id: str, token: str | None) -> list[Any] | None:
        """The DeltaChannel messages the conversation shows, if they are ``token``'s."""
        with self._lock:
            if token is None or self._projected.get(thread_id) != token:
                return None
            return self._lists.get(thread_id)

    # -- with a checkpoint ------------------------------------------------------------------

    def prepare(  # noqa: PLR0917 - what put knows
        self,
        thread_id: str,
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, Any],
        equal: tuple[str, int] | None,
        parent_id: str | None = None,
    ) -> Pending | None:
        """What showing the root checkpoint about to be stored takes, converted before its
        transaction; None when its messages did not change (a new title alone is written
        now). ``equal`` is (version, n): the first n messages equal that version's (the
        codec found them so), or None."""
        key = self.messages_key
        values = checkpoint["channel_values"]
        title = self._title(values, new_versions)
        if key not in new_versions:  # a new title, a mark to remove: written now
            update = self._patch(thread_id, title, str(checkpoint["id"]))
            update.pop(MANAGED_BY_KEY, None)
            if update and self._shown(thread_id) is not None:
                self._guarded(thread_id, lambda: self._update(thread_id, update))
            return None
        messages = values.get(key, _ABSENT)
        owner, patch, at = (
            self._owner(metadata),
            self._patch(thread_id, title, str(checkpoint["id"])),
            _ms(checkpoint.get("ts")),
        )
        if not isinstance(messages, list):
            return self._prepare_delta(thread_id, checkpoint, parent_id, messages, owner, patch, at)
        base, keep = equal if equal is not None else (None, 0)
        if not keep or base is None or self._shown(thread_id) != base:
            keep = 0  # the conversation may not show that version: the whole list
        return Pending(self, thread_id, str(new_versions[key]), messages, keep, owner, patch, at)

    def _prepare_delta(  # noqa: PLR0917 - prepare's findings
        self,
        thread_id: str,
        checkpoint: Mapping[str, Any],
        parent_id: str | None,
        stored: Any,
        owner: str | None,
        patch: dict[str, Any],
        at: int | None,
    ) -> Pending | None:
        """A ``DeltaChannel`` (DeepAgents' messages): the checkpoint holds no list, or a
        snapshot of it. The list is the parent's (remembered, or rebuilt from its history)
        with the parent's pending writes applied."""
        shown = self._shown_list(thread_id, parent_id)
        messages = snapshot_value(stored)
        if messages is None:
            reader = self.reader
            if reader is None:
                return None
            if parent_id is None:
                messages = []
            else:
                before = shown if shown is not None else reader.value_at(thread_id, parent_id)
                messages = reduce_messages(before, reader.writes(thread_id, parent_id))
        keep = _common_prefix(shown, messages) if shown is not None else 0
        return Pending(
            self, thread_id, str(checkpoint["id"]), messages, keep, owner, patch, at, delta=True
        )

    def _arguments(
        self,
        thread_id: str,
        messages: list[Any],
        keep: int,
        tail: list[MessageInput] | None = None,
    ) -> dict[str, Any]:
        """``sync_messages``' arguments for the list ``messages`` whose first ``keep``
        the conversation shows already (``tail``: the rest, converted)."""
        if tail is None:
            tail = [message_of(m, keep + i) for i, m in enumerate(messages[keep:])]
        return {
            "conversation_id": self.conversation_id(thread_id),
            "messages": tail,
            "after": message_id(messages[keep - 1], keep - 1) if keep else None,
            "kept": keep if keep else None,
        }

    def sync(
        self,
        thread_id: str,
        checkpoint: Mapping[str, Any] | None,
        metadata: Mapping[str, Any],
        version: str | None,
    ) -> ConversationMeta | None:
        """Show the root checkpoint given (the thread's latest) whole, or delete the
        thread's conversation when there is none; raises what the store raises."""
        self._remember(thread_id, None)
        if checkpoint is None:
            self.delete(thread_id)
            return None
        values = checkpoint["channel_values"]
        messages = values.get(self.messages_key)
        if not isinstance(messages, list):
            return None
        title = self._title(values, values)
        meta = self.store.sync_messages(
            **self._arguments(thread_id, messages, 0),
            user_id=self._owner(metadata),
            metadata=self._patch(thread_id, title, str(checkpoint.get("id"))),
            at=_ms(checkpoint.get("ts")),
        )
        self._remember(thread_id, version)
        return meta

    def delete(self, thread_id: str) -> None:
        """Delete the thread's conversation (only if it is this thread's)."""
        self._remember(thread_id, None)
        cid = self.conversation_id(thread_id)
        meta = self.store.get_conversation(conversation_id=cid)
        managed = ((meta.metadata or {}).get(MANAGED_BY_KEY) if meta else None) or {}
        if managed.get("component") == COMPONENT and managed.get(THREAD_KEY) == thread_id:
            self.store.delete_conversation(conversation_id=cid)

    # -- pieces ------------------------------------------------------------------------------

    def run_guarded(self, thread_id: str, call: Callable[[], object]) -> bool:
        return self._guarded(thread_id, call)

    def _guarded(self, thread_id: str, call: Callable[[], object]) -> bool:
        """Run ``call``; a failure is a warning, never the graph's error."""
        try:
            call()
        except Exception as exc:  # the graph must go on whatever the projection meets
            self._remember(thread_id, None)
            warnings.warn(
                f"the conversation of LangGraph thread {thread_id!r} was not updated"
                f" ({type(exc).__name__}: {exc}); the graph goes on, and the thread's next"
                " checkpoint writes it whole",
                ConversationProjectionWarning,
                stacklevel=4,
            )
            return False
        return True

    def _owner(self, metadata: Mapping[str, Any]) -> str | None:
        """The thread's owner: ``configurable[owner_key]`` (LangGraph copies configurable
        strings into each checkpoint's metadata)."""
        if self.owner_key is None:
            return None
        owner = metadata.get(self.owner_key)
        return owner if isinstance(owner, str) and owner else None

    def _title(self, values: Mapping[str, Any], changed: Mapping[str, Any]) -> str | None:
        key = self.title_key
        if key is None or key not in changed:
            return None
        title = values.get(key)
        return title if isinstance(title, str) and title.strip() else None

    def wrote(
        self, thread_id: str, checkpoint_id: str, task_path: str, writes: Sequence[Any]
    ) -> None:
        """After a root task's writes: if a node called ``interrupt()``, mark the thread's
        conversation (a failure warns, as after a checkpoint)."""
        interrupts = next((v for c, v in writes if c == INTERRUPT), None)
        if interrupts is not None:
            self._guarded(
                thread_id,
                lambda: self.interrupted(thread_id, checkpoint_id, task_path, interrupts),
            )

    def interrupted(
        self, thread_id: str, checkpoint_id: str, task_path: str, interrupts: object
    ) -> None:
        """Mark the thread's conversation as waiting at the node of ``task_path`` (a node
        called ``interrupt()`` in the step after ``checkpoint_id``); the thread's next
        checkpoint removes the mark (LangGraph may store the two in either order)."""
        if self._shown(thread_id) is None:
            return  # no conversation shows this thread (yet): its next sync writes it whole
        first = interrupts[0] if isinstance(interrupts, list | tuple) and interrupts else None
        value = getattr(first, "value", None)
        if not isinstance(value, str):
            value = None if value is None else json.dumps(value, default=str)
        mark = {"node": node_of(task_path), "value": None if value is None else value[:_PREVIEW]}
        with self._lock:
            self._interrupted[thread_id] = checkpoint_id
        self.store.update_conversation(
            conversation_id=self.conversation_id(thread_id), metadata={INTERRUPT_KEY: mark}
        )

    def _patch(
        self, thread_id: str, title: str | None, checkpoint_id: str | None
    ) -> dict[str, Any]:
        """The metadata a sync of ``checkpoint_id`` writes: the thread's id under
        ``managedBy`` (the first time), a new title, and the removal of an interrupt's mark
        (the first time, or once the thread has moved past the mark's checkpoint)."""
        patch: dict[str, Any] = {}
        with self._lock:
            at = self._interrupted.get(thread_id)
            moved_past = at is not None and checkpoint_id is not None and checkpoint_id > at
            if moved_past:
                del self._interrupted[thread_id]
        if self._shown(thread_id) is None:
            patch[MANAGED_BY_KEY] = {THREAD_KEY: thread_id}
            patch[INTERRUPT_KEY] = None
        elif moved_past:
            patch[INTERRUPT_KEY] = None
        if title is not None:
            patch[TITLE_KEY] = title
        return patch

    def _update(self, thread_id: str, metadata: dict[str, Any]) -> None:
        self.store.update_conversation(
            conversation_id=self.conversation_id(thread_id), metadata=metadata
        )


class Pending:
    """The projection of one root checkpoint: prepared before the checkpoint's transaction
    (``Projection.prepare``), started and run inside it (``start`` before the checkpoint's
    statements, ``run`` after them: on PostgreSQL the conversation's read travels with
    them), finished after its commit (``finish``). Its errors are caught before it writes
    anything (the core's ``start_sync_messages`` promises it), so the checkpoint commits
    regardless."""

    def __init__(  # noqa: PLR0917 - what prepare found, kept together
        self,
        projection: Projection,
        thread_id: str,
        version: str,
        messages: list[Any],
        keep: int,
        owner: str | None,
        patch: dict[str, Any],
        at: int | None,
        *,
        delta: bool = False,
    ) -> None:
        self.projection = projection
        self.delta = delta
        self.thread_id = thread_id
        self.version = version
        self.messages = messages
        self.keep = keep
        self.owner = owner
        self.patch = patch
        self.at = at
        self.arguments: dict[str, Any] | None = None
        self.error: Exception | None = None
        self._started: StartedSync | None = None
        try:
            self.arguments = projection._arguments(thread_id, messages, keep)
        except Exception as exc:  # a message LangChain itself cannot read
            self.error = exc

    def start(self, tx: Tx) -> None:
        """Send the conversation's first statement in the checkpoint's transaction ``tx``."""
        self._started = None
        if self.arguments is None:
            return
        self.error = None
        try:
            self._started = self.projection.store.start_sync_messages(
                tx=tx, **self.arguments, user_id=self.owner, metadata=self.patch, at=self.at
            )
        except StorageError:
            raise
        except ConvostoreError as exc:  # bad input: nothing sent
            self.error = exc

    def run(self) -> None:
        """Write the conversation, after the checkpoint's statements."""
        if self._started is None:
            return
        try:
            self._started.finish()
        except StorageError:
            raise
        except ConvostoreError as exc:  # raised before the projection wrote anything
            self._started = None
            self.error = exc

    def finish(self) -> None:
        """After the commit: remember what the conversation shows; after a failure, send the
        whole list in a transaction of its own (the conversation did not show the version
        the delta rested on), or warn."""
        projection, tid = self.projection, self.thread_id
        kept = self.messages if self.delta else None
        if self.error is None and self._started is not None:
            try:
                self._started.confirm()
            except ConflictError as exc:  # an append judged on a row that had changed
                self.error = exc
        if self.error is None:
            projection._remember(tid, self.version, kept)
            return
        if self.keep and isinstance(self.error, ConflictError):

            def whole() -> None:
                projection.store.sync_messages(
                    **projection._arguments(tid, self.messages, 0),
                    user_id=self.owner,
                    metadata={**self.patch, **projection._patch(tid, None, None)},
                    at=self.at,
                )

            if projection._guarded(tid, whole):
                projection._remember(tid, self.version, kept)
            return
        error = self.error
        projection._guarded(tid, lambda: _raise(error))


def _raise(error: Exception) -> None:
    raise error
