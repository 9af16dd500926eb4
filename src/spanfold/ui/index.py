"""The index behind ``spanfold ui``: one row per trace and where its bytes are, kept up to date by reading only
what was appended since the last look.

A JSONL file (``*.jsonl``) is indexed line by line: each trace is ``(offset, length)`` into the file plus a small
summary row, so opening a run reads one line and the list never holds a trace's content. Only complete lines are
indexed; a partial last line (a writer mid-append) is picked up on a later refresh. A file that shrank or was
replaced is indexed again from the start. A whole-document file (``*.json``, YAML) is one or a few traces, read
again when its size or time changes. The ``NAME.meta.jsonl`` sibling of ``NAME.jsonl`` is indexed the same way;
its N-th record fills the N-th trace's metadata.

An OTLP JSON span file (``traces.otlp.jsonl``, a Collector file exporter's output) is folded as every command folds
it (:func:`spanfold.exporter.pipeline.span_files.fold_spans`), then at each look only its appended lines are read and
only
the
traces they touch folded again (:mod:`spanfold.ui.watched_spans`); its folded traces are held in memory.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spanfold import counters
from spanfold.codecs import jsonio
from spanfold.exporter.pipeline.span_files import SHAPE, is_span_file
from spanfold.trace.decode import Decoded, decode, is_transcript_row
from spanfold.trace.errors import TraceError
from spanfold.trace.model import Message, ToolCall, Trace, TraceMeta, TraceSummary
from spanfold.trace.read import (
    META_SUFFIX,
    Problem,
    max_line_bytes,
    meta_path,
    read_values,
)
from spanfold.trace.scores import SCORES_FILE, SCORES_SUFFIX, ScoreIndex, latest, run_ids
from spanfold.ui.steps import trace_cost
from spanfold.ui.watched_spans import Run, SpanFile, runs_in_order

#: Characters of the first user message kept in a row (what the text filter also searches).
PREVIEW_CHARS = 160
#: Bytes read per refresh step of one file (bounds the time the lock is held and the memory of one read).
CHUNK = 4 * 1024 * 1024
#: ``Row.offset`` of a trace folded from a span file (held in memory, not read from the file again).
FOLDED = -2
#: The names of the files a directory's traces are read from.
SUFFIXES = (".jsonl", ".json", ".yaml", ".yml")


@dataclass(slots=True)
class Row:
    """One trace in the list: where it is and what the list shows."""

    id: str
    file: str
    line: int
    offset: int  # -1: a whole-document file (read again with read_values)
    length: int
    seq: int
    shape: str
    summary: TraceSummary
    meta: TraceMeta
    #: The steps its events show (model calls: assistant messages; tool runs: tool outputs), for a run whose
    #: metadata does not list its steps (:attr:`step_count` prefers the metadata's)
    steps: int
    preview: str
    own_meta: bool  # the metadata came from the trace itself, not from a sibling
    slot: int = -1  # which record of the metadata sibling describes it (-1: none)
    #: The question the run was asked (its last user message: a later turn's own question, where :attr:`preview` is
    #: the conversation's first), and its answer (its last assistant message with text); both cut to
    #: :data:`PREVIEW_CHARS`.
    question: str = ""
    answer: str = ""
    #: The run's scores given after it ended (``spanfold.score``: the latest of each name), from the sidecar beside
    #: its file, kept up to date by :meth:`Index.refresh`.
    scores: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """How the run ended, as its metadata says; ``unknown`` for a record without metadata (no trace id, start
        or spans): nothing says it ended normally."""
        meta = self.meta
        return meta.status if meta.trace_id or meta.start or meta.span_count else "unknown"

    @property
    def step_count(self) -> int:
        """The run's steps, as its metadata counts them (its ``steps``: model calls and tool runs), the one count
        every view shows; from its events (:attr:`steps`) when its metadata does not list them."""
        taken = self.meta.steps_taken
        return self.steps if taken is None else taken

    def tokens(self) -> tuple[int, int] | None:
        """(in, out) tokens of the model calls that reported them; None when unknown: no model call reported any,
        or nothing says (a record without metadata that records no tokens)."""
        meta = self.meta
        usage = meta.usage
        if not meta.usage_known:
            return None
        if not (usage.input_tokens or usage.output_tokens) and self.status == "unknown":
            return None
        return usage.input_tokens, usage.output_tokens

    def to_json(self, run_id: str | None = None) -> dict[str, Any]:
        """The row as the list shows it; ``run_id``: its permalink (its place in its file by default). Tokens not
        known are None (shown as such, never as 0); ``tokens_unreported``: the model calls that reported none."""
        meta = self.meta
        tokens = self.tokens()
        return {
            "id": run_id or self.id,
            "file": self.file,
            "line": self.line,
            "shape": self.shape,
            "trace_id": meta.trace_id or None,
            "name": meta.name,
            "service": meta.service,
            "models": meta.models,
            **({"providers": providers} if (providers := meta.providers) else {}),
            "start": meta.start,
            "duration_ms": meta.duration_ms,
            "status": self.status,
            "error": meta.error,
            "tokens_in": tokens[0] if tokens is not None else None,
            "tokens_out": tokens[1] if tokens is not None else None,
            "tokens_unreported": meta.unreported_steps,
            "cost": trace_cost(meta.extra),
            "steps": self.step_count,
            "calls": sum(self.summary.tool_calls_by_name.values()),
            "tools": self.summary.tool_calls_by_name,
            "errors": self.summary.error_count,
            "events": self.summary.event_count,
            "preview": self.preview,
            "question": self.question,
            "answer": self.answer,
            **context_json(meta.extra),
            **({"scores": self.scores} if self.scores else {}),
        }

    def haystack(self) -> str:
        meta = self.meta
        parts = [self.file, meta.trace_id, meta.name or "", meta.service or "", " ".join(meta.models), self.preview]
        parts.extend(self.summary.tool_calls_by_name)
        return "\n".join(parts).lower()


def context_json(extra: dict[str, Any]) -> dict[str, Any]:
    """Who a run is for and what it belongs to, as its metadata states it (``spanfold.context``: ``user_id``,
    ``session_id``, ``tags``, ``prompt``), each present only when stated."""
    if not extra:
        return {}
    out: dict[str, Any] = {}
    for key in ("user_id", "session_id"):
        value = extra.get(key)
        if isinstance(value, str) and value:
            out[key] = value
    tags = tags_of(extra)
    if tags:
        out["tags"] = tags
    prompt = prompt_of(extra)
    if prompt is not None:
        out["prompt"] = prompt
    return out


def tags_of(extra: dict[str, Any]) -> list[str]:
    """The run's tags (its metadata's ``tags``: a list of text)."""
    tags = extra.get("tags") if extra else None
    return [t for t in tags if isinstance(t, str) and t] if isinstance(tags, list) else []


def prompt_of(extra: dict[str, Any]) -> str | None:
    """The run's prompt as ``NAME@VERSION`` (``NAME`` when its metadata's ``prompt`` names no version), None when
    it names none."""
    prompt = extra.get("prompt") if extra else None
    if not isinstance(prompt, dict) or not isinstance(prompt.get("name"), str) or not prompt["name"]:
        return None
    version = prompt.get("version")
    if version is None or isinstance(version, bool) or not isinstance(version, (str, int)):
        return str(prompt["name"])
    return f"{prompt['name']}@{version}"


def _preview(trace: Trace | None) -> tuple[str, str, str]:
    """A run's first question (the conversation's first user message), the question the run itself was asked (its
    last user message: in a later turn of a conversation, that turn's own), and its answer (the last assistant message
    with text), each cut to :data:`PREVIEW_CHARS`."""
    if trace is None:
        return "", "", ""
    events = trace.events
    first = asked = -1
    for n, ev in enumerate(events):
        if ev.role == "user":
            if first < 0:
                first = n
            asked = n
    preview = events[first].text()[:PREVIEW_CHARS] if first >= 0 else ""
    question = preview if asked == first else events[asked].text()[:PREVIEW_CHARS]
    answer = ""
    for ev in reversed(events):
        if ev.role == "assistant" and ev.content:
            answer = ev.text()[:PREVIEW_CHARS]
            if answer:
                break
    return preview, question, answer


def _listed(value: Any) -> Decoded | None:
    """A bare Invariant event list read for the list: each event's role, content, error and tool call names, into
    the trace model (its summary, steps and preview are then every row's), without what only the run's page reads
    (arguments, ids, times, extra keys: most of a big file's index time when decoded whole). None when ``value`` is
    anything else or holds an event the full decoder should judge: it reads the value then."""
    if not isinstance(value, list) or (value and is_transcript_row(value[0])):
        return None
    events: list[Message] = []
    for ev in value:
        event = _listed_event(ev)
        if event is None:
            return None
        events.append(event)
    meta = TraceMeta(trace_id="")
    return Decoded("invariant", Trace(events, meta), meta=meta)


def _listed_event(ev: Any) -> Message | None:
    """One event of :func:`_listed` (None: one the decoder would reject, or of another shape)."""
    if not isinstance(ev, dict):
        return None
    role, content, error, calls = ev.get("role"), ev.get("content"), ev.get("error"), ev.get("tool_calls")
    if not isinstance(role, str) or not (error is None or isinstance(error, dict)):
        return None
    if not (content is None or isinstance(content, str) or _chunks(content)):
        return None
    listed = _listed_calls(calls) if calls is not None else []
    return None if listed is None else Message(role, content, listed, None, None, error)


def _chunks(content: Any) -> bool:
    """Whether content is a list of chunks with a type (as the decoder takes it)."""
    return isinstance(content, list) and all(isinstance(c, dict) and isinstance(c.get("type"), str) for c in content)


def _listed_calls(calls: Any) -> list[ToolCall] | None:
    """The tool calls by name (interned: the same few names in every row, held once); None when one is not an
    Invariant call (a compact one has ``tool``: the decoder tells the shapes apart)."""
    if not isinstance(calls, list):
        return None
    out: list[ToolCall] = []
    for call in calls:
        fn = call.get("function", call) if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or "tool" in fn:
            return None
        out.append(ToolCall(None, sys.intern(fn["name"])))
    return out


def _shared(meta: TraceMeta) -> TraceMeta:
    """The metadata with its repeated strings (agent, service, models, providers) held once across rows."""
    meta.name = sys.intern(meta.name) if meta.name is not None else None
    meta.service = sys.intern(meta.service) if meta.service is not None else None
    meta.models = [sys.intern(m) for m in meta.models]
    if "providers" in meta.extra:  # only a list of text, interned
        meta.extra["providers"] = [sys.intern(p) for p in meta.providers]
    return meta


def _steps(trace: Trace | None) -> int:
    """The steps a trace's events show: its model calls' answers and its tool runs' outputs (what its metadata would
    list as steps; used where there is none)."""
    return 0 if trace is None else sum(1 for ev in trace.events if ev.role in ("assistant", "tool"))


@dataclass(slots=True)
class _Lines:
    """A JSONL file read incrementally: how far it was read, and what identifies it."""

    path: Path
    done: int = 0
    line: int = 0
    inode: int = -1
    pending: bool = False  # more bytes than one step reads were there at the last look

    def appended(self) -> list[tuple[int, int, int, bytes]] | None:
        """``(line, offset, length, bytes)`` of each complete line appended since the last call; None when the
        file was replaced or shrank (read it again from the start)."""
        try:
            st = self.path.stat()
        except OSError:
            return []
        if (self.inode != -1 and st.st_ino != self.inode) or st.st_size < self.done:
            return None
        self.inode = st.st_ino
        self.pending = False
        if st.st_size == self.done:
            return []
        out: list[tuple[int, int, int, bytes]] = []
        limit = max_line_bytes()
        with self.path.open("rb") as handle:
            handle.seek(self.done)
            budget = CHUNK
            while True:
                if budget <= 0:
                    self.pending = True
                    break
                start = handle.tell()
                raw = handle.readline(limit + 1)
                if not raw.endswith(b"\n"):
                    if len(raw) > limit:  # past the line limit: skip to the next newline
                        while raw and not raw.endswith(b"\n"):
                            raw = handle.readline(CHUNK)
                        if raw:
                            self.line += 1
                            self.done = handle.tell()
                            continue
                    break  # a partial last line: wait for the rest
                self.line += 1
                self.done = handle.tell()
                budget -= len(raw)
                if len(raw) > limit:
                    continue
                out.append((self.line, start, len(raw), raw))
        return out


def _decoded(data: Any) -> Decoded | None:
    """The decoded value, or None for a problem (not a trace; JSON that could not be read: None)."""
    if data is None:
        return None
    try:
        return decode(data)
    except (TraceError, RecursionError):
        return None
    except Exception as exc:  # a decoder's fault: that line's problem, never the end of the index
        counters.fault("ui.decode", exc)
        return None


def _json(raw: bytes) -> Any:
    """A line's JSON value (parsed as every reader parses it: :func:`spanfold.codecs.jsonio.loads`); None when it is
    not JSON."""
    try:
        return jsonio.loads(raw)
    except (ValueError, RecursionError):
        return None


@dataclass(slots=True)
class _File:
    label: str  # the file's name in its rows' ids (its base name; ``NAME~2`` when another file has that name)
    path: Path
    name: str  # str(path), shared by its rows
    lines: _Lines | None  # None: a whole-document file
    meta: _Lines | None = None
    metas: list[TraceMeta] = field(default_factory=list)  # without their steps (read again when a run is opened)
    meta_at: array[int] = field(default_factory=lambda: array("q"))  # where each record is in the sibling
    rows: list[Row] = field(default_factory=list)
    stamp: tuple[int, int] = (-1, -1)
    problems: int = 0
    attached: tuple[int, int] = (0, 0)  # (rows, metadata records) when the sibling was last matched
    slots: int = 0  # trace lines (and bad lines) seen: the sibling's records go with them in order
    spans: bool = False  # an OTLP JSON span file: folded on read, its traces in ``folded``
    folded: dict[str, Trace] = field(default_factory=dict)  # row id -> the trace
    span_file: SpanFile | None = None
    run_ids: dict[int, str] = field(default_factory=dict)  # a span file's run (by key) -> its row id


#: The files beside a trace file that hold no runs of their own: its metadata, its scores.
SIDECARS = (META_SUFFIX, SCORES_SUFFIX)


class Index:
    """Every trace under the paths given, as :class:`Row`s; :meth:`refresh` reads what changed."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.paths = [Path(p) for p in paths]
        self.files: dict[str, _File] = {}
        self.order: list[_File] = []
        self.lock = threading.Lock()
        self.generation = 0
        self.seq = 0
        self.rows: dict[str, Row] = {}
        #: Whether the last :meth:`refresh` stopped with bytes still to read (the caller refreshes again at once).
        self.behind = False
        #: What could not be read at the last :meth:`refresh` (path -> why): skipped, counted in :meth:`problems`.
        self.unreadable: dict[str, str] = {}
        #: Each directory's scores sidecar, read as it grows.
        self.scores: dict[Path, ScoreIndex] = {}

    # -- discovery -----------------------------------------------------------------------------------------------
    def _discover(self, unreadable: dict[str, str]) -> list[Path]:
        """The trace files under the paths; what cannot be listed, and a directory named like a trace file, go to
        ``unreadable``."""
        found: list[Path] = []
        for path in self.paths:
            try:
                if not path.is_dir():
                    if path.is_file():
                        found.append(path)
                    continue
                for f in sorted(path.iterdir()):
                    if f.suffix in SUFFIXES and not f.name.endswith(SIDECARS) and not f.name.startswith("."):
                        if f.is_dir():
                            unreadable[os.path.abspath(f)] = "is a directory"
                        else:
                            found.append(f)
            except OSError as exc:
                unreadable[os.path.abspath(path)] = exc.strerror or str(exc)
        return found

    def refresh(self) -> bool:
        """Read what was appended to every file (and index new files); True when a row was added or changed. An
        entry that cannot be read (another user's file, a directory named like a trace file) or whose reading fails
        is skipped and counted (:attr:`unreadable`): the others are read all the same."""
        changed = False
        self.behind = False
        unreadable: dict[str, str] = {}
        found = self._discover(unreadable)
        for path in found:
            key = os.path.abspath(path)
            try:
                changed |= self._refresh_path(key, path)
            except OSError as exc:
                unreadable[key] = exc.strerror or str(exc)
            except Exception as exc:  # spanfold's fault: this file's problem, never the end of the index
                counters.fault("ui.index", exc)
                unreadable[key] = f"cannot be indexed ({type(exc).__name__})"
        changed |= self._forget_deleted({os.path.abspath(path) for path in found})
        changed |= self._refresh_scores()
        self.unreadable = unreadable
        if changed:
            with self.lock:
                self.generation += 1
        return changed

    def _refresh_scores(self) -> bool:
        """Read the scores appended to each directory's sidecar since the last look (by any process) and give each
        run of that directory its own; True when a run's scores changed. A directory with no scores costs one
        ``stat``."""
        changed = False
        for directory, entries in self._by_directory().items():
            index = self.scores.get(directory)
            if index is None:
                index = self.scores[directory] = ScoreIndex(directory / SCORES_FILE)
            try:
                index.refresh()
            except Exception as exc:  # spanfold's fault: the scores, never the index
                counters.fault("ui.scores", exc)
                continue
            index.take_problems()  # a bad score line is `spanfold summary`'s to report; the ui shows the others
            if not index.by_trace:
                continue
            for entry in entries:
                for row in entry.rows:
                    ids = run_ids(row.meta.trace_id, row.meta.extra)
                    found = [score for t in ids if t for score in index.by_trace.get(t, ())]
                    scores = {name: score.value for name, score in latest(found).items()} if found else {}
                    if scores != row.scores:
                        row.scores = scores
                        changed = True
        return changed

    def _by_directory(self) -> dict[Path, list[_File]]:
        out: dict[Path, list[_File]] = {}
        for entry in self.order:
            out.setdefault(entry.path.parent, []).append(entry)
        return out

    def _forget_deleted(self, found: set[str]) -> bool:
        """Drop the runs of files that are gone (a rotated trace file deleted past ``keep_files`` / ``keep_days``)."""
        gone = [key for key in self.files if key not in found and _deleted(key)]
        for key in gone:
            entry = self.files.pop(key)
            self._clear(entry)
            with self.lock:
                self.order.remove(entry)
        return bool(gone)

    def _refresh_path(self, key: str, path: Path) -> bool:
        entry = self.files.get(key)
        if entry is None:
            if _empty(path):  # told apart by its first bytes: a trace file or a span file
                return False
            with path.open("rb"):  # readable at all (else it is told apart at a later look, once it is)
                pass
            spans = is_span_file(path)
            lines = _Lines(path) if path.suffix == ".jsonl" and not spans else None
            entry = _File(self._label(path), path, str(path), lines, spans=spans)
            sibling = meta_path(path) if not spans else None
            if sibling is not None:
                entry.meta = _Lines(sibling)
            self.files[key] = entry
            self.order.append(entry)
        changed = self._refresh_file(entry)
        pending = [part.pending for part in (entry.lines, entry.meta, entry.span_file) if part is not None]
        if any(pending):
            self.behind = True
        return changed

    def _add(self, entry: _File, row: Row) -> None:
        with self.lock:
            entry.rows.append(row)
            self.rows[row.id] = row

    def _clear(self, entry: _File) -> None:
        with self.lock:
            for row in entry.rows:
                self.rows.pop(row.id, None)
            entry.rows = []
            entry.folded = {}
            entry.run_ids = {}
            entry.span_file = None
            entry.metas = []
            entry.meta_at = array("q")
            entry.problems = 0
            entry.slots = 0
            entry.attached = (0, 0)

    def _row(self, entry: _File, line: int, offset: int, length: int, decoded: Decoded) -> Row:
        self.seq += 1
        trace = decoded.trace
        summary = trace.summary() if trace is not None else decoded.summary or TraceSummary(0, [], {}, 0)
        meta = decoded.meta or TraceMeta(trace_id="")
        preview, question, answer = _preview(trace)
        if meta.steps:  # a row holds no steps (read again with the run): the list stays small, their count kept
            meta = replace(meta, steps=[], step_count=meta.steps_taken)
        return Row(
            id=f"{entry.label}:{line}",
            file=entry.name,
            line=line,
            offset=offset,
            length=length,
            seq=self.seq,
            shape=decoded.shape,
            summary=summary,
            meta=meta,
            steps=_steps(trace),
            preview=preview,
            own_meta=bool(meta.trace_id),
            question=question,
            answer=answer,
        )

    def _refresh_file(self, entry: _File) -> bool:
        if entry.spans:
            return self._refresh_spans(entry)
        if entry.lines is None:
            return self._refresh_document(entry)
        changed = False
        if entry.meta is not None:
            meta_lines = entry.meta.appended()
            if meta_lines is None:
                entry.meta = _Lines(entry.meta.path)
                entry.metas = []
                entry.meta_at = array("q")
                meta_lines = entry.meta.appended() or []
            for _, offset, _, raw in meta_lines:
                data = _json(raw)
                got = data.get("metadata") if isinstance(data, dict) else None
                entry.metas.append(
                    _shared(TraceMeta.from_dict(got, steps=False)) if isinstance(got, dict) else TraceMeta(trace_id="")
                )
                entry.meta_at.append(offset)
            changed |= self._attach_metas(entry)
        appended = entry.lines.appended()
        if appended is None:
            self._clear(entry)
            entry.lines = _Lines(entry.path)
            if entry.meta is not None:
                entry.meta = _Lines(entry.meta.path)
            return self._refresh_file(entry) or True
        for line, offset, length, raw in appended:
            data = _json(raw)
            decoded = _listed(data) or _decoded(data)
            if decoded is None:
                entry.problems += 1
                entry.slots += 1
                continue
            if decoded.trace is None and decoded.summary is None:
                continue
            row = self._row(entry, line, offset, length, decoded)
            if decoded.trace is not None:
                row.slot = entry.slots
                entry.slots += 1
            self._add(entry, row)
            changed = True
        changed |= self._attach_metas(entry)
        return changed

    def _attach_metas(self, entry: _File) -> bool:
        changed = False
        now = (len(entry.rows), len(entry.metas))
        if now == entry.attached:
            return False
        entry.attached = now
        with self.lock:
            for row in entry.rows:
                if row.own_meta or not 0 <= row.slot < len(entry.metas) or row.meta is entry.metas[row.slot]:
                    continue
                row.meta = entry.metas[row.slot]
                changed = True
        return changed

    def _refresh_document(self, entry: _File) -> bool:
        try:
            st = entry.path.stat()
        except OSError:
            return False
        stamp = (st.st_size, st.st_mtime_ns)
        if stamp == entry.stamp:
            return False
        entry.stamp = stamp
        self._clear(entry)
        for item in read_values(entry.path):
            if isinstance(item, Problem):
                entry.problems += 1
                continue
            decoded = _decoded(item.data)
            if decoded is None:
                entry.problems += 1
                continue
            if decoded.trace is None and decoded.summary is None:
                continue
            self._add(entry, self._row(entry, item.line, -1, 0, decoded))
        return True

    def _refresh_spans(self, entry: _File) -> bool:
        """Fold what changed in a span file (:mod:`spanfold.ui.watched_spans`: only the traces its new lines touched);
        its runs are replaced in one step, so a look at the list never finds fewer of them meanwhile."""
        if entry.span_file is None:
            entry.span_file = SpanFile(entry.path)
        update = entry.span_file.refresh()
        if update is None:
            return False
        if update.whole:
            entry.problems = 0
        entry.problems += update.problems
        added = [
            (run, self._row(entry, run.line, FOLDED, 0, Decoded(SHAPE, run.trace, meta=run.trace.meta)))
            for run in runs_in_order(update.added)
        ]
        with self.lock:
            earlier: dict[int, str] = {}  # a run folded again keeps its id (its permalink)
            for key in update.dropped:
                row_id = entry.run_ids.pop(key, None)
                if row_id is not None:
                    earlier[key] = row_id
                    self.rows.pop(row_id, None)
                    entry.folded.pop(row_id, None)
            for run, row in added:
                row.id = earlier.get(run.key) or self._run_id(entry, run)
                entry.run_ids[run.key] = row.id
                entry.folded[row.id] = run.trace
                self.rows[row.id] = row
            entry.rows = [self.rows[row_id] for row_id in entry.run_ids.values()]
        return bool(update.dropped or update.added)

    @staticmethod
    def _run_id(entry: _File, run: Run) -> str:
        """A new run's row id: ``FILE:LINE`` (``.N`` after it when several traces start on one line, as in a
        Collector batch)."""
        row_id, n = f"{entry.label}:{run.line}", 0
        while row_id in entry.folded:
            n += 1
            row_id = f"{entry.label}:{run.line}.{n}"
        return row_id

    def _label(self, path: Path) -> str:
        """A name for a new file's row ids: its base name, unless a file indexed now has it (then ``NAME~N``)."""
        taken = {entry.label for entry in self.order}
        label, n = path.name, 1
        while label in taken:
            n += 1
            label = f"{path.name}~{n}"
        return label

    # -- reading -------------------------------------------------------------------------------------------------
    def snapshot(self) -> tuple[int, list[Row]]:
        with self.lock:
            return self.generation, list(self.rows.values())

    def problems(self) -> int:
        """Lines that are no trace, and entries that cannot be read."""
        return sum(f.problems for f in self.order) + len(self.unreadable)

    def raw(self, row: Row) -> Any:
        """The JSON value the row was read from (one line, or the document; the folded events of a span file)."""
        if row.offset == FOLDED:
            return self._folded(row).to_invariant()
        if row.offset >= 0:
            with open(row.file, "rb") as handle:
                handle.seek(row.offset)
                return json.loads(handle.read(row.length))
        for item in read_values(row.file):
            if not isinstance(item, Problem) and item.line == row.line:
                return item.data
        raise LookupError(f"{row.file}:{row.line}: no longer there")

    def trace(self, row: Row) -> tuple[Any, Trace | None]:
        """The raw value and its decoded trace, with the row's metadata (from a sibling) when it has none."""
        if row.offset == FOLDED:
            folded = self._folded(row)
            return folded.to_invariant(), folded
        raw = self.raw(row)
        decoded = decode(raw)
        trace = decoded.trace
        if trace is not None and not trace.meta.trace_id:
            trace.meta = self._sibling_meta(row)
        return raw, trace

    def _sibling_meta(self, row: Row) -> TraceMeta:
        """The row's metadata record read again whole (with its steps), else the row's."""
        with self.lock:
            entry = next((e for e in self.order if e.name == row.file), None)
            sibling = entry.meta if entry is not None else None
            at = entry.meta_at[row.slot] if entry is not None and 0 <= row.slot < len(entry.meta_at) else -1
        if sibling is None or at < 0:
            return row.meta
        try:
            with sibling.path.open("rb") as handle:
                handle.seek(at)
                data = _json(handle.readline(max_line_bytes() + 1))
        except OSError:
            return row.meta
        got = data.get("metadata") if isinstance(data, dict) else None
        if not isinstance(got, dict) or got.get("trace_id") != row.meta.trace_id:
            return row.meta  # the sibling changed since it was indexed
        return TraceMeta.from_dict(got)

    def _folded(self, row: Row) -> Trace:
        with self.lock:
            for entry in self.order:
                if entry.name == row.file and row.id in entry.folded:
                    return entry.folded[row.id]
        raise LookupError(f"{row.file}:{row.line}: no longer there")


def _deleted(path: str) -> bool:
    """Whether nothing is at ``path`` any more (a path that cannot be looked at, in a directory become unreadable,
    is not taken for deleted)."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def _empty(path: Path) -> bool:
    try:
        return path.stat().st_size == 0
    except OSError:
        return True
