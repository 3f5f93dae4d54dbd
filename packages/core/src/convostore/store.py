"""``ConversationStore``: the one public face of the store, assembled from its concerns.

Each concern is a module of its own, named for it; this class adds no rule of its own:
``engine`` (state, lifecycle, twins, the shared rules), ``messages``, ``conversations``,
``sync`` (managed conversations), ``changes`` (the change feed), ``forks``, ``search``,
``attachments``
and ``memory_stores`` (memory), ``views`` (framework entry points). ``AsyncConversationStore``
(``async_store``) runs the same methods awaited. ``telemetry.instrument`` measures (and traces)
each public call, here, once.
"""

from __future__ import annotations

from .changes import ChangeMethods
from .conversations import ConversationMethods
from .forks import ForkMethods
from .memory.attachments import AttachmentMethods
from .messages import MessageMethods
from .search import SearchMethods
from .sync import SyncMethods
from .telemetry import instrument
from .views import Views


class ConversationStore(
    Views,
    MessageMethods,
    SyncMethods,
    ChangeMethods,
    ForkMethods,
    SearchMethods,
    AttachmentMethods,
    ConversationMethods,
):
    """A conversation store. ``ConversationStore()`` opens the SQLite default.

    ``url`` is ``sqlite:///file.db`` (default ``$CONVOSTORE_URL`` or ``convostore.db`` in the
    working directory), ``postgresql://...`` or ``memory://``; ``pool`` is an open
    ``psycopg_pool.ConnectionPool`` to use instead of a URL. ``replicas`` (PostgreSQL only)
    are URLs of streaming standbys of that server: reads go to them, and still see every write
    this process made before them; ``max_replica_lag`` (seconds, default 2) bounds how long a
    read waits for a standby to replay those writes and how far behind one may be (README).
    """


instrument(ConversationStore)
