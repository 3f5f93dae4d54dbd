"""``ConvostoreStore``: LangGraph's ``BaseStore`` (long-term memory) on a convostore database."""

from __future__ import annotations

import concurrent.futures
import functools
import json
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from convostore import ConversationStore, MemoryValidationError, telemetry
from convostore.spi import Limits, StoreLike, Tx, check_id, check_int, open_store, run_in_thread
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

from . import _schema as sql
from ._filters import check_filter_key, field, key_text

__all__ = ["ConvostoreStore"]

OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
KEY_MAX_BYTES = 1024
"""An item's key: at most this many UTF-8 bytes, without NUL."""
NAMESPACE_MAX_BYTES = 1024
"""A namespace, its labels joined by ".": at most this many UTF-8 bytes, without NUL."""
TTL_MAX_MINUTES = 1000 * 365.25 * 24 * 60
"""A put's ``ttl``: at most a thousand years."""
_KEY_LIMITS = Limits(max_id_bytes=KEY_MAX_BYTES)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _now_us() -> int:
    return time.time_ns() // 1000


def _when(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=int(us))


def _encode(value: Mapping[str, Any]) -> str:
    """A stored value's text. ``_contained_texts`` relies on its form (``json.dumps``' default
    separators and ASCII escapes)."""
    return json.dumps(dict(value), allow_nan=False)


def _check_filter(name: str, value: Any) -> None:
    """Refuse unknown ``$`` operators anywhere in a filter, before anything runs."""
    if isinstance(value, Mapping):
        for key, sub in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{name}: filter keys must be strings, got {key!r}")
            if key.startswith("$") and key not in OPERATORS:
                raise ValueError(
                    f"{name}: unsupported filter operator {key!r};"
                    f" supported: {', '.join(sorted(OPERATORS))}"
                )
            _check_filter(name, sub)
    elif isinstance(value, list | tuple):
        for sub in value:
            _check_filter(name, sub)


def _check_namespace(namespace: Sequence[object]) -> None:
    """Labels LangGraph accepts but a database cannot store alike: refused on every backend."""
    labels = [label for label in namespace if isinstance(label, str)]  # LangGraph checks types
    if any("\x00" in label for label in labels):
        raise InvalidNamespaceError(f"Namespace labels cannot contain NUL. Got: {namespace!r}")
    try:
        size = len(".".join(labels).encode())
    except UnicodeEncodeError:
        raise InvalidNamespaceError(
            f"Namespace labels must be valid UTF-8 (a lone surrogate). Got: {namespace!r}"
        ) from None
    if size > NAMESPACE_MAX_BYTES:
        raise InvalidNamespaceError(
            f"Namespace is {size} bytes of UTF-8 joined by '.'; the limit is"
            f" {NAMESPACE_MAX_BYTES} bytes."
        )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _order(left: Any, right: Any, op: str) -> bool:
    """``$gt`` and friends: numbers as numbers (exactly, also past 2**53), strings as strings;
    anything else (a missing key, mixed types) does not match."""
    if not ((_number(left) and _number(right)) or (type(left) is str and type(right) is str)):
        return False
    if op == "$gt":
        return bool(left > right)
    if op == "$gte":
        return bool(left >= right)
    if op == "$lt":
        return bool(left < right)
    return bool(left <= right)


def _matches(value: Any, wanted: Any) -> bool:
    """InMemoryStore's filter semantics (partial match of nested objects, lists element-wise),
    with ordered operators comparing values of one kind instead of casting to float."""
    if isinstance(wanted, Mapping):
        if any(k.startswith("$") for k in wanted):
            for op, operand in wanted.items():
                if op == "$eq":
                    ok = _matches(value, operand)
                elif op == "$ne":
                    ok = not _matches(value, operand)
                else:
                    ok = _order(value, operand, op)
                if not ok:
                    return False
            return True
        if not isinstance(value, Mapping):
            return False
        return all(_matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_matches(a, b) for a, b in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _contained_texts(filter: Mapping[str, Any]) -> list[str]:
    """Texts every stored value the filter matches contains: a top-level key that must equal
    a string appears as ``"key": "text"`` in its ``_encode`` text. A text can also be in rows
    the filter does not match (the pair nested deeper), never miss one."""
    texts = []
    for key, wanted in filter.items():
        text = wanted["$eq"] if isinstance(wanted, Mapping) and list(wanted) == ["$eq"] else wanted
        if type(text) is str:
            texts.append(key_text(key, json.dumps) + json.dumps(text))
    return texts


def _path_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"match_type must be 'prefix' or 'suffix', got {condition.match_type!r}")
    return all(p in ("*", n) for n, p in pairs)


class ConvostoreStore(BaseStore):
    """A LangGraph ``BaseStore`` with ``batch`` and ``abatch`` (and so every sync and async
    method), namespace-prefix search, filter operators, ``list_namespaces`` and TTL.

    ``store`` is a ``ConversationStore``, an ``AsyncConversationStore``, a URL or ``None`` (the
    default URL). ``ttl`` is a LangGraph ``TTLConfig``: ``default_ttl`` (minutes) applies to
    puts that pass no ``ttl``; ``refresh_on_read`` (default True) extends an item's life when
    it is read; ``sweep_interval_minutes`` is the period of ``start_ttl_sweeper()``;
    ``omit_expired`` (default False, as ``TTLConfig`` documents) leaves out of every read an
    item past its TTL that no sweep has deleted yet, as ``PostgresStore`` does (without it,
    such an item is returned until swept, as in ``PostgresStore`` and ``SqliteStore``).
    ``clock`` gives the time in microseconds.
    """

    supports_ttl = True

    def __init__(
        self,
        store: StoreLike = None,
        *,
        ttl: TTLConfig | None = None,
        clock: Callable[[], int] = _now_us,
        replicas: Sequence[str] | None = None,
    ) -> None:
        self.clock = clock
        self.store: ConversationStore
        self.store, self._owns_store = open_store(store, replicas=replicas)
        self.backend = self.store.backend
        self.ttl_config = ttl
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()
        sql.migrate(self.backend)

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> ConvostoreStore:
        """Open the database at ``url`` (closed again by ``close()``)."""
        return cls(url, **kwargs)

    def close(self) -> None:
        """Stop the sweeper and close the database if this store opened it."""
        self.stop_ttl_sweeper()
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> ConvostoreStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- batch ------------------------------------------------------------------------------

    @staticmethod
    def _check(op: Op) -> None:
        if not isinstance(op, GetOp | SearchOp | PutOp | ListNamespacesOp):
            raise TypeError(f"unknown operation type: {type(op).__name__}")
        validate_op_namespace(op)
        if isinstance(op, GetOp | PutOp):
            _check_namespace(op.namespace)
        elif isinstance(op, SearchOp):
            _check_namespace(op.namespace_prefix)
        if isinstance(op, GetOp | PutOp):
            if not isinstance(op.key, str):
                raise TypeError(f"key must be a string, got {type(op.key).__name__}")
            check_id("key", op.key, _KEY_LIMITS)
        if isinstance(op, PutOp):
            if not op.namespace:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            if op.namespace[0] == "langgraph":
                raise InvalidNamespaceError(
                    f'Root label for namespace cannot be "langgraph". Got: {op.namespace}'
                )
            if op.value is not None and not isinstance(op.value, Mapping):
                raise TypeError(f"value must be a dict or None, got {type(op.value).__name__}")
            if op.ttl is not None and (
                not _number(op.ttl)
                or not math.isfinite(op.ttl)
                or not 0 < op.ttl <= TTL_MAX_MINUTES
            ):
                raise MemoryValidationError(
                    f"ttl must be a number of minutes above 0 and at most {TTL_MAX_MINUTES:.0f},"
                    f" got {op.ttl!r}",
                    argument="ttl",
                )
        if isinstance(op, SearchOp):
            _check_filter("filter", op.filter)
            if op.filter is not None:
                for key in op.filter:
                    check_filter_key(key)
        if isinstance(op, SearchOp | ListNamespacesOp):
            check_int("limit", op.limit)
            check_int("offset", op.offset)
        if isinstance(op, ListNamespacesOp) and op.max_depth is not None:
            check_int("max_depth", op.max_depth, minimum=1)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in one transaction: every read sees the state before this batch's
        writes (as the reference stores do), and the last put of a key wins."""
        ops = list(ops)
        for op in ops:
            self._check(op)
        puts: dict[tuple[tuple[str, ...], str], tuple[PutOp, str | None]] = {}
        for op in ops:
            if isinstance(op, PutOp):
                encoded = None
                if op.value is not None:
                    try:
                        encoded = _encode(op.value)
                    except RecursionError:
                        raise MemoryValidationError(
                            f"value of {op.namespace!r} / {op.key!r} is nested too deeply"
                            " to store as JSON",
                            argument="value",
                        ) from None
                    except (TypeError, ValueError) as exc:
                        raise ValueError(
                            f"value of {op.namespace!r} / {op.key!r} is not JSON: {exc}"
                        ) from exc
                puts[(op.namespace, op.key)] = (op, encoded)
        now = self.clock()
        alive = now if (self.ttl_config or {}).get("omit_expired") else None

        def reads(tx: Tx) -> tuple[list[Result], list[tuple[str, str, float]]]:
            results: list[Result] = []
            touched: list[tuple[str, str, float]] = []
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(self._get(tx, op, alive, touched))
                elif isinstance(op, SearchOp):
                    results.append(self._search(tx, op, alive, touched))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(tx, op, alive))
                else:
                    results.append(None)
            return results, touched

        def writes(tx: Tx, touched: list[tuple[str, str, float]]) -> None:
            if touched:
                sql.store_expire_at(
                    tx, [(now + int(ttl * 60_000_000), p, k) for p, k, ttl in touched]
                )
            for (namespace, key), (op, encoded) in puts.items():
                prefix = ".".join(namespace)
                if encoded is None:
                    sql.store_delete(tx, prefix, key)
                    continue
                expires = None if op.ttl is None else now + int(op.ttl * 60_000_000)
                sql.store_put(tx, prefix, key, encoded, now=now, expires=expires, ttl=op.ttl)

        # one statement alone needs no transaction around it (a round trip each way fewer
        # on PostgreSQL): a batch of one read, or of puts to one key only
        single = len(ops) == 1 or (len(puts) == 1 and all(isinstance(o, PutOp) for o in ops))
        if puts:

            def both(tx: Tx) -> list[Result]:
                results, touched = reads(tx)
                writes(tx, touched)
                return results

            erasing = any(encoded is None for _, encoded in puts.values())
            return self.backend.write(both, single_statement=single, erasing=erasing)
        results, touched = self.backend.read(reads, single_statement=single)
        if touched:
            self.backend.write(lambda tx: writes(tx, touched))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on a worker thread."""
        ops = list(ops)
        return await run_in_thread(functools.partial(self.batch, ops))

    # -- the operations -----------------------------------------------------------------------

    @staticmethod
    def _item(row: Sequence[Any], cls: type[Item] = Item) -> Any:
        return cls(
            namespace=tuple(row[0].split(".")),
            key=row[1],
            value=json.loads(row[2]),
            created_at=_when(row[3]),
            updated_at=_when(row[4]),
        )

    def _refresh(
        self, refresh: bool, row: Sequence[Any], touched: list[tuple[str, str, float]]
    ) -> None:
        if refresh and row[5] is not None:
            touched.append((row[0], row[1], float(row[5])))

    def _get(
        self, tx: Tx, op: GetOp, alive: int | None, touched: list[tuple[str, str, float]]
    ) -> Item | None:
        row = sql.store_get(tx, ".".join(op.namespace), op.key, alive)
        if row is None:
            return None
        self._refresh(op.refresh_ttl, row, touched)
        item: Item = self._item(row)
        return item

    def _search(
        self, tx: Tx, op: SearchOp, alive: int | None, touched: list[tuple[str, str, float]]
    ) -> list[SearchItem]:
        prefix = ".".join(op.namespace_prefix) if op.namespace_prefix else None
        if op.filter:  # SQL narrows by text, Python decides
            rows = [
                r
                for r in sql.store_search(tx, prefix, _contained_texts(op.filter), alive, None)
                if all(_matches(field(json.loads(r[2]), k), v) for k, v in op.filter.items())
            ]
            rows = rows[op.offset : op.offset + op.limit]
        else:
            rows = sql.store_search(tx, prefix, [], alive, (op.limit, op.offset))
        items: list[SearchItem] = []
        for row in rows:
            self._refresh(op.refresh_ttl, row, touched)
            items.append(self._item(row, SearchItem))
        return items

    def _list_namespaces(
        self, tx: Tx, op: ListNamespacesOp, alive: int | None
    ) -> list[tuple[str, ...]]:
        namespaces = [tuple(p.split(".")) for p in sql.store_prefixes(tx, alive)]
        if op.match_conditions:
            namespaces = [
                ns for ns in namespaces if all(_path_matches(c, ns) for c in op.match_conditions)
            ]
        if op.max_depth is not None:
            namespaces = list({ns[: op.max_depth] for ns in namespaces})
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    # -- TTL ----------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete expired items now; return how many went."""
        now = self.clock()
        return self.backend.write(lambda tx: sql.store_sweep(tx, now))

    async def asweep_ttl(self) -> int:
        """``sweep_ttl`` on a worker thread."""
        return await run_in_thread(self.sweep_ttl)

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep every ``sweep_interval_minutes`` (default: the TTL config's, else 5) on a
        daemon thread until ``stop_ttl_sweeper()``. The future completes when it stops."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        if self._sweeper is not None and self._sweeper.is_alive():
            future.set_result(None)
            return future
        interval = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes")
        seconds = float(interval or 5) * 60
        self._sweeper_stop.clear()

        def loop() -> None:
            try:
                while not self._sweeper_stop.wait(seconds):
                    self.sweep_ttl()
            finally:
                future.set_result(None)

        self._sweeper = threading.Thread(target=loop, name="convostore-ttl-sweeper", daemon=True)
        self._sweeper.start()
        return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True once it has stopped (or none was running)."""
        thread = self._sweeper
        if thread is None:
            return True
        self._sweeper_stop.set()
        thread.join(timeout)
        if thread.is_alive():
            return False
        self._sweeper = None
        return True


# ``batch`` (every get, put, search and list LangGraph makes) is a span ``langgraph_store.batch``.
telemetry.trace_methods(
    ConvostoreStore,
    "langgraph_store",
    ("batch", "sweep_ttl"),
    lambda store: {"db.system.name": store.backend.dialect},
)
