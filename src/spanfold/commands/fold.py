"""``spanfold fold SPANS... -o OUT_DIR``: flat traces from OTLP/JSON span files.

Reads OTLP/JSON export requests and the OpenTelemetry Collector file exporter's JSON lines (gzip too), a line at a
time; the spans of one trace may be spread over any of the files (several processes, several runs of the Collector).
Every trace is folded once all files are read, with un-parented calls stitched as in-process. The output files
(``traces.jsonl`` + ``traces.meta.jsonl``, or ``traces.agentv.jsonl``) are written beside the target in a temporary
directory and moved into place only when everything was read: bad input (``FILE:LINE: problem``, exit 2) leaves
``OUT_DIR`` as it was.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from spanfold import config as config_module
from spanfold.exporter.assembler import Assembler, Policy, trace_root
from spanfold.exporter.otlp_json import FileProblem, read_file
from spanfold.exporter.writers import EVENTS_FILES, META_FILE, JsonlWriter

#: Files are read whole before anything is folded: no limit on traces or spans held (the input bounds them).
_UNBOUNDED = {"max_traces_in_flight": sys.maxsize, "max_spans_per_trace": sys.maxsize}


class FoldError(Exception):
    """Bad input: ``FILE:LINE: problem``."""


@dataclass(frozen=True, slots=True)
class Folded:
    spans: int
    traces: int
    files: tuple[Path, ...]


def _outputs(fmt: str) -> list[str]:
    return [EVENTS_FILES[fmt], META_FILE] if fmt == "invariant" else [EVENTS_FILES[fmt]]


def fold_files(
    paths: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    fmt: str = "invariant",
    *,
    stitch: bool = True,
) -> Folded:
    """Fold the spans of ``paths`` into ``output``; :class:`FoldError` (and ``output`` untouched) on bad input."""
    out_dir = Path(output)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".spanfold-fold-", dir=out_dir))
    except OSError as exc:
        raise FoldError(f"{os.fspath(out_dir)}: cannot write: {exc.strerror or exc}") from None
    try:
        config = config_module.load({"output": str(staging), "format": fmt, **_UNBOUNDED})
        writer = JsonlWriter(staging, fmt)
        assembler = Assembler([writer], config, Policy(quiet=float("inf"), root=trace_root, stitch=stitch))
        spans = 0
        for path in paths:
            try:
                for _, decoded in read_file(path):
                    for record in decoded.records:
                        assembler.add(record, 0.0)
                    spans += len(decoded.records)
            except FileProblem as exc:
                raise FoldError(f"{os.fspath(path)}:{exc.line}: {exc.problem}") from None
            except OSError as exc:
                raise FoldError(f"{os.fspath(path)}: cannot read: {exc.strerror or exc}") from None
        before = writer.pending
        assembler.flush(0.0, final=True)
        if writer.pending or before:
            raise FoldError(f"{os.fspath(out_dir)}: cannot write the traces (disk full or no permission?)")
        targets = []
        for name in _outputs(fmt):
            (staging / name).touch(mode=0o600)
            os.replace(staging / name, out_dir / name)
            targets.append(out_dir / name)
        traces = sum(1 for _ in (out_dir / EVENTS_FILES[fmt]).open(encoding="utf-8"))
        return Folded(spans=spans, traces=traces, files=tuple(targets))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@click.command("fold")
@click.argument("spans", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False), help="Directory for the traces.")
@click.option("--format", "fmt", type=click.Choice(sorted(EVENTS_FILES)), default="invariant", show_default=True)
@click.option("--no-stitch", is_flag=True, help="Keep every un-parented model call its own trace.")
def command(spans: tuple[str, ...], output: str, fmt: str, no_stitch: bool) -> None:
    """Fold OTLP/JSON span files (OTLP/JSON requests, Collector file-exporter JSON lines) into flat traces."""
    try:
        result = fold_files(spans, output, fmt, stitch=not no_stitch)
    except FoldError as exc:
        click.echo(str(exc), err=True)
        sys.exit(2)
    click.echo(f"folded {result.spans} spans from {len(spans)} file(s) into {result.traces} trace(s): ", nl=False)
    click.echo(str(result.files[0]))
