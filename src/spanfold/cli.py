"""The ``spanfold`` command line: one table of subcommands, each loaded only when it runs.

Exit statuses, for every command: 0 ok, 1 a check failed, 2 bad input (named as ``FILE:LINE: problem``,
never a traceback). A command lives in its own module; adding one is a line in :data:`COMMANDS`.
"""

from __future__ import annotations

import difflib
import importlib

import click

from spanfold.trace.read import MAX_LINE_BYTES_ENV, parse_size, set_max_line_bytes
from spanfold.version import __version__

#: name -> ("module:attribute" of a click command, one-line help shown by ``spanfold --help``).
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("spanfold.demo:command", "Run a tool-using agent against the embedded mock LLM server; show its trace."),
    "check": ("spanfold.commands.check:command", "Run a spec's trajectory and message checks over JSONL traces."),
    "validate": ("spanfold.commands.validate:command", "Check trace files against the formats' JSON Schemas."),
    "convert": (
        "spanfold.commands.convert:command",
        "Convert traces to invariant, agentv, agentv-transcript, compact or agentv-cli.",
    ),
    "summary": ("spanfold.commands.summary:command", "One row per trace: events, tool calls, errors, tokens, time."),
    "show": ("spanfold.commands.show:command", "Show a trace for a person: messages, tool calls, outputs, errors."),
    "fold": ("spanfold.commands.fold:command", "Fold OTLP/JSON span files (Collector file exporter too) into traces."),
    "serve": ("spanfold.commands.serve:command", "Receive OTLP/HTTP traces from any number of processes; fold them."),
    "run": ("spanfold.commands.run:command", "Run a Python program traced: spanfold run -- python app.py."),
    "ui": ("spanfold.commands.ui:command", "Browse a directory of traces in a local web page (runs, a run, compare)."),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use, so ``spanfold --help`` and each command start fast."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attr = target[0].partition(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The subcommand named first in ``args``; a name that is none says which it may have meant."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            close = difflib.get_close_matches(name, list(COMMANDS), n=2, cutoff=0.6)
            hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            ctx.fail(f"No such command {name!r}.{hint} Commands: {', '.join(sorted(COMMANDS))}.")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_, help_text) in sorted(COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _size(ctx: click.Context, param: click.Parameter, value: str) -> int:
    """A size in bytes: ``1048576``, ``64MiB``, ``1GiB``."""
    try:
        return parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="spanfold")
@click.option(
    "--max-line-bytes",
    type=str,
    envvar=MAX_LINE_BYTES_ENV,
    default="64MiB",
    callback=_size,
    metavar="SIZE",
    show_default=True,
    help="Longest input line (or JSON/YAML document) read; a longer one is named as FILE:LINE and its file left.",
)
def main(max_line_bytes: int) -> None:
    """spanfold: OpenTelemetry tracing for AI agents, folded into flat, readable traces."""
    set_max_line_bytes(max_line_bytes)
