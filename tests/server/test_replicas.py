"""Two real server processes on a primary with a real hot standby: reads answered by the
standby, and a client's own writes read back through either process by sending back the
``Convostore-Position`` header its writes were answered with."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from pg_cluster import Pair, schema_urls
from served import Server, clean_env, new_id, start


@pytest.fixture(scope="module")
def servers(
    pair: Pair, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, Server, str]]:
    """Server A given the standby with ``--replica``, server B through ``CONVOSTORE_REPLICAS``
    (with A's tokens), on a schema of their own; the application name the standby logs
    their reads under."""
    _, primary, standby = schema_urls(pair)
    pair.wait_caught_up()
    app = f"t{uuid.uuid4().hex[:10]}"
    replica = f"{standby}&application_name={app}"
    tmp = tmp_path_factory.mktemp("replicas")
    a = start(primary, tmp, "--replica", replica)
    b = start(primary, tmp, env=clean_env(CONVOSTORE_REPLICAS=replica), tokens_of=a)
    yield a, b, app
    a.stop()
    b.stop()
    for server in (a, b):
        log = server.log_text()
        assert '" 500' not in log and "Traceback" not in log, log[-3000:]


@pytest.fixture(autouse=True)
def replaying(pair: Pair) -> Iterator[None]:
    yield
    pair.resume_replay()


def history(client: httpx.Client, cid: str, **headers: str) -> list[object]:
    response = client.get(f"/conversations/{cid}/messages", params={"limit": 100}, headers=headers)
    assert response.status_code in (200, 404), response.text
    return [] if response.status_code == 404 else [m["content"] for m in response.json()["items"]]


def append(client: httpx.Client, cid: str, content: str, **headers: str) -> httpx.Response:
    response = client.post(
        f"/conversations/{cid}/messages", json={"role": "user", "content": content}, headers=headers
    )
    assert response.status_code == 201, response.text
    return response


def test_reads_are_answered_by_the_standby(pair: Pair, servers: tuple[Server, Server, str]) -> None:
    a, b, app = servers
    cid = new_id()
    append(a.client("alice"), cid, "hello")
    pair.wait_caught_up()
    before = len(pair.standby.statements(app))
    assert history(b.client("alice"), cid) == ["hello"]
    assert any("convostore_messages" in s for s in pair.standby.statements(app)[before:])


def test_a_write_through_one_process_is_read_through_the_other_with_its_position(
    pair: Pair, servers: tuple[Server, Server, str]
) -> None:
    a, b, _ = servers
    alice_a, alice_b, cid = a.client("alice"), b.client("alice"), new_id()
    append(alice_a, cid, "one")
    pair.wait_caught_up()
    assert history(alice_b, cid) == ["one"]
    pair.pause_replay()
    position = append(alice_a, cid, "two").headers["Convostore-Position"]
    # at once (before B's watcher could find the standby lagging), without the position, the
    # other process reads what the standby has
    assert history(alice_b, cid) == ["one"]
    assert history(alice_b, cid, **{"Convostore-Position": position}) == ["one", "two"]
    assert history(alice_a, cid) == ["one", "two"]  # the writing process: its own writes
    # and B's answer carries a position at least as far, to send on
    answer = alice_b.get(f"/conversations/{cid}", headers={"Convostore-Position": position})
    assert answer.json()["messageCount"] == 2
    high, low = (int(x, 16) for x in answer.headers["Convostore-Position"].split("/"))
    sent_high, sent_low = (int(x, 16) for x in position.split("/"))
    assert (high, low) >= (sent_high, sent_low)


@pytest.mark.parametrize("position", ["nope", "0/", "G/1", "1/2/3", "0/" + "F" * 40])
def test_a_malformed_position_is_a_400_naming_the_header(
    servers: tuple[Server, Server, str], position: str
) -> None:
    a, _, _ = servers
    response = a.client("alice").get("/conversations", headers={"Convostore-Position": position})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["argument"] == "Convostore-Position"


def test_a_position_the_primary_has_not_reached_is_a_400(
    servers: tuple[Server, Server, str],
) -> None:
    a, _, _ = servers
    far = {"Convostore-Position": "FFFFFFFF/FFFFFFFF"}
    response = a.client("alice").get("/conversations", headers=far)
    assert response.status_code == 400, response.text
    assert "ahead of the primary" in response.json()["error"]["message"]
    assert a.client("alice").get("/conversations").status_code == 200  # nothing stuck


def test_the_position_is_read_only_after_authentication(
    servers: tuple[Server, Server, str],
) -> None:
    a, _, _ = servers
    response = a.client(None).get("/conversations", headers={"Convostore-Position": "nope"})
    assert response.status_code == 401
