"""``spanfold show FILE... [--trace N|ID]``: traces for a person (:func:`spanfold.trace.render.render_trace`)."""

from __future__ import annotations

from pathlib import Path

import click

from spanfold.commands.inputs import Reporter, finish, no_traces, read_paths
from spanfold.commands.select import TRACE_HELP, Picker
from spanfold.commands.terminal import color_choice, terminal_width
from spanfold.config import HOW_TRACES_ARE_MADE
from spanfold.text import clip, visible
from spanfold.trace.render import header, render_trace
from spanfold.trace.scores import Score

#: Where ``spanfold.init()`` writes, and what ``show`` reads when given nothing.
DEFAULT_DIRECTORY = "traces"

#: Default cut of long contents (a fetched web page should not fill the terminal).
MAX_CHARS = 2000


def score_lines(scores: list[Score], max_chars: int | None) -> list[str]:
    """The run's scores, one line each in the order given: ``score helpful = true  (human, 2026-...Z) spot on``."""
    lines = []
    for given in scores:
        when = f", {given.time}" if given.time else ""
        comment = f" {given.comment}" if given.comment else ""
        text = visible(f"{given.name} = {given.shown}") + click.style(f"  ({given.source}{when})", dim=True)
        if comment:
            text += visible(comment if max_chars is None else clip(comment, max_chars))
        lines.append(click.style("score ", fg="magenta") + text)
    return lines


@click.command("show")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option("--trace", "pick", metavar="N|ID", default=None, help=TRACE_HELP)
@click.option(
    "--color/--no-color",
    default=None,
    help="Force colour on or off (default: on for a terminal, off when NO_COLOR is set, on when FORCE_COLOR is).",
)
@click.option(
    "--max-chars",
    type=click.IntRange(min=1),
    default=MAX_CHARS,
    show_default=True,
    help="Cut each message, tool output and argument list to this many characters.",
)
@click.option("--full", is_flag=True, help="Show every content whole (no --max-chars).")
def command(files: tuple[Path, ...], pick: str | None, color: bool | None, max_chars: int, full: bool) -> None:
    """Show the traces in FILES (trace files or directories of them; default ./traces, where spanfold.init() writes)
    for a person: roles, tool calls and their arguments, tool outputs, errors, timings and tokens (from the
    .meta.jsonl beside an Invariant file), and the scores given to each run (traces.scores.jsonl).

    Exit status 0, or 2 on bad input or when --trace matches nothing.
    """
    if not files:
        files = (Path(DEFAULT_DIRECTORY),)
        if not files[0].exists():
            click.echo(f"{DEFAULT_DIRECTORY}: no such directory here. {HOW_TRACES_ARE_MADE}", err=True)
            click.get_current_context().exit(2)
    picker = Picker(pick)
    reporter = Reporter()
    color = color_choice(color)
    width = terminal_width()
    name = ", ".join(str(f) for f in files)
    shown = 0
    for record in picker(read_paths(files, reporter)):
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
            limit = None if full else max_chars
            for line in render_trace(trace.events, trace.meta, color=True, max_chars=limit, width=width):
                click.echo(line, color=color)
        meta = record.decoded.meta or (trace.meta if trace is not None else None)
        for line in score_lines(meta.scores if meta is not None else [], None if full else max_chars):
            click.echo(line, color=color)
        shown += 1
    if not reporter.problems:  # after a real error (a missing file), nothing more to say
        missing = picker.missing(name)
        if missing is not None:
            reporter.problem(missing)
        elif shown == 0:
            reporter.problem(no_traces(name))
    finish(reporter)
