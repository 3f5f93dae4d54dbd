"""Read-your-writes across the workers of one ``convostore-server --workers 3`` on a real primary
and hot standby: a write answered by one worker is read back through another worker, with
the standby's replay paused, by sending back the ``Convostore-Position`` header.

Which worker accepts a connection is the kernel's choice, so the test finds out: every
response carries its worker's position, and right after a write only the writing worker's is
at or past that write. A kept-alive connection whose answers carry an earlier position is on
another worker; that connection first reads the standby's stale page (the other worker knows
nothing of the write), then, with the header, the page holding the write. Without the
server's position handling the second read is stale too, and the test fails.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
from pg_cluster import Pair, schema_urls
from served import Server, new_id, start

WORKERS = 3
MOST_CONNECTIONS = 60


@pytest.fixture(scope="module")
def server(pair: Pair, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    _, primary, standby = schema_urls(pair)
    pair.wait_caught_up()
    replica = f"{standby}&application_name=w{uuid.uuid4().hex[:10]}"
    tmp = tmp_path_factory.mktemp("replica-workers")
    served = start(primary, tmp, "--replica", replica, "--workers", str(WORKERS))
    yield served
    served.stop()
    log = served.log_text()
    assert '" 500' not in log and "Traceback" not in log, log[-3000:]


@pytest.fixture(autouse=True)
def replaying(pair: Pair) -> Iterator[None]:
    yield
    pair.resume_replay()


def lsn(position: str) -> int:
    high, low = position.split("/")
    return (int(high, 16) << 32) | int(low, 16)


def position_of(client: httpx.Client) -> int:
    """The position of the worker that holds ``client``'s connection (``GET /healthz`` reads
    no store)."""
    response = client.get("/healthz")
    assert response.status_code == 200, response.text
    return lsn(response.headers["Convostore-Position"])


def history(client: httpx.Client, cid: str, **headers: str) -> list[object]:
    response = client.get(f"/conversations/{cid}/messages", params={"limit": 100}, headers=headers)
    assert response.status_code in (200, 404), response.text
    return [] if response.status_code == 404 else [m["content"] for m in response.json()["items"]]


def append(client: httpx.Client, cid: str, content: str) -> str:
    response = client.post(
        f"/conversations/{cid}/messages", json={"role": "user", "content": content}
    )
    assert response.status_code == 201, response.text
    return response.headers["Convostore-Position"]


def two_workers(server: Server) -> tuple[httpx.Client, httpx.Client, str]:
    """A writer's and a reader's kept-alive connections on two different workers, and a
    conversation the writer just wrote "one" to: right after that write, the reader's answers
    carry an earlier position than the writer's (each attempt writes again, so a connection
    the server closed in between and opened again elsewhere cannot mislead it)."""
    writer = server.client("alice")
    for _ in range(MOST_CONNECTIONS):
        cid = new_id()
        written = lsn(append(writer, cid, "one"))
        reader = server.client("alice")
        if position_of(reader) < written <= position_of(writer):
            return writer, reader, cid
        time.sleep(0.1)  # the other workers may still be starting
    pytest.fail(f"{MOST_CONNECTIONS} connections all reached the writing worker")


def test_a_write_through_one_worker_is_read_through_another_with_its_position(
    pair: Pair, server: Server
) -> None:
    writer, reader, cid = two_workers(server)
    pair.wait_caught_up()
    assert history(reader, cid) == ["one"]

    pair.pause_replay()
    position = append(writer, cid, "two")
    # the other worker, at once and without the position, reads what the standby has
    assert history(reader, cid) == ["one"]
    # with the position sent back, its read holds the write (from the primary, the standby
    # being paused), and its answer carries a position at least as far, to send on
    response = reader.get(
        f"/conversations/{cid}/messages",
        params={"limit": 100},
        headers={"Convostore-Position": position},
    )
    assert response.status_code == 200, response.text
    assert [m["content"] for m in response.json()["items"]] == ["one", "two"]
    assert lsn(response.headers["Convostore-Position"]) >= lsn(position)
    # and the position stays with that worker: its next read, without the header, too
    assert history(reader, cid) == ["one", "two"]
