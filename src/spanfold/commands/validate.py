"""``spanfold validate FILE...``: check trace files against the formats' JSON Schemas."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click

from spanfold.commands.inputs import Reporter, finish, no_traces, trace_files, values
from spanfold.exporter.pipeline.span_files import is_span_file, span_records
from spanfold.text import plural, visible
from spanfold.trace import formats
from spanfold.trace.read import Opened, Problem, Value, open_input, open_problem
from spanfold.trace.validate import SCHEMAS, validate_value

#: Shapes without trace events (counted apart).
_RECORDS = ("metadata", "agentv-summary")


def _span_values(source: Opened, fmt: str | None, reporter: Reporter) -> Iterator[Value]:
    """The traces folded from a span file, each as a value of ``fmt`` (Invariant by default)."""
    encoding = fmt if fmt in formats.FORMATS else "invariant"
    for item in span_records(source):
        if isinstance(item, Problem):
            reporter.problem(item)
        elif item.trace is not None:
            yield Value(item.file, item.line, formats.to_value(item.trace, encoding))


@click.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(SCHEMAS)),
    default=None,
    help="Validate every value against this format's schema (default: each value's own shape).",
)
def command(files: tuple[Path, ...], fmt: str | None) -> None:
    """Validate FILES (Invariant, AgentV, compact or metadata; JSONL, JSON or YAML; or directories of trace files)
    against the JSON Schemas. An OTLP JSON span file is folded, and each trace it folds to is validated.

    Prints every problem as FILE:LINE: JSON-PATH: problem; on success only the count of valid traces.
    Exit status 0 when all are valid, 1 when any is not, 2 when a file cannot be read or is not JSON.
    """
    reporter = Reporter()
    valid = invalid = records = 0
    for path in trace_files(files, reporter.file_problem, metadata=True):
        name = str(path)
        seen, before = 0, reporter.problems
        try:
            opened = open_input(path)  # once: a pipe or a FIFO is read once
        except OSError as exc:
            reporter.file_problem(name, open_problem(exc))
            continue
        with opened:
            for value in _span_values(opened, fmt, reporter) if is_span_file(opened) else values(opened, reporter):
                seen += 1
                shape, issues = validate_value(value.data, fmt)
                for issue in issues:
                    click.echo(visible(f"{value.file}:{value.line}: {issue}"), err=True)
                if shape in _RECORDS and not issues:
                    records += 1
                elif issues:
                    invalid += 1
                else:
                    valid += 1
        if seen == 0 and reporter.problems == before:
            reporter.problem(no_traces(name))
    counted = plural(valid, "trace") + " valid"
    if records:
        counted += f" (and {plural(records, 'metadata record')})"
    if invalid:
        counted = f"{plural(invalid, 'trace')} invalid, {counted}"
    click.echo(counted)
    finish(reporter, failed=invalid > 0)
