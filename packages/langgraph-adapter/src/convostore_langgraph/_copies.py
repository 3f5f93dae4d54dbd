"""Copies and comparisons of channel values, for the saver's head cache: a private copy that
shares no mutable object with its original (``_private_copy``), how many leading items of two
lists hold the same content (``_common_prefix``), and whether a list and everything mutable in
it is held by one holder only (``_exclusive``, calibrated on probes at import: ``_SOLE``).
"""

from __future__ import annotations

import copy
import gc
import operator
import pickle
import sys
import weakref
from functools import cache
from typing import Any

from pydantic import BaseModel


def _same(mine: Any, theirs: Any) -> bool:
    """Whether two items hold the same content: ``==``, and for pydantic models (LangChain's
    messages) a comparison of their fields, twice as fast as the model's own ``__eq__``. An
    ``==`` that fails (a numpy array's) counts as a difference: the item is stored again."""
    if mine is theirs:
        return True
    if type(mine) is not type(theirs):
        return False
    try:
        if isinstance(mine, BaseModel):
            return bool(
                mine.__dict__ == theirs.__dict__
                and mine.__pydantic_extra__ == theirs.__pydantic_extra__
                and mine.__pydantic_private__ == theirs.__pydantic_private__
            )
        return bool(mine == theirs)
    except Exception:
        return False


_STATE = operator.attrgetter("__class__", "__dict__", "__pydantic_extra__", "__pydantic_private__")
_States = list[tuple[Any, ...]]


@cache
def _is_model(cls: type) -> bool:
    return issubclass(cls, BaseModel)


def _states(items: list[Any]) -> _States | None:
    """What ``_same`` compares of each item, if all are pydantic models (LangChain's
    messages): class, fields, extra and private attributes; else ``None``."""
    if not all(map(_is_model, set(map(type, items)))):
        return None
    return list(map(_STATE, items))


def _common_prefix(mine: list[Any], theirs: list[Any], states: _States | None = None) -> int:
    """How many leading items of ``theirs`` are ``_same`` as ``mine``'s. For a list of
    pydantic models (``states``: their ``_states``, kept with them) it is found with list
    comparisons in C, twice as fast as a call per item; otherwise item by item."""
    n = min(len(mine), len(theirs))
    a = mine if n == len(mine) else mine[:n]
    b = theirs if n == len(theirs) else theirs[:n]
    try:
        mine_states = _states(a) if states is None else states[:n] if n < len(states) else states
        if mine_states is not None:
            theirs_states = list(map(_STATE, b))
            if mine_states == theirs_states:
                return n
            return list(map(operator.eq, mine_states, theirs_states)).index(False)
    except Exception:  # not models, or an == that fails: item by item
        pass
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if not _same(x, y):
            return i
    return n


def _private_copy(value: Any) -> Any:
    """A deep copy of ``value`` that shares no mutable object with it, and shares its
    immutable leaves (text, numbers): lists, dicts with such keys, sets of such items and
    plain pydantic models (LangChain's messages) are copied a field at a time (faster than
    pickle, and the shared leaves make the next comparison with the original a pointer
    comparison); anything else by a pickle round trip, or ``deepcopy`` for what pickle cannot
    take."""
    if type(value) in _ATOMIC:
        return value
    try:
        return _copy(value)
    except RecursionError:  # deeper than this recursion goes: pickle's goes further
        return _pickle_copy(value)


def _private_copies(items: list[Any]) -> list[Any]:
    """``_private_copy`` of each item."""
    try:
        return [x if type(x) in _ATOMIC else _copy(x) for x in items]
    except RecursionError:
        return [_private_copy(x) for x in items]


_new = object.__new__
_set_slot = object.__setattr__


def _copy(value: Any) -> Any:
    kind: type = type(value)
    if kind in _ATOMIC:
        return value
    if kind is list:
        return [x if type(x) in _ATOMIC else _copy(x) for x in value]
    if kind is dict:
        return _copy_dict(value)
    if kind is set and _ATOMIC.issuperset(map(type, value)):
        return set(value)
    if kind not in _CONTAINERS and _plain_model(kind) and value.__pydantic_private__ is None:
        # as pydantic's own __deepcopy__ does it (private attributes: pickle, which knows them)
        out: Any = _new(kind)
        _set_slot(out, "__dict__", _copy_dict(value.__dict__))
        _set_slot(out, "__pydantic_fields_set__", set(value.__pydantic_fields_set__))
        extra = value.__pydantic_extra__
        _set_slot(out, "__pydantic_extra__", None if extra is None else _copy_dict(extra))
        _set_slot(out, "__pydantic_private__", None)
        return out
    return _pickle_copy(value)


def _copy_dict(value: dict[Any, Any]) -> dict[Any, Any]:
    if not _ATOMIC.issuperset(map(type, value)):  # a key that may be mutable
        out: dict[Any, Any] = _pickle_copy(value)
        return out
    return {k: x if type(x) in _ATOMIC else _copy(x) for k, x in value.items()}


def _pickle_copy(value: Any) -> Any:
    """A pickle round trip (3 to 4 times faster than ``copy.deepcopy`` on LangChain
    messages), or ``deepcopy`` for what pickle cannot take."""
    try:
        return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
    except Exception:
        return copy.deepcopy(value)


_ATOMIC = frozenset({str, bytes, int, float, bool, type(None)})


# -- handing on what only the saver holds ----------------------------------------------------

_getrefcount = getattr(sys, "getrefcount", None)
_MODEL_SLOTS = {
    "__dict__",
    "__weakref__",
    "__pydantic_fields_set__",
    "__pydantic_extra__",
    "__pydantic_private__",
}


_CONTAINERS = frozenset({list, dict, set})


@cache
def _plain_model(cls: type) -> bool:
    """A list, dict or set, or a pydantic model whose whole state is its ``__dict__`` and
    pydantic's own slots."""
    if cls in _CONTAINERS:
        return True
    if not issubclass(cls, BaseModel):
        return False
    for klass in cls.__mro__:
        slots = vars(klass).get("__slots__", ())
        if not set((slots,) if isinstance(slots, str) else slots) <= _MODEL_SLOTS:
            return False
    return True


def _exclusive(roots: list[Any], sole: int | None = None) -> bool:
    """Whether ``roots`` is the only holder of its items, and each mutable object inside them
    is held by its one container only: then nobody else can reach them, let alone change
    them, and they may be handed to a reader as they are. Reference counts tell (``sole``:
    the count this function sees for an object held once, ``_SOLE``); a weak reference, an
    object held twice or of a kind not known here (not a list, dict, set or plain pydantic
    model, with immutable leaves) means no. Walked a level at a time, mostly in C."""
    sole = _SOLE if sole is None else sole
    if sole is None or _getrefcount is None:
        return False
    level = list(roots)
    while level:
        if max(map(_getrefcount, level)) > sole:
            return False
        kinds = set(map(type, level))
        if not all(map(_plain_model, kinds)):
            return False
        # lists, dicts and sets take no weak references
        if not kinds <= _CONTAINERS and any(map(weakref.getweakrefcount, level)):
            return False
        skip = _ATOMIC.union(map(type, kinds))  # leaves, and the classes (of these metaclasses)
        level = [o for o in gc.get_referents(*level) if type(o) not in skip]
    return True


class _Probe(BaseModel):
    calls: list[dict[str, list[int]]]


def _calibrate() -> int | None:
    """``_SOLE``, found on probes: a fresh one passes ``_exclusive``, and one more reference
    to any object in it (or a weak reference) fails it. ``None`` (reads always copy) where
    reference counts do not tell that, as on PyPy."""
    if _getrefcount is None:
        return None

    def probe() -> list[Any]:
        return [_Probe(calls=[{"a": [1]}])]

    def part(roots: list[Any], index: int) -> Any:
        m = roots[0]
        return [m, m.__dict__, m.__pydantic_fields_set__, m.calls, m.calls[0], m.calls[0]["a"]][
            index
        ]

    for sole in range(1, 8):
        if not _exclusive(probe(), sole):
            continue
        failed = True
        for index in range(6):
            roots = probe()
            held = part(roots, index)
            failed = failed and not _exclusive(roots, sole)
            del held
        roots = probe()
        ref = weakref.ref(roots[0])
        failed = failed and not _exclusive(roots, sole)
        del ref
        return sole if failed else None
    return None


_SOLE = _calibrate()
