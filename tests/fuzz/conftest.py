"""Property-based fuzzing of every reader and configuration entry point (issue 45): valid documents, mutated.

Each fuzzer starts from a valid document (a real run's spans and traces, the repo's specs, a prices file) and
mutates it: a value of another type, a number past a float (400 and 5,000 digits, ``1e400``), nesting 50,000 deep,
a long string, a key removed, the file truncated, bytes that are not UTF-8, another encoding. The property: success or
a clear refusal, never a traceback or a hang.

The budget: ``SPANFOLD_FUZZ_EXAMPLES`` examples per fuzzer (default :data:`DEFAULT_EXAMPLES`), from a fixed seed
(``derandomize``: the same inputs every run, so a failure is reproduced by running the test again). Raise it to look
further: ``SPANFOLD_FUZZ_EXAMPLES=2000 pytest tests/fuzz``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from spanfold.cli import main

DEFAULT_EXAMPLES = 40
EXAMPLES = int(os.environ.get("SPANFOLD_FUZZ_EXAMPLES", DEFAULT_EXAMPLES))
#: One example taking longer than this is a hang.
HANG_SECONDS = 30

FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)

# --- a hang is a failure -------------------------------------------------------------------------------------------


class Hang(Exception):
    pass


@contextlib.contextmanager
def no_hang(seconds: float = HANG_SECONDS) -> Iterator[None]:
    """Fail (raise :class:`Hang`) when the block runs longer than ``seconds``."""

    def alarm(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"no answer in {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- mutations ----------------------------------------------------------------------------------------------------

DIGITS_400 = int("9" * 400)
#: Values put in place of a part of a valid document: every JSON type, and what breaks naive readers.
ODD_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**63,
    DIGITS_400,
    1.5,
    float("inf"),
    float("nan"),
    "",
    "x" * 5000,
    "\ud800",
    "\x00\x1b[31m",
    [],
    {},
    [[[]]],
    {"": None},
    [1, "a", None],
    {"type": ["tool_trajectory"]},
]
REPLACEMENTS = st.sampled_from(ODD_VALUES) | st.integers() | st.text(max_size=20)

_GONE = object()


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if len(path) > 30:
        return out
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*path, index))
    return out


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        out = dict(value)
        changed = _set(value[head], rest, new)
        if changed is _GONE:
            del out[head]
        else:
            out[head] = changed
        return out
    items = list(value)
    changed = _set(value[head], rest, new)
    if changed is _GONE:
        del items[head]
    else:
        items[head] = changed
    return items


def _deep(depth: int) -> str:
    """A marker :func:`dumps` writes as ``depth`` nested lists (Python's own encoder would recurse that deep)."""
    return f"@@deep{depth}@@"


@st.composite
def mutated_value(draw: st.DrawFn, value: Any) -> Any:
    """``value`` (plain JSON data) with 1-3 parts replaced by another type or a number past a float, removed, or
    nested deep."""
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(value)
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "replace", "remove", "deep", "wrap"]))
        if action == "remove" and path:
            value = _set(value, path, _GONE)
        elif action == "deep":
            value = _set(value, path, _deep(draw(st.sampled_from([50, 900, 5000]))))
        elif action == "wrap":
            value = _set(value, path, [draw(st.sampled_from([None, 1, "x"])), _get(value, path)])
        else:
            value = _set(value, path, draw(REPLACEMENTS))
    return value


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


def dumps(value: Any) -> str:
    """JSON as a careless producer writes it: NaN and Infinity as Python spells them, lone surrogates escaped, and an
    integer of 400 digits (Python writes any); nesting of :func:`_deep`."""
    text = json.dumps(value, ensure_ascii=True)
    for depth in (50, 900, 5000):
        text = text.replace(f'"{_deep(depth)}"', "[" * depth + "]" * depth)
    return text


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` damaged at the byte level: truncated, spliced with bytes that are not UTF-8, deep brackets or a long
    number, lines repeated or dropped, or the whole re-encoded."""
    action = draw(
        st.sampled_from(["truncate", "splice", "brackets", "digits", "encoding", "lines", "nul", "crlf", "empty"])
    )
    if action == "truncate":
        return data[: draw(st.integers(0, max(0, len(data) - 1)))]
    at = draw(st.integers(0, len(data)))
    if action == "splice":
        return data[:at] + draw(st.binary(min_size=1, max_size=16)) + data[at + draw(st.integers(0, 8)) :]
    if action == "brackets":
        n = draw(st.sampled_from([1000, 50_000, 200_000]))
        return data[:at] + draw(st.sampled_from([b"[", b"{", b'{"a":'])) * n + data[at:]
    if action == "digits":
        digits = b"9" * draw(st.sampled_from([20, 310, 400, 5000]))
        return data[:at] + draw(st.sampled_from([digits, b"1e400", b"-" + digits, b"1." + digits])) + data[at:]
    if action == "encoding":
        text = data.decode("utf-8", "replace")
        codec = draw(st.sampled_from(["utf-16", "utf-32", "latin-1", "utf-8-sig", "cp1252"]))
        return text.encode(codec, "replace")
    if action == "lines":
        lines = data.split(b"\n")
        i = draw(st.integers(0, len(lines) - 1))
        return b"\n".join(draw(st.sampled_from([lines[:i] + lines[i + 1 :], lines[: i + 1] + lines[i:]])))
    if action == "nul":
        return data[:at] + b"\x00" * draw(st.integers(1, 4)) + data[at:]
    if action == "crlf":
        return data.replace(b"\n", b"\r\n")
    return b""


# --- the CLI, in process ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str
    exception: BaseException | None


def run_cli(*args: Any, stdin: bytes | None = None) -> Outcome:
    """``spanfold ARGS`` in process (click's runner), within :data:`HANG_SECONDS`."""
    with no_hang():
        result: Result = CliRunner().invoke(main, [str(a) for a in args], input=stdin)
    exc = result.exception
    if isinstance(exc, SystemExit):
        exc = None
    return Outcome(result.exit_code, result.stdout, result.stderr, exc)


def assert_clear(outcome: Outcome, *, files: list[str], codes: tuple[int, ...] = (0, 2)) -> None:
    """Success, or a refusal whose every problem line names one of ``files`` (``FILE:LINE: problem`` or ``FILE:
    problem``); never a traceback."""
    assert outcome.exception is None, f"{type(outcome.exception).__name__}: {outcome.exception}"
    assert "Traceback" not in outcome.stderr + outcome.stdout
    assert outcome.code in codes, (outcome.code, outcome.stderr[-2000:])
    if outcome.code == 2:
        lines = [line for line in outcome.stderr.splitlines() if line.strip()]
        assert lines, "exit 2 without a word"
        assert any(line.startswith(tuple(f"{f}:" for f in files)) for line in lines), lines[:5]


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


Mutator = Callable[[bytes], st.SearchStrategy[bytes]]


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's directory, as the working directory (problem lines name relative paths)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- valid documents: one real run ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Corpus:
    """One weather-agent run (an agent, three chat calls, three tool runs) in every shape spanfold reads."""

    otlp_json: bytes  # one OTLP/JSON request per line, as the Collector's file exporter writes
    otlp_proto: bytes  # an ExportTraceServiceRequest, as OTLPSpanExporter sends it
    trace_files: dict[str, bytes]  # file name (its suffix picks the reader) -> content


@pytest.fixture(scope="session")
def corpus(_global_provider: Any, _global_exporter: Any) -> Corpus:
    import yaml

    from spanfold.exporter.fold.folding import fold
    from spanfold.exporter.records import from_readable
    from spanfold.trace import formats

    from ..bridge.conftest import collector_lines, proto_body, run_weather_agent

    _global_exporter.clear()
    run_weather_agent(_global_provider)
    spans = list(_global_exporter.get_finished_spans())
    _global_exporter.clear()
    assert len(spans) == 7, [s.name for s in spans]
    records = [from_readable(s) for s in spans]
    trace = fold(records, trace_id=format(records[0].trace_id, "032x"))
    two = lambda line: (line.rstrip("\n") + "\n") * 2  # noqa: E731
    files = {
        "invariant.jsonl": two(formats.encode_line(trace, "invariant")),
        "invariant.meta.jsonl": two(formats.meta_line(trace)),
        "agentv.jsonl": two(formats.encode_line(trace, "agentv")),
        "transcript.jsonl": formats.transcript_lines(trace),
        "object.json": formats.dumps(formats.to_value(trace, "invariant", style="object"), pretty=True),
        "compact.yaml": yaml.safe_dump(formats.to_value(trace, "compact"), sort_keys=False),
        "agentv-cli.json": formats.dumps(formats.to_value(trace, "agentv-cli")),
    }
    return Corpus(
        otlp_json=collector_lines(spans[:3], spans[3:]).encode(),
        otlp_proto=proto_body(spans),
        trace_files={name: text.encode() for name, text in files.items()},
    )
