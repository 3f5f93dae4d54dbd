"""The ``convostore`` command: a thin layer of Click and Rich over ``convostore.transfer`` and
``convostore.maintenance``. Exit statuses are documented in the core README (``EXIT``)."""

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
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from . import convert, maintenance, transfer
from .errors import ConflictError, ConvostoreError, MemoryValidationError, StorageError
from .models import Message
from .store import ConversationStore

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


def _fail(status: str, message: str) -> None:
    err.print(Text(f"convostore: {message}", style="red"))
    sys.exit(EXIT[status])


def _errors(fn: F) -> F:
    """Every library error as a one-line message and its documented exit status."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except transfer.VerificationError as exc:
            _fail("problems", f"verification failed: {exc}")
        except MemoryValidationError as exc:
            _fail("bad input", str(exc))
        except StorageError as exc:
            _fail("database", str(exc))
        except ConflictError as exc:
            _fail("conflict", str(exc))
        except ConvostoreError as exc:
            _fail("problems", str(exc))
        except ImportError as exc:
            _fail("missing package", str(exc))
        except KeyboardInterrupt:
            _fail("interrupted", "interrupted; run the same command again to finish")
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


@contextlib.contextmanager
def _progress(enabled: bool = True) -> Iterator[transfer.Progress | None]:
    """A Rich progress bar on stderr, one row per kind of rows; a ``transfer.Progress``."""
    if not enabled or not err.is_terminal:
        yield None
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as bar:
        tasks: dict[str, Any] = {}

        def report(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = bar.add_task(what, total=total or None)
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
    """Conversations, newest activity first."""
    with transfer.open_existing(url) as store:
        table = Table("conversation", "owner", "messages", "last activity (UTC)", "title")
        cursor = None
        shown = 0
        while shown < limit:
            page = store.list_conversations(
                user_id=user, limit=min(100, limit - shown), after=cursor
            )
            for c in page.items:
                title = (c.metadata or {}).get("title", "")
                table.add_row(
                    Text(c.conversation_id),
                    Text(c.user_id or ""),
                    str(c.message_count),
                    _time(c.last_message_at),
                    Text(title if isinstance(title, str) else json.dumps(title)),
                )
                shown += 1
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        out.print(table)


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
                        lines.append(Text(part.text))
                elif isinstance(part, convert._Call):
                    args = part.arguments
                    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                    lines.append(Text(f"→ {part.name}({text})  [{part.id}]", style="cyan"))
                    result = results.get(part.id)
                    if result is None:
                        lines.append(Text("   ⇐ (no result yet)", style="dim"))
                    else:
                        shown.add(part.id)
                        answer = convert._text_of(result.content)
                        style = "red" if result.is_error else "green"
                        lines.append(Text(f"   ⇐ {answer}", style=style))
                elif isinstance(part, convert._Result):
                    if part.call_id not in shown:
                        lines.append(Text(f"⇐ [{part.call_id}] {convert._text_of(part.content)}"))
                elif isinstance(part, convert._Image):
                    lines.append(Text(f"[image: {part.url[:60]}]", style="dim"))
                else:
                    lines.append(Text(json.dumps(part.block, ensure_ascii=False), style="dim"))
        if not lines:
            continue  # only results already shown under their calls
        out.print(Text(f"── {m.role} · {_time(m.created_at)} · {m.message_id}", style="bold"))
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
    with transfer.open_existing(url) as store:
        meta = store.get_conversation(conversation_id=conversation_id, user_id=user)
        if meta is None:
            raise MemoryValidationError(
                f"conversation_id: no conversation {conversation_id!r} in this store",
                argument="conversation_id",
            )
        messages = store.get_history(conversation_id=conversation_id, last=last, user_id=user)
    if as_json:
        click.echo(json.dumps([m.model_dump() for m in messages], ensure_ascii=False, indent=2))
        return
    title = (meta.metadata or {}).get("title")
    owner = f", owner {meta.user_id}" if meta.user_id else ""
    out.print(
        Text(
            f"{meta.conversation_id}{owner}: {meta.message_count} messages"
            + (f" — {title}" if isinstance(title, str) else ""),
            style="bold underline",
        )
    )
    _render(messages)


@app.command("stats")
@_url_option
@_errors
def stats_command(url: str | None) -> None:
    """Rows and bytes of each kind of data the store holds."""
    with transfer.open_existing(url) as store:
        rows = transfer.stats(store)
    table = Table("component", "data", "rows", "bytes (with indexes)")
    for s in rows:
        size = "" if s.bytes is None else f"{s.bytes:,}"
        table.add_row(s.component, s.what, f"{s.rows:,}", size)
    out.print(table)


# -- export / import / migrate ---------------------------------------------------------------


@app.command("export")
@_url_option
@click.option("--user", default=None, help="Only this user's conversations.")
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
    """Write conversations and their messages as convostore JSON Lines."""
    if user is not None and conversations:
        raise click.UsageError("--user and --conversation are exclusive")
    ids = list(conversations) or None
    with transfer.open_existing(url) as store, _progress(output != "-") as progress:
        if output == "-":
            transfer.export_jsonl(store, sys.stdout.buffer, user_id=user, conversation_ids=ids)
            return
        # written beside the target and renamed when whole: never a half export under its name
        folder = os.path.dirname(os.path.abspath(output))
        fd, partial = tempfile.mkstemp(prefix=".convostore-export-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                report = transfer.export_jsonl(
                    store, f, user_id=user, conversation_ids=ids, progress=progress
                )
            os.replace(partial, output)
        except BaseException:
            os.unlink(partial)
            raise
    err.print(f"exported {report.conversations} conversations, {report.messages} messages")


@app.command("import")
@click.argument("file")
@_url_option
@_errors
def import_command(file: str, url: str | None) -> None:
    """Read an export into the store (importing it twice changes nothing)."""
    with ConversationStore(transfer.resolve_url(url)) as store, _progress() as progress:
        report = transfer.import_jsonl(store, file, progress=progress)
    err.print(f"imported {report.conversations} conversations, {report.messages} new messages")


@app.command("migrate")
@click.argument("source")
@click.argument("destination")
@click.option("--force", is_flag=True, help="Empty the destination's tables first.")
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=transfer.BATCH_ROWS,
    show_default=True,
    help="Rows per transaction on the destination.",
)
@click.option("-v", "--verbose", is_flag=True, help="A line on stderr after each batch.")
@_errors
def migrate_command(
    source: str, destination: str, force: bool, batch_size: int, verbose: bool
) -> None:
    """Copy everything (every adapter's tables) from SOURCE to DESTINATION.

    Run it again after an interruption: it continues where it stopped."""
    with _progress(not verbose) as bar:
        progress = bar
        if verbose:

            def progress(what: str, done: int, total: int) -> None:
                click.echo(f"{what}: {done}/{total}", err=True)

        report = transfer.migrate(
            source, destination, force=force, progress=progress, batch_rows=batch_size
        )
    table = Table("component", "table", "rows", "copied now", "sha256")
    for t in report.tables:
        table.add_row(t.component, t.table, f"{t.rows:,}", f"{t.copied:,}", t.sha256[:16])
    out.print(table)
    if report.not_copied:
        err.print(Text(f"not copied (no component describes them): {', '.join(report.not_copied)}"))
    out.print("verified: every table's row count and checksum match")


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
    help="Delete what was last active before: 30d, 12h, 90m.",
)
@click.option(
    "--keep-last",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Trim each conversation to its newest N messages.",
)
@click.option("--user", default=None, help="Only this user's conversations.")
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
    """Retention: delete old conversations, trim long ones (LangGraph threads too)."""
    if older_than is None and keep_last is None:
        raise click.UsageError("say what to prune: --older-than AGE and/or --keep-last N")
    age = None if older_than is None else _duration_ms(older_than)
    with transfer.open_existing(url) as store:
        report = maintenance.prune(
            store,
            older_than_ms=age,
            keep_last=keep_last,
            user_id=user,
            dry_run=dry_run,
            vacuum=vacuum,
        )
    verb = "would delete" if dry_run else "deleted"
    for what, count in report:
        out.print(f"{verb} {count:,} {what}")


@app.command("check")
@_url_option
@_errors
def check_command(url: str | None) -> None:
    """Check the database and the store's invariants; exit 1 if anything is wrong."""
    with transfer.open_existing(url) as store:
        problems = maintenance.check(store)
    for problem in problems:
        out.print(Text(f"problem: {problem}", style="red"))
    if problems:
        sys.exit(EXIT["problems"])
    out.print("ok: no problem found")


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
    importer = maintenance.importer(kind)
    with ConversationStore(transfer.resolve_url(url)) as store, _progress() as progress:
        try:
            report = importer(store, source, user_id=user, progress=progress)
        except ConvostoreError as exc:  # what was written before it, in the one line
            notes = getattr(exc, "__notes__", [])
            if notes:
                exc.args = ("; ".join([str(exc), *notes, "run the same command again to resume"]),)
            raise
    for line in maintenance.import_report(report):
        out.print(line, markup=False)
