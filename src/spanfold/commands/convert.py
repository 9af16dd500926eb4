"""``spanfold convert --to FORMAT IN [-o OUT]``: rewrite a trace file in another format, streaming.

JSON output is one trace per line (JSONL); YAML output (``--yaml``, or an OUT ending in .yaml/.yml) is one
document per trace. Invariant event lists written to ``OUT.jsonl`` get their metadata in ``OUT.meta.jsonl``.
``--to agentv-transcript`` writes AgentV's transcript rows, one line per message, each run under its own
``test_id`` (``--test-id`` names them: a template with ``{name}``, ``{trace_id}`` and ``{n}``, the run's place
from 1). Output files are written whole or not at all: a bad input line leaves no OUT behind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import yaml

from spanfold.commands.inputs import (
    AtomicOutput,
    OutputError,
    Reporter,
    finish,
    no_traces,
    read_paths,
    same_file,
    trace_files,
)
from spanfold.commands.select import TRACE_HELP, Picker
from spanfold.trace import formats
from spanfold.trace.read import YAML_SUFFIXES, Record, meta_path


def _yaml_doc(value: Any, first: bool) -> str:
    return ("" if first else "---\n") + yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=120)


def _guard_inputs(source: Path, outputs: list[Path]) -> None:
    """Refuse an output that is an input or an input's metadata sibling (it would be replaced while read)."""
    for given in {source, *trace_files([source], lambda file, text: None)}:
        sibling = meta_path(given)
        for out in outputs:
            if same_file(out, given):
                raise OutputError(f"{out}: cannot write: it is the input")
            if sibling is not None and same_file(out, sibling):
                raise OutputError(f"{out}: cannot write: it is the metadata of the input {given}")


class _Output:
    """The main output (stdout or a file) and, for Invariant event lists, the metadata sibling."""

    def __init__(self, out: Path | None, meta: bool, source: Path) -> None:
        self.files: list[AtomicOutput] = []
        self.main: Callable[[str], None] = lambda text: click.echo(text, nl=False)
        self.meta: Callable[[str], None] | None = None
        if out is None:
            return
        meta_path_ = meta_path(out) if meta else None
        _guard_inputs(source, [out] if meta_path_ is None else [out, meta_path_])
        main = AtomicOutput(out)
        self.files.append(main)
        self.main = main.write
        if meta_path_ is not None:
            try:
                sibling = AtomicOutput(meta_path_)
            except OutputError:
                main.discard()  # no temporary file left beside OUT
                raise
            self.files.append(sibling)
            self.meta = sibling.write

    def commit(self) -> None:
        for f in self.files:
            f.commit()

    def discard(self) -> None:
        for f in self.files:
            f.discard()


class _Names:
    """The ``test_id`` of each run written as transcript rows: the template filled in, never one name twice (AgentV
    would merge the two runs into one)."""

    def __init__(self, template: str | None, target: str | None) -> None:
        self.template = template
        self.target = target
        self.seen: dict[str, str] = {}

    def rows(self, record: Record, n: int) -> list[dict[str, Any]]:
        from spanfold.trace.transcript import default_test_id, transcript_rows

        trace = record.trace
        if trace is None:
            raise ValueError("holds a trace summary but no events: no transcript rows can be made of it")
        name = default_test_id(trace, n)
        if self.template is not None:
            name = (
                self.template.replace("{name}", trace.meta.name or "")
                .replace("{trace_id}", trace.meta.trace_id)
                .replace("{n}", str(n))
            )
        if name in self.seen:
            raise ValueError(
                f"test id {name!r} already names the run at {self.seen[name]} (AgentV would merge the two): "
                "give --test-id a template with {n} or {trace_id}"
            )
        self.seen[name] = record.label
        return transcript_rows(trace, test_id=name, target=self.target)


def _encode(record: Record, to: str, style: str, summary_only: bool) -> Any:
    trace = record.trace
    if trace is None:  # a summary-only AgentV record: only summary-only output can carry it
        decoded = record.decoded
        if not (summary_only and decoded.summary is not None):
            raise ValueError("holds a trace summary but no events (use --to agentv --summary-only)")
        meta = decoded.meta.to_dict() if decoded.meta is not None else {}
        return {"trace_summary": decoded.summary.to_dict(), "metadata": meta}
    return formats.to_value(trace, to, style=style, summary_only=summary_only)


def _check_options(to: str, summary_only: bool, style: str | None, names: _Names, as_yaml: bool) -> None:
    if summary_only and to != "agentv":
        raise click.UsageError("--summary-only writes AgentV trace summaries: use it with --to agentv")
    if style is not None and to != "invariant":
        raise click.UsageError("--style applies to --to invariant")
    if (names.template is not None or names.target is not None) and to != "agentv-transcript":
        raise click.UsageError("--test-id and --target name transcript runs: use them with --to agentv-transcript")
    if as_yaml and to == "agentv-transcript":
        raise click.UsageError("AgentV transcript rows are JSON lines: --to agentv-transcript writes no YAML")


@click.command("convert")
@click.argument("source", metavar="IN", type=click.Path(path_type=Path))
@click.option(
    "--to",
    "to",
    required=True,
    type=click.Choice(formats.FORMATS),
    help="Output format (agentv-transcript: AgentV's transcript rows, what `agentv eval run --transcript` grades; "
    "agentv-cli: the JSON a command-line agent hands AgentV: {text, output, token_usage, duration_ms}).",
)
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), help="Output file (default or -: stdout).")
@click.option("--summary-only", is_flag=True, help="AgentV: write only each trace's summary and metadata (privacy).")
@click.option("--yaml", "as_yaml", is_flag=True, help="Write YAML (also chosen by an OUT ending in .yaml/.yml).")
@click.option(
    "--style",
    type=click.Choice(formats.INVARIANT_STYLES),
    default=None,
    help="Invariant lines: bare event lists (default) or {messages, metadata} objects.",
)
@click.option("--trace", "pick", metavar="N|ID", default=None, help=TRACE_HELP)
@click.option(
    "--test-id",
    "test_id",
    metavar="TEMPLATE",
    default=None,
    help="agentv-transcript: each run's test_id; {name}, {trace_id} and {n} (its place, from 1) are filled in "
    "(default: {name}-{trace_id}, the trace id alone for a run without an agent name).",
)
@click.option("--target", default=None, help="agentv-transcript: the rows' target (default: spanfold).")
def command(
    source: Path,
    to: str,
    out: Path | None,
    summary_only: bool,
    as_yaml: bool,
    style: str | None,
    pick: str | None,
    test_id: str | None,
    target: str | None,
) -> None:
    """Convert the traces in IN (any format spanfold reads; a directory: its trace files) to invariant, agentv,
    agentv-transcript, compact or agentv-cli.

    JSON output holds one trace per line, YAML one document per trace; agentv-transcript one line per message,
    each run's rows under its own test_id. Invariant event lists written to OUT.jsonl get their metadata in
    OUT.meta.jsonl. A single compact trace in YAML is a spec for `spanfold check`.

    Exit status 0 on success, 2 on bad input or an unwritable OUT (nothing is written then).
    """
    names = _Names(test_id, target)
    if out is not None and str(out) == "-":
        out = None
    as_yaml = as_yaml or (out is not None and out.suffix.lower() in YAML_SUFFIXES)
    _check_options(to, summary_only, style, names, as_yaml)
    picker = Picker(pick)
    reporter = Reporter()
    try:
        output = _Output(out, meta=to == "invariant" and (style or "list") == "list" and not as_yaml, source=source)
    except OutputError as exc:
        reporter.problem(str(exc))
        finish(reporter)
        return
    written = 0
    keep_dataset = to == "invariant" and not as_yaml

    def dataset_lines(items: Iterator[Record]) -> Iterator[Record]:
        """An Invariant dataset's first ``{"metadata": ...}`` line goes to Invariant output as it was."""
        for record in items:
            if keep_dataset and written == 0 and record.decoded.raw_metadata is not None and not record.is_trace:
                output.main(formats.dumps({"metadata": record.decoded.raw_metadata}) + "\n")
            yield record

    try:
        for record in picker(dataset_lines(read_paths([source], reporter))):
            try:
                if to == "agentv-transcript":
                    rows = names.rows(record, written + 1)
                else:
                    value = _encode(record, to, style or "list", summary_only)
            except ValueError as exc:
                reporter.problem(f"{record.label}: {exc}")
                continue
            if to == "agentv-transcript":
                output.main("".join(formats.dumps(row) + "\n" for row in rows))
            else:
                output.main(_yaml_doc(value, written == 0) if as_yaml else formats.dumps(value) + "\n")
            if output.meta is not None and record.trace is not None:
                output.meta(formats.meta_line(record.trace) + "\n")
            written += 1
        missing = picker.missing(str(source))
        if missing is not None:
            reporter.problem(missing)
        elif written == 0 and not reporter.problems:
            reporter.problem(no_traces(str(source)))
        if reporter.problems:
            output.discard()
        else:
            output.commit()
    except OutputError as exc:
        output.discard()
        reporter.problem(str(exc))
    except BaseException:  # a bug, or ^C: never a partly written output left behind
        output.discard()
        raise
    finish(reporter)
