"""What stored bytes may become: the saver reads LangGraph's safe types (LangChain messages,
``Send``, ``Interrupt``, ``Command``, the standard library's plain types) and the types a user
allows (``allowed_msgpack_modules``, or LangGraph's own ``with_allowlist``); any other type is
refused with ``TypeNotAllowedError``. (Planted hostile values: ``test_hostile.py``.)"""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict
from zoneinfo import ZoneInfo

import pytest
from convostore import ConversationStore, MemoryValidationError
from convostore_langgraph import ConvostoreSaver, TypeNotAllowedError
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import BaseModel


@dataclass
class Order:
    sku: str
    qty: int


class Customer(BaseModel):
    name: str
    tags: list[str]


class OrderState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    order: Order | None
    customer: Customer | None


LONG = "vip " * 100


def take(state: OrderState) -> dict[str, Any]:
    qty = state["order"].qty + 1 if state.get("order") else 1
    return {
        "messages": [AIMessage(f"{qty} ordered")],
        "order": Order("book", qty),
        "customer": Customer(name="ada", tags=[LONG] * qty),  # kept in a row of its own
    }


def _graph(saver: ConvostoreSaver) -> Any:
    graph = StateGraph(OrderState)
    graph.add_node("take", take)
    graph.add_edge(START, "take")
    return graph.compile(checkpointer=saver)


CFG: Any = {"configurable": {"thread_id": "orders"}}
INPUT = {"messages": [HumanMessage("one more")], "order": None, "customer": None}


def _twice(saver: ConvostoreSaver) -> dict[str, Any]:
    """Two invokes: the second reads the first's state back from the database."""
    app = _graph(saver)
    app.invoke(INPUT, CFG)
    out: dict[str, Any] = app.invoke({"messages": [HumanMessage("and another")]}, CFG)
    return out


def _kept(cstore: ConversationStore, saver: ConvostoreSaver) -> dict[str, Any]:
    """The state as a fresh saver (no cache) reads it."""
    fresh = ConvostoreSaver(cstore, serde=saver.serde, cache_size=0)
    found = fresh.get_tuple(CFG)
    assert found is not None
    return found.checkpoint["channel_values"]


def test_a_type_not_allowed_is_refused_by_name(cstore: ConversationStore) -> None:
    saver = ConvostoreSaver(cstore)
    with pytest.raises(TypeNotAllowedError) as refused:
        _twice(saver)
    error = refused.value
    assert error.type_name in {f"{__name__}.Order", f"{__name__}.Customer"}
    assert error.thread_id == "orders" and error.checkpoint_id is not None
    assert "allowed_msgpack_modules" in str(error)


def test_allowed_types_round_trip(cstore: ConversationStore) -> None:
    saver = ConvostoreSaver(cstore, allowed_msgpack_modules=[Order, (__name__, "Customer")])
    out = _twice(saver)
    assert out["order"] == Order("book", 2)
    assert out["customer"] == Customer(name="ada", tags=[LONG, LONG])
    values = _kept(cstore, saver)
    assert type(values["order"]) is Order and values["order"] == Order("book", 2)
    assert type(values["customer"]) is Customer and values["customer"].tags == [LONG, LONG]


def test_langgraphs_own_allowlist_is_honoured(cstore: ConversationStore) -> None:
    """What ``compile()`` does under ``LANGGRAPH_STRICT_MSGPACK=true``: a copy of the saver
    whose serializer also allows the graph's schema types."""
    saver = ConvostoreSaver(cstore).with_allowlist([(__name__, "Order"), (__name__, "Customer")])
    assert isinstance(saver, ConvostoreSaver)
    assert _twice(saver)["order"] == Order("book", 2)


PLAIN: dict[str, Any] = {
    "when": datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
    "day": datetime.date(2026, 1, 2),
    "span": datetime.timedelta(minutes=90),
    "id": uuid.UUID(int=7),
    "price": decimal.Decimal("9.99"),
    "tags": {"a", "b"},
    "frozen": frozenset({1, 2}),
    "queue": deque([1, 2]),
    "path": Path("/srv/data"),
    "zone": ZoneInfo("UTC"),
}


class PlainState(TypedDict):
    values: dict[str, Any]


def test_the_standard_librarys_plain_types_round_trip_by_default(
    cstore: ConversationStore,
) -> None:
    saver = ConvostoreSaver(cstore)
    graph = StateGraph(PlainState)
    graph.add_node("keep", lambda state: {"values": {**state["values"], "big": "x" * 500}})
    graph.add_edge(START, "keep")
    app = graph.compile(checkpointer=saver)
    app.invoke({"values": PLAIN}, CFG)
    values = _kept(cstore, saver)["values"]
    assert {k: values[k] for k in PLAIN} == PLAIN
    assert type(values["queue"]) is deque and isinstance(values["path"], Path)


@pytest.mark.parametrize(
    ("allowed", "message"),
    [
        ("mod.Name", "a class or a"),
        ([("mod",)], "a class or a"),
        ([("mod", 1)], "a class or a"),
        ([42], "a class or a"),
    ],
)
def test_a_malformed_allow_list_is_refused(
    cstore: ConversationStore, allowed: Any, message: str
) -> None:
    with pytest.raises(MemoryValidationError, match=message) as refused:
        ConvostoreSaver(cstore, allowed_msgpack_modules=allowed)
    assert refused.value.argument == "allowed_msgpack_modules"


def test_an_allow_list_goes_to_the_serializer_you_pass(cstore: ConversationStore) -> None:
    with pytest.raises(MemoryValidationError, match="serde") as refused:
        ConvostoreSaver(cstore, serde=JsonPlusSerializer(), allowed_msgpack_modules=[Order])
    assert refused.value.argument == "allowed_msgpack_modules"
    serde = JsonPlusSerializer(allowed_msgpack_modules=[Order, Customer])
    assert _twice(ConvostoreSaver(cstore, serde=serde))["order"] == Order("book", 2)
