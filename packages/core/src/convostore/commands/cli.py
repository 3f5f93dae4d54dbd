"""The ``convostore`` command: a thin layer of Click and Rich over the engines of
``convostore.commands`` (export, importing, migrate, stats, maintenance). Exit statuses are documented in the core README (``EXIT``)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

import click
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from .. import convert
from ..errors import ConflictError, ConvostoreError, MemoryValidationError, StorageError
from ..models import ROLES, Message
from ..search_text import parse_query
from ..store import ConversationStore
from . import backup, common, export, importers, importing, maintenance, migrate, stats

F = TypeVar("F", bound=Callable[..., Any])

EXIT = {
    "ok": 0,
    "problems": 1,  # check found problems; migrate's verification failed
    "usage": 2,  # a wrong option or argument (Click's own)
    "bad input": 3,  # a malformed URL, a missing file, a file that is not a whole export
    "database": 4,  # the database cannot be reached or failed (StorageError)
    "conflict": 5,  # a destination that is not empty, an import that contradicts stored data
    "missing package": 6,  # an adapter or the command's own extra is not installed
    "interrupted": 130,  # Ctrl-C
}

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

# -- what reaches the terminal ------------------------------------------------------------------

# Every character of the Unicode categories Cc (C0, DEL, C1), Cf (bidi controls, zero-width
# and other invisible formatting characters), Zl and Zp (U+2028, U+2029) and Cs (surrogates),
# as Python 3.11's Unicode 14 has them (tests/cli/test_cli_hostile.py compares the two).
_UNSAFE = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2"
    "\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff"
    "\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
_UNSAFE_TEXT = re.compile(f"[{_UNSAFE}]")  # a message's text keeps its newlines and tabs
_UNSAFE_LINE = re.compile(f"[\t\n{_UNSAFE}]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` as the command prints it: every control character (C0, DEL, C1), bidi and
    invisible formatting character, line or paragraph separator and surrogate written as a
    visible escape (ESC as ``\x1b``), so that nothing stored can move the cursor, retitle
    the window, make a link or reorder the text on the operator's terminal (Rich's markup
    escaping does not do this). ``lines``: keep newlines and tabs (a message's text)."""
    return (_UNSAFE_TEXT if lines else _UNSAFE_LINE).sub(_escaped, text)


def _json_escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def printable_json(value: Any) -> str:
    """``value`` as indented JSON, with the characters ``printable`` escapes written as JSON
    escapes (the same JSON value; C0 characters are escaped by JSON itself)."""
    text = json.dumps(value, ensure_ascii=False, indent=2)
    return _UNSAFE_TEXT.sub(_json_escaped, text)  # raw newlines are the indentation's


def _text(value: str, style: str = "", *, lines: bool = False) -> Text:
    """The one way text reaches a console: through ``printable``, never as markup."""
    return Text(printable(value, lines=lines), style=style)


def _say(message: str, style: str = "") -> None:
    """A line on stderr (a report, a note): stdout keeps the command's output."""
    err.print(_text(message, style))


def _table(*columns: str, wrap: tuple[str, ...] = ()) -> Table:
    """A table whose columns are never cut: ids, names and numbers stay whole on one line
    (the ``wrap`` columns wrap instead); ``_print_table`` widens it past the terminal if it
    must."""
    table = Table()
    for name in columns:
        table.add_column(name, no_wrap=name not in wrap, min_width=12 if name in wrap else None)
    return table


def _add_row(table: Table, *cells: Text | str) -> None:
    """A row whose unwrapped cells widen their columns to fit them whole."""
    for column, cell in zip(table.columns, cells, strict=True):
        if column.no_wrap:
            width = cell_len(cell.plain if isinstance(cell, Text) else cell)
            column.min_width = max(column.min_width or cell_len(str(column.header)), width)
    table.add_row(*cells)


def _print_table(table: Table) -> None:
    needed = Measurement.get(out, out.options.update_width(1 << 20), table).minimum
    width = out.width
    out.width = max(width, needed)
    try:
        out.print(table)
    finally:
        out.width = width


def _fail(status: str, message: str) -> None:
    _say(f"convostore: {message}", "red")
    sys.exit(EXIT[status])


def _message(exc: BaseException) -> str:
    """An error's message with its notes (what an interrupted import wrote), on one line."""
    return "; ".join([str(exc), *getattr(exc, "__notes__", [])])


def _errors(fn: F) -> F:
    """Every library error as a one-line message and its documented exit status."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except common.VerificationError as exc:
            _fail("problems", f"verification failed: {_message(exc)}")
        except MemoryValidationError as exc:
            _fail("bad input", _message(exc))
        except StorageError as exc:
            _fail("database", _message(exc))
        except ConflictError as exc:
            _fail("conflict", _message(exc))
        except ConvostoreError as exc:
            _fail("problems", _message(exc))
        except ImportError as exc:
            _fail("missing package", str(exc))
        except KeyboardInterrupt as exc:
            notes = "".join(f"; {note}" for note in getattr(exc, "__notes__", []))
            _fail("interrupted", f"interrupted{notes}; run the same command again to finish")
        return None

    return run  # type: ignore[return-value]


def _url_option(fn: F) -> F:
    return click.option(
        "--url",
        envvar="CONVOSTORE_URL",
        default=None,
        metavar="URL",
        help="The store: sqlite:///file.db, postgresql://... (default $CONVOSTORE_URL,"
        " else sqlite:///convostore.db).",
    )(fn)


def _time(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


class _Rate(ProgressColumn):
    """Rows (or bytes) a second, since the start."""

    def render(self, task: Task) -> Text:
        elapsed = task.elapsed
        rate = "" if not elapsed else f"{task.completed / elapsed:,.0f}/s"
        return Text(rate, style="progress.data.speed")


@contextlib.contextmanager
def _progress(enabled: bool = True) -> Iterator[common.Progress | None]:
    """A Rich progress bar on stderr when it is a terminal (none in a pipe or a file), a row
    per kind of rows (per table for ``migrate``), with the count and the rate; a
    ``common.Progress``."""
    if not enabled or not err.is_terminal:
        yield None
        return
    with Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        _Rate(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as bar:
        tasks: dict[str, Any] = {}

        def report(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = bar.add_task(printable(what), total=total or None)
            bar.update(tasks[what], completed=done, total=total or None)

        yield report


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="convostore")
def app() -> None:
    """Inspect, export, import, migrate and prune a convostore store."""


# -- ls / show / stats -----------------------------------------------------------------------


@app.command("ls")
@_url_option
@click.option("--user", default=None, help="Only this user's conversations.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1))
@_errors
def ls_command(url: str | None, user: str | None, limit: int) -> None:
    """Conversations, newest activity first (ids whole, to paste into `show`)."""
    with common.open_existing(url) as store:
        table = _table(
            "conversation", "owner", "messages", "last activity (UTC)", "title", wrap=("title",)
        )
        cursor = None
        shown = 0
        more = False
        while shown < limit:
            page = store.list_conversations(
                user_id=user, limit=min(100, limit - shown), after=cursor
            )
            for c in page.items:
                title = (c.metadata or {}).get("title", "")
                _add_row(
                    table,
                    _text(c.conversation_id),
                    _text(c.user_id or ""),
                    str(c.message_count),
                    _time(c.last_message_at),
                    _text(title if isinstance(title, str) else json.dumps(title)),
                )
                shown += 1
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
            more = shown >= limit
        _print_table(table)
    if more:
        _say(f"more conversations than the {shown} shown: --limit N shows more")


def _render(messages: list[Message]) -> None:
    """Messages as a person reads them: each tool call followed by its result."""
    results: dict[str, Any] = {}
    for m in messages:
        for turn in convert._turns(m):
            for part in turn.parts:
                if isinstance(part, convert._Result):
                    results.setdefault(part.call_id, part)
    shown: set[str] = set()
    for m in messages:
        lines: list[Text] = []
        for turn in convert._turns(m):
            for part in turn.parts:
                if isinstance(part, convert._Text):
                    if part.text:
                        lines.append(_text(part.text, lines=True))
                elif isinstance(part, convert._Call):
                    args = part.arguments
                    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                    lines.append(_text(f"→ {part.name}({text})  [{part.id}]", "cyan"))
                    result = results.get(part.id)
                    if result is None:
                        lines.append(_text("   ⇐ (no result yet)", "dim"))
                    else:
                        shown.add(part.id)
                        answer = convert._text_of(result.content)
                        style = "red" if result.is_error else "green"
                        lines.append(_text(f"   ⇐ {answer}", style, lines=True))
                elif isinstance(part, convert._Result):
                    if part.call_id not in shown:
                        answer = convert._text_of(part.content)
                        lines.append(_text(f"⇐ [{part.call_id}] {answer}", lines=True))
                elif isinstance(part, convert._Image):
                    lines.append(_text(f"[image: {part.url[:60]}]", "dim"))
                else:
                    lines.append(_text(json.dumps(part.block, ensure_ascii=False), "dim"))
        if not lines:
            continue  # only results already shown under their calls
        out.print(_text(f"── {m.role} · {_time(m.created_at)} · {m.message_id}", "bold"))
        for line in lines:
            out.print(line)


@app.command("show")
@click.argument("conversation_id")
@_url_option
@click.option("--last", type=click.IntRange(min=0), default=None, help="Only the newest N.")
@click.option("--user", default=None, help="Read as this user (refused if another owns it).")
@click.option("--json", "as_json", is_flag=True, help="The messages as a JSON array.")
@_errors
def show_command(
    conversation_id: str, url: str | None, last: int | None, user: str | None, as_json: bool
) -> None:
    """A conversation's messages, oldest first."""
    with common.open_existing(url) as store:
        meta = store.get_conversation(conversation_id=conversation_id, user_id=user)
        if meta is None:
            raise MemoryValidationError(
                f"conversation_id: no conversation {conversation_id!r} in this store",
                argument="conversation_id",
            )
        messages = store.get_history(conversation_id=conversation_id, last=last, user_id=user)
    if as_json:
        click.echo(printable_json([m.model_dump() for m in messages]))
        return
    title = (meta.metadata or {}).get("title")
    owner = f", owner {meta.user_id}" if meta.user_id else ""
    out.print(
        _text(
            f"{meta.conversation_id}{owner}: {meta.message_count} messages"
            + (f" — {title}" if isinstance(title, str) else ""),
            "bold underline",
        )
    )
    _render(messages)


@app.command("stats")
@_url_option
@_errors
def stats_command(url: str | None) -> None:
    """Rows and bytes of each kind of data the store holds."""
    with common.open_existing(url) as store:
        rows = stats.stats(store)
    table = _table("component", "data", "rows", "bytes (with indexes)")
    for s in rows:
        size = "" if s.bytes is None else f"{s.bytes:,}"
        _add_row(
            table, _text(s.component), _text(s.what), "" if s.rows is None else f"{s.rows:,}", size
        )
    _print_table(table)


# -- search / reindex -------------------------------------------------------------------------


def _highlighted(snippet: str, terms: list[str]) -> Text:
    """A hit's snippet, printable, with every place a term occurs in it marked."""
    text = _text(snippet)
    lowered = text.plain.lower()
    if len(lowered) == len(text.plain):
        for term in terms:
            start = lowered.find(term)
            while term and start >= 0:
                text.stylize("bold reverse", start, start + len(term))
                start = lowered.find(term, start + len(term))
    return text


@app.command("search")
@click.argument("query")
@_url_option
@click.option("--user", default=None, help="Only this user's conversations.")
@click.option("--conversation", "conversation_id", default=None, help="Only this conversation.")
@click.option("--role", "roles", multiple=True, type=click.Choice(ROLES), help="Only this role.")
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True)
@click.option("--after", default=None, help="Where the previous page ended (its cursor).")
@click.option("--json", "as_json", is_flag=True, help="The page as JSON.")
@_errors
def search_command(  # noqa: PLR0917 - one argument per option
    query: str,
    url: str | None,
    user: str | None,
    conversation_id: str | None,
    roles: tuple[str, ...],
    limit: int,
    after: str | None,
    as_json: bool,
) -> None:
    """Messages holding every term of QUERY (a substring, any case; "a phrase" in quotes),
    newest first, the matches marked."""
    with common.open_existing(url) as store:
        result = store.search_messages(
            query=query,
            user_id=user,
            conversation_id=conversation_id,
            roles=list(roles) or None,
            limit=limit,
            after=after,
        )
    if as_json:
        click.echo(printable_json(result.model_dump(mode="json")))
        return
    terms = parse_query(query)
    for hit in result.items:
        line = Text()
        line.append_text(_text(f"{_time(hit.message.created_at)}  {hit.conversation_id}  ", "dim"))
        line.append_text(_text(f"{hit.message.role}: ", "bold"))
        line.append_text(_highlighted(hit.snippet, terms))
        out.print(line)
    if result.next_cursor is not None:
        _say(f"more: convostore search ... --after {result.next_cursor}")


@app.command("reindex")
@_url_option
@_errors
def reindex_command(url: str | None) -> None:
    """Index for search what an older convostore wrote (a batch per transaction: run it
    again after an interruption to go on)."""
    with common.open_existing(url) as store, _progress() as progress:
        count = store.reindex(
            progress=None if progress is None else functools.partial(progress, "search index")
        )
    _say(f"indexed {count:,} messages and memory entries")


# -- export / import / migrate ---------------------------------------------------------------


@app.command("export")
@_url_option
@click.option("--user", default=None, help="Only this user's conversations and memory stores.")
@click.option(
    "--conversation", "conversations", multiple=True, help="Only this conversation (repeat)."
)
@click.option(
    "-o", "--output", default="-", show_default=True, help="The file to write ('-': stdout)."
)
@_errors
def export_command(
    url: str | None, user: str | None, conversations: tuple[str, ...], output: str
) -> None:
    """Write the core's data as convostore JSON Lines: every conversation with its messages
    and change rows, every memory store with its versions and entries. The adapters' own
    tables (LangGraph checkpoints and store items, CrewAI memory) are not in it: it names
    those holding rows; `convostore migrate` copies every table."""
    if user is not None and conversations:
        raise click.UsageError("--user and --conversation are exclusive")
    if output == "-" and sys.stdout.isatty():
        raise click.UsageError(
            "the export is data, not text for a terminal: give -o FILE or redirect stdout"
        )
    ids = list(conversations) or None
    with common.open_existing(url) as store, _progress() as progress:
        if output == "-":
            report = export.export_jsonl(
                store, sys.stdout.buffer, user_id=user, conversation_ids=ids, progress=progress
            )
        else:
            # written beside the target and renamed when whole: never a half export under its name
            folder = os.path.dirname(os.path.abspath(output))
            fd, partial = tempfile.mkstemp(prefix=".convostore-export-", dir=folder)
            try:
                with os.fdopen(fd, "wb") as f:
                    report = export.export_jsonl(
                        store, f, user_id=user, conversation_ids=ids, progress=progress
                    )
                os.replace(partial, output)
            except BaseException:
                os.unlink(partial)
                raise
    _say(
        f"exported {report.conversations} conversations, {report.messages} messages,"
        f" {report.memory_stores} memory stores ({report.memory_versions} versions)"
    )
    if report.left_out:
        tables = ", ".join(f"{name} ({rows:,} rows)" for name, rows in report.left_out)
        _say(f"not in the export (convostore migrate copies them): {tables}")


@app.command("import")
@click.argument("file")
@_url_option
@_errors
def import_command(file: str, url: str | None) -> None:
    """Read an export into the store. The whole file is checked first (nothing is written
    from a file that breaks a rule); then each conversation and memory store is written
    whole, in one transaction. Importing it twice changes nothing; after an error or an
    interruption, importing it again continues."""
    with ConversationStore(common.resolve_url(url)) as store, _progress() as progress:
        report = importing.import_jsonl(store, file, progress=progress)
    _say(
        f"imported {report.conversations} conversations, {report.messages} new messages,"
        f" {report.memory_stores} memory stores ({report.memory_versions} new versions)"
    )


@app.command("migrate")
@click.argument("source")
@click.argument("destination")
@click.option("--force", is_flag=True, help="Empty the destination's tables first.")
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=common.BATCH_ROWS,
    show_default=True,
    help="Rows per transaction on the destination.",
)
@click.option("-v", "--verbose", is_flag=True, help="A line on stderr after each batch.")
@_errors
def migrate_command(
    source: str, destination: str, force: bool, batch_size: int, verbose: bool
) -> None:
    """Copy everything (every adapter's tables) from SOURCE to DESTINATION.

    Run it again after an interruption: it continues where it stopped. A source holding an
    adapter's tables needs that adapter installed beside the command (`pip install
    'convostore[cli,postgres]' convostore-langgraph convostore-crewai`)."""
    with _progress(not verbose) as bar:
        progress = bar
        if verbose:

            def progress(what: str, done: int, total: int) -> None:
                click.echo(printable(f"{what}: {done}/{total}"), err=True)

        report = migrate.migrate(
            source, destination, force=force, progress=progress, batch_rows=batch_size
        )
    table = _table("component", "table", "rows", "copied now", "sha256")
    for t in report.tables:
        _add_row(
            table, _text(t.component), _text(t.table), f"{t.rows:,}", f"{t.copied:,}", t.sha256[:16]
        )
    _print_table(table)
    if report.not_copied:
        _say(f"not copied (no component describes them): {', '.join(report.not_copied)}")
    out.print(_text("verified: every table's row count and checksum match"))


# -- prune / check ---------------------------------------------------------------------------

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def _duration_ms(text: str) -> int:
    match = re.fullmatch(r"(\d{1,9})([smhdw])", text.strip())
    if match is None:
        raise click.BadParameter(f"{text!r}: use a number and a unit (s, m, h, d, w): 30d, 12h")
    return int(match[1]) * _UNITS[match[2]] * 1000


@app.command("prune")
@_url_option
@click.option(
    "--older-than",
    default=None,
    metavar="AGE",
    help="Delete what was last active before: 30d, 12h, 90m (LangGraph threads whose newest"
    " checkpoint is older too).",
)
@click.option(
    "--keep-last",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Trim each conversation to its newest N messages. It also cuts every LangGraph"
    " thread's checkpoint history to its latest checkpoint (whatever N is): time travel"
    " to earlier steps is gone.",
)
@click.option("--user", default=None, help="Only this user's conversations (not threads).")
@click.option("--dry-run", is_flag=True, help="Say what would go; delete nothing.")
@click.option(
    "--vacuum",
    is_flag=True,
    help="Then rewrite the tables without the deleted rows (PostgreSQL keeps them until then).",
)
@_errors
def prune_command(  # noqa: PLR0917 - one argument per option
    url: str | None,
    older_than: str | None,
    keep_last: int | None,
    user: str | None,
    dry_run: bool,
    vacuum: bool,
) -> None:
    """Retention: delete old conversations, trim long ones. LangGraph threads (with
    convostore-langgraph) too: --older-than deletes old threads, --keep-last keeps only each
    thread's latest checkpoint."""
    if older_than is None and keep_last is None:
        raise click.UsageError("say what to prune: --older-than AGE and/or --keep-last N")
    age = None if older_than is None else _duration_ms(older_than)
    with common.open_existing(url) as store, _progress() as progress:
        report = maintenance.prune(
            store,
            older_than_ms=age,
            keep_last=keep_last,
            user_id=user,
            dry_run=dry_run,
            vacuum=vacuum,
            progress=progress,
        )
    verb = "would delete" if dry_run else "deleted"
    for what, count in report:
        out.print(_text(f"{verb} {count:,} {what}"))


@app.command("check")
@_url_option
@_errors
def check_command(url: str | None) -> None:
    """Check the database and every row against the store's rules; exit 1 if anything is
    wrong."""
    with common.open_existing(url) as store:
        problems = maintenance.check(store)
    for problem in problems:
        out.print(_text(f"problem: {problem}", "red"))
    if problems:
        sys.exit(EXIT["problems"])
    out.print(_text("ok: no problem found"))


# -- backup / restore ------------------------------------------------------------------------


@app.command("backup")
@click.argument("destination")
@_url_option
@click.option("--force", is_flag=True, help="Replace DESTINATION if it exists.")
@_errors
def backup_command(destination: str, url: str | None, force: bool) -> None:
    """Copy an SQLite store to the file DESTINATION while it is in use (SQLite's online
    backup: the store as it was when the backup began). PostgreSQL: use pg_dump or base
    backups with WAL archiving (the command says so and exits 3)."""
    with _progress() as progress:
        copied = backup.backup(url, destination, force=force, progress=progress)
    _say(f"backed up {copied.pages:,} pages ({copied.bytes:,} bytes) to {copied.path}")


@app.command("restore")
@click.argument("source")
@_url_option
@click.option("--force", is_flag=True, help="Replace the store at --url if it exists.")
@_errors
def restore_command(source: str, url: str | None, force: bool) -> None:
    """Make the SQLite store at --url a copy of the backup file SOURCE, after `check` passed
    on it (exit 1 otherwise, nothing written). An existing store is replaced only with
    --force (exit 5 otherwise)."""
    with _progress() as progress:
        copied = backup.restore(source, url, force=force, progress=progress)
    _say(
        f"restored {copied.pages:,} pages ({copied.bytes:,} bytes) into {copied.path}; check passed"
    )


# -- import-from -----------------------------------------------------------------------------


@app.command("import-from")
@click.argument("kind")
@click.argument("source")
@_url_option
@click.option(
    "--user",
    default=None,
    help="The owner of the imported conversations (one another user owns is an error).",
)
@_errors
def import_from_command(kind: str, source: str, url: str | None, user: str | None) -> None:
    """Bring in a framework's own store: KIND is one of the registered importers
    (openai-sqlite, langgraph, claude-code), SOURCE its file, URL or folder. Each
    conversation is written whole or not at all, and only what the store lacks: after an
    error or Ctrl-C, the same command again resumes."""
    importer = importers.importer(kind)
    with ConversationStore(common.resolve_url(url)) as store, _progress() as progress:
        try:
            report = importer(store, source, user_id=user, progress=progress)
        except ConvostoreError as exc:  # what was written before it, in the one line
            notes = getattr(exc, "__notes__", [])
            if notes:
                exc.args = ("; ".join([str(exc), *notes, "run the same command again to resume"]),)
            raise
    for line in importers.import_report(report):
        out.print(line, markup=False)
