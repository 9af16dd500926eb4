"""Fixtures shared by every test directory."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import spanfold
from spanfold.testing import MockLLMServer, scenarios


#: Real OpenAI and Anthropic API responses (from OpenLLMetry's public test recordings, Apache-2.0; see its README),
#: copied from the workspace's shared/recordings so a clean checkout of the repository has them.
#: The weather agent's trajectory, and the function that reads it off a folded trace (the fold tests share them).
def shape(events: list[dict[str, Any]]) -> list[tuple[str, list[str] | None]]:
    return [
        (e["role"], [c["function"]["name"] for c in e["tool_calls"]] if e.get("tool_calls") else None) for e in events
    ]


EXPECTED_SHAPE = [
    ("system", None),
    ("user", None),
    ("assistant", ["get_weather", "get_weather"]),
    ("tool", None),
    ("tool", None),
    ("assistant", ["convert_temperature"]),
    ("tool", None),
    ("assistant", None),
]


RECORDINGS = Path(__file__).resolve().parent / "recordings"


def _load_recording(name: str) -> list[dict[str, Any]]:
    data = json.loads((RECORDINGS / name).read_text())
    interactions: list[dict[str, Any]] = data["interactions"]
    return interactions


@pytest.fixture
def load_recording() -> Callable[[str], list[dict[str, Any]]]:
    """The interactions of a recording in tests/recordings (request, response: status, content_type, body)."""
    return _load_recording


def _test_extra_installed() -> bool:
    """Whether every package the ``test`` extra asks for is installed, in its range (the main test environment; the
    SDK-matrix venvs install subsets)."""
    from importlib.metadata import PackageNotFoundError, requires, version

    try:
        from packaging.requirements import Requirement
    except ImportError:  # a venv with less than the test extra (the SDK matrix's) may not have it
        return False
    for text in requires("spanfold") or []:
        req = Requirement(text)
        if req.marker is None or not req.marker.evaluate({"extra": "test"}):
            continue
        try:
            if not req.specifier.contains(version(req.name), prereleases=True):
                return False
        except PackageNotFoundError:
            return False
    return True


#: The price memo (spanfold.pricing.memo) of the tests' processes and their children: a directory of this session's,
#: never the user's cache.
os.environ.setdefault("SPANFOLD_PRICE_CACHE", tempfile.mkdtemp(prefix="spanfold-price-memo-"))

#: In the main test environment an import that fails is a broken import, not a reason to skip.
STRICT_IMPORTS = _test_extra_installed()


def _import_skip(report: Any) -> bool:
    return bool(report.skipped) and "could not import" in str(report.longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: Any) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if STRICT_IMPORTS and _import_skip(report):
        report.outcome = "failed"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if STRICT_IMPORTS and _import_skip(report):
        report.outcome = "failed"


@pytest.fixture(autouse=True)
def _fresh_conversations() -> None:
    """Each test starts with no zero-code conversation open: the mock server's call ids repeat from one test to the
    next, so a run of one test could extend a run of the last (as two identical runs of one process may)."""
    from spanfold.stitching import conversations

    if conversations.active() is not None:
        conversations.activate(conversations.from_environment())


@pytest.fixture(autouse=True)
def _reset_stats() -> Iterator[None]:
    from spanfold import counters

    counters.reset()
    yield


@pytest.fixture(scope="session")
def _global_provider() -> Any:
    """The process-wide SDK TracerProvider (OTel allows one per process; spanfold.init() reuses it)."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    return provider


@pytest.fixture(scope="session")
def _global_exporter(_global_provider: Any) -> Any:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    _global_provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.fixture
def global_spans(_global_exporter: Any) -> Iterator[Any]:
    """Spans finished on the global provider during this test (tool and agent spans use it)."""
    _global_exporter.clear()
    yield _global_exporter
    _global_exporter.clear()


class Traced:
    """spanfold initialised for one test, writing to a temporary directory."""

    def __init__(self, handle: Any, directory: Path) -> None:
        self.handle = handle
        self.directory = directory

    def traces(self) -> list[list[dict[str, Any]]]:
        """Every trace written so far (after a flush), each an Invariant event list."""
        assert spanfold.flush(timeout=30)
        path = self.directory / "traces.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    def metas(self) -> list[dict[str, Any]]:
        """Every metadata line written so far (after a flush, as :meth:`traces`)."""
        assert spanfold.flush(timeout=30)
        path = self.directory / "traces.meta.jsonl"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    def one(self) -> list[dict[str, Any]]:
        traces = self.traces()
        assert len(traces) == 1, f"expected one trace, got {len(traces)}: {traces}"
        return traces[0]


def in_threads(run: Callable[[int], Any], n: int) -> None:
    """``run(0)`` .. ``run(n - 1)`` in ``n`` threads at once; the first exception one of them raised is raised here."""
    errors: list[BaseException] = []

    def body(k: int) -> None:
        try:
            run(k)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@contextmanager
def traced_into(directory: Path, *, capture_content: bool = True, **options: Any) -> Iterator[Traced]:
    """spanfold.init() writing to ``directory`` for the block (``options``: init()'s other keywords)."""
    handle = spanfold.init(output=str(directory), capture_content=capture_content, **options)
    try:
        yield Traced(handle, directory)
    finally:
        spanfold.shutdown()


@pytest.fixture
def traced(tmp_path: Path, _global_provider: Any) -> Iterator[Traced]:
    with traced_into(tmp_path / "traces") as t:
        yield t


@pytest.fixture
def traced_off(tmp_path: Path, _global_provider: Any) -> Iterator[Traced]:
    """``traced`` with content capture off."""
    with traced_into(tmp_path / "traces", capture_content=False) as t:
        yield t


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer(scenarios.weather_agent) as srv:
        yield srv
