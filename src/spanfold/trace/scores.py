"""Scores given to runs after they ended (``spanfold.score``): a user's thumbs-up, an evaluator's grade.

They live beside the trace files, one sidecar per directory, :data:`SCORES_FILE` (``traces.scores.jsonl``): one JSON
object per line, appended whole by any process (:mod:`spanfold.exporter.files.score_lines`)::

    {"trace_id": "4bf9...", "name": "helpful", "value": 1, "comment": "spot on", "source": "human",
     "time": "2026-11-29T06:00:00.123Z"}

A run may have several scores of one name (two users voted): each is kept, in the order written, and the latest
counts where one value is asked for (:func:`latest`, ``spanfold check --where score.NAME<0.5``).

:class:`ScoreIndex` reads the sidecar of a directory and, each time it is asked, the lines appended since (by any
process), so a reader kept open sees scores written after it opened. Only whole lines are read: a line still being
written (no newline yet) waits for the next look. A bad line is a :class:`ScoreProblem` (file, line, problem); the
others are read on.

Plain data and checks, no OpenTelemetry: the ground floor.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

SCORES_FILE: Final = "traces.scores.jsonl"
#: How a scores sidecar's name ends (readers of a directory's trace files skip such files).
SCORES_SUFFIX: Final = ".scores.jsonl"
SOURCES: Final = ("human", "code", "llm")
MAX_ID: Final = 256
MAX_NAME: Final = 128
#: The longest text value (a label such as ``"good"``, ``"thumbs-up"``).
MAX_LABEL: Final = 256
MAX_COMMENT: Final = 4096
#: The most a sidecar line is read to be (longer: a problem, not a score).
MAX_LINE: Final = 64 * 1024

Source: TypeAlias = Literal["human", "code", "llm"]
Value: TypeAlias = float | int | bool | str


class ScoreError(ValueError):
    """A score that cannot be recorded or read: the message names the argument (or key) and the problem."""


class ScoreTypeError(ScoreError, TypeError):
    """An argument of the wrong type (a ``TypeError`` too, as ``spanfold.context`` raises for one)."""


@dataclass(frozen=True, slots=True)
class Score:
    """One score of one run."""

    trace_id: str
    name: str
    value: Value
    source: Source = "human"
    comment: str | None = None
    #: When it was given (ISO 8601, UTC), None when the line does not say.
    time: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"trace_id": self.trace_id, "name": self.name, "value": self.value}
        if self.comment is not None:
            out["comment"] = self.comment
        out["source"] = self.source
        if self.time is not None:
            out["time"] = self.time
        return out

    @property
    def shown(self) -> str:
        """The value for a person: ``0.75``, ``true``, ``good``."""
        return shown_value(self.value)

    @classmethod
    def from_dict(cls, raw: Any) -> Score:
        """A sidecar line's object, checked as :func:`checked` checks what ``spanfold.score`` is given;
        :class:`ScoreError` naming the key when it is not a score."""
        if not isinstance(raw, dict):
            raise ScoreTypeError(f"not a score (a JSON object with trace_id, name and value), but {_json_kind(raw)}")
        for key in ("trace_id", "name", "value"):
            if key not in raw:
                raise ScoreError(f"not a score: no {key}")
        when = raw.get("time")
        if when is not None and not isinstance(when, str):
            raise ScoreTypeError(f"time must be text, not {_json_kind(when)}")
        return checked(raw["trace_id"], raw["name"], raw["value"], raw.get("comment"), raw.get("source", "human"),
                       time=when)  # fmt: skip


def shown_value(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _text(name: str, value: Any, limit: int) -> str:
    if not isinstance(value, str):
        raise ScoreTypeError(f"{name} must be a string, not {_json_kind(value)}")
    if not value.strip():
        raise ScoreError(f"{name} is empty")
    if len(value) > limit:
        raise ScoreError(f"{name} is {len(value)} characters long; at most {limit}")
    return value


def trace_id_text(trace_id: Any) -> str:
    """The trace id as the metadata writes it: an OpenTelemetry trace id given as an integer becomes its 32 hex
    digits; text is kept (trace files not made from spans have ids of their own)."""
    if isinstance(trace_id, int) and not isinstance(trace_id, bool):
        if not 0 < trace_id < 2**128:
            raise ScoreError("trace_id: an integer trace id must be an OpenTelemetry one (1 to 2**128 - 1)")
        return f"{trace_id:032x}"
    return _text("trace_id", trace_id, MAX_ID)


def checked_value(value: Any) -> Value:
    """A score's value: a finite number, a bool, or a short text label."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ScoreError("value does not fit in 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ScoreError(f"value is {value}; a finite number is expected")
        return value
    if isinstance(value, str):
        return _text("value", value, MAX_LABEL)
    raise ScoreTypeError(f"value must be a number, a bool or a short string, not {_json_kind(value)}")


def checked(
    trace_id: Any, name: Any, value: Any, comment: Any = None, source: Any = "human", *, time: str | None = None
) -> Score:
    """The arguments of ``spanfold.score`` (or a sidecar line's keys), checked: :class:`ScoreError` naming the first
    one that is wrong."""
    if source not in SOURCES:
        raise ScoreError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
    if comment is not None:
        if not isinstance(comment, str):
            raise ScoreTypeError(f"comment must be a string, not {_json_kind(comment)}")
        if len(comment) > MAX_COMMENT:
            raise ScoreError(f"comment is {len(comment)} characters long; at most {MAX_COMMENT}")
    return Score(trace_id_text(trace_id), _text("name", name, MAX_NAME), checked_value(value), source, comment, time)


def latest(scores: Iterable[Score]) -> dict[str, Score]:
    """Each name's latest score (the last written), in the order the names were first given."""
    out: dict[str, Score] = {}
    for score in scores:
        out[score.name] = score  # a dict keeps the first insertion's place
    return out


def summary(scores: Iterable[Score]) -> str:
    """``helpful=1 tone=good``: each name's latest value, ``-`` when there is none."""
    return " ".join(f"{name}={score.shown}" for name, score in latest(scores).items()) or "-"


def as_json(scores: Iterable[Score]) -> dict[str, Value]:
    """Each name's latest value (``summary --json``'s ``scores``)."""
    return {name: score.value for name, score in latest(scores).items()}


@dataclass(slots=True)
class ScoreProblem:
    """A sidecar line that is not a score: ``FILE:LINE: problem``."""

    file: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"


def sidecar_of(trace_file: str | os.PathLike[str]) -> Path:
    """The scores sidecar of the directory a trace file is in."""
    return Path(trace_file).parent / SCORES_FILE


@dataclass
class ScoreIndex:
    """The scores of one sidecar by trace id, kept up to date: each :meth:`of` (or :meth:`refresh`) reads the whole
    lines appended since the last look, by any process. A replaced or shortened file is read again from its start.
    :attr:`problems` collects the bad lines (each once) for the caller to report."""

    path: Path
    by_trace: dict[str, list[Score]] = field(default_factory=dict)
    problems: list[ScoreProblem] = field(default_factory=list)
    _where: tuple[int, int] = (0, 0)  # (inode, offset of the first byte not read)
    _line: int = 0  # lines read so far

    def refresh(self) -> None:
        """Read what was appended since the last look (nothing when the file is missing or unchanged)."""
        try:
            with open(self.path, "rb") as handle:
                st = os.fstat(handle.fileno())
                inode, offset = self._where
                if st.st_ino != inode or st.st_size < offset:
                    self.by_trace.clear()
                    inode, offset, self._line = st.st_ino, 0, 0
                if st.st_size == offset:
                    self._where = (inode, offset)
                    return
                handle.seek(offset)
                data = handle.read(st.st_size - offset)
        except FileNotFoundError:
            return
        except OSError as exc:
            self.problems.append(ScoreProblem(str(self.path), self._line + 1, f"cannot read: {exc.strerror or exc}"))
            return
        whole = data.rfind(b"\n") + 1  # a line still being written waits for the next look
        for raw in data[:whole].split(b"\n")[:-1]:
            self._line += 1
            self._read_line(raw)
        self._where = (inode, offset + whole)

    def _read_line(self, raw: bytes) -> None:
        if not raw.strip():
            return
        problem: str
        if len(raw) > MAX_LINE:
            problem = f"line longer than {MAX_LINE:,} bytes"
        else:
            try:
                score = Score.from_dict(json.loads(raw.decode("utf-8")))
            except UnicodeDecodeError:
                problem = "not valid UTF-8"
            except json.JSONDecodeError as exc:
                problem = f"not valid JSON: {exc.msg} (column {exc.colno})"
            except (ScoreError, RecursionError, ValueError) as exc:
                problem = f"not a score: {exc}" if not str(exc).startswith("not a score") else str(exc)
            else:
                self.by_trace.setdefault(score.trace_id, []).append(score)
                return
        self.problems.append(ScoreProblem(str(self.path), self._line, problem))

    def of(self, *trace_ids: str) -> list[Score]:
        """The scores of the run these trace ids name (its own, and a stitched run's other OTel trace ids), in the
        order written, after reading what was appended since the last look."""
        self.refresh()
        found = [s for t in dict.fromkeys(trace_ids) if t for s in self.by_trace.get(t, ())]
        return found if len(trace_ids) < 2 else sorted(found, key=lambda s: s.time or "")

    def take_problems(self) -> list[ScoreProblem]:
        """The problems found since the last call (each reported once)."""
        taken, self.problems = self.problems, []
        return taken


def run_ids(meta_trace_id: str, extra: Mapping[str, Any]) -> tuple[str, ...]:
    """The ids a run's scores may be recorded under: its trace id and, for a stitched run, each OTel trace id it
    spans (``otel_trace_ids``)."""
    more = extra.get("otel_trace_ids")
    others = tuple(t for t in more if isinstance(t, str)) if isinstance(more, list) else ()
    return (meta_trace_id, *others)
