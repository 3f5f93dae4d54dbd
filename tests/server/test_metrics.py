"""``GET /metrics`` on the real server: Prometheus's text format (read by prometheus_client's own
parser), for an admin's token only, its counters following the calls the test makes."""

from __future__ import annotations

import time
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from served import EventStream, Server, new_id


def _samples(server: Server) -> dict[tuple[str, str, str], float]:
    """Each sample of the store's metrics: (name, method, database) -> value."""
    answer = server.client("admin").get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    found = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            if sample.name.startswith("convostore_call_") and "le" not in sample.labels:
                method = sample.labels["convostore_method"]
                found[sample.name, method, sample.labels["db_system_name"]] = sample.value
    return found


def test_metrics_are_for_an_admins_token_only(server: Server) -> None:
    anonymous = server.client(None).get("/metrics")
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "unauthenticated"
    user = server.client("alice").get("/metrics")
    assert user.status_code == 403
    assert user.json()["error"]["code"] == "forbidden"
    assert "convostore" not in user.text.replace("convostore-server", "")


def test_the_counters_move_as_the_calls_do(server: Server) -> None:
    system = "sqlite" if server.store_url.startswith("sqlite") else "postgresql"
    alice, cid = server.client("alice"), new_id()
    before = _samples(server)
    for i in range(5):
        assert (
            alice.post(
                f"/conversations/{cid}/messages", json={"role": "user", "content": str(i)}
            ).status_code
            == 201
        )
    for _ in range(3):
        assert alice.get(f"/conversations/{cid}/messages").status_code == 200
    after = _samples(server)

    def moved(name: str, method: str) -> float:
        key = (name, method, system)
        return after[key] - before.get(key, 0.0)

    assert moved("convostore_call_duration_seconds_count", "append_message") == 5
    assert moved("convostore_call_duration_seconds_count", "get_messages") == 3
    assert moved("convostore_call_duration_seconds_sum", "get_messages") > 0


def _families(server: Server) -> dict[str, list[Any]]:
    """Every sample of /metrics, by its name."""
    answer = server.client("admin").get("/metrics")
    assert answer.status_code == 200
    found: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append(sample)
    return found


def test_the_databases_own_metrics_are_served(server: Server) -> None:
    """PostgreSQL: the pool's connections by state, its bound and its waiting calls, and the
    one-statement appends by outcome; SQLite: the writers' queue wait, one per write."""
    alice, cid = server.client("alice"), new_id()
    before = _families(server)
    for i in range(3):
        sent = alice.post(
            f"/conversations/{cid}/messages", json={"role": "user", "content": str(i)}
        )
        assert sent.status_code == 201
    after = _families(server)
    if server.store_url.startswith("sqlite"):
        [waits] = after["convostore_sqlite_queue_wait_seconds_count"]
        earlier = before.get("convostore_sqlite_queue_wait_seconds_count")
        assert waits.value - (earlier[0].value if earlier else 0) >= 3
        assert "db_client_connection_max" not in after
        return
    [bound] = after["db_client_connection_max"]
    assert bound.value >= 1 and bound.labels["db_client_connection_pool_name"]
    states = {
        s.labels["db_client_connection_state"]: s.value for s in after["db_client_connection_count"]
    }
    assert set(states) == {"used", "idle"} and 0 < states["used"] + states["idle"] <= bound.value
    [waiting] = after["db_client_connection_pending_requests"]
    assert waiting.value == 0

    def outcome(found: dict[str, list[Any]], name: str) -> float:
        samples = found.get("convostore_append_one_statement_total", [])
        return sum(s.value for s in samples if s.labels["convostore_outcome"] == name)

    # the first append to a new conversation takes the locking path, the next ones the one
    # statement (this process is the only writer)
    assert outcome(after, "skipped") - outcome(before, "skipped") == 1
    assert outcome(after, "hit") - outcome(before, "hit") == 2


def _subscribers(server: Server) -> float:
    answer = server.client("admin").get("/metrics")
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            if sample.name == "convostore_server_sse_subscribers":
                return sample.value
    return 0.0


def test_open_event_streams_are_counted(server: Server) -> None:
    before = _subscribers(server)
    streams = [EventStream(server, f"/conversations/{new_id()}/events") for _ in range(2)]
    try:
        for stream in streams:
            assert stream.next() == {"comment": "subscribed"}
        assert _subscribers(server) == before + 2
    finally:
        for stream in streams:
            stream.close()
    while _subscribers(server) != before:  # the server sees the clients go (pytest's timeout)
        time.sleep(0.05)
