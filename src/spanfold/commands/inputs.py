"""What the trace-file commands share: exit statuses, streaming reads with a progress bar, problem reporting
(``FILE:LINE: problem`` on stderr, never a traceback) and output files written whole or not at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Final

import click

from spanfold.exporter.pipeline.span_files import read_any
from spanfold.text import plural, visible
from spanfold.trace.read import META_SUFFIX, Problem, Progress, Record, Value, read_values
from spanfold.trace.scores import SCORES_SUFFIX

#: Exit statuses of every command.
OK: Final = 0
FAILED: Final = 1
BAD_INPUT: Final = 2
#: Inputs at least this big get a progress bar (when stderr is a terminal).
PROGRESS_MIN_BYTES: Final = 32 * 1024 * 1024


#: Lines of one file that are not JSON named one by one; past these they are only counted (a README or a binary
#: file given as a trace file is one short verdict, not an error per line).
NOT_JSON_SHOWN: Final = 5
#: How a line that is not JSON is named (:func:`spanfold.trace.read.json_problem`, the UTF-8 check before it).
_NOT_JSON: Final = ("not valid JSON", "not valid UTF-8")


class Reporter:
    """Prints each problem as one line on stderr and remembers whether there was any. Of the lines of one file that
    are not JSON, the first :data:`NOT_JSON_SHOWN` are printed and the rest counted, said in one line when the file
    is done (:meth:`file_done`, or :func:`finish`)."""

    def __init__(self) -> None:
        self.problems = 0
        self._not_json: dict[str, int] = {}  # file -> lines that are not JSON

    def problem(self, item: Problem | str) -> None:
        self.problems += 1
        if isinstance(item, Problem) and item.line is not None and item.text.startswith(_NOT_JSON):
            seen = self._not_json[item.file] = self._not_json.get(item.file, 0) + 1
            if seen > NOT_JSON_SHOWN:
                return
        click.echo(visible(str(item)), err=True)

    def file_problem(self, file: str, text: str) -> None:
        self.problem(Problem(file, None, text))

    def file_done(self, read: int | None = None) -> None:
        """Say how many lines that are not JSON went unprinted, per file; ``read``: how many values the file held,
        when it was read to its end (fewer than the lines that are not JSON: likely no trace file at all, and the
        line asks)."""
        for file, seen in self._not_json.items():
            if seen > NOT_JSON_SHOWN:
                line = f"{file}: ... and {plural(seen - NOT_JSON_SHOWN, 'more line')} that are not JSON"
                if read is not None and read < seen:
                    line += ": is this a trace file?"
                click.echo(visible(line), err=True)
        self._not_json.clear()


@contextlib.contextmanager
def progress(path: str | os.PathLike[str]) -> Iterator[Progress | None]:
    """A callback for a progress bar on stderr, for big files when stderr is a terminal; else None (a pipe has no
    size)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        size = 0
    if size < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=size, label=Path(os.fspath(path)).name, file=sys.stderr) as bar:

        def advance(done: int) -> None:
            bar.update(done - bar.pos)

        yield advance


#: The trace files of a directory given as an input (its ``*.meta.jsonl`` metadata is read beside them).
TRACE_PATTERNS: Final = ("*.jsonl", "*.json")


#: Files beside the trace files, read with them: their metadata and the directory's scores.
_SIDECARS: Final = (META_SUFFIX, SCORES_SUFFIX)


def _events_file(meta: Path) -> Path:
    return meta.with_name(meta.name[: -len(META_SUFFIX)] + ".jsonl")


def trace_files(paths: Iterable[Path], problem: Callable[[str, str], None], *, metadata: bool = False) -> list[Path]:
    """The files to read for the paths a user gave, the same way for every command: a directory stands for its
    trace files (``*.jsonl``, ``*.json``; not its metadata); a ``NAME.meta.jsonl`` is skipped when ``NAME.jsonl`` is
    read too (a shell glob such as ``traces/*.jsonl`` matches both) and stands for ``NAME.jsonl`` when that exists;
    ``metadata=True`` (``validate``) keeps metadata files given by name; the scores sidecar (``traces.scores.jsonl``,
    read with the trace files beside it) is never a trace file. Each file once, in the order given."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(
                {f for pattern in TRACE_PATTERNS for f in path.glob(pattern) if not f.name.endswith(_SIDECARS)}
            )
            if not found:
                problem(str(path), "no trace files (*.jsonl, *.json) in this directory")
            out.extend(found)
        else:
            out.append(path)
    events = {os.path.abspath(p) for p in out}
    chosen: list[Path] = []
    seen: set[str] = set()
    for path in out:
        if path.name.endswith(SCORES_SUFFIX):
            continue  # the directory's scores, read beside its trace files
        if path.name.endswith(META_SUFFIX) and not metadata:
            partner = _events_file(path)
            if os.path.abspath(partner) in events:
                continue  # read with its events file
            if partner.is_file():
                path = partner
        key = os.path.abspath(path)
        if key not in seen:
            seen.add(key)
            chosen.append(path)
    return chosen


def read_paths(paths: Iterable[Path], reporter: Reporter, *, siblings: bool = True) -> Iterator[Record]:
    """The records of every file the paths stand for (:func:`trace_files`), one file after another."""
    for path in trace_files(paths, reporter.file_problem):
        yield from records(str(path), reporter, siblings=siblings)


def values(path: str | os.PathLike[str], reporter: Reporter) -> Iterator[Value]:
    """The JSON values of a file (or an input :func:`~spanfold.trace.read.open_input` opened); problems go to
    ``reporter``."""
    read = 0
    with progress(path) as advance:
        for item in read_values(path, advance):
            if isinstance(item, Problem):
                reporter.problem(item)
            else:
                read += 1
                yield item
    reporter.file_done(read)


def records(path: str, reporter: Reporter, *, siblings: bool = True) -> Iterator[Record]:
    """The decoded records of a file (metadata from its ``.meta.jsonl`` sibling), or the traces folded from an OTLP
    JSON span file (:mod:`.spanfiles`); problems go to ``reporter``."""
    read = 0
    with progress(path) as advance:
        for item in read_any(path, advance, siblings=siblings):
            if isinstance(item, Problem):
                reporter.problem(item)
            else:
                read += 1
                yield item
    reporter.file_done(read)


#: What ``json.dumps(ensure_ascii=False)`` leaves raw that a terminal acts on: DEL, C1 controls, bidi controls.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def json_line(value: object) -> str:
    """One compact JSON line, readable (non-ASCII kept) and safe on a terminal (control characters escaped)."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False))


def no_traces(path: str) -> str:
    return f"{path}: no traces in this file"


def finish(reporter: Reporter, failed: bool = False) -> None:
    """Exit with the status the run earned (after saying what went uncounted)."""
    reporter.file_done()
    click.get_current_context().exit(BAD_INPUT if reporter.problems else FAILED if failed else OK)


class OutputError(Exception):
    """An output path that cannot be written (the message is the one-line problem)."""


def not_replaceable(path: Path) -> str | None:
    """Why an output must not replace what is at ``path`` (None for a regular file or nothing)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISLNK(mode):
        return "is a symbolic link (give the file it points to)"
    return "not a regular file (a device, a pipe or a socket)"


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (the same inode when both exist, else the same absolute path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


class AtomicOutput:
    """A text file written through a temporary file beside it and renamed into place only by :meth:`commit`.

    Opening fails at once (:class:`OutputError`) when the path cannot be written, before any input is read;
    closing without a commit removes the temporary file, so a failed run leaves nothing behind. Only a regular file
    (or a new path) is replaced: the rename would turn a device node, a pipe or a symbolic link into a regular file
    (as root, ``-o /dev/null`` would replace ``/dev/null``), so those are refused.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        refused = not_replaceable(path)
        if refused is not None:
            raise OutputError(f"{path}: cannot write: {refused}")
        try:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        except OSError as exc:
            raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
        self.tmp = Path(tmp)
        self.handle: IO[str] = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        self.committed = False

    def write(self, text: str) -> None:
        try:
            self.handle.write(text)
        except OSError as exc:
            raise OutputError(f"{self.path}: cannot write: {exc.strerror or exc}") from None

    def commit(self) -> None:
        try:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.handle.close()
            os.replace(self.tmp, self.path)
        except OSError as exc:
            self.discard()
            raise OutputError(f"{self.path}: cannot write: {exc.strerror or exc}") from None
        self.committed = True

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.handle.close()
        self.tmp.unlink(missing_ok=True)

    def __enter__(self) -> AtomicOutput:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if not self.committed:
            self.discard()
