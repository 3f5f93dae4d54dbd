"""GET /conversations/{id}/events: Server-Sent Events of every change, from any writer (another
process, another server), resumable with Last-Event-ID, scoped to the conversation's owner."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from served import EventStream, Server, new_id, run_agent, start


@pytest.fixture
def streams() -> Iterator[list[EventStream]]:
    opened: list[EventStream] = []
    yield opened
    for stream in opened:
        stream.close()


def _subscribe(
    streams: list[EventStream], server: Server, cid: str, who: str = "alice", **headers: str
) -> EventStream:
    stream = EventStream(server, f"/conversations/{cid}/events", who, **headers)
    streams.append(stream)
    if stream.status == 200:
        assert stream.next() == {"comment": "subscribed"}
        assert stream.next() == {"retry": "1000"}
    return stream


def test_an_append_by_another_process_reaches_the_subscriber(
    server: Server, streams: list[EventStream]
) -> None:
    alice, cid = server.client("alice"), new_id()
    alice.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "Weather?"})
    stream = _subscribe(streams, server, cid)
    [mid] = run_agent("append", server.store_url, cid, "Sunny, 22C.").split()
    event = stream.next_event()
    assert event["event"] == "message.created" and event["id"] == "2"
    assert event["data"]["messageId"] == mid and event["data"]["seq"] == 2
    assert event["data"]["message"]["content"] == "Sunny, 22C."
    assert event["data"]["message"]["role"] == "assistant"


def test_every_kind_of_change_in_commit_order(server: Server, streams: list[EventStream]) -> None:
    alice, cid = server.client("alice"), new_id()
    url = f"/conversations/{cid}"
    mid = alice.post(f"{url}/messages", json={"role": "user", "content": "a"}).json()["messageId"]
    stream = _subscribe(streams, server, cid)
    for change, kind in [
        (
            lambda: alice.post(f"{url}/messages", json={"role": "user", "content": "b"}),
            "message.created",
        ),
        (lambda: alice.patch(f"{url}/messages/{mid}", json={"content": "a!"}), "message.updated"),
        (lambda: alice.delete(f"{url}/messages/{mid}"), "message.deleted"),
        (lambda: alice.patch(url, json={"metadata": {"title": "T"}}), "conversation.updated"),
        (lambda: alice.delete(f"{url}/messages"), "messages.cleared"),
        (lambda: alice.delete(url), "conversation.deleted"),
    ]:
        change()
        event = stream.next_event()
        assert event["event"] == kind, event
        assert event["data"]["kind" if kind != "conversation.deleted" else "conversationId"]
    # A change of a conversation deleted before the stream read it is gone with it.


def test_conversation_updated_carries_the_conversation(
    server: Server, streams: list[EventStream]
) -> None:
    alice, cid = server.client("alice"), new_id()
    alice.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "a"})
    stream = _subscribe(streams, server, cid)
    alice.patch(f"/conversations/{cid}", json={"metadata": {"title": "Trip"}})
    event = stream.next_event()
    assert event["event"] == "conversation.updated"
    meta = alice.get(f"/conversations/{cid}").json()
    assert event["data"]["conversation"] == meta
    assert event["data"]["conversation"]["metadata"] == {"title": "Trip"}


def test_a_deleted_conversation_sends_conversation_deleted_however_it_went(
    server: Server, streams: list[EventStream]
) -> None:
    """Deleted and made again by another user (or by an agent, nobody's): the stream says
    it was deleted and goes on as for a missing conversation; made again by its owner: the
    new one's messages follow from its start; resumed after it went: deleted at once."""
    alice, bob = server.client("alice"), server.client("bob")
    for again in ("bob", "agent", "alice"):
        cid = new_id()
        alice.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "a"})
        stream = _subscribe(streams, server, cid)
        alice.delete(f"/conversations/{cid}")
        if again == "bob":
            bob.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "b"})
        elif again == "agent":
            run_agent("append", server.store_url, cid, "b")
        else:
            alice.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "c"})
        deleted = stream.next_event()
        assert (deleted["event"], deleted["data"], deleted["id"]) == (
            "conversation.deleted",
            {"conversationId": cid},
            "0",
        ), again
        if again != "alice":  # not alice's: it shows nothing of it, as a missing one
            server.client("admin").delete(f"/conversations/{cid}")
            alice.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "c"})
        created = stream.next_event()
        assert (created["data"]["message"]["content"], created["id"]) == ("c", "1"), again
        stream.close()
    gone = new_id()
    alice.post(f"/conversations/{gone}/messages", json={"role": "user", "content": "a"})
    alice.delete(f"/conversations/{gone}")
    resumed = _subscribe(streams, server, gone, **{"Last-Event-ID": "1"})
    assert resumed.next_event()["event"] == "conversation.deleted"


def test_resume_with_last_event_id(server: Server, streams: list[EventStream]) -> None:
    alice, cid = server.client("alice"), new_id()
    url = f"/conversations/{cid}/messages"
    alice.post(url, json={"role": "user", "content": "one"})
    first = _subscribe(streams, server, cid)
    alice.post(url, json={"role": "user", "content": "two"})
    seen = first.next_event()
    first.close()
    alice.post(url, json={"role": "user", "content": "three"})  # while disconnected
    alice.post(url, json={"role": "user", "content": "four"})
    resumed = _subscribe(streams, server, cid, **{"Last-Event-ID": seen["id"]})
    missed = [resumed.next_event()["data"]["message"]["content"] for _ in range(2)]
    assert missed == ["three", "four"]
    query = EventStream(server, f"/conversations/{cid}/events?after=1")
    streams.append(query)
    assert query.next_event()["data"]["message"]["content"] == "two"


def test_a_stream_opened_before_the_conversation_exists(
    server: Server, streams: list[EventStream]
) -> None:
    cid = new_id()
    stream = _subscribe(streams, server, cid)
    server.client("alice").post(
        f"/conversations/{cid}/messages", json={"role": "user", "content": "first"}
    )
    event = stream.next_event()
    assert (event["event"], event["data"]["message"]["content"]) == ("message.created", "first")


def test_another_server_process_writes_and_this_one_streams(
    server: Server, streams: list[EventStream], tmp_path: Path
) -> None:
    other = start(server.store_url, tmp_path, tokens_of=server)
    try:
        cid = new_id()
        writer = other.client("alice")
        writer.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "hi"})
        stream = _subscribe(streams, server, cid)
        writer.post(f"/conversations/{cid}/messages", json={"role": "assistant", "content": "yo"})
        assert stream.next_event()["data"]["message"]["content"] == "yo"
    finally:
        other.stop()


def test_who_may_subscribe(server: Server, streams: list[EventStream]) -> None:
    alice, cid = server.client("alice"), new_id()
    alice.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "mine"})
    # To bob it is as a missing conversation: a stream that shows nothing of alice's, until
    # the id is free and bob's own conversation has it.
    bob = _subscribe(streams, server, cid, "bob")
    assert bob.status == 200
    alice.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "mine too"})
    alice.delete(f"/conversations/{cid}")
    server.client("bob").post(
        f"/conversations/{cid}/messages", json={"role": "user", "content": "bob's"}
    )
    event = bob.next_event()
    assert (event["event"], event["data"]["message"]["content"]) == ("message.created", "bob's")
    cid = new_id()
    alice.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "mine"})
    for bad in ("abc", "-1", "1.5", "9" * 20, "9" * 5000):
        refused = _subscribe(streams, server, cid, **{"Last-Event-ID": bad})
        assert refused.status == 400, bad
        assert refused.next()["error"]["error"]["argument"] == "Last-Event-ID", bad
    assert _subscribe(streams, server, cid, "admin").status == 200
    anonymous = EventStream(server, f"/conversations/{cid}/events", "")
    streams.append(anonymous)
    assert anonymous.status == 401


def test_a_server_with_open_streams_still_shuts_down(tmp_path: Path) -> None:
    server = start(f"sqlite:///{tmp_path / 's.db'}", tmp_path)
    stream = EventStream(server, "/conversations/open/events")
    assert stream.next() == {"comment": "subscribed"}
    server.process.terminate()
    # The open stream is ended by the graceful-shutdown timeout (uvicorn then exits by the
    # signal it caught); wait() only guards against a hang.
    assert server.process.wait(60) in (0, -15)
    while "closed" not in stream.next():
        pass
    stream.close()
    server.stop()
