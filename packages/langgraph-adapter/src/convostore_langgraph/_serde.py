"""What stored bytes may become: the saver's default serializer (LangGraph's msgpack with an
allow-list, which never imports or calls anything it does not name) and the named error for a
stored value the serializer refuses.

LangGraph's strict mode does not fail on a type outside its allow-list: it logs, emits a serde
event and returns the raw data in the object's place. ``loads`` turns that event into
``TypeNotAllowedError``, so a planted value is refused instead of read as something else, and
a value in a format the serializer does not read (a pickle) is refused alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

from convostore import ConvostoreError, MemoryValidationError
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.event_hooks import SerdeEvent, register_serde_event_listener
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

_BLOCKED = frozenset({"msgpack_blocked", "msgpack_method_blocked"})


class TypeNotAllowedError(ConvostoreError, ValueError):
    """A stored value of a type the saver's serializer does not construct (neither one of
    LangGraph's safe types nor in ``allowed_msgpack_modules``), or in a format it does not read
    (a pickle). ``type_name`` is the type (``"os.system"``) or the format (``"pickle"``); the
    other attributes say where it was, as far as the reader knew."""

    def __init__(
        self,
        type_name: str,
        *,
        stored_as: str | None = None,
        channel: str | None = None,
        thread_id: str | None = None,
        checkpoint_ns: str | None = None,
        checkpoint_id: str | None = None,
    ) -> None:
        self.type_name = type_name
        self.stored_as = stored_as
        self.channel = channel
        self.thread_id = thread_id
        self.checkpoint_ns = checkpoint_ns
        self.checkpoint_id = checkpoint_id
        where = "a stored value"
        if checkpoint_id is not None:
            where = f"checkpoint {checkpoint_id!r} of thread {thread_id!r}"
            if checkpoint_ns:
                where += f" (namespace {checkpoint_ns!r})"
        if channel is not None:
            where += f", channel {channel!r},"
        if stored_as is not None:
            what = (
                f"a value stored as {stored_as!r}, a format this saver's serializer does not read"
            )
        else:
            module, _, name = type_name.rpartition(".")
            what = (
                f"{type_name}, which this saver's serializer does not construct from stored data"
                " (it constructs LangGraph's safe types and the classes of"
                " allowed_msgpack_modules); if it is a class of your graph's state, allow it:"
                f" ConvostoreSaver(..., allowed_msgpack_modules=[({module!r}, {name!r})])"
            )
        super().__init__(f"{where} holds {what}")

    def at(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> TypeNotAllowedError:
        """The same error, naming the checkpoint it was found in (kept if it names one)."""
        if self.checkpoint_id is not None:
            return self
        return TypeNotAllowedError(
            self.type_name,
            stored_as=self.stored_as,
            channel=self.channel,
            thread_id=thread_id,
            checkpoint_ns=checkpoint_ns,
            checkpoint_id=checkpoint_id,
        )


def saver_serde(
    serde: SerializerProtocol | None, allowed_msgpack_modules: Iterable[type | tuple[str, str]]
) -> SerializerProtocol:
    """The saver's serializer: the one passed, or LangGraph's ``JsonPlusSerializer`` in strict
    mode, constructing its safe types (LangChain messages, ``Send``, ``Interrupt``, ``Command``,
    the standard library's plain types) and the classes of ``allowed_msgpack_modules`` (classes
    or (module, name) pairs: the pydantic models, dataclasses and enums of a graph's state)."""
    allowed = _allow_list(allowed_msgpack_modules)
    if serde is None:
        return JsonPlusSerializer(allowed_msgpack_modules=tuple(allowed))
    if allowed:
        raise MemoryValidationError(
            "allowed_msgpack_modules applies to the default serializer only: give it to the"
            " serde you pass (JsonPlusSerializer(allowed_msgpack_modules=...))",
            argument="allowed_msgpack_modules",
        )
    return serde


def _allow_list(allowed: Iterable[type | tuple[str, str]]) -> list[type | tuple[str, str]]:
    """``allowed_msgpack_modules`` as LangGraph takes it: classes and (module, name) pairs."""
    if isinstance(allowed, str | bytes):
        allowed = [allowed]
    entries = list(allowed)
    for entry in entries:
        if not isinstance(entry, type) and not (
            isinstance(entry, tuple) and len(entry) == 2 and all(type(p) is str for p in entry)
        ):
            raise MemoryValidationError(
                f"allowed_msgpack_modules: each entry must be a class or a (module, name) pair"
                f" of strings, got {entry!r}",
                argument="allowed_msgpack_modules",
            )
    return entries


_blocked: ContextVar[list[str] | None] = ContextVar("convostore_blocked", default=None)


def _listen(event: SerdeEvent) -> None:
    """Note a type a strict serializer refused, during ``loads`` in this context only."""
    found = _blocked.get()
    if found is not None and event["kind"] in _BLOCKED:
        name = f"{event['module']}.{event['name']}"
        found.append(f"{name}.{event['method']}" if "method" in event else name)


register_serde_event_listener(_listen)


def loads(serde: SerializerProtocol, type_: str, data: bytes, channel: str | None = None) -> Any:
    """``serde.loads_typed``, refusing what it would not construct (``TypeNotAllowedError``)."""
    found: list[str] = []
    token = _blocked.set(found)
    try:
        value = serde.loads_typed((type_, data))
    except NotImplementedError:  # "Unknown serialization type": a pickle, or a format of no one
        raise TypeNotAllowedError(type_, stored_as=type_, channel=channel) from None
    finally:
        _blocked.reset(token)
    if found:
        raise TypeNotAllowedError(found[0], channel=channel)
    return value
