"""``with_ordered_clock()``: append times that increase strictly in commit order across every
conversation and every writer of the database (what session listings ordered by last write
rely on), even when the wall clock stands still."""

from __future__ import annotations

import threading

from convostore import ConversationStore

FROZEN = 1_700_000_000_000


def _times(store: ConversationStore) -> list[int]:
    rows = store.backend.read(lambda tx: tx.execute("SELECT created_at FROM convostore_messages"))
    return sorted(r[0] for r in rows)


def test_writers_on_separate_connections_never_share_a_time(shared_url: str) -> None:
    per_writer, writers = 40, 4
    seen: dict[int, list[int]] = {}

    def write(n: int) -> None:
        with ConversationStore(shared_url, clock=lambda: FROZEN) as plain:
            store = plain.with_ordered_clock()
            for i in range(per_writer):
                store.append_message(conversation_id=f"c{n}-{i % 3}", role="user", content="x")
                meta = store.get_conversation(conversation_id=f"c{n}-{i % 3}")
                assert meta is not None
                seen.setdefault(n, []).append(meta.last_message_at)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with ConversationStore(shared_url) as store:
        # one tick per append, none shared, none skipped: the clock row serialized them
        assert _times(store) == list(range(FROZEN, FROZEN + per_writer * writers))
    for times in seen.values():  # each writer saw its own appends in increasing order
        assert times == sorted(times) and len(set(times)) == len(times)
    listing = ConversationStore(shared_url)
    try:
        page = listing.list_conversations(limit=100)
        stamps = [c.last_message_at for c in page.items]
        assert stamps == sorted(stamps, reverse=True) and len(set(stamps)) == len(stamps)
    finally:
        listing.close()


def test_without_it_a_frozen_clock_gives_equal_times(backend_url: str) -> None:
    """The control: what the ordered clock fixes."""
    with ConversationStore(backend_url, clock=lambda: FROZEN) as store:
        for cid in ("a", "b", "c"):
            store.append_message(conversation_id=cid, role="user", content="x")
        assert _times(store) == [FROZEN] * 3
        ordered = store.with_ordered_clock()
        for cid in ("a", "b", "c"):
            ordered.append_message(conversation_id=cid, role="user", content="y")
        assert _times(store)[3:] == [FROZEN, FROZEN + 1, FROZEN + 2]


def test_the_clock_follows_the_wall_clock_when_it_is_ahead(backend_url: str) -> None:
    now = [FROZEN]
    with ConversationStore(backend_url, clock=lambda: now[0]) as plain:
        store = plain.with_ordered_clock()
        store.append_message(conversation_id="a", role="user", content="x")
        now[0] += 5_000
        store.append_message(conversation_id="b", role="user", content="x")
        now[0] -= 60_000  # the wall clock stepped back: times still go forward
        store.append_message(conversation_id="c", role="user", content="x")
        assert _times(store) == [FROZEN, FROZEN + 5_000, FROZEN + 5_001]
