"""The harness itself: the standby streams from the primary and refuses writes."""

from __future__ import annotations

import psycopg
import pytest
from pg_cluster import Pair


def test_the_standby_replays_the_primary(pair: Pair, urls: tuple[str, str]) -> None:
    primary, standby = urls
    with psycopg.connect(primary, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (x int)")
        conn.execute("INSERT INTO t VALUES (42)")
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (False,)
    pair.wait_caught_up()
    with psycopg.connect(standby, autocommit=True) as conn:
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
        assert conn.execute("SELECT x FROM t").fetchall() == [(42,)]
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("INSERT INTO t VALUES (1)")
