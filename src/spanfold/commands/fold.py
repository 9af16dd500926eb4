"""``spanfold fold SPANS... -o OUT_DIR``: flat traces from OTLP/JSON span files.

Reads OTLP/JSON export requests and the OpenTelemetry Collector file exporter's JSON lines (gzip too), a line at a
time; the spans of one trace may be spread over any of the files (several processes, several runs of the Collector).
Every trace is folded once all files are read, with un-parented calls stitched as in-process. The traces are then
appended to ``traces.jsonl`` + ``traces.meta.jsonl`` (or ``traces.agentv.jsonl``) in ``OUT_DIR`` by the usual
:class:`~spanfold.exporter.files.writers.JsonlWriter` (whole lines, under its lock, as ``spanfold.init()`` and
``spanfold
serve`` append): bad input (``FILE:LINE: problem``, exit 2) leaves ``OUT_DIR`` as it was, or not there at all.

Nothing limits what is held (the input bounds it) and the ``SPANFOLD_*`` environment is not read: only the command's
own options change what is folded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from spanfold.exporter.files.writers import EVENTS_FILES, META_FILE, SPAN_FORMATS, JsonlWriter
from spanfold.exporter.pipeline.span_files import SpanFileError, fold_spans
from spanfold.trace.model import Trace


class FoldError(Exception):
    """Bad input: ``FILE:LINE: problem``."""


@dataclass(frozen=True, slots=True)
class Folded:
    spans: int
    traces: int
    files: tuple[Path, ...]


def _outputs(out_dir: Path, fmt: str) -> list[Path]:
    names = [EVENTS_FILES[fmt], META_FILE] if fmt == "invariant" else [EVENTS_FILES[fmt]]
    return [out_dir / name for name in names]


def _cannot_write(path: Path, exc: OSError) -> FoldError:
    return FoldError(f"{os.fspath(path)}: cannot write: {exc.strerror or exc}")


def _check_output(out_dir: Path) -> None:
    """Fail before reading anything when ``out_dir`` cannot be made (creates nothing)."""
    existing = out_dir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise FoldError(f"{os.fspath(out_dir)}: cannot write: {os.fspath(existing)} is not a directory")


def _append(traces: list[Trace], out_dir: Path, fmt: str) -> list[Path]:
    """Append ``traces`` to the files in ``out_dir`` (created if need be, 0700 / 0600 as the writer makes them)."""
    targets = _outputs(out_dir, fmt)
    try:
        os.makedirs(out_dir, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise _cannot_write(out_dir, exc) from None
    for target in targets:  # open each as the writer will, so that an unwritable one is named before any append
        try:
            os.close(os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
        except OSError as exc:
            raise _cannot_write(target, exc) from None
    writer = JsonlWriter(out_dir, fmt, max_retry_traces=sys.maxsize, max_retry_bytes=sys.maxsize)
    for trace in traces:
        writer.write(trace)
    writer.flush()  # appended in batches; a failed append is rolled back to the last whole line
    if writer.pending:
        raise FoldError(f"{os.fspath(out_dir)}: cannot write the traces (disk full or no permission?)")
    return targets


def fold_files(
    paths: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    fmt: str = "invariant",
    *,
    stitch: bool = True,
) -> Folded:
    """Fold the spans of ``paths`` and append the traces to ``output``; :class:`FoldError` (and ``output``
    untouched) on bad input."""
    out_dir = Path(output)
    _check_output(out_dir)
    try:
        folded = fold_spans(paths, stitch=stitch)
    except SpanFileError as exc:
        raise FoldError(str(exc)) from None
    traces = [trace for trace, _, _ in folded.traces]
    files = _append(traces, out_dir, fmt)
    return Folded(spans=folded.spans, traces=len(traces), files=tuple(files))


@click.command("fold")
@click.argument("spans", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False), help="Directory for the traces.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(set(EVENTS_FILES) - SPAN_FORMATS)),  # otlp-json in, otlp-json out: nothing folded
    default="invariant",
    show_default=True,
)
@click.option("--no-stitch", is_flag=True, help="Keep every un-parented model call its own trace.")
def command(spans: tuple[str, ...], output: str, fmt: str, no_stitch: bool) -> None:
    """Fold OTLP/JSON span files (OTLP/JSON requests, Collector file-exporter JSON lines) into flat traces,
    appended to the trace files in OUTPUT. Exit status 0, or 2 on bad input (nothing is written then)."""
    try:
        result = fold_files(spans, output, fmt, stitch=not no_stitch)
    except FoldError as exc:
        click.echo(str(exc), err=True)
        sys.exit(2)
    click.echo(f"folded {result.spans} spans from {len(spans)} file(s) into {result.traces} trace(s): ", nl=False)
    click.echo(str(result.files[0]))
