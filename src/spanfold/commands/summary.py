"""``spanfold summary FILE...``: one row per trace (events, tool calls by name, errors, tokens, duration)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from spanfold.commands.inputs import Reporter, finish, json_line, no_traces, records
from spanfold.text import clip_left, visible
from spanfold.trace.model import TraceMeta, TraceSummary
from spanfold.trace.read import Record
from spanfold.trace.render import format_ms

#: Columns: header, width (the last one is not padded).
COLUMNS = (
    ("TRACE", 36),
    ("ID", 16),
    ("EVENTS", 6),
    ("CALLS", 5),
    ("ERRORS", 6),
    ("TOKENS IN/OUT", 15),
    ("DURATION", 10),
    ("TOOLS", 0),
)


@dataclass(slots=True)
class Row:
    label: str
    summary: TraceSummary
    meta: TraceMeta

    @classmethod
    def of(cls, record: Record) -> Row:
        decoded = record.decoded
        summary = record.trace.summary() if record.trace is not None else decoded.summary
        assert summary is not None  # a trace record has events or a summary (Record.is_trace)
        return cls(record.label, summary, decoded.meta or TraceMeta(trace_id=""))

    @property
    def calls(self) -> int:
        return sum(self.summary.tool_calls_by_name.values())

    def to_json(self) -> dict[str, Any]:
        file, _, line = self.label.rpartition(":")
        meta = self.meta
        return {
            "file": file,
            "line": int(line),
            "trace_id": meta.trace_id or None,
            "trace_summary": self.summary.to_dict(),
            "usage": {"input_tokens": meta.usage.input_tokens, "output_tokens": meta.usage.output_tokens},
            "duration_ms": meta.duration_ms,
            "status": meta.status,
        }

    def cells(self) -> list[str]:
        meta = self.meta
        tools = visible(", ".join(f"{name} x{n}" for name, n in self.summary.tool_calls_by_name.items()))
        tokens = f"{meta.usage.input_tokens}/{meta.usage.output_tokens}" if meta.usage.input_tokens else "-"
        return [
            clip_left(visible(self.label), COLUMNS[0][1]),
            visible(meta.trace_id[:16]) or "-",
            str(self.summary.event_count),
            str(self.calls),
            str(self.summary.error_count),
            tokens,
            format_ms(meta.duration_ms) if meta.duration_ms is not None else "-",
            tools or "-",
        ]


def _line(cells: list[str]) -> str:
    out = []
    for (_, width), cell in zip(COLUMNS, cells, strict=True):
        out.append(cell.ljust(width) if width else cell)
    return "  ".join(out).rstrip()


@dataclass(slots=True)
class Totals:
    traces: int = 0
    calls: int = 0
    errors: int = 0
    tokens_in: int = 0
    tokens_out: int = 0

    def add(self, row: Row) -> None:
        self.traces += 1
        self.calls += row.calls
        self.errors += row.summary.error_count
        self.tokens_in += row.meta.usage.input_tokens
        self.tokens_out += row.meta.usage.output_tokens

    def __str__(self) -> str:
        text = f"{self.traces} traces, {self.calls} tool calls, {self.errors} errors"
        if self.tokens_in or self.tokens_out:
            text += f", {self.tokens_in} in / {self.tokens_out} out tokens"
        return text


@click.command("summary")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per trace (JSONL) instead of a table.")
def command(files: tuple[Path, ...], as_json: bool) -> None:
    """Summarise every trace in FILES: events, tool calls by name, errors, tokens and duration.

    Token counts and durations come from the trace's metadata (the .meta.jsonl beside an Invariant file).
    Exit status 0, or 2 on bad input.
    """
    reporter = Reporter()
    totals = Totals()
    if not as_json:
        click.echo(_line([name for name, _ in COLUMNS]))
    for path in files:
        before, seen = reporter.problems, 0
        for record in records(str(path), reporter):
            if not record.is_trace:
                continue
            seen += 1
            row = Row.of(record)
            totals.add(row)
            click.echo(json_line(row.to_json()) if as_json else _line(row.cells()))
        if seen == 0 and reporter.problems == before:
            reporter.problem(no_traces(str(path)))
    if not as_json:
        click.echo(str(totals))
    finish(reporter)
