"""ConvostoreMemoryBackend.grep finds its candidate files with the memory store's search index:
it reads only the entries that may hold the pattern, and its matches equal DeepAgents' own grep
over every file, for random texts and patterns (case, quotes, Greek sigmas, Chinese, NUL)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from convostore import ConversationStore, MemoryEntry
from convostore_langgraph import ConvostoreMemoryBackend
from deepagents.backends.utils import grep_matches_from_files

USER = "alice"


class CountingStore(ConversationStore):
    """A real store that counts the entries read with their content."""

    reads = 0

    def get_memory(self, *args: Any, **kwargs: Any) -> MemoryEntry | None:
        self.reads += 1
        return super().get_memory(*args, **kwargs)


@pytest.fixture
def db(backend_url: str) -> Iterator[CountingStore]:
    with CountingStore(backend_url) as s:
        yield s


@pytest.fixture
def mb(db: CountingStore) -> ConvostoreMemoryBackend:
    sid = db.create_memory_store("notes", user_id=USER).memory_store_id
    return ConvostoreMemoryBackend(db, sid, user_id=USER)


def found(mb: ConvostoreMemoryBackend, pattern: str, path: str | None = None) -> list[Any]:
    result = mb.grep(pattern, path)
    assert result.error is None
    return result.matches or []


def reads(db: CountingStore, mb: ConvostoreMemoryBackend, pattern: str) -> int:
    before = db.reads
    found(mb, pattern)
    return db.reads - before


def test_grep_reads_only_the_files_the_index_finds(
    db: CountingStore, mb: ConvostoreMemoryBackend
) -> None:
    for n in range(40):
        text = f"line one\nthe NEEDLE {n}\n" if n % 20 == 3 else f"line one\nhay {n}\n"
        assert mb.write(f"/d/f{n:02}.md", text).error is None
    assert mb.write("/needle.md", "no match in the content").error is None
    assert [(m["path"], m["line"], m["text"]) for m in found(mb, "NEEDLE")] == [
        ("/d/f03.md", 2, "the NEEDLE 3"),
        ("/d/f23.md", 2, "the NEEDLE 23"),
    ]
    # The two files, and the one whose path holds "needle" (the index matches case ignored).
    assert reads(db, mb, "NEEDLE") == 3
    assert reads(db, mb, 'the "NEEDLE 2') == 1  # the pieces between quotes are the terms
    assert reads(db, mb, "nothing like it") == 0
    assert [m["path"] for m in found(mb, "NEEDLE", "/d/f2")] == []  # (f2 is no directory)
    assert [m["path"] for m in found(mb, "NEEDLE", "/d")] == ["/d/f03.md", "/d/f23.md"]
    # Patterns no query can stand for read every file, as before.
    assert reads(db, mb, "line") == 40
    assert reads(db, mb, "\x00") == 41  # a query may not hold NUL
    assert reads(db, mb, "\u03a3") == 41  # a capital sigma's lower case depends on its place
    assert reads(db, mb, " ".join("abcdefghijklmnopq")) == 0  # one term, spaces and all
    assert reads(db, mb, '"'.join("abcdefghijklmnopq")) == 41  # 17 terms: over the limit


ALPHABET = ["a", "A", "b", " ", '"', "\u03a3", "\u03c3", "\u03c2", "\u0391", "中", "文", "İ", "i"]


def test_grep_equals_deepagents_grep_over_every_file(
    db: CountingStore, mb: ConvostoreMemoryBackend
) -> None:
    rng = random.Random(27)
    texts = {}
    for n in range(30):
        lines = ["".join(rng.choices(ALPHABET, k=rng.randint(0, 12))) for _ in range(3)]
        texts[f"/f{n:02}.md"] = "\n".join(lines)
        assert mb.write(f"/f{n:02}.md", texts[f"/f{n:02}.md"]).error is None
    every = {path: {"content": text, "encoding": "utf-8"} for path, text in texts.items()}
    patterns = []
    for _ in range(150):
        text = rng.choice(list(texts.values()))
        start = rng.randint(0, max(0, len(text) - 1))
        piece = text[start : start + rng.randint(1, 5)]
        patterns += [piece, piece.swapcase(), "".join(rng.choices(ALPHABET, k=2))]
    for pattern in patterns:
        expected = grep_matches_from_files(every, pattern, "/").matches or []
        assert found(mb, pattern) == expected, pattern
