"""``spanfold summary FILE...``: one row per trace (events, tool calls by name, errors, tokens, duration, cost), and
under a run that did not end normally a line saying how it ended (``status: error (KeyboardInterrupt)``); the totals
last (the cost of the runs that record one, by currency). ``--json`` adds the error a run ended with, its cost record
(``cost``: by kind of token and by model) and, from the metadata's steps, the time spent in model calls and in tool
runs.

A run's cost is what its metadata records: ``-`` when it records none; ``$0.0123+`` when some of its model calls
reported tokens no price covers (the total is of the others). Its tokens likewise: ``-`` when no model call reported
any (unknown, not 0); ``120/20+`` when some did not (``usage.unreported_steps``: the total is of the others). A run's
steps are the entries of its metadata's ``steps`` (model calls and tool runs), as everywhere spanfold counts steps.

``--by user|session|tag|prompt``: one row per user (``user_id``), session (``session_id``, else the run's
``conversation_id``), tag (a run with two tags counts under each) or prompt (``name@version``) instead, as
``spanfold.context`` and other producers' spans name them in the metadata: runs, runs that ended with an error, error
events, tool calls, tokens and cost per group, runs that name none under ``(none)``; the totals of every run last.

The table fits the terminal (``COLUMNS`` or its width): long paths are cut in the middle, the tool list wraps
under its column or, on a narrow terminal, goes on a line of its own. Piped, rows are never cut. The widths come
from the first :data:`SIZING_ROWS` rows (memory stays bounded whatever the number of traces).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from spanfold.commands.inputs import Reporter, finish, json_line, no_traces, records, trace_files
from spanfold.commands.terminal import terminal_width
from spanfold.text import clip, clip_middle, plural, visible, wrap_items
from spanfold.trace import scores
from spanfold.trace.model import TraceMeta, TraceSummary
from spanfold.trace.read import Record
from spanfold.trace.render import format_cost, format_ms

#: Rows read before the table's widths are fixed.
SIZING_ROWS = 100
#: Number columns: header and width (right-aligned).
NUMBERS = (("EVENTS", 6), ("CALLS", 5), ("ERRORS", 6), ("TOKENS IN/OUT", 13), ("DURATION", 9), ("COST", 9))
#: Narrowest trace column, and the least room for tools beside the row before they move to a line of their own.
MIN_TRACE, MIN_TOOLS = 16, 24
#: Widest SCORES column on a terminal (each score name's latest value; longer ones are cut).
MAX_SCORES = 32
GAP = "  "


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
            "usage": self.usage(),
            "steps": meta.steps_taken,
            "duration_ms": meta.duration_ms,
            "status": meta.status,
            "error": meta.error,
            "cost": cost.to_dict() if (cost := meta.run_cost) is not None else None,
            **self.step_times(),
            **({"scores": scores.as_json(self.meta.scores)} if self.meta.scores else {}),
        }

    def usage(self) -> dict[str, int]:
        """The run's token totals as its metadata writes them: ``input_tokens`` and ``output_tokens`` when known (no
        totals when no model call reported any), and ``unreported_steps``: the model calls that reported none."""
        meta = self.meta
        out = {"input_tokens": meta.usage.input_tokens, "output_tokens": meta.usage.output_tokens}
        if not meta.usage_known:
            out = {}
        if meta.unreported_steps:
            out["unreported_steps"] = meta.unreported_steps
        return out

    def tokens(self) -> str:
        """``120/20``; ``120/20+`` when some model calls reported none; ``-`` when none reported any (or none ran)."""
        meta = self.meta
        if not meta.usage_known or not (meta.usage.input_tokens or meta.usage.output_tokens):
            return "-"
        return f"{meta.usage.input_tokens}/{meta.usage.output_tokens}" + ("+" if meta.unreported_steps else "")

    def step_times(self) -> dict[str, Any]:
        """The model calls and tool runs the metadata lists, and the time spent in each kind (None: no steps)."""
        out: dict[str, Any] = {}
        for kind in ("model", "tool"):
            steps = [s for s in self.meta.steps if s.kind == kind]
            out[f"{kind}_steps"] = len(steps)
            times = [s.duration_ms for s in steps if s.duration_ms is not None]
            out[f"{kind}_ms"] = round(sum(times), 3) if times else None
        return out

    def numbers(self) -> list[str]:
        meta = self.meta
        tokens = self.tokens()
        duration = format_ms(meta.duration_ms) if meta.duration_ms is not None else "-"
        cost = meta.run_cost
        spent = "-" if cost is None else format_cost(cost.total, cost.currency) + ("+" if cost.unpriced_steps else "")
        return [str(self.summary.event_count), str(self.calls), str(self.summary.error_count), tokens, duration, spent]

    def ending(self) -> str | None:
        """How the run ended, when not normally: ``status: error (KeyboardInterrupt)``, ``status: incomplete``."""
        meta = self.meta
        if meta.status == "complete":
            return None
        kind = meta.error.get("type") if meta.status == "error" and meta.error is not None else None
        return visible(f"status: {meta.status}" + (f" ({kind})" if kind else ""))

    def scores(self) -> str:
        """Each score name's latest value (``helpful=true grade=0.4``), ``-`` when the run has none."""
        return visible(scores.summary(self.meta.scores))

    def tools(self) -> list[str]:
        return [visible(f"{name} x{n}") for name, n in self.summary.tool_calls_by_name.items()]


@dataclass(slots=True)
class Layout:
    """Column widths for a terminal of ``width`` columns (None: piped, nothing cut)."""

    width: int | None
    trace: int
    ident: int
    tools_inline: bool = True
    numbers: list[int] = field(default_factory=lambda: [w for _, w in NUMBERS])
    #: The width of the SCORES column; 0: no column (no run among the first has scores, or no room: each run's
    #: scores go on a line under it).
    scores: int = 0

    @classmethod
    def fit(cls, rows: list[Row], width: int | None) -> Layout:
        labels = max((len(visible(r.label)) for r in rows), default=0)
        trace = max(len("TRACE"), labels)
        numbers = [max([w] + [len(r.numbers()[i]) for r in rows]) for i, (_, w) in enumerate(NUMBERS)]
        scored = max((len(r.scores()) for r in rows if r.meta.scores), default=0)
        scored = max(len("SCORES"), scored) if scored else 0
        if width is None:
            return cls(None, trace, 16, True, numbers, scored)
        ident = 16 if width >= 120 else 8
        fixed = ident + sum(numbers) + len(GAP) * (len(numbers) + 1)
        scored = min(scored, MAX_SCORES)
        if scored and fixed + scored + len(GAP) + min(trace, MIN_TRACE) + len(GAP) + MIN_TOOLS <= width:
            fixed += scored + len(GAP)
        else:
            scored = 0
        if fixed + min(trace, MIN_TRACE) + len(GAP) + MIN_TOOLS <= width:
            trace = min(trace, width - fixed - len(GAP) - MIN_TOOLS)
            return cls(width, trace, ident, True, numbers, scored)
        if fixed + MIN_TRACE > width:  # a narrow terminal: the cost goes under the row, with the tools
            numbers, fixed = numbers[:-1], fixed - numbers[-1] - len(GAP)
        if fixed + MIN_TRACE > width:  # narrower still: the trace id goes (`show` and `--json` print it)
            ident, fixed = 0, fixed - ident - len(GAP)
        return cls(width, max(MIN_TRACE, min(trace, width - fixed)), ident, False, numbers)

    @property
    def cost_column(self) -> bool:
        return len(self.numbers) == len(NUMBERS)

    @property
    def tools_column(self) -> int:
        scores = self.scores + len(GAP) if self.scores else 0
        return self.trace + self.ident + sum(self.numbers) + len(GAP) * (len(self.numbers) + 2) + scores

    def line(self, trace: str, ident: str, numbers: list[str], tools: str, scores: str = "SCORES") -> str:
        cells = [trace.ljust(self.trace)] + ([ident.ljust(self.ident)] if self.ident else [])
        cells += [cell.rjust(w) for cell, w in zip(numbers[: len(self.numbers)], self.numbers, strict=True)]
        if self.scores:
            cells.append((scores if self.width is None else clip(scores, self.scores)).ljust(self.scores))
        if self.tools_inline:
            cells.append(tools)
        return GAP.join(cells).rstrip()

    def header(self) -> str:
        return self.line("TRACE", "ID", [name for name, _ in NUMBERS], "TOOLS")

    def row(self, row: Row) -> list[str]:
        lines = self._row(row)
        ending = row.ending()
        if ending is not None:
            lines.append(f"  {ending}"[: self.width])
        if row.meta.scores and not self.scores:  # no column for them
            lines.append(f"  scores: {row.scores()}"[: self.width])
        return lines

    def _row(self, row: Row) -> list[str]:
        label = visible(row.label)
        if self.width is not None:
            label = clip_middle(label, self.trace)
        ident = visible(row.meta.trace_id[: self.ident]) or "-"
        tools = row.tools() or ["-"]
        scored = row.scores()
        if self.width is None:
            return [self.line(label, ident, row.numbers(), ", ".join(tools), scored)]
        if self.tools_inline:
            room = self.width - self.tools_column
            first, *rest = wrap_items(tools, room)
            lines = [self.line(label, ident, row.numbers(), first, scored)]
            return lines + [" " * self.tools_column + r for r in rest]
        numbers = row.numbers()
        lines = [self.line(label, ident, numbers, "", scored)]
        if row.tools():
            indent = " " * len("  tools: ")
            wrapped = wrap_items(tools, max(MIN_TOOLS, self.width - len(indent)))
            lines += ["  tools: " + wrapped[0]] + [indent + w for w in wrapped[1:]]
        if not self.cost_column and numbers[-1] != "-":
            lines.append(f"  cost: {numbers[-1]}")
        return lines


@dataclass(slots=True)
class Totals:
    traces: int = 0
    calls: int = 0
    errors: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    failed: int = 0  # runs that ended with an error
    costs: dict[str, float] = field(default_factory=dict)  # by currency, of the runs that record a cost
    unpriced: int = 0  # runs that record none, or one that leaves model calls out
    unreported: int = 0  # model calls that reported no tokens: not in the token totals

    def add(self, row: Row) -> None:
        self.traces += 1
        self.failed += row.meta.status == "error"
        self.calls += row.calls
        self.errors += row.summary.error_count
        if row.meta.usage_known:
            self.tokens_in += row.meta.usage.input_tokens
            self.tokens_out += row.meta.usage.output_tokens
        self.unreported += row.meta.unreported_steps
        cost = row.meta.run_cost
        if cost is not None:
            self.costs[cost.currency] = self.costs.get(cost.currency, 0.0) + cost.total
        if cost is None or cost.unpriced_steps:
            self.unpriced += 1

    def __str__(self) -> str:
        failed = f" ({self.failed} failed)" if self.failed else ""  # ended with an error (status error)
        text = f"{plural(self.traces, 'trace')}{failed}, {plural(self.calls, 'tool call')}, "
        text += plural(self.errors, "error")
        if self.tokens_in or self.tokens_out:
            text += f", {self.tokens_in} in / {self.tokens_out} out tokens"
        return text

    def lines(self, width: int | None) -> list[str]:
        """The totals, and what the runs that record a cost cost (by currency): on the same line when it fits."""
        lines = [str(self)]
        more: list[str] = []
        if self.unreported:  # unknown, not 0: how many model calls the token totals leave out
            more.append(f"{plural(self.unreported, 'model call')} without token counts")
        if self.costs:
            cost = "cost " + " + ".join(visible(format_cost(v, c)) for c, v in sorted(self.costs.items()))
            if self.unpriced:
                cost += f" ({plural(self.unpriced, 'trace')} not fully priced)"
            more.append(cost)
        for part in more:
            if width is None or len(lines[-1]) + 2 + len(part) <= width:
                lines[-1] += f", {part}"
            else:
                lines.append(part)
        return lines


#: ``--by`` choices -> the metadata they group runs by.
GROUPINGS = ("user", "session", "tag", "prompt")
#: The group of the runs that name no user, session, tag or prompt.
NONE_GROUP = "(none)"
#: Number columns of a grouped table: header and width.
GROUP_NUMBERS = (("RUNS", 5), ("FAILED", 6), ("ERRORS", 6), ("CALLS", 5), ("TOKENS IN/OUT", 13), ("COST", 9))
#: Widest group column on a terminal (a longer user or session id is cut in the middle).
MAX_GROUP = 40


def group_keys(meta: TraceMeta, by: str) -> list[str]:
    """The groups a run counts under (``by``: one of :data:`GROUPINGS`); :data:`NONE_GROUP` when it names none."""
    extra = meta.extra
    keys: list[str] = []
    if by == "user":
        keys = [extra["user_id"]] if isinstance(extra.get("user_id"), str) else []
    elif by == "session":
        session = extra.get("session_id") or extra.get("conversation_id")
        keys = [session] if isinstance(session, str) and session else []
    elif by == "tag":
        tags = extra.get("tags")
        keys = [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []
    elif by == "prompt":
        prompt = extra.get("prompt")
        if isinstance(prompt, dict) and isinstance(prompt.get("name"), str):
            version = prompt.get("version")
            keys = [prompt["name"] + (f"@{version}" if version is not None else "")]
    return keys or [NONE_GROUP]


def group_json(by: str, key: str, totals: Totals) -> dict[str, Any]:
    """One group of ``summary --by ... --json``: its runs and what they add up to."""
    return {
        "by": by,
        by: None if key == NONE_GROUP else key,
        "runs": totals.traces,
        "failed": totals.failed,
        "errors": totals.errors,
        "tool_calls": totals.calls,
        "usage": {"input_tokens": totals.tokens_in, "output_tokens": totals.tokens_out},
        "unreported_steps": totals.unreported,
        "cost": dict(sorted(totals.costs.items())) or None,
        "unpriced_runs": totals.unpriced,
    }


def _group_numbers(totals: Totals) -> list[str]:
    tokens = f"{totals.tokens_in}/{totals.tokens_out}" if totals.tokens_in or totals.tokens_out else "-"
    if tokens != "-" and totals.unreported:
        tokens += "+"
    cost = " + ".join(visible(format_cost(v, c)) for c, v in sorted(totals.costs.items())) or "-"
    if totals.costs and totals.unpriced:
        cost += "+"
    return [str(totals.traces), str(totals.failed), str(totals.errors), str(totals.calls), tokens, cost]


def grouped_table(by: str, groups: dict[str, Totals], width: int | None) -> list[str]:
    """The groups as a table: the group, then :data:`GROUP_NUMBERS`."""
    names = {key: visible(key) for key in groups}
    column = max([len(by.upper()), *(len(n) for n in names.values())])
    if width is not None:
        column = min(column, MAX_GROUP)
    numbers = {key: _group_numbers(t) for key, t in groups.items()}
    widths = [max([w, *(len(n[i]) for n in numbers.values())]) for i, (_, w) in enumerate(GROUP_NUMBERS)]

    def line(name: str, cells: list[str]) -> str:
        return GAP.join([name.ljust(column), *(c.rjust(w) for c, w in zip(cells, widths, strict=True))]).rstrip()

    lines = [line(by.upper(), [name for name, _ in GROUP_NUMBERS])]
    for key in groups:
        name = names[key] if width is None else clip_middle(names[key], column)
        lines.append(line(name, numbers[key]))
    return lines


def _grouped(rows: Iterator[Row], by: str, as_json: bool, reporter: Reporter) -> None:
    """``summary --by``: every run read into its groups (first seen first), then the table (or JSON lines) and the
    totals of every run."""
    totals = Totals()
    groups: dict[str, Totals] = {}
    for row in rows:
        totals.add(row)
        for key in dict.fromkeys(group_keys(row.meta, by)):
            groups.setdefault(key, Totals()).add(row)
    if as_json:
        for key, group in groups.items():
            click.echo(json_line(group_json(by, key, group)))
        finish(reporter)
    width = terminal_width()
    if groups:
        for line in grouped_table(by, groups, width):
            click.echo(line)
    if totals.traces or not reporter.problems:
        for line in totals.lines(width):
            click.echo(line)
    finish(reporter)


def _rows(files: list[Path], reporter: Reporter) -> Iterator[Row]:
    for path in files:
        before, seen = reporter.problems, 0
        for record in records(str(path), reporter):
            if record.is_trace:
                seen += 1
                yield Row.of(record)
        if seen == 0 and reporter.problems == before:
            reporter.problem(no_traces(str(path)))


@click.command("summary")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per trace (JSONL) instead of a table.")
@click.option(
    "--by",
    type=click.Choice(GROUPINGS),
    default=None,
    help="One row per user, session, tag or prompt (as spanfold.context names them): runs, failed runs, errors, "
    "tool calls, tokens and cost per group.",
)
def command(files: tuple[Path, ...], as_json: bool, by: str | None) -> None:
    """Summarise every trace in FILES (trace files or directories of them): events, tool calls by name, errors,
    tokens, duration, cost, and how a run that did not end normally ended; with --by, per user, session, tag or
    prompt instead.

    Token counts, durations and costs come from the trace's metadata (the .meta.jsonl beside an Invariant file); a
    cost ending in + leaves out model calls no price covers.
    Exit status 0, or 2 on bad input.
    """
    reporter = Reporter()
    totals = Totals()
    rows = _rows(trace_files(files, reporter.file_problem), reporter)
    if by is not None:
        _grouped(rows, by, as_json, reporter)
        return
    if as_json:
        for row in rows:
            totals.add(row)
            click.echo(json_line(row.to_json()))
        finish(reporter)
    first = [row for _, row in zip(range(SIZING_ROWS), rows, strict=False)]
    if first:
        layout = Layout.fit(first, terminal_width())
        click.echo(layout.header())
        for row in [*first, *rows]:
            totals.add(row)
            for line in layout.row(row):
                click.echo(line)
    if totals.traces or not reporter.problems:
        for line in totals.lines(terminal_width()):
            click.echo(line)
    finish(reporter)
