"""Writers: where folded traces go.

* :class:`JsonlWriter`: one line per trace in ``traces.jsonl`` (Invariant) or ``traces.agentv.jsonl`` (AgentV), or
  a trace's AgentV transcript rows, one line per message, in ``traces.agentv-transcript.jsonl``; and for Invariant
  the N-th line of ``traces.meta.jsonl`` describes the N-th trace. Traces are held until
  :meth:`~JsonlWriter.flush` (the fold worker flushes after each batch it folds) or until :data:`BATCH_TRACES` of
  them wait, then appended together: one ``os.write`` per file on an ``O_APPEND`` descriptor, under one ``flock`` of the
  events file, so processes appending to one directory never interleave or misalign; a failed write is rolled back to
  the line boundary.
* :class:`JsonFileWriter`: one pretty ``<trace_id>.json`` per trace, written to a temporary file and renamed.
* ``format="otlp-json"``: the spans each trace was folded from, one OTLP/JSON export request per line in
  ``traces.otlp.jsonl`` (the Collector file exporter's layout, :mod:`.otlp_file`), written by the same two writers
  through :meth:`~_RetryingWriter.write_spans`.
* :class:`MemoryWriter`: a list of :class:`~spanfold.trace.model.Trace` (tests, capture).

With ``rotate_bytes`` or ``rotate_when`` set, :class:`JsonlWriter` appends to numbered files that are never renamed
(``traces.2025-06-01.000003.jsonl`` and its ``.meta.jsonl``), a new one started before a batch would take the newest
past ``rotate_bytes`` or on a new day, the old ones deleted past ``keep_files`` / ``keep_days``: all under one
``flock`` of ``.<events file>.lock`` in the directory (:mod:`.rotation`).

A writer killed mid-line (SIGKILL stops a ``write`` part way) can leave a line without its newline, or an events line
without its metadata line: the next writer, of any process, cuts the torn tail (``writer.torn_lines_cut``) and restores
a lost metadata line as a placeholder (``writer.meta_lines_restored``) before it appends, reading only what was
appended since its own last write.

An ``OSError`` (disk full, permission denied, directory deleted) is the setup's problem, not a fault of spanfold's:
counted (``writer.io_errors``) and logged once, in one line (the path, the reason, what spanfold does meanwhile); the
trace waits in a bounded retry buffer and is written, in order, once the path works again (the directory is
re-created). At exit, :func:`report_unwritten` says in one line how many traces never reached the disk. The
directory is created on the first write, not before. Files are created 0600, directories 0700.

Writers never follow a symbolic link planted in the output directory, nor write into a file or directory another user
owns or a file wider than 0600 (:mod:`.safe_files`, checked on the open descriptor): such a path is refused, counted
(``writer.unsafe_path``) and logged once, and the traces wait in the retry buffer as for any other unwritable path.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from spanfold import counters
from spanfold.config import Config
from spanfold.exporter.files import rotation as rotating
from spanfold.exporter.files.rotation import Rotation, Segment
from spanfold.exporter.files.safe_files import UnsafePath, open_dir, open_file
from spanfold.exporter.forks import reinit_in_child
from spanfold.exporter.records import SpanRecord

if TYPE_CHECKING:
    from spanfold.trace.model import Trace

EVENTS_FILES: Final = {
    "invariant": "traces.jsonl",
    "agentv": "traces.agentv.jsonl",
    "agentv-transcript": "traces.agentv-transcript.jsonl",
    "otlp-json": "traces.otlp.jsonl",
}
#: The formats that write a trace's spans (:meth:`_RetryingWriter.write_spans`), not its folded events.
SPAN_FORMATS: Final = frozenset({"otlp-json"})
META_FILE: Final = "traces.meta.jsonl"
#: Retry buffer bounds: traces kept while the path is broken (the oldest go first, counted).
MAX_RETRY_TRACES: Final = 1000
MAX_RETRY_BYTES: Final = 64 * 1024 * 1024
#: Traces (or bytes) a :class:`JsonlWriter` holds before it appends them without waiting for a flush.
BATCH_TRACES: Final = 512
BATCH_BYTES: Final = 8 * 1024 * 1024

_APPEND_FLAGS: Final = os.O_RDWR | os.O_APPEND | os.O_CREAT
_UNSAFE_NAME: Final = re.compile(r"[^A-Za-z0-9_.-]")


@runtime_checkable
class Writer(Protocol):
    """Receives each folded trace on the processor's worker thread."""

    def write(self, trace: Trace) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


def _check_format(fmt: str) -> str:
    if fmt not in EVENTS_FILES:
        raise ValueError(f"unknown trace format {fmt!r}; expected one of {', '.join(EVENTS_FILES)}")
    return fmt


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


_SCAN: Final = 1 << 20


def _cut_torn_tail(fd: int) -> int:
    """Cut a last line that has no newline (its writer died mid-write); 1 when something was cut, else 0."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return 0
    end = size
    while end > 0:
        start = max(0, end - _SCAN)
        found = os.pread(fd, end - start, start).rfind(b"\n")
        if found >= 0:
            os.ftruncate(fd, start + found + 1)
            return 1
        end = start
    os.ftruncate(fd, 0)
    return 1


def _count_lines(fd: int, start: int, end: int) -> int:
    lines = 0
    while start < end:
        chunk = os.pread(fd, min(_SCAN, end - start), start)
        if not chunk:
            break
        lines += chunk.count(b"\n")
        start += len(chunk)
    return lines


class _RetryBuffer:
    """Pending writes (in order), bounded by count and bytes; what falls out is counted."""

    def __init__(self, max_items: int, max_bytes: int) -> None:
        self.items: deque[tuple[Any, int]] = deque()
        self.bytes = 0
        self.max_items = max_items
        self.max_bytes = max_bytes
        self.dropped = 0

    def append(self, item: Any, size: int) -> None:
        self.items.append((item, size))
        self.bytes += size
        while len(self.items) > 1 and (len(self.items) > self.max_items or self.bytes > self.max_bytes):
            _, dropped = self.items.popleft()
            self.bytes -= dropped
            self.dropped += 1
            counters.incr("writer.dropped_traces")

    def drain_fitting(self, write: Callable[[list[Any]], tuple[int, OSError | None]]) -> tuple[int, OSError | None]:
        """Let ``write`` write the pending items in order, as many as it can: it returns how many it wrote and the
        error that stopped it; those are dropped from the buffer. How many were written, and the error."""
        if not self.items:
            return 0, None
        written, error = write([item for item, _ in self.items])
        for _ in range(written):
            self.bytes -= self.items.popleft()[1]
        return written, error

    def drain(self, write: Callable[[Any], None]) -> OSError | None:
        """Write pending items in order until one fails; the error that stopped it, None when all were written."""
        while self.items:
            item, size = self.items[0]
            try:
                write(item)
            except OSError as exc:
                return exc
            self.items.popleft()
            self.bytes -= size
        return None

    def clear(self) -> None:
        self.items.clear()
        self.bytes = 0


class _RetryingWriter:
    """Shared machinery: encode under no lock, write in order under the lock, keep what failed for later."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        format: str = "invariant",
        *,
        max_retry_traces: int = MAX_RETRY_TRACES,
        max_retry_bytes: int = MAX_RETRY_BYTES,
    ) -> None:
        self.format = _check_format(format)
        self.directory = Path(directory)
        self._lock = threading.Lock()
        self._pending = _RetryBuffer(max_retry_traces, max_retry_bytes)
        #: Why the last write failed (``"<path>: <reason>"``), None once a write succeeds.
        self.problem: str | None = None
        reinit_in_child(self._at_fork_reinit)
        self._prepare()

    def _prepare(self) -> None:
        """What a writer sets up once its directory and format are known (nothing by default)."""

    def _at_fork_reinit(self) -> None:
        """A forked child drops what its parent still had to write (the parent writes it)."""
        self._lock = threading.Lock()
        self._pending.clear()

    @property
    def pending(self) -> int:
        """Traces waiting in the retry buffer."""
        return len(self._pending.items)

    @property
    def dropped(self) -> int:
        """Traces the full retry buffer dropped (never written)."""
        return self._pending.dropped

    def _failure_path(self) -> Path:
        """The path a failure without a file name is reported against."""
        return self.directory

    def _failed(self, exc: OSError | None) -> None:
        """Note (count, and log once) why a write failed: a path refused as unsafe, or any other ``OSError``."""
        if exc is None:
            self.problem = None
            return
        path = exc.filename if exc.filename is not None else self._failure_path()
        self.problem = f"{os.fspath(path)}: {exc.strerror or exc}"
        size = f"up to {self._pending.max_items} traces, {self._pending.max_bytes >> 20} MiB; the oldest go first"
        if isinstance(exc, UnsafePath):
            message = f"spanfold: refusing to write traces to {self.problem}; they wait in memory ({size}) until fixed"
            counters.problem("writer.unsafe_path", message)
        else:
            message = f"spanfold: cannot write traces to {self.problem}; they wait in memory ({size}) and are retried"
            counters.problem("writer.io_errors", message)

    def _encode(self, trace: Trace) -> tuple[Any, int]:
        raise NotImplementedError

    def _write_item(self, item: Any) -> None:
        raise NotImplementedError

    def _drain(self) -> None:
        """Write what is pending (under the lock)."""
        self._failed(self._pending.drain(self._write_item))

    def _due(self) -> bool:
        """Whether :meth:`write` writes at once (else it waits for :meth:`flush`)."""
        return True

    @property
    def wants_spans(self) -> bool:
        """Whether this writer takes traces through :meth:`write_spans` (its format writes spans)."""
        return self.format in SPAN_FORMATS

    def _encode_spans(self, trace: Trace, records: list[SpanRecord]) -> tuple[Any, int]:
        raise NotImplementedError

    def write_spans(self, trace: Trace, records: list[SpanRecord]) -> None:
        """Write the spans ``trace`` was folded from (an ``otlp-json`` writer; the assembler calls it)."""
        try:
            item, size = self._encode_spans(trace, records)
        except Exception as exc:
            counters.fault("writer.encode", exc)
            return
        self._put(item, size)

    def write(self, trace: Trace) -> None:
        try:
            item, size = self._encode(trace)
        except Exception as exc:
            counters.fault("writer.encode", exc)
            return
        self._put(item, size)

    def _put(self, item: Any, size: int) -> None:
        with self._lock:
            self._pending.append(item, size)
            if self._due():
                self._drain()

    def flush(self) -> None:
        with self._lock:
            self._drain()

    def close(self) -> None:
        self.flush()


class JsonlWriter(_RetryingWriter):
    """Append each trace as one line to ``<directory>/traces.jsonl`` (or ``traces.agentv.jsonl``; with ``rotation``,
    to the newest numbered file, :mod:`.rotation`): held until :meth:`flush` (or :meth:`close`), or until
    :data:`BATCH_TRACES` traces or :data:`BATCH_BYTES` wait, then all appended under one lock. When they do not all
    fit (a full disk), as many as fit are written, in order, and the rest wait. Counts ``traces_written`` as lines
    reach the file."""

    #: This writer counts ``traces_written`` itself, when a trace is on disk (not when it is handed over).
    counts_written = True

    def __init__(
        self,
        directory: str | os.PathLike[str],
        format: str = "invariant",
        *,
        rotation: Rotation | None = None,
        clock: Callable[[], float] = time.time,
        max_retry_traces: int = MAX_RETRY_TRACES,
        max_retry_bytes: int = MAX_RETRY_BYTES,
    ) -> None:
        self.rotation = rotation
        self._clock = clock
        super().__init__(directory, format, max_retry_traces=max_retry_traces, max_retry_bytes=max_retry_bytes)

    def _due(self) -> bool:
        pending = self._pending
        return len(pending.items) >= BATCH_TRACES or pending.bytes >= BATCH_BYTES

    def _drain(self) -> None:
        written, error = self._pending.drain_fitting(self._append)
        if written:
            counters.incr("traces_written", written)
        self._failed(error)

    def _failure_path(self) -> Path:
        return self.events_path

    def _prepare(self) -> None:
        #: The file the last trace went to (with rotation: the newest numbered file written).
        self.events_path = self.directory / EVENTS_FILES[self.format]
        self.meta_path: Path | None = self.directory / META_FILE if self.format == "invariant" else None
        self._stem = EVENTS_FILES[self.format][: -len(".jsonl")]
        self._lock_name = f".{EVENTS_FILES[self.format]}.lock"
        #: (inode, size) of the events and metadata files after this writer's last append, both whole and aligned.
        self._checked: tuple[tuple[int, int], tuple[int, int]] | None = None

    def _encode_spans(self, trace: Trace, records: list[SpanRecord]) -> tuple[Any, int]:
        line = (_otlp_line(records) + "\n").encode("utf-8")
        return (line, b""), len(line)

    def _encode(self, trace: Trace) -> tuple[Any, int]:
        from spanfold.trace import formats  # the encoders load with the first trace written, not at init()

        if self.wants_spans:
            raise ValueError(f"the {self.format} format writes spans: a folded trace alone cannot be written in it")

        lines = formats.encode_line(trace, self.format)
        events = (lines + "\n").encode("utf-8") if lines else b""  # a transcript of no messages has no rows
        meta = (formats.meta_line(trace) + "\n").encode("utf-8") if self.meta_path is not None else b""
        return (events, meta), len(events) + len(meta)

    def _append(self, items: list[tuple[bytes, bytes]]) -> tuple[int, OSError | None]:
        """Append ``items`` in order (:func:`_append_items`); how many were appended, and the error that stopped the
        rest."""
        if self.rotation is not None:
            return self._append_rotated(self.rotation, items)
        try:
            with contextlib.ExitStack() as stack:
                dir_fd = open_dir(self.directory)
                stack.callback(_close, dir_fd)
                fd = open_file(dir_fd, self.directory, self.events_path.name, _APPEND_FLAGS)
                stack.callback(_close, fd)  # releases the lock
                fcntl.flock(fd, fcntl.LOCK_EX)
                meta = self.meta_path.name if self.meta_path is not None else None
                return self._append_to(self._ready(stack, dir_fd, fd, meta), items)
        except OSError as exc:  # opening, locking or repairing the files
            return 0, exc

    def _ready(self, stack: contextlib.ExitStack, dir_fd: int, fd: int, meta: str | None) -> list[int]:
        """The events file ``fd`` (locked) and its metadata file ``meta``, open and repaired: ready to append whole
        lines."""
        if meta is None:
            _count_cut(_cut_torn_tail(fd))
            return [fd]
        meta_fd = open_file(dir_fd, self.directory, meta, _APPEND_FLAGS)
        stack.callback(_close, meta_fd)
        self._repair(fd, meta_fd)
        return [fd, meta_fd]

    def _append_to(self, fds: list[int], items: list[tuple[bytes, bytes]]) -> tuple[int, OSError | None]:
        result = _append_items(fds, items)
        if len(fds) == 2:
            self._checked = (_where(fds[0]), _where(fds[1]))
        return result

    def _append_rotated(self, rotation: Rotation, items: list[tuple[bytes, bytes]]) -> tuple[int, OSError | None]:
        """Append ``items`` to the newest numbered file, starting new ones as :mod:`.rotation` says, all under the
        directory's lock file; each trace's two lines go to one pair of files."""
        done = 0
        try:
            with contextlib.ExitStack() as stack:
                dir_fd = open_dir(self.directory)
                stack.callback(_close, dir_fd)
                lock = open_file(dir_fd, self.directory, self._lock_name, os.O_RDWR | os.O_CREAT)
                stack.callback(_close, lock)  # releases the lock
                fcntl.flock(lock, fcntl.LOCK_EX)
                while done < len(items):
                    with contextlib.ExitStack() as files:
                        seg, fds = self._segment(files, dir_fd, rotation, sum(map(len, items[done])))
                        lengths = [len(events) + len(meta) for events, meta in items[done:]]
                        take = rotating.fitting(rotation, _size(fds), lengths)
                        written, error = self._append_to(fds, items[done : done + take])
                    done += written
                    self.events_path = self.directory / seg.name
                    if error is not None:
                        return done, error
        except OSError as exc:  # opening, locking or repairing the files
            return done, exc
        return done, None

    def _segment(
        self, files: contextlib.ExitStack, dir_fd: int, rotation: Rotation, adding: int
    ) -> tuple[Segment, list[int]]:
        """Under the lock: the newest numbered file, open and repaired, or a new one when it is due (the oldest
        pruned then)."""
        now = self._clock()
        found = rotating.segments(dir_fd, self._stem)
        if found:
            newest = found[-1]
            with contextlib.ExitStack() as probe:
                fds = self._open_segment(probe, dir_fd, newest)
                if not rotating.due(rotation, newest, _size(fds), adding, now):
                    files.enter_context(probe.pop_all())
                    return newest, fds
            counters.incr("writer.rotations")
        new = rotating.segment(self._stem, rotating.day_of(now), found[-1].n + 1 if found else 1)
        fds = self._open_segment(files, dir_fd, new)
        rotating.prune(dir_fd, self._stem, rotation, now)
        return new, fds

    def _open_segment(self, stack: contextlib.ExitStack, dir_fd: int, seg: Segment) -> list[int]:
        fd = open_file(dir_fd, self.directory, seg.name, _APPEND_FLAGS)
        stack.callback(_close, fd)
        return self._ready(stack, dir_fd, fd, seg.meta_name if self.meta_path is not None else None)

    def _repair(self, fd: int, meta_fd: int) -> None:
        """Under the lock: cut torn tails, then give every events line appended since this writer last looked (by
        any process) its metadata line, a placeholder where a crash lost it."""
        _count_cut(_cut_torn_tail(fd) + _cut_torn_tail(meta_fd))
        now = (_where(fd), _where(meta_fd))
        since = self._checked
        if since is None or any(a[0] != b[0] or a[1] > b[1] for a, b in zip(since, now, strict=True)):
            since = ((now[0][0], 0), (now[1][0], 0))  # first look, or the files were replaced: count them whole
        missing = _count_lines(fd, since[0][1], now[0][1]) - _count_lines(meta_fd, since[1][1], now[1][1])
        if missing > 0:
            _write_all(meta_fd, _lost_meta() * missing)
            counters.incr("writer.meta_lines_restored", missing)


def _append_items(fds: list[int], items: list[tuple[bytes, bytes]]) -> tuple[int, OSError | None]:
    """Append ``items`` in order: all at once (one write per file), else (a failure, rolled back to the line
    boundary) one by one until one does not fit. How many were appended, and the error that stopped the rest."""
    try:
        _append_lines(list(zip(fds, _join_lines(items), strict=False)))
        return len(items), None
    except OSError as exc:
        if len(items) == 1:
            return 0, exc
    for n, item in enumerate(items):
        try:
            _append_lines(list(zip(fds, item, strict=False)))
        except OSError as exc:
            return n, exc
    return len(items), None


def _join_lines(items: list[tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
    """Many traces' (events lines, metadata lines) as one pair: appended with one write per file."""
    if len(items) == 1:
        return items[0]
    return b"".join(e for e, _ in items), b"".join(m for _, m in items)


def _close(fd: int) -> None:
    """Close ``fd``; an error closing a file already written does not make its lines unwritten."""
    with contextlib.suppress(OSError):
        os.close(fd)


def _size(fds: list[int]) -> int:
    """The bytes of the open files together (a trace file and its metadata file)."""
    return sum(os.fstat(fd).st_size for fd in fds)


def _where(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_ino, st.st_size


def _count_cut(n: int) -> None:
    if n:
        counters.incr("writer.torn_lines_cut", n)


def _otlp_line(records: list[SpanRecord]) -> str:
    from spanfold.exporter.otlp.json_out import encode_line

    return encode_line(records)


def _lost_meta() -> bytes:
    """The metadata line standing for one a crash lost (its events line was written, then the writer was killed)."""
    from spanfold.trace import formats
    from spanfold.trace.model import Trace, TraceMeta

    meta = TraceMeta(trace_id="", status="incomplete", extra={"meta_lost": True})
    return (formats.meta_line(Trace(events=[], meta=meta)) + "\n").encode("utf-8")


def _append_lines(writes: list[tuple[int, bytes]]) -> None:
    """Append each line to its file; on any failure cut every file back to where it was (whole lines only)."""
    sizes = [os.fstat(fd).st_size for fd, _ in writes]
    try:
        for fd, data in writes:
            _write_all(fd, data)
    except OSError:
        for (fd, _), size in zip(writes, sizes, strict=True):
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
        raise


def file_name(trace_id: str) -> str:
    """``<trace_id>.json`` from the trace id alone (anything but ``[A-Za-z0-9_.-]`` replaced)."""
    safe = _UNSAFE_NAME.sub("_", trace_id).lstrip(".") or "trace"
    return f"{safe[:128]}.json"


def document(trace: Trace, fmt: str) -> dict[str, Any]:
    """A whole-trace JSON document: the events of format ``fmt`` plus the metadata and summary."""
    from spanfold.trace import formats

    if fmt == "agentv":
        return formats.agentv_document(trace)
    return {"trace": trace.to_invariant(), "metadata": formats.meta_dict(trace), "summary": trace.summary().to_dict()}


class JsonFileWriter(_RetryingWriter):
    """One pretty ``<directory>/<trace_id>.json`` per trace (temporary file + ``os.replace``, never half-written).
    A trace id written before (late spans, a second local root) gets ``<trace_id>-1.json``, ..."""

    def _encode(self, trace: Trace) -> tuple[Any, int]:
        from spanfold.trace import formats

        if self.wants_spans:
            raise ValueError(f"the {self.format} format writes spans: a folded trace alone cannot be written in it")
        if self.format == "agentv-transcript":  # rows are lines: the file is JSONL, as AgentV reads it
            text = formats.encode_line(trace, self.format) + "\n"
        else:
            text = formats.dumps(document(trace, self.format), pretty=True) + "\n"
        data = text.encode("utf-8")
        return (file_name(trace.meta.trace_id), data), len(data)

    def _encode_spans(self, trace: Trace, records: list[SpanRecord]) -> tuple[Any, int]:
        data = (_otlp_line(records) + "\n").encode("utf-8")
        return (file_name(trace.meta.trace_id), data), len(data)

    def _write_item(self, item: Any) -> None:
        name, data = item
        dir_fd = open_dir(self.directory)
        try:
            target = _free_name(dir_fd, name)
            tmp, fd = _create_temp(dir_fd, self.directory, target)
            try:
                try:
                    _write_all(fd, data)
                finally:
                    os.close(fd)
                os.replace(tmp, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dir_fd)
                raise
        finally:
            os.close(dir_fd)


def _exists(dir_fd: int, name: str) -> bool:
    """Whether ``name`` is taken in the directory (a symbolic link counts, dangling or not)."""
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _free_name(dir_fd: int, name: str) -> str:
    """``name``, or ``<stem>-1.json``, ``<stem>-2.json``, ... when it is taken."""
    stem = name[: -len(".json")]
    n, free = 0, name
    while _exists(dir_fd, free):
        n += 1
        free = f"{stem}-{n}.json"
    return free


def _create_temp(dir_fd: int, directory: Path, target: str) -> tuple[str, int]:
    """A new temporary file beside ``target`` (an unpredictable name, created exclusively: nothing planted under a
    name can receive the trace): its name and descriptor."""
    for _ in range(100):
        tmp = f".{target}.{secrets.token_hex(8)}.tmp"
        try:
            return tmp, open_file(dir_fd, directory, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {directory / target}")


class MemoryWriter:
    """Keeps every trace in :attr:`traces` (thread-safe appends)."""

    def __init__(self) -> None:
        self.traces: list[Trace] = []
        self._lock = threading.Lock()

    def write(self, trace: Trace) -> None:
        with self._lock:
            self.traces.append(trace)

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None


def report_unwritten(writers: Iterable[object]) -> None:
    """At exit: say in one line (per output directory) how many traces never reached their files, still waiting in
    a retry buffer or dropped from it, and why; nothing when every trace was written."""
    lost: dict[Path, tuple[int, str | None]] = {}
    for writer in writers:
        if isinstance(writer, _RetryingWriter):
            n = writer.pending + writer.dropped
            if n > lost.get(writer.directory, (0, None))[0]:
                lost[writer.directory] = (n, writer.problem)
    for directory, (n, problem) in lost.items():
        why = f" ({problem})" if problem else ""
        counters.logger.warning(
            f"spanfold: {n} trace(s) could not be written to {os.fspath(directory)}{why}; lost at exit"
        )


def writers_for(config: Config) -> list[Writer]:
    """The file writers the options ask for: JSONL in ``output`` (and one JSON file per trace); none when
    ``SPANFOLD_DISABLED``."""
    if config.disabled:
        return []
    writers: list[Writer] = [JsonlWriter(config.output, config.format, rotation=Rotation.of(config))]
    if config.file_per_trace:
        writers.append(JsonFileWriter(config.output, config.format))
    return writers
