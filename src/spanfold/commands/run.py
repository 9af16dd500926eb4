"""``spanfold run -- CMD [ARGS...]``: run a Python program traced, with nothing to configure.

The command runs in place of this process (``exec``: same pid, signals and exit status go straight to it) with
spanfold's ``sitecustomize`` first on ``PYTHONPATH``: every Python process it starts calls ``spanfold.init()`` before
the program's first line (options from the flags below, else the ``SPANFOLD_*`` environment). Metrics and logs
exporters stay off unless set, and other instrumentations of the libraries spanfold traces are turned off (one line
says which) for an ``opentelemetry-instrument`` inside. See :mod:`spanfold.zero_code`.
"""

from __future__ import annotations

import os
import shutil
import sys

import click

from spanfold.exporter.files.writers import EVENTS_FILES


@click.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False),
    help="Trace directory (default: SPANFOLD_OUTPUT, else ./traces).",
)
@click.option("--format", "fmt", type=click.Choice(sorted(EVENTS_FILES)), help="Trace file format.")
@click.option("--capture-content/--no-capture-content", default=None, help="Record prompts, completions and tool data.")
@click.option("--otlp", metavar="URL", help="Also export the spans over OTLP/HTTP to this endpoint.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def command(
    output: str | None, fmt: str | None, capture_content: bool | None, otlp: str | None, command: tuple[str, ...]
) -> None:
    """Run COMMAND (a Python program: `spanfold run -- python app.py`) with spanfold tracing it."""
    from spanfold import bootstrap, zero_code

    program = shutil.which(command[0])
    if program is None:
        click.echo(f"spanfold run: command not found: {command[0]}", err=True)
        sys.exit(127)
    env, turned_off = zero_code.run_environment(os.environ, os.path.dirname(os.path.abspath(bootstrap.__file__)))
    for name, value in (("SPANFOLD_OUTPUT", output), ("SPANFOLD_FORMAT", fmt), ("SPANFOLD_OTLP", otlp)):
        if value is not None:
            env[name] = value
    if capture_content is not None:
        env["SPANFOLD_CAPTURE_CONTENT"] = "true" if capture_content else "false"
    if turned_off:
        click.echo(zero_code.turned_off_line(turned_off, "spanfold run"), err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(program, list(command), env)
    except OSError as exc:
        click.echo(f"spanfold run: cannot run {command[0]}: {exc.strerror}", err=True)
        sys.exit(126)
