"""``spanfold check TRACES... --spec SPEC.yaml``: run a spec's checks over JSONL traces.

Exit status: 0 when every check passed, 1 when any failed, 2 on bad input (a missing file, a line that is
not JSON or not a trace, an invalid spec), reported one line each as ``FILE:LINE: problem``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import click

from spanfold.checks.errors import SpecError
from spanfold.checks.result import CheckResult
from spanfold.checks.spec import Spec, load_spec
from spanfold.checks.view import TraceView, view_of
from spanfold.commands import where
from spanfold.commands.inputs import BAD_INPUT, FAILED, OK, AtomicOutput, OutputError, Reporter, trace_files
from spanfold.commands.where import WHERE_HELP
from spanfold.exporter.pipeline.span_files import read_any
from spanfold.text import clip, clip_left, plural, visible
from spanfold.trace.read import Problem

#: Widest trace / check column and reason in the table (``--verbose`` prints reasons whole).
COLUMN, REASON = 48, 100


@dataclass(slots=True)
class LoadedTrace:
    file: str
    line: int
    view: TraceView

    @property
    def label(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(slots=True)
class Inputs:
    traces: list[LoadedTrace] = field(default_factory=list)
    errors: list[tuple[str, int | None, str]] = field(default_factory=list)  # file, line, problem

    def error(self, file: str, line: int | None, problem: str) -> None:
        self.errors.append((file, line, problem))


def _read(paths: Sequence[Path], siblings: bool = False) -> Inputs:
    """Every trace in the files (records without events, such as metadata lines, are skipped); ``siblings``: with the
    metadata of their ``.meta.jsonl`` siblings (trace ids)."""
    inputs = Inputs()
    for path in trace_files(paths, lambda file, problem: inputs.error(file, None, problem)):
        for item in read_any(path, siblings=siblings):
            if isinstance(item, Problem):
                inputs.error(item.file, item.line, item.text)
            elif item.trace is not None:
                inputs.traces.append(LoadedTrace(item.file, item.line, view_of(item.trace)))
    return inputs


def _pick(inputs: Inputs, picks: Sequence[int]) -> None:
    """Keep only the traces ``--trace`` names (from 1 across the inputs; negative from the end)."""
    if not picks:
        return
    chosen: list[LoadedTrace] = []
    for n in picks:
        index = n - 1 if n > 0 else len(inputs.traces) + n
        if n == 0 or not 0 <= index < len(inputs.traces):
            inputs.error("--trace", None, f"no trace {n} (the inputs hold {len(inputs.traces)})")
        elif inputs.traces[index] not in chosen:
            chosen.append(inputs.traces[index])
    inputs.traces = chosen


def _table(rows: list[tuple[LoadedTrace, CheckResult]], verbose: bool) -> list[str]:
    if not rows:
        return []
    w_trace = min(COLUMN, max(len("TRACE"), *(len(t.label) for t, _ in rows)))
    w_check = min(COLUMN, max(len("CHECK"), *(len(r.name) for _, r in rows)))
    fmt = f"{{:<{w_trace}}}  {{:<{w_check}}}  {{:>5}}  {{:<6}}  {{}}"
    out = [fmt.format("TRACE", "CHECK", "SCORE", "RESULT", "REASON").rstrip()]
    for trace, result in rows:
        reason = result.first_reason if verbose else clip(result.first_reason, REASON)
        line = fmt.format(
            clip_left(trace.label, w_trace), clip(result.name, w_check), f"{result.score:.2f}", result.status, reason
        )
        out.append(line.rstrip())
        if verbose:
            out.extend(f"{'':{w_trace}}  {'':{w_check}}  {'':5}  {'':6}  {r}" for r in result.reasons[1:])
    return out


def _junit(rows: list[tuple[LoadedTrace, CheckResult]], inputs: Inputs) -> ET.Element:
    root = ET.Element("testsuites", name="spanfold check")
    suites: dict[str, ET.Element] = {}

    def suite(file: str) -> ET.Element:
        if file not in suites:
            suites[file] = ET.SubElement(root, "testsuite", name=file)
        return suites[file]

    for trace, result in rows:
        case = ET.SubElement(suite(trace.file), "testcase", classname=trace.label, name=result.name, time="0")
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="score", value=f"{result.score:.4f}")
        ET.SubElement(props, "property", name="threshold", value=f"{result.threshold:.4f}")
        if not result.passed:
            failure = ET.SubElement(
                case,
                "failure",
                message=result.first_reason or "check failed",
                type=f"score {result.score:.2f} < threshold {result.threshold:.2f}",
            )
            failure.text = "\n".join(result.reasons)
    for file, line, problem in inputs.errors:
        where = file if line is None else f"{file}:{line}"
        case = ET.SubElement(suite(file), "testcase", classname=where, name="input", time="0")
        ET.SubElement(case, "error", message=problem, type="bad input").text = f"{where}: {problem}"
    for element in [root, *suites.values()]:
        cases = element.iter("testcase")
        counts = {"tests": 0, "failures": 0, "errors": 0}
        for case in cases:
            counts["tests"] += 1
            counts["failures"] += case.find("failure") is not None
            counts["errors"] += case.find("error") is not None
        for key, value in counts.items():
            element.set(key, str(value))
    return root


def _send_evaluation_events(rows: list[tuple[LoadedTrace, CheckResult]]) -> str:
    """Send each outcome as an evaluation event (:mod:`spanfold.checks.evaluation`); what happened, in one line."""
    from spanfold.checks import evaluation

    try:
        provider = evaluation.otlp_logger_provider()
    except ImportError:
        return "evaluation events: not sent (install spanfold[otlp])"
    sent = evaluation.record(((trace.view.trace, result) for trace, result in rows), provider)
    provider.shutdown()
    return f"evaluation events: {sent} sent, {len(rows) - sent} without a run to point at (no trace id)"


def _write_junit(path: Path, root: ET.Element) -> None:
    """The report, written whole or not at all (its directory made if missing); :class:`OutputError` if it cannot be."""
    ET.indent(root)
    text = ET.tostring(root, encoding="utf-8", xml_declaration=True).decode("utf-8") + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    with AtomicOutput(path) as out:
        out.write(text)
        out.commit()


@click.command("check")
@click.argument("traces", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--spec",
    "spec_file",
    required=True,
    type=click.Path(path_type=Path),
    help="YAML (or JSON) spec: checks:, evaluators:, expected_messages:, compact output, or an AgentV eval file "
    "(tests:; several tests grade the traces in order, one each).",
)
@click.option(
    "--trace",
    "picks",
    type=int,
    multiple=True,
    metavar="N",
    help="Check only trace N (from 1 across the inputs; -1 is the last). Repeatable.",
)
@click.option("--where", "wheres", multiple=True, metavar="EXPR", help=WHERE_HELP)
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Write JUnit XML here.")
@click.option("-v", "--verbose", is_flag=True, help="Print every reason, whole.")
@click.option(
    "--evaluation-events",
    is_flag=True,
    help="Also send each outcome as a gen_ai.evaluation.result event on the run it checked (OTLP/HTTP logs to "
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT; runs need their trace ids: span files, or "
    "trace files beside their .meta.jsonl).",
)
def command(
    traces: tuple[Path, ...],
    spec_file: Path,
    picks: tuple[int, ...],
    junit: Path | None,
    verbose: bool,
    evaluation_events: bool = False,
    wheres: tuple[str, ...] = (),
) -> None:
    """Run the checks of SPEC on every trace in TRACES (JSONL files, one trace per line, or directories of them),
    or on those --where selects by their scores (spanfold.score) and context.

    Exit status 0 when all pass, 1 when any check fails, 2 on bad input.
    """
    ctx = click.get_current_context()
    try:
        spec: Spec = load_spec(spec_file)
    except SpecError as exc:
        click.echo(visible(str(exc)), err=True)
        ctx.exit(BAD_INPUT)
    selection = where.parse_all(wheres)
    inputs = _read(traces, siblings=evaluation_events or bool(selection))
    _pick(inputs, picks)
    read = len(inputs.traces)
    if selection:  # by the runs' scores and context, from their metadata and the scores sidecar
        inputs.traces = [t for t in inputs.traces if where.matches(selection, t.view.trace.meta)]
        click.echo(f"--where {' and '.join(w.text for w in selection)}: {len(inputs.traces)} of {read} traces")
    if not inputs.traces and not inputs.errors and not (selection and read):
        inputs.error(", ".join(str(t) for t in traces), None, "no traces to check")
    if spec.by_position and inputs.traces and len(inputs.traces) != len(spec.checks):
        inputs.error(
            str(spec_file),
            None,
            f"the eval file has {len(spec.checks)} tests and the inputs {len(inputs.traces)} traces: the N-th trace "
            "is the N-th test's, as agentv eval run --transcript grades them",
        )
        inputs.traces = []
    rows = [(trace, result) for n, trace in enumerate(inputs.traces) for result in spec.run(trace.view, n)]
    for line in _table(rows, verbose):
        click.echo(visible(line))  # reasons quote the trace: model and tool text
    said = Reporter()  # lines that are not JSON past the first few of a file: counted, not each named
    for file, number, problem in inputs.errors:
        said.problem(Problem(file, number, problem))
    said.file_done()
    failed = sum(1 for _, r in rows if not r.passed)
    summary = f"{len(rows) - failed} passed, {failed} failed ({len(spec.checks)} checks x {len(inputs.traces)} traces)"
    if inputs.errors:
        summary += f", {plural(len(inputs.errors), 'input error')}"
    click.echo(summary)
    if evaluation_events:
        click.echo(_send_evaluation_events(rows))
    if junit is not None:
        try:
            _write_junit(junit, _junit(rows, inputs))
        except OutputError as exc:
            click.echo(str(exc), err=True)
            ctx.exit(BAD_INPUT)
    ctx.exit(BAD_INPUT if inputs.errors else FAILED if failed else OK)
