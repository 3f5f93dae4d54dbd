"""A real PostgreSQL primary and a streaming hot standby, made with Debian's PostgreSQL binaries
(``initdb``, ``pg_basebackup -R``, ``pg_ctl``) run as the ``postgres`` user, in a temporary
directory, on free loopback ports (the replica tests start one pair per session)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg


def _debian_bin() -> Path:
    """The newest PostgreSQL of Debian's layout (``/usr/lib/postgresql/<major>/bin``)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    return found[-1] if found else Path("/usr/lib/postgresql/15/bin")


BIN = Path(os.environ.get("CONVOSTORE_PG_BIN") or _debian_bin())
USER = "postgres"


def missing() -> str | None:
    """Why a pair cannot be started here, or None."""
    if not (BIN / "pg_basebackup").exists():
        return f"PostgreSQL's binaries are not in {BIN} (Debian's postgresql-15; or set CONVOSTORE_PG_BIN)"
    try:
        pwd.getpwnam(USER)
    except KeyError:
        return f"there is no {USER!r} user to run PostgreSQL as"
    if os.geteuid() != 0 and pwd.getpwuid(os.geteuid()).pw_name != USER:
        return f"starting a cluster needs root (to run it as {USER!r}) or the {USER!r} user"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(*argv: str | Path) -> None:
    """Run a PostgreSQL binary as the postgres user (directly if we are that user)."""
    command = [str(a) for a in argv]
    if os.geteuid() == 0:
        command = ["runuser", "-u", USER, "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stdout}{done.stderr}")


# Settings for a throwaway test cluster: small, quick, durable enough for replication.
_SETTINGS = """
listen_addresses = '127.0.0.1'
unix_socket_directories = '{sockets}'
port = {port}
fsync = off
full_page_writes = off
shared_buffers = 32MB
max_connections = 60
wal_level = replica
max_wal_senders = 4
hot_standby = on
hot_standby_feedback = on
max_standby_streaming_delay = -1
wal_receiver_status_interval = 1s
log_min_messages = warning
"""


class Node:
    def __init__(self, root: Path, name: str) -> None:
        self.data = root / name
        self.port = free_port()
        self.log = root / f"{name}.log"
        self.sockets = root / "sockets"

    @property
    def url(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/postgres?connect_timeout=2"

    def configure(self) -> None:
        with (self.data / "postgresql.auto.conf").open("a") as conf:
            conf.write(_SETTINGS.format(port=self.port, sockets=self.sockets))

    def start(self) -> None:
        _as_postgres(BIN / "pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        _as_postgres(BIN / "pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def statements(self, application: str) -> list[str]:
        """The statements this server logged for connections named ``application``
        (``log_statement = 'all'``, prefixed with the application's name)."""
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            head, _, rest = line.partition("|")
            if head == application and ("statement: " in rest or "execute " in rest):
                found.append(rest.split(": ", 2)[-1])
        return found

    def connect(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(self.url, autocommit=True)


class Pair:
    """A primary and its streaming hot standby (``pg_basebackup -R``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.primary = Node(root, "primary")
        self.standby = Node(root, "standby")

    def start(self) -> None:
        self.primary.sockets.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.root, USER)
            shutil.chown(self.primary.sockets, USER)
        _as_postgres(
            BIN / "initdb",
            "-D",
            self.primary.data,
            "-U",
            USER,
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
        )
        self.primary.configure()
        self.primary.start()
        _as_postgres(
            BIN / "pg_basebackup",
            "-h", "127.0.0.1", "-p", str(self.primary.port), "-U", USER,
            "-D", self.standby.data, "-R", "-X", "stream", "--no-sync", "--checkpoint=fast",
        )  # fmt: skip
        # The copy holds the primary's settings (port included); the standby's own come last.
        self.standby.configure()
        with (self.standby.data / "postgresql.auto.conf").open("a") as conf:
            conf.write("log_statement = 'all'\nlog_line_prefix = '%a|'\n")
        self.standby.start()
        self.wait_caught_up()

    def primary_lsn(self) -> str:
        with self.primary.connect() as conn:
            return str(conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0])  # type: ignore[index]

    def wait_caught_up(self, timeout: float = 60.0) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        target = self.primary_lsn()
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(psycopg.OperationalError), self.standby.connect() as conn:
                row = conn.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target]
                ).fetchone()
                if row is not None and row[0]:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the standby did not replay {target} in {timeout} s")
            time.sleep(0.05)

    def pause_replay(self) -> None:
        with self.standby.connect() as conn:
            conn.execute("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        with self.standby.connect() as conn:
            conn.execute("SELECT pg_wal_replay_resume()")

    def stop(self) -> None:
        for node in (self.standby, self.primary):
            with contextlib.suppress(RuntimeError):
                node.stop("immediate")


@contextlib.contextmanager
def started_pair() -> Iterator[Pair]:
    root = Path(tempfile.mkdtemp(prefix="convostore-pair-"))
    mode = root.parent.stat().st_mode
    if os.geteuid() == 0 and not mode & stat.S_IXOTH:  # a suite's private temporary folder
        root.parent.chmod(mode | stat.S_IXOTH)  # the postgres user walks through it, no more
    pair = Pair(root)
    try:
        pair.start()
        yield pair
    finally:
        pair.stop()
        shutil.rmtree(root, ignore_errors=True)


def schema_urls(pair: Pair) -> tuple[str, str, str]:
    """A fresh schema on the primary (replicated to the standby): its name and the primary's
    and the standby's URLs whose search_path is that schema."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with pair.primary.connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    option = "&options=" + quote(f"-csearch_path={schema}")
    return schema, pair.primary.url + option, pair.standby.url + option
