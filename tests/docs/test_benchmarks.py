"""A benchmark figure in a README is one run's output: `make bench` writes each benchmark's
tables to benchmarks/results/, with the date, the machine and the command, and the READMEs quote
those files verbatim (benchmarks/report.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import report  # noqa: E402

GENERATED = sorted((ROOT / "benchmarks" / "results").glob("*.md"))
HEADER_ROWS = [
    "| command |",
    "| date |",
    "| machine |",
    "| Python |",
    "| SQLite |",
    "| PostgreSQL |",
]


def test_every_benchmark_has_a_generated_file_naming_its_run() -> None:
    names = {p.stem for p in GENERATED}
    assert names >= {"core", "langgraph", "openai", "claude", "crewai"}
    for path in GENERATED:
        text = path.read_text()
        for row in HEADER_ROWS:
            assert row in text, f"{path.name} lacks {row}"
        assert f"benchmarks/{path.stem}_bench.py --markdown benchmarks/results/{path.name}" in text


def test_every_quote_in_a_readme_equals_its_file() -> None:
    quoted = set()
    for name in report.READMES:
        text = (ROOT / name).read_text()
        for match in report.QUOTE.finditer(text):
            assert (ROOT / match[2]).is_file(), f"{name} quotes {match[2]}, which does not exist"
            quoted.add(match[2])
        assert text == report.quote_all(text), (
            f"{name} differs from benchmarks/results/: make bench"
        )
    assert quoted == {str(p.relative_to(ROOT)) for p in GENERATED}


def test_markdown_option_writes_what_the_run_printed(tmp_path: Path) -> None:
    script = tmp_path / "fake_bench.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / 'benchmarks')!r})\n"
        "from report import markdown_report\n"
        "with markdown_report('Fake benchmarks', ['pytest']):\n"
        "    print('| side | ms |', sys.argv[1:])\n"
    )
    out = tmp_path / "out" / "fake.md"
    done = subprocess.run(
        [sys.executable, str(script), "--quick", "--markdown", str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == "| side | ms | ['--quick']\n"  # the benchmark never sees --markdown
    text = out.read_text()
    assert text.startswith("# Fake benchmarks\n")
    assert text.endswith("\n| side | ms | ['--quick']\n")
    assert f"fake_bench.py --quick --markdown {out}" in text
    for row in [*HEADER_ROWS, "| packages | pytest "]:
        assert row in text


def test_quote_all_replaces_what_is_between_the_markers() -> None:
    name = str(GENERATED[0].relative_to(ROOT))
    readme = f"before\n<!-- benchmark: {name} -->\nstale figures\n<!-- /benchmark -->\nafter\n"
    refreshed = report.quote_all(readme)
    assert "stale figures" not in refreshed
    assert refreshed.startswith("before\n") and refreshed.endswith("<!-- /benchmark -->\nafter\n")
    assert report.quoted(GENERATED[0].read_text()) in refreshed
