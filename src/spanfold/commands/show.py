"""``spanfold show FILE [--trace N|ID]``: traces rendered for a person (:func:`spanfold.trace.render.render_trace`)."""

from __future__ import annotations

from pathlib import Path

import click

from spanfold.commands.inputs import Reporter, finish, no_traces, records
from spanfold.commands.select import TRACE_HELP, Picker
from spanfold.text import visible
from spanfold.trace.render import header, render_trace

#: Default cut of long contents (a fetched web page should not fill the terminal).
MAX_CHARS = 2000


@click.command("show")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--trace", "pick", metavar="N|ID", default=None, help=TRACE_HELP)
@click.option("--color/--no-color", default=None, help="Force colour on or off (default: on for a terminal).")
@click.option(
    "--max-chars",
    type=click.IntRange(min=1),
    default=MAX_CHARS,
    show_default=True,
    help="Cut each message, tool output and argument list to this many characters.",
)
@click.option("--full", is_flag=True, help="Show every content whole (no --max-chars).")
def command(file: Path, pick: str | None, color: bool | None, max_chars: int, full: bool) -> None:
    """Show the traces in FILE for a person: roles, tool calls and their arguments, tool outputs, errors,
    timings and tokens (from the .meta.jsonl beside an Invariant file).

    Exit status 0, or 2 on bad input or when --trace matches nothing.
    """
    picker = Picker(pick)
    reporter = Reporter()
    name = str(file)
    shown = 0
    for record in picker(records(name, reporter)):
        if shown:
            click.echo("")
        click.echo(click.style(visible(record.label), dim=True), color=color)
        trace = record.trace
        if trace is None:  # a summary-only record: no events to show
            summary = record.decoded.summary
            assert summary is not None  # Picker yields traces and summaries only
            for line in header(record.decoded.meta, summary):
                click.echo(line, color=color)
        else:
            for line in render_trace(trace.events, trace.meta, color=True, max_chars=None if full else max_chars):
                click.echo(line, color=color)
        shown += 1
    missing = picker.missing(name)
    if missing is not None:
        reporter.problem(missing)
    elif shown == 0 and not reporter.problems:
        reporter.problem(no_traces(name))
    finish(reporter)
