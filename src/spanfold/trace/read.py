"""Read trace files, streaming: the one reader behind the CLI and the checks.

* ``*.jsonl`` (and any other name): one JSON value per line, read line by line, so memory stays bounded by the
  longest line whatever the file's size. Blank lines are skipped.
* ``*.json``: one JSON document (a pretty per-trace file); a ``.json`` file of several lines of JSON values is
  read as JSONL.
* ``*.yaml`` / ``*.yml``: one trace per YAML document (compact specs).

What a line costs: a line (or a whole ``.json``/YAML document) is at most :func:`max_line_bytes` long (64 MiB
unless ``SPANFOLD_MAX_LINE_BYTES`` or ``spanfold --max-line-bytes`` says otherwise); past it the reader names
``FILE:LINE`` and stops reading that file (an input without newlines, such as a link to ``/dev/zero``, never
ends). Reading one line of N bytes holds the bytes, their text and the parsed value at once: measured on a
20 MB trace line, about 3 N (``summary``, ``validate``) to 6 N (``show --full``, ``convert``). YAML aliases
may add at most :data:`YAML_MAX_EXPANSION` values and characters to a document (a few hundred bytes of nested
aliases otherwise expand to billions of values).

A pipe, a FIFO or a device (``spanfold summary <(zcat traces.jsonl.gz)``) is read once, front to back, with the same
limits: every reader opens its input through :func:`open_input`, whose first bytes (:attr:`Opened.head`) tell what
the input holds without being read a second time, and hands the :class:`Opened` input on.

Each value becomes a :class:`Record` (its line, its shape and the decoded trace) or a :class:`Problem`
(``FILE:LINE: problem``); a bad line never stops the file. The sibling ``<name>.meta.jsonl`` of an Invariant
``<name>.jsonl`` is read in step with it (its N-th record describes the N-th trace) and fills each trace's metadata.
"""

from __future__ import annotations

import io
import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

import yaml

from spanfold.codecs import jsonio
from spanfold.config import parse_size as parse_size  # the CLI's --max-line-bytes reads it from here
from spanfold.trace.decode import Decoded, decode, is_transcript_row
from spanfold.trace.errors import TraceError
from spanfold.trace.model import Trace, TraceMeta
from spanfold.trace.scores import ScoreIndex, run_ids, sidecar_of

META_SUFFIX = ".meta.jsonl"
#: The longest line (or whole JSON/YAML document) read, in bytes, unless SPANFOLD_MAX_LINE_BYTES says otherwise.
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
MAX_LINE_BYTES_ENV = "SPANFOLD_MAX_LINE_BYTES"
#: What YAML aliases may add to a document beyond what is written in it, in values plus characters of text
#: (a billion-laughs guard: each value counts 1, a string 1 more per character).
YAML_MAX_EXPANSION = 1_000_000
YAML_SUFFIXES = (".yaml", ".yml")
#: Called with the number of bytes read so far (progress bars).
Progress = Callable[[int], None]
#: Problems of input no trace (or spec) can be made of: nested past Python's recursion limit, a YAML value in itself.
TOO_DEEP = "nested too deeply"
TOO_LONG_NUMBER = "a number with too many digits"
YAML_CYCLE = "a YAML alias inside the node it names (a value that contains itself)"
YAML_EXPANSION = f"YAML aliases expand this document by more than {YAML_MAX_EXPANSION:,} values and characters"

_max_line_bytes: int | None = None


def set_max_line_bytes(limit: int | None) -> None:
    """The line limit for this process (None: from SPANFOLD_MAX_LINE_BYTES, else the default)."""
    global _max_line_bytes
    _max_line_bytes = limit


def max_line_bytes() -> int:
    """The longest line read, in bytes: :func:`set_max_line_bytes`, else ``SPANFOLD_MAX_LINE_BYTES``, else 64 MiB."""
    if _max_line_bytes is not None:
        return _max_line_bytes
    try:
        return parse_size(os.environ.get(MAX_LINE_BYTES_ENV) or str(DEFAULT_MAX_LINE_BYTES))
    except ValueError:
        return DEFAULT_MAX_LINE_BYTES


def too_long(limit: int, what: str = "line") -> str:
    """The problem of an input past the limit: a line (the rest of its file is not read) or a whole document."""
    raise_it = f"(raise the limit with --max-line-bytes or {MAX_LINE_BYTES_ENV})"
    if what == "line":
        return f"line longer than {limit:,} bytes; the rest of the file is not read {raise_it}"
    return f"{what} larger than {limit:,} bytes {raise_it}"


@dataclass(slots=True)
class Problem:
    """Something wrong with an input: ``FILE:LINE: text`` (no line when it is the whole file)."""

    file: str
    line: int | None
    text: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text}" if self.line is not None else f"{self.file}: {self.text}"


@dataclass(slots=True)
class Value:
    """One JSON value of a file and the line it starts on."""

    file: str
    line: int
    data: Any


@dataclass(slots=True)
class Record:
    """One decoded value: a trace (``trace`` set) or a record without events (metadata, a summary)."""

    file: str
    line: int
    decoded: Decoded

    @property
    def trace(self) -> Trace | None:
        return self.decoded.trace

    @property
    def is_trace(self) -> bool:
        """A trace, or a summary-only trace record (not a metadata line)."""
        return self.decoded.trace is not None or self.decoded.summary is not None

    @property
    def label(self) -> str:
        return f"{self.file}:{self.line}"


def json_problem(exc: json.JSONDecodeError) -> str:
    return f"not valid JSON: {exc.msg} (column {exc.colno})"


def _decode_line(raw: bytes) -> Any:
    """A line's JSON value; ValueError with the problem in words."""
    try:
        text = raw.rstrip(b"\r\n").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8 (byte {exc.start + 1} of the line)") from None
    try:
        return jsonio.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(json_problem(exc)) from None
    except RecursionError:
        raise ValueError(f"not valid JSON: {TOO_DEEP}") from None
    except ValueError:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise ValueError(f"not valid JSON: {TOO_LONG_NUMBER}") from None


#: The first bytes of an input, known before it is read (:attr:`Opened.head`).
HEAD_BYTES = 4096


class _Replay(io.RawIOBase):
    """A stream that can be read only once (a pipe, a FIFO), its first bytes read ahead: those, then the rest."""

    def __init__(self, head: bytes, rest: io.RawIOBase) -> None:
        super().__init__()
        self._head = memoryview(head)
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._rest.readinto(buffer)

    def close(self) -> None:
        self._rest.close()
        super().close()


class Opened:
    """An input opened once, its first bytes (:attr:`head`) known before it is read. A regular file is rewound; a
    pipe, a FIFO or a device is read once, front to back: :attr:`handle` gives its first bytes again, then the rest.
    Stands for its path (``os.fspath``, ``str``), so the readers that take a path take it too and read its handle."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.name = os.fspath(path)
        raw = open(self.name, "rb", buffering=0)  # noqa: SIM115 (closed by close())
        try:
            chunks, size = [], 0
            while size < HEAD_BYTES and (chunk := raw.read(HEAD_BYTES - size)):
                chunks.append(chunk)
                size += len(chunk)
            self.head = b"".join(chunks)
            stream: io.RawIOBase = raw
            if stat.S_ISREG(os.fstat(raw.fileno()).st_mode):
                raw.seek(0)
            else:
                stream = _Replay(self.head, raw)
            #: The input from its first byte, read once.
            self.handle: io.BufferedReader[Any] = io.BufferedReader(stream)
        except BaseException:
            raw.close()
            raise

    def __fspath__(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name

    def close(self) -> None:
        self.handle.close()

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def open_problem(exc: OSError) -> str:
    """Why an input cannot be opened, in words."""
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return "is a directory, not a trace file"
    return f"cannot read: {exc.strerror or exc}"


def open_input(path: str | os.PathLike[str]) -> Opened:
    """``path`` opened once (:class:`Opened`; an :class:`Opened` input is itself); ``OSError`` when it cannot be."""
    return path if isinstance(path, Opened) else Opened(path)


def _open(path: str | os.PathLike[str]) -> Opened:
    """The input, opened for reading; ValueError naming why not."""
    try:
        return open_input(path)
    except OSError as exc:
        raise ValueError(open_problem(exc)) from None


def _lines(handle: BinaryIO, name: str, progress: Progress | None) -> Iterator[Value | Problem]:
    done = number = 0
    limit = max_line_bytes()
    while raw := handle.readline(limit + 1):
        number += 1
        if len(raw) > limit and not (len(raw) == limit + 1 and raw.endswith(b"\n")):
            yield Problem(name, number, too_long(limit))
            return
        done += len(raw)
        if progress is not None:
            progress(done)
        if not raw.strip():
            continue
        try:
            yield Value(name, number, _decode_line(raw))
        except ValueError as exc:
            yield Problem(name, number, str(exc))


def _whole_text(raw: bytes, name: str) -> str | Problem:
    """A whole file's text, or the line of its first byte that is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Problem(name, raw[: exc.start].count(b"\n") + 1, f"not valid UTF-8 (byte {exc.start + 1})")


def _whole(handle: BinaryIO, name: str) -> bytes | Problem:
    """A whole document, at most :func:`max_line_bytes` long."""
    limit = max_line_bytes()
    raw = handle.read(limit + 1)
    return Problem(name, 1, too_long(limit, "document")) if len(raw) > limit else raw


def _whole_json(handle: BinaryIO, name: str, progress: Progress | None) -> Iterator[Value | Problem]:
    raw = _whole(handle, name)
    if isinstance(raw, Problem):
        yield raw
        return
    if progress is not None:
        progress(len(raw))
    text = _whole_text(raw, name)
    if isinstance(text, Problem):
        yield text
        return
    if not text.strip():
        return
    try:
        yield Value(name, 1, jsonio.loads(text))
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # JSONL under a .json name (read whole already: a pipe is read once)
            yield from _lines(io.BytesIO(raw), name, None)
            return
        yield Problem(name, exc.lineno, json_problem(exc))
    except RecursionError:
        yield Problem(name, 1, f"not valid JSON: {TOO_DEEP}")
    except ValueError:
        yield Problem(name, 1, f"not valid JSON: {TOO_LONG_NUMBER}")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def yaml_problem(root: yaml.Node) -> tuple[yaml.Node, str] | None:
    """The one guard on composed YAML before it is built into values (``spanfold`` reads YAML only through it):
    a node that contains itself, or aliases that expand the document past :data:`YAML_MAX_EXPANSION` nodes (a
    billion-laughs document: 600 bytes that build into gigabytes once walked). ``(node, problem)`` or None."""
    cycle = yaml_cycle(root)
    if cycle is not None:
        return cycle, YAML_CYCLE
    distinct = 0  # the weight of the nodes written, each once
    size: dict[int, int] = {}  # node -> its expanded size, each node computed once (post-order, no recursion)
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in size:
            continue
        children = _children(node)
        if not done:
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in size)
            continue
        own = 1 + (len(node.value) if isinstance(node, yaml.ScalarNode) else 0)
        distinct += own
        size[id(node)] = own + sum(size[id(child)] for child in children)
        if size[id(node)] - distinct > YAML_MAX_EXPANSION:
            return node, YAML_EXPANSION
    return None


def reader_error_line(text: str, exc: yaml.reader.ReaderError) -> int:
    """The line (from 1) of the character PyYAML's reader refused (a NUL, a control character)."""
    return text.count("\n", 0, max(0, exc.position)) + 1


def reader_error_problem(exc: yaml.reader.ReaderError) -> str:
    """What PyYAML's reader refused, in a line (``unacceptable character #x0000: ...``)."""
    character = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
    return f"unacceptable character {character}: {exc.reason}"


def yaml_cycle(root: yaml.Node) -> yaml.Node | None:
    """A node that contains itself (``&a [*a]``: no JSON value can hold it), or None. Each node is visited once
    (aliases share nodes), without recursion."""
    inside: dict[int, bool] = {id(root): True}  # True while on the current path, False once done
    stack = [(root, iter(_children(root)))]
    while stack:
        node, children = stack[-1]
        child = next(children, None)
        if child is None:
            inside[id(node)] = False
            stack.pop()
        elif inside.get(id(child)):
            return child
        elif id(child) not in inside:
            inside[id(child)] = True
            stack.append((child, iter(_children(child))))
    return None


def _yaml(handle: BinaryIO, name: str, progress: Progress | None) -> Iterator[Value | Problem]:
    raw = _whole(handle, name)
    if isinstance(raw, Problem):
        yield raw
        return
    if progress is not None:
        progress(len(raw))
    text = _whole_text(raw, name)
    if isinstance(text, Problem):
        yield text
        return
    try:
        loader = yaml.SafeLoader(text)  # checks every character first
    except yaml.reader.ReaderError as exc:
        yield Problem(name, reader_error_line(text, exc), f"not valid YAML: {reader_error_problem(exc)}")
        return
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            found = yaml_problem(node)
            if found is not None:
                yield Problem(name, found[0].start_mark.line + 1, found[1])
            else:
                yield Value(name, node.start_mark.line + 1, loader.construct_document(node))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        yield Problem(name, mark.line + 1 if mark is not None else None, f"not valid YAML: {problem}")
    except RecursionError:
        yield Problem(name, loader.line + 1, f"not valid YAML: {TOO_DEEP}")
    except ValueError:  # an integer of more digits than Python converts
        yield Problem(name, loader.line + 1, f"not valid YAML: {TOO_LONG_NUMBER}")
    finally:
        loader.dispose()


def read_values(path: str | os.PathLike[str], progress: Progress | None = None) -> Iterator[Value | Problem]:
    """Every JSON value in the file at ``path`` (or an :class:`Opened` input), in order, or the problem of each bad
    line (or of the file)."""
    name = os.fspath(path)
    try:
        opened = _open(path)
    except ValueError as exc:
        yield Problem(name, None, str(exc))
        return
    with opened:
        suffix = Path(name).suffix.lower()
        reader = _yaml if suffix in YAML_SUFFIXES else _whole_json if suffix == ".json" else _lines
        try:
            yield from reader(opened.handle, name, progress)
        except OSError as exc:
            yield Problem(name, None, f"cannot read: {exc.strerror or exc}")


def decode_value(value: Value) -> Record | Problem:
    try:
        return Record(value.file, value.line, decode(value.data))
    except TraceError as exc:
        return Problem(value.file, value.line, f"not a trace: {exc}")
    except RecursionError:
        return Problem(value.file, value.line, f"not a trace: {TOO_DEEP}")


def meta_path(path: str | os.PathLike[str]) -> Path | None:
    """Where the metadata of ``traces.jsonl`` goes: ``traces.meta.jsonl`` (None for other names and metadata files)."""
    p = Path(path)
    if p.suffix != ".jsonl" or p.name.endswith(META_SUFFIX):
        return None
    return p.with_name(p.name[: -len(".jsonl")] + META_SUFFIX)


def meta_sibling(path: str | os.PathLike[str]) -> Path | None:
    """``traces.meta.jsonl`` beside ``traces.jsonl``, when it exists (None for a metadata file itself)."""
    sibling = meta_path(path)
    return sibling if sibling is not None and sibling.is_file() else None


class _Sibling:
    """The metadata records of a sibling file, taken one per trace."""

    def __init__(self, path: Path) -> None:
        self.values = read_values(path)

    def next(self) -> TraceMeta | Problem | None:
        for item in self.values:
            if isinstance(item, Problem):
                return item
            data = item.data
            raw = data.get("metadata") if isinstance(data, dict) else None
            if not isinstance(raw, dict):
                return Problem(item.file, item.line, 'not a metadata record ({"metadata": {...}})')
            return TraceMeta.from_dict(raw)
        return None


def runs_of_rows(values: Iterator[Value | Problem]) -> Iterator[Value | Problem]:
    """The values, each run of AgentV transcript rows (consecutive lines of one ``test_id`` and ``target``) as one
    value: the list of its rows, at the line of its first."""
    first: Value | None = None
    rows: list[Any] = []
    for item in values:
        if isinstance(item, Value) and is_transcript_row(item.data):
            if first is not None and (item.data["test_id"], item.data.get("target")) == (
                first.data["test_id"],
                first.data.get("target"),
            ):
                rows.append(item.data)
                continue
            if first is not None:
                yield Value(first.file, first.line, rows)
            first, rows = item, [item.data]
            continue
        if first is not None:
            yield Value(first.file, first.line, rows)
            first, rows = None, []
        yield item
    if first is not None:
        yield Value(first.file, first.line, rows)


def read_records(
    path: str | os.PathLike[str], progress: Progress | None = None, *, siblings: bool = True
) -> Iterator[Record | Problem]:
    """Every record of a trace file, decoded; with ``siblings`` the ``.meta.jsonl`` beside it fills trace metadata
    and the directory's scores sidecar each run's scores (:func:`with_scores`). A run of AgentV transcript rows is
    one record (:func:`runs_of_rows`)."""
    if siblings:
        yield from with_scores(_records(path, progress, meta_sibling(path)), path)
    else:
        yield from _records(path, progress, None)


def _records(
    path: str | os.PathLike[str], progress: Progress | None, sibling_path: Path | None
) -> Iterator[Record | Problem]:
    sibling = _Sibling(sibling_path) if sibling_path is not None else None
    for item in runs_of_rows(read_values(path, progress)):
        if isinstance(item, Problem):
            if sibling is not None and item.line is not None:
                sibling.next()  # the bad line held a trace: its metadata record goes with it
            yield item
            continue
        record = decode_value(item)
        if isinstance(record, Record) and record.trace is not None and sibling is not None:
            meta = sibling.next()
            if isinstance(meta, Problem):
                yield meta
            elif meta is not None and not record.trace.meta.trace_id:
                record.trace.meta = meta
                record.decoded.meta = meta
        yield record


def with_scores(items: Iterator[Record | Problem], path: str | os.PathLike[str]) -> Iterator[Record | Problem]:
    """The records, each run's metadata given its scores (:attr:`TraceMeta.scores`) from the scores sidecar of the
    directory ``path`` is in (:mod:`spanfold.trace.scores`), read again as each record passes: scores another process
    appends while the file is read are seen. Each bad line of the sidecar is a :class:`Problem`, once."""
    index: ScoreIndex | None = None
    for item in items:
        if isinstance(item, Record):
            meta = item.decoded.meta or (item.trace.meta if item.trace is not None else None)
            if meta is not None and meta.trace_id:
                if index is None:
                    index = ScoreIndex(sidecar_of(os.fspath(path)))
                meta.scores = index.of(*run_ids(meta.trace_id, meta.extra))
                if item.trace is not None:
                    item.trace.meta.scores = meta.scores
                for bad in index.take_problems():
                    yield Problem(bad.file, bad.line, bad.text)
        yield item
