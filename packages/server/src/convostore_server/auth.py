"""Who is calling: a bearer token mapped to a principal (a user or an admin), or the app's own
authentication through a hook.

The built-in ``TokenTable`` keeps the SHA-256 of each token, never the token, and compares a
presented token's hash with every stored hash in constant time (``hmac.compare_digest``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import HTTPConnection

TOKENS_ENV = "CONVOSTORE_SERVER_TOKENS"
"""The environment variable holding a token table's text (lines as in a tokens file)."""

TOKENS_FILE_ENV = "CONVOSTORE_SERVER_TOKENS_FILE"
"""The environment variable naming a tokens file."""


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts for: a user (``Principal(user_id="u_1")``), who sees and changes only
    their own conversations and memory stores, or an admin (``Principal(admin=True)``), who
    sees every one."""

    user_id: str | None = None
    admin: bool = False

    def __post_init__(self) -> None:
        if self.admin == (self.user_id is not None):
            raise ValueError("a Principal is either a user (user_id=...) or an admin (admin=True)")
        if self.user_id is not None and (not isinstance(self.user_id, str) or not self.user_id):
            raise ValueError("a user Principal needs a non-empty str user_id")


Authenticator = Callable[[HTTPConnection], "Principal | Awaitable[Principal | None] | None"]
"""The app's own authentication: given the request (its headers, cookies), the principal it
acts for, or None to answer 401. It may be a plain or an async function."""


def hash_token(token: str) -> str:
    """The hex SHA-256 of a token: what a tokens file stores."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def bearer_token(connection: HTTPConnection) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    scheme, _, token = connection.headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def check_user_id(user_id: str) -> str:
    """``user_id`` if a tokens-file line carries it exactly: one or more printable characters
    without white space (a line break in it would make a line of its own); else a
    ``ValueError`` naming it."""
    if not user_id or not all(c.isprintable() and not c.isspace() for c in user_id):
        raise ValueError(
            f"a user id in the tokens file is printable text without white space, got {user_id!r}"
        )
    return user_id


class TokenTable:
    """Bearer tokens, stored hashed, each mapped to a principal.

    A tokens file (or the ``CONVOSTORE_SERVER_TOKENS`` variable) has one token a line, exactly
    ``<sha256 of the token, hex> admin`` or ``<sha256> user <user_id>`` (single spaces, the user
    id printable and without white space); a line whose first non-blank character is ``#`` is
    a comment and a blank line is skipped. Anything else is an error naming its line: nothing
    in a line is dropped or guessed. ``convostore-server --new-token user:u_1`` makes a token
    and prints its line.
    """

    def __init__(self, entries: Iterable[tuple[str, Principal]] = ()) -> None:
        self.entries = [(digest.lower(), principal) for digest, principal in entries]

    @classmethod
    def parse(cls, text: str, *, source: str = "tokens") -> TokenTable:
        """A table from the text of a tokens file; a malformed line is a ``ValueError`` that
        names it (``<source>, line <n>``)."""
        entries = []
        for number, raw in enumerate(text.split("\n"), start=1):
            line = raw.removesuffix("\r")  # a file written on Windows
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                digest, principal = _entry(line)
            except ValueError as exc:
                raise ValueError(f"{source}, line {number}: {exc}") from None
            entries.append((digest, principal))
        return cls(entries)

    @classmethod
    def from_file(cls, path: str | Path) -> TokenTable:
        return cls.parse(Path(path).read_text(encoding="utf-8"), source=str(path))

    @classmethod
    def from_env(cls) -> TokenTable:
        """The table in ``$CONVOSTORE_SERVER_TOKENS`` and the file ``$CONVOSTORE_SERVER_TOKENS_FILE``
        names (both, if both are set); empty when neither is set."""
        table = cls.parse(os.environ.get(TOKENS_ENV, ""), source=TOKENS_ENV)
        path = os.environ.get(TOKENS_FILE_ENV)
        if path:
            table.entries += cls.from_file(path).entries
        return table

    def __call__(self, connection: HTTPConnection) -> Principal | None:
        token = bearer_token(connection)
        if token is None:
            return None
        presented = hash_token(token)
        found = None
        for digest, principal in self.entries:  # every entry, so the time does not tell which
            if hmac.compare_digest(digest, presented):
                found = principal
        return found


def _entry(line: str) -> tuple[str, Principal]:
    """The digest and principal of one line of a tokens file."""
    digest, _, role = line.partition(" ")
    if len(digest) != 64 or any(c not in "0123456789abcdefABCDEF" for c in digest):
        raise ValueError(f"not a SHA-256 in hex: {digest[:80]!r}")
    if role == "admin":
        return digest, Principal(admin=True)
    if role.startswith("user "):
        return digest, Principal(user_id=check_user_id(role[5:]))
    raise ValueError(
        "expected exactly '<sha256> admin' or '<sha256> user <user_id>' (single spaces,"
        f" nothing after the role or the user id), got {line[:120]!r}"
    )


def new_token(role: str) -> tuple[str, str]:
    """A fresh random token for ``role`` (``admin`` or ``user:<user_id>``, the user id exactly
    as given) and its tokens-file line (which holds only the token's hash). A user id the line
    cannot carry exactly (white space, a control character) is a ``ValueError``."""
    if role == "admin":
        described = "admin"
    elif role.startswith("user:"):
        described = f"user {check_user_id(role[5:])}"
    else:
        raise ValueError(f"role must be 'admin' or 'user:<user_id>', got {role!r}")
    token = secrets.token_urlsafe(32)
    return token, f"{hash_token(token)} {described}"
