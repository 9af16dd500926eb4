"""Open any input the same way: trace files through :mod:`spanfold.trace.read`, OTLP JSON span files by folding them
on read. Every command that reads traces (``show``, ``validate``, ``convert``, ``check``, ``summary``) and
``spanfold ui`` open files through :func:`read_any`; ``spanfold fold`` folds through :func:`fold_spans`.

An OTLP JSON span file (the Collector file exporter's JSON lines, spanfold's own ``traces.otlp.jsonl``, one OTLP/JSON
request or a list of them, gzip too) is told apart from a trace file by its first bytes (:func:`is_span_file`). Its
spans are read whole (a trace's spans may be spread over any of its lines), folded with un-parented calls stitched as
in-process, and each trace comes out as a :class:`~spanfold.trace.read.Record` at the line its first span was read
from. A line that cannot be read stops the file: ``FILE:LINE: problem``, as ``spanfold fold`` reports it.

This module sits above both floors: the fold lives in ``exporter/``, which ``trace/`` must not import.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from spanfold import config as config_module
from spanfold.exporter.files.writers import MemoryWriter
from spanfold.exporter.otlp.json_in import FileProblem, read_file
from spanfold.exporter.pipeline.assembler import Assembler, Policy, trace_root
from spanfold.exporter.records import SpanRecord
from spanfold.trace.decode import Decoded
from spanfold.trace.model import Trace
from spanfold.trace.read import (
    HEAD_BYTES,
    Opened,
    Problem,
    Progress,
    Record,
    open_input,
    open_problem,
    read_records,
    with_scores,
)

#: The shape of a trace folded from spans (what ``Record.decoded.shape`` says).
SHAPE: Final = "otlp-json"
#: Every limit (``max_*`` option) off: the files are read whole before anything is folded.
UNBOUNDED: Final = {name: sys.maxsize for name in config_module.OPTIONS if name.startswith("max_")}
#: How an OTLP/JSON request starts (a line of JSON lines, a pretty document, a list of requests).
_REQUEST_HEAD: Final = re.compile(rb'\A\s*(?:\[\s*)?\{\s*"(?:resourceSpans|resource_spans)"')
_GZIP_MAGIC: Final = b"\x1f\x8b"
_HEAD_BYTES: Final = HEAD_BYTES


def is_span_file(path: str | os.PathLike[str]) -> bool:
    """Whether the file holds OTLP JSON spans (an export request first, or gzip: no trace file is compressed). An
    :class:`~spanfold.trace.read.Opened` input is told by its first bytes, not read again (a pipe is read once)."""
    if isinstance(path, Opened):
        head = path.head
    else:
        try:
            with open(path, "rb") as handle:
                head = handle.read(_HEAD_BYTES)
        except OSError:
            return False
    return head.startswith(_GZIP_MAGIC) or _REQUEST_HEAD.match(head) is not None


class SpanFileError(Exception):
    """A span file that cannot be read: ``FILE:LINE: problem`` (no line for the file as a whole)."""

    def __init__(self, file: str, line: int | None, problem: str) -> None:
        super().__init__(f"{file}:{line}: {problem}" if line is not None else f"{file}: {problem}")
        self.problem = Problem(file, line, problem)


@dataclass(slots=True)
class FoldedSpans:
    """What :func:`fold_spans` made: the spans read, and each trace with the file and line of its first span."""

    spans: int = 0
    traces: list[tuple[Trace, str, int]] = field(default_factory=list)


def _folder(stitch: bool) -> tuple[Assembler, MemoryWriter]:
    """An assembler that holds every span until it is flushed (the spans are read whole before anything is folded),
    and the writer it hands the traces to."""
    config = config_module.load(dict(UNBOUNDED), environ={})
    folded = MemoryWriter()
    return Assembler([folded], config, Policy(quiet=float("inf"), root=trace_root, stitch=stitch)), folded


def fold_records(records: Iterable[SpanRecord], *, stitch: bool = True) -> list[Trace]:
    """The traces of these spans, folded as :func:`fold_spans` folds a file's (in the order given)."""
    assembler, folded = _folder(stitch)
    for record in records:
        assembler.add(record, 0.0)
    assembler.flush(0.0, final=True)
    return folded.traces


def fold_spans(paths: Sequence[str | os.PathLike[str]], *, stitch: bool = True) -> FoldedSpans:
    """Fold every span of ``paths`` (their traces may be spread over any of them); :class:`SpanFileError` at the
    first thing that cannot be read, or for a file without spans."""
    assembler, folded = _folder(stitch)
    out = FoldedSpans()
    where: dict[int, tuple[str, int]] = {}  # trace id -> the file and line its first span came from
    for path in paths:
        name, before = os.fspath(path), out.spans
        try:
            with contextlib.closing(read_file(path)) as requests:
                for line, decoded in requests:
                    for record in decoded.records:
                        where.setdefault(record.trace_id, (name, line))
                        assembler.add(record, 0.0)
                    out.spans += len(decoded.records)
        except FileProblem as exc:
            raise SpanFileError(name, exc.line, exc.problem) from None
        except OSError as exc:
            raise SpanFileError(name, None, f"cannot read: {exc.strerror or exc}") from None
        if out.spans == before:
            raise SpanFileError(name, None, "no spans in this file")
    assembler.flush(0.0, final=True)
    for trace in folded.traces:
        file, line = where.get(int(trace.meta.trace_id or "0", 16), (os.fspath(paths[0]), 1))
        out.traces.append((trace, file, line))
    out.traces.sort(key=lambda t: (t[1], t[2]))
    return out


def span_records(path: str | os.PathLike[str]) -> Iterator[Record | Problem]:
    """The traces folded from an OTLP JSON span file, as records; or the problem that stopped it."""
    try:
        folded = fold_spans([path])
    except SpanFileError as exc:
        yield exc.problem
        return
    for trace, file, line in folded.traces:
        yield Record(file, line, Decoded(SHAPE, trace, meta=trace.meta))


def read_any(
    path: str | os.PathLike[str], progress: Progress | None = None, *, siblings: bool = True
) -> Iterator[Record | Problem]:
    """Every record of a trace file (:func:`~spanfold.trace.read.read_records`), or of a span file folded. The input
    is opened once (a pipe or a FIFO is read once, front to back)."""
    try:
        opened = open_input(path)
    except OSError as exc:
        yield Problem(os.fspath(path), None, open_problem(exc))
        return
    with opened:
        if is_span_file(opened):
            records = span_records(opened)
            yield from with_scores(records, opened) if siblings else records
        else:
            yield from read_records(opened, progress, siblings=siblings)
