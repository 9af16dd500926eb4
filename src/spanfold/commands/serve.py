"""``spanfold serve``: an OTLP/HTTP endpoint that folds the spans it is sent (:mod:`spanfold.exporter.receiver`).

Point any OpenTelemetry SDK or Collector at it (``OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318``); traces
land in ``--output``. SIGTERM or Ctrl-C writes everything still buffered, then exits.
"""

from __future__ import annotations

import sys

import click

from spanfold.config import OPTIONS, ConfigError
from spanfold.exporter.writers import EVENTS_FILES

_DEFAULTS = {"max_body_bytes": 16 * 1024 * 1024, "max_spans": 100_000}


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback by default).")
@click.option("--port", default=4318, show_default=True, type=click.IntRange(0, 65535), help="0: any free port.")
@click.option(
    "--output",
    "-o",
    default="traces",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Directory the trace files are appended to (made once listening).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(EVENTS_FILES)),
    default="invariant",
    show_default=True,
    help="Trace file format.",
)
@click.option(
    "--wait",
    default=5.0,
    show_default=True,
    type=click.FloatRange(0, min_open=False),
    help="Seconds a trace must be quiet, after its root arrived, before it is folded.",
)
@click.option(
    "--token",
    envvar="SPANFOLD_SERVE_TOKEN",
    show_envvar=True,
    default=None,
    help="Require 'Authorization: Bearer TOKEN' (better from the environment: arguments show in ps).",
)
@click.option(
    "--max-body",
    default=_DEFAULTS["max_body_bytes"],
    type=click.IntRange(1),
    show_default=True,
    help="Largest request, bytes.",
)
@click.option(
    "--max-spans",
    default=_DEFAULTS["max_spans"],
    type=click.IntRange(1),
    show_default=True,
    help="Spans held: past it the oldest root-less traces are cut, then clients get 503 (a larger request: 413).",
)
@click.option(
    "--max-buffered-bytes",
    envvar="SPANFOLD_MAX_BUFFERED_BYTES",
    show_envvar=True,
    default=OPTIONS["max_buffered_bytes"].default,
    type=click.IntRange(1),
    show_default=True,
    help="Span attribute bytes held across all traces: past it the oldest root-less traces are cut, then clients get "
    "503 (a larger request: 413).",
)
@click.option(
    "--read-timeout",
    default=30.0,
    show_default=True,
    type=click.FloatRange(0, min_open=True),
    help="Seconds a client has for a request's headers, then for its body (slower: closed, or 408).",
)
def command(
    host: str,
    port: int,
    output: str,
    fmt: str,
    wait: float,
    token: str | None,
    max_body: int,
    max_spans: int,
    max_buffered_bytes: int,
    read_timeout: float,
) -> None:
    """Receive OTLP/HTTP traces (protobuf or JSON, gzip) on /v1/traces and write them as flat traces."""
    try:
        from spanfold.exporter.receiver import Receiver, ServeOptions, serve
    except ImportError as exc:
        click.echo(f"spanfold serve needs its extra: pip install 'spanfold[serve]' ({exc})", err=True)
        sys.exit(2)
    options = ServeOptions(host, port, output, fmt, wait, token, max_body, max_spans, max_buffered_bytes, read_timeout)

    def ready(receiver: Receiver) -> None:
        click.echo(f"spanfold serve: listening on {receiver.url}, writing to {output}", err=True)

    def stopping() -> None:
        click.echo("spanfold serve: stopping; writing what is buffered", err=True)

    try:
        flushed = serve(options, ready, stopping)
    except ConfigError as exc:  # a bad SPANFOLD_* environment variable
        click.echo(f"spanfold serve: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:
        click.echo(f"spanfold serve: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
        sys.exit(2)
    sys.exit(0 if flushed else 1)
