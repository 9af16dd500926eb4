"""``spanfold serve``: an OTLP/HTTP endpoint that folds the spans it is sent
(:mod:`spanfold.exporter.pipeline.receiver`).

Point any OpenTelemetry SDK or Collector at it (``OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318``); traces
land in ``--output``. SIGTERM or Ctrl-C writes everything still buffered, then exits. ``--ui`` also serves the
``spanfold ui`` page over ``--output`` from the same process. On a terminal, one line per trace written goes to stdout.
Both answer only to their own names (loopback, ``--host``, ``--allow-host``): another ``Host`` gets 421, and the
receiver refuses a browser's cross-origin request with 403 (DNS rebinding, pages posting spans).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from spanfold.commands.ui import allow_host_option
from spanfold.config import OPTIONS, ConfigError
from spanfold.exporter.files.writers import EVENTS_FILES
from spanfold.text import clip, visible
from spanfold.trace.model import Trace

if TYPE_CHECKING:
    from spanfold.exporter.pipeline.receiver import Receiver
    from spanfold.sampling.decision import Sampler

_DEFAULTS = {"max_body_bytes": 16 * 1024 * 1024, "max_spans": 100_000}


class TracePrinter:
    """A writer that prints one line per trace written (trace id, agent, model steps, tool calls, file), once the
    file writers before it have flushed. ``spanfold serve`` adds it when stdout is a terminal."""

    def __init__(self, path: str, echo: Callable[[str], None] = click.echo) -> None:
        self.path = path
        self._echo = echo
        self._lines: list[str] = []
        self._lock = threading.Lock()

    def write(self, trace: Trace) -> None:
        meta = trace.meta
        steps = sum(1 for ev in trace.events if ev.role == "assistant")
        calls = trace.summary().tool_calls_by_name
        tools = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in calls.items()) or "no tool calls"
        name = clip(meta.name or meta.service or "-", 40)
        step_word = "step" if steps == 1 else "steps"
        line = f"{meta.trace_id}  {name}  {steps} {step_word}  {clip(tools, 80)}  -> {self.path}"
        if meta.status != "complete":
            line += f"  ({meta.status})"
        with self._lock:
            self._lines.append(visible(line))

    def flush(self) -> None:
        with self._lock:
            lines, self._lines = self._lines, []
        for line in lines:
            self._echo(line)

    def close(self) -> None:
        self.flush()


#: What the ``--ui`` page says while no trace is written yet.
SERVE_HINT = (
    "This receiver writes each trace here once the spans sent to it are folded: point an OTLP/HTTP exporter at it "
    "(OTEL_EXPORTER_OTLP_ENDPOINT), or a Collector's otlphttp exporter."
)


def _sampler(text: str | None) -> Sampler | None:
    """``--sample`` (or ``SPANFOLD_SAMPLE``), its spec files loaded; ConfigError saying what is wrong."""
    if text is None:
        return None
    from spanfold.config import load
    from spanfold.setup import sampler_for

    return sampler_for(load({"sample": text}, environ={}).sample)


def status_line(status: dict[str, Any]) -> str:
    """What ``spanfold serve`` says when it stops: traces written and, when sampling, the runs kept and dropped by
    reason."""
    line = f"spanfold serve: {status.get('traces_written', 0)} traces written"
    sampling = status.get("sampling") or {}
    for outcome in ("kept", "dropped"):
        counts = dict(sampling.get(outcome, {}))
        total = counts.pop("total", 0)
        reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items()))
        if total or outcome in sampling:
            line += f"; {outcome} by sampling: {total}" + (f" ({reasons})" if reasons else "")
    return line


def _ui_companion(
    output: str, host: str, port: int, token: str | None, allowed_hosts: tuple[str, ...]
) -> Callable[[Receiver], Awaitable[Any]]:
    """Start the ``spanfold ui`` page over ``output`` on the receiver's event loop; what stops it."""

    async def start_ui(receiver: Receiver) -> Callable[[], Awaitable[None]]:
        from spanfold.ui.index import Index
        from spanfold.ui.server import UiOptions, start

        try:
            options = UiOptions(host, port, token, allowed_hosts=allowed_hosts, waiting_hint=SERVE_HINT)
            runner, url = await start(Index([Path(output)]), options)
        except OSError as exc:
            click.echo(f"spanfold serve: cannot listen on {host}:{port} for --ui: {exc.strerror or exc}", err=True)
            raise SystemExit(2) from None
        click.echo(f"spanfold serve: ui on {url}" + ("?token=..." if token else ""), err=True)
        return runner.cleanup

    return start_ui


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
    "--final-wait",
    default=2.0,
    show_default=True,
    type=click.FloatRange(0),
    help="Seconds after a stitched run's final answer, or after its process closed its connection, with nothing more "
    "from that process, before the run is written (0: only after 30 s idle or at shutdown).",
)
@click.option("--ui", "with_ui", is_flag=True, help="Also serve the spanfold ui page over --output (live).")
@click.option("--ui-port", default=8777, show_default=True, type=click.IntRange(0, 65535), help="Port of --ui.")
@click.option(
    "--ui-token", envvar="SPANFOLD_UI_TOKEN", show_envvar=True, default=None, help="Require this token for --ui."
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
@click.option(
    "--sample",
    envvar="SPANFOLD_SAMPLE",
    show_envvar=True,
    default=None,
    help="Write only some runs: every run that errored, ran or cost more than a bound or failed a spec's checks, and "
    "a fraction of the rest by trace id (0.1, or rate=0.1,slower_than=30s,costlier_than=0.5,failing=spec.yaml). "
    "Counted in GET /status and in the line said at exit.",
)
@allow_host_option
def command(
    host: str,
    port: int,
    output: str,
    fmt: str,
    wait: float,
    final_wait: float,
    with_ui: bool,
    ui_port: int,
    ui_token: str | None,
    token: str | None,
    max_body: int,
    max_spans: int,
    max_buffered_bytes: int,
    read_timeout: float,
    sample: str | None,
    allowed_hosts: tuple[str, ...],
) -> None:
    """Receive OTLP/HTTP traces (protobuf or JSON, gzip) on /v1/traces and write them as flat traces.

    \b
    When is a trace written?
    * A trace with an agent span (or any parent-child tree): once its root
      span arrived and nothing more of it came for --wait seconds.
    * A zero-code run (one trace per model call, stitched into one run by
      its message history): as soon as it is over: --final-wait seconds
      after a final answer (a model reply without tool calls) or after the
      sending process closed its connection (it exited), when nothing more
      came from that process meanwhile; else after 30 s idle
      (SPANFOLD_STITCH_IDLE), or at shutdown.

    On a terminal, one line per trace written goes to stdout (trace id,
    agent, model steps, tool calls, file); nothing when stdout is a pipe.
    """
    try:
        from spanfold.exporter.pipeline.receiver import ServeOptions, serve
    except ImportError as exc:
        click.echo(f"spanfold serve needs its extra: pip install 'spanfold[serve]' ({exc})", err=True)
        sys.exit(2)
    try:
        sampler = _sampler(sample)
    except ConfigError as exc:
        click.echo(f"spanfold serve: {exc}", err=True)
        sys.exit(2)
    options = ServeOptions(
        host,
        port,
        output,
        fmt,
        wait,
        token,
        max_body,
        max_spans,
        max_buffered_bytes,
        read_timeout,
        final_wait,
        allowed_hosts,
        sampler,
    )
    companion = _ui_companion(output, host, ui_port, ui_token, allowed_hosts) if with_ui else None
    if with_ui and host not in ("127.0.0.1", "localhost", "::1") and not ui_token:
        warning = f"spanfold serve: warning: --ui on {host} without --ui-token: anyone who reaches it reads the traces"
        click.echo(warning, err=True)

    def ready(receiver: Receiver) -> None:
        click.echo(f"spanfold serve: listening on {receiver.url}, writing to {output}", err=True)
        if sampler is not None:
            click.echo(f"spanfold serve: sampling: keeping {sampler.sample.describe()}", err=True)
        if sys.stdout.isatty():
            rotated = receiver.config.rotate_bytes is not None or receiver.config.rotate_when is not None
            target = "" if rotated else EVENTS_FILES[fmt]  # rotated: one of the numbered files in the directory
            receiver.fold.add_writer(TracePrinter(os.path.join(output, target)))

    def stopping() -> None:
        click.echo("spanfold serve: stopping; writing what is buffered", err=True)

    try:
        flushed = serve(
            options, ready, stopping, companion, said=lambda status: click.echo(status_line(status), err=True)
        )
    except ConfigError as exc:  # a bad SPANFOLD_* environment variable
        click.echo(f"spanfold serve: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:
        click.echo(f"spanfold serve: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
        sys.exit(2)
    sys.exit(0 if flushed else 1)
