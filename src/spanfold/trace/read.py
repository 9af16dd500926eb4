"""Read trace files, streaming: the one reader behind the CLI and the checks.

* ``*.jsonl`` (and any other name): one JSON value per line, read line by line, so memory stays bounded by the
  longest line whatever the file's size. Blank lines are skipped.
* ``*.json``: one JSON document (a pretty per-trace file); a ``.json`` file of several lines of JSON values is
  read as JSONL.
* ``*.yaml`` / ``*.yml``: one trace per YAML document (compact specs).

Each value becomes a :class:`Record` (its line, its shape and the decoded trace) or a :class:`Problem`
(``FILE:LINE: problem``); a bad line never stops the file. The sibling ``<name>.meta.jsonl`` of an Invariant
``<name>.jsonl`` is read in step with it (its N-th record describes the N-th trace) and fills each trace's metadata.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from spanfold.trace.decode import Decoded, decode
from spanfold.trace.errors import TraceError
from spanfold.trace.model import Trace, TraceMeta

META_SUFFIX = ".meta.jsonl"
YAML_SUFFIXES = (".yaml", ".yml")
#: Called with the number of bytes read so far (progress bars).
Progress = Callable[[int], None]
#: Problems of input no trace (or spec) can be made of: nested past Python's recursion limit, a YAML value in itself.
TOO_DEEP = "nested too deeply"
YAML_CYCLE = "a YAML alias inside the node it names (a value that contains itself)"


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
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(json_problem(exc)) from None
    except RecursionError:
        raise ValueError(f"not valid JSON: {TOO_DEEP}") from None


def _open(path: Path) -> BinaryIO:
    """The file, opened for reading; ValueError naming why not."""
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise ValueError("no such file") from None
    except IsADirectoryError:
        raise ValueError("is a directory, not a trace file") from None
    except OSError as exc:
        raise ValueError(f"cannot read: {exc.strerror or exc}") from None


def _lines(handle: BinaryIO, name: str, progress: Progress | None) -> Iterator[Value | Problem]:
    done = 0
    for number, raw in enumerate(handle, start=1):
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


def _whole_json(handle: BinaryIO, name: str, progress: Progress | None) -> Iterator[Value | Problem]:
    raw = handle.read()
    if progress is not None:
        progress(len(raw))
    text = _whole_text(raw, name)
    if isinstance(text, Problem):
        yield text
        return
    if not text.strip():
        return
    try:
        yield Value(name, 1, json.loads(text))
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # JSONL under a .json name
            handle.seek(0)
            yield from _lines(handle, name, None)
            return
        yield Problem(name, exc.lineno, json_problem(exc))
    except RecursionError:
        yield Problem(name, 1, f"not valid JSON: {TOO_DEEP}")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


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
    raw = handle.read()
    if progress is not None:
        progress(len(raw))
    text = _whole_text(raw, name)
    if isinstance(text, Problem):
        yield text
        return
    loader = yaml.SafeLoader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            cycle = yaml_cycle(node)
            if cycle is not None:
                yield Problem(name, cycle.start_mark.line + 1, YAML_CYCLE)
            else:
                yield Value(name, node.start_mark.line + 1, loader.construct_document(node))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        yield Problem(name, mark.line + 1 if mark is not None else None, f"not valid YAML: {problem}")
    except RecursionError:
        yield Problem(name, loader.line + 1, f"not valid YAML: {TOO_DEEP}")
    finally:
        loader.dispose()


def read_values(path: str | os.PathLike[str], progress: Progress | None = None) -> Iterator[Value | Problem]:
    """Every JSON value in the file at ``path``, in order, or the problem of each bad line (or of the file)."""
    p = Path(path)
    name = str(path)
    try:
        handle = _open(p)
    except ValueError as exc:
        yield Problem(name, None, str(exc))
        return
    with handle:
        suffix = p.suffix.lower()
        reader = _yaml if suffix in YAML_SUFFIXES else _whole_json if suffix == ".json" else _lines
        try:
            yield from reader(handle, name, progress)
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


def read_records(
    path: str | os.PathLike[str], progress: Progress | None = None, *, siblings: bool = True
) -> Iterator[Record | Problem]:
    """Every record of a trace file, decoded; with ``siblings`` the ``.meta.jsonl`` beside it fills trace metadata."""
    sibling_path = meta_sibling(path) if siblings else None
    sibling = _Sibling(sibling_path) if sibling_path is not None else None
    for item in read_values(path, progress):
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
