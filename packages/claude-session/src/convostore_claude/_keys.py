"""Session keys to conversation ids, and entries to messages: pure functions, no I/O.

A conversation id is ``claude/<scope>/<session>`` for a main transcript and
``claude/<scope>/<session>/<subpath>`` for a subkey, where ``<scope>`` is a hash of
(tenant, user, project_key) and the other parts are percent-encoded (so they hold no ``/``),
or replaced by ``~`` and a hash when the id would pass the core's 256-byte limit. Ids of one
project, and of one session's subkeys, therefore share a prefix: a range of the primary key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from convostore import MemoryValidationError
from convostore.spi import Limits, check_id

MAX_KEY_BYTES = 1024
"""The most UTF-8 bytes a ``project_key``, ``session_id`` or ``subpath`` may hold."""

MAX_ID_BYTES = Limits().max_id_bytes  # the core's default conversation_id / message_id limit
_SESSION_BUDGET = 100


@dataclass(frozen=True, slots=True)
class Key:
    """A validated ``SessionKey``; ``subpath`` is None for the main transcript."""

    project_key: str
    session_id: str
    subpath: str | None


def _hash(*parts: str | None) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _encode(value: str, budget: int) -> str:
    encoded = quote(value, safe="").replace("~", "%7E")
    return encoded if len(encoded) <= budget else "~" + _hash(value)[:40]


_KEY_LIMITS = Limits(max_id_bytes=MAX_KEY_BYTES)


def check_field(name: str, value: object) -> str:
    """The core's id rule (a non-empty str without NUL), bounded at ``MAX_KEY_BYTES``."""
    return check_id(name, value, _KEY_LIMITS)


def parse_key(key: object, *, allow_subpath: bool = True) -> Key:
    """Validate a ``SessionKey``; an empty ``subpath`` means the main transcript."""
    if not isinstance(key, Mapping):
        raise MemoryValidationError(f"key must be a SessionKey dict, got {type(key).__name__}")
    project_key = check_field("key['project_key']", key.get("project_key"))
    session_id = check_field("key['session_id']", key.get("session_id"))
    subpath = key.get("subpath") if allow_subpath else None
    if subpath is not None and subpath != "":
        return Key(project_key, session_id, check_field("key['subpath']", subpath))
    return Key(project_key, session_id, None)


@dataclass(frozen=True, slots=True)
class Scope:
    """Who the store's conversations belong to: a tenant and/or a user (both optional)."""

    tenant: str | None
    user_id: str | None

    def project_prefix(self, project_key: str) -> str:
        return f"claude/{_hash(self.tenant, self.user_id, project_key)[:32]}/"

    def session_prefix(self, project_key: str, session_id: str) -> str:
        """The prefix of the session's subkeys (its main id plus ``/``)."""
        return self.main_id(project_key, session_id) + "/"

    def main_id(self, project_key: str, session_id: str) -> str:
        return self.project_prefix(project_key) + _encode(session_id, _SESSION_BUDGET)

    def conversation_id(self, key: Key) -> str:
        main = self.main_id(key.project_key, key.session_id)
        if key.subpath is None:
            return main
        return f"{main}/{_encode(key.subpath, MAX_ID_BYTES - len(main) - 1)}"

    def describe(self, key: Key) -> dict[str, Any]:
        """What the conversation's metadata records about its key (listings read it back)."""
        info: dict[str, Any] = {"project_key": key.project_key, "session_id": key.session_id}
        if key.subpath is not None:
            info["subpath"] = key.subpath
        if self.tenant is not None:
            info["tenant"] = self.tenant
        return info


def session_of(suffix: str) -> str | None:
    """The session id a conversation id's part after the project prefix names: None for a
    subkey, ``""`` when it is hashed (read the metadata)."""
    if "/" in suffix:
        return None
    if "%" not in suffix:  # nothing encoded (a UUID): the id as it is, or hashed
        return "" if suffix[:1] == "~" else suffix
    return unquote(suffix)


def message_id(uuid: object) -> str | None:
    """The message id an entry's ``uuid`` maps to (its idempotency key); None without one."""
    if uuid is None:
        return None
    if isinstance(uuid, str) and uuid and "\x00" not in uuid:
        try:
            if len(uuid.encode("utf-8")) <= MAX_ID_BYTES:
                return uuid
        except UnicodeEncodeError:
            pass
    return "uuid~" + _hash(json.dumps(uuid, sort_keys=True))[:40]


ROLES = {"user": "user", "assistant": "assistant"}


def role_of(entry: Mapping[str, Any]) -> str:
    """``user`` and ``assistant`` entries keep their role; every other entry is ``system``."""
    kind = entry.get("type")
    return ROLES.get(kind, "system") if isinstance(kind, str) else "system"


def title_of(data: Mapping[str, Any]) -> str | None:
    """The title the SDK would show for a summary (``SDKSessionInfo.summary``)."""
    first_prompt = (
        data.get("first_prompt")
        if data.get("first_prompt_locked")
        else data.get("command_fallback")
    )
    for value in (
        data.get("custom_title"),
        data.get("ai_title"),
        data.get("last_prompt"),
        data.get("summary_hint"),
        first_prompt,
    ):
        if isinstance(value, str) and value:
            return value
    return None
