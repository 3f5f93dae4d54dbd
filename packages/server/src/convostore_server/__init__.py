"""convostore-server: the HTTP side of a convostore store, for front-ends and cloud functions."""

from .app import create_app
from .auth import Authenticator, Principal, TokenTable, hash_token, new_token
from .cli import app_from_env
from .errors import ErrorBody, ErrorDetail
from .routes.principal import Caller

__all__ = [
    "Authenticator",
    "Caller",
    "ErrorBody",
    "ErrorDetail",
    "Principal",
    "TokenTable",
    "app_from_env",
    "create_app",
    "hash_token",
    "new_token",
]
