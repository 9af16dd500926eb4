"""The table of every name spanfold writes (:mod:`spanfold.semconv.written`) against the registry of the pinned
commit (:mod:`spanfold.semconv.registry`) and against what spanfold really writes: every registry row is a name the
pinned registry defines, every name the instrumentation modules use is a row, and every name real runs put on
spanfold's spans (each provider's weather agent, over HTTP to the mock server, content capture on) is a row."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

import spanfold
from spanfold import semconv
from spanfold.semconv import registry, written
from spanfold.testing import WEATHER, MockLLMServer
from spanfold.testing.agents import PROVIDERS

from .names_check import unlisted

INSTRUMENTATION = Path(spanfold.__file__).parent / "instrumentation"
#: An attribute-like name (``gen_ai.tool.name``), as opposed to a value (``tools/call``, ``chat``).
ATTRIBUTE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")
#: Constants whose values are attribute values, not names (provider names such as ``aws.bedrock``).
VALUE_PREFIXES = ("PROVIDER_", "OP_", "PART_")


def rows() -> list[tuple[str, str]]:
    return [*written.ATTRIBUTES.items(), *written.EVENT_ATTRIBUTES.items()]


@pytest.mark.parametrize(("name", "row"), rows(), ids=[name for name, _ in rows()])
def test_each_registry_row_is_a_name_the_pinned_registry_defines(name: str, row: str) -> None:
    if written.is_vendor(row):
        assert not registry.defines(name), f"{name} is in the pinned registry: its row should say where"
        return
    assert name in registry.ATTRIBUTES[row], f"{name}: not in {row} at {registry.PINNED_COMMIT}"


def test_operations_and_events_are_the_registry_s() -> None:
    assert written.OPERATIONS <= registry.OPERATIONS
    assert set(written.LOG_EVENTS) <= registry.EVENTS
    for event, row in written.SPAN_EVENTS.items():
        assert written.is_vendor(row) or event == semconv.EXCEPTION_EVENT


def test_metrics_are_the_registry_s_or_say_whose() -> None:
    for metric, row in written.METRICS.items():
        assert written.is_vendor(row) or metric in registry.METRICS, metric
        assert not (written.is_vendor(row) and metric in registry.METRICS), metric
    for name, row in written.METRIC_ATTRIBUTES.items():
        assert written.is_vendor(row) and not registry.defines(name), name


def test_the_pin_is_one_commit() -> None:
    assert re.fullmatch(r"[0-9a-f]{40}", registry.PINNED_COMMIT)
    assert registry.PINNED_REPOSITORY == "open-telemetry/semantic-conventions-genai"


def test_no_older_name_is_written() -> None:
    """The names the conventions renamed are read (by the dialects), never written."""
    for old, new in semconv.USAGE_RENAMED.items():
        assert old not in written.ATTRIBUTES
        assert new in written.ATTRIBUTES


def _referenced(module: Path) -> set[str]:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "semconv"
    }


def test_every_name_the_instrumentation_uses_is_in_the_table() -> None:
    """Every attribute-like ``semconv.NAME`` an instrumentation module uses (it writes them, or reads back what it
    wrote) has its row."""
    listed = {*written.ATTRIBUTES, *written.EVENT_ATTRIBUTES, *written.SPAN_EVENTS, *written.LOG_EVENTS}
    listed |= {*written.METRICS, *written.METRIC_ATTRIBUTES}
    missing: dict[str, list[str]] = {}
    for module in sorted(INSTRUMENTATION.rglob("*.py")):
        for constant in _referenced(module):
            value = getattr(semconv, constant, None)
            if constant.startswith(VALUE_PREFIXES) or not isinstance(value, str) or not ATTRIBUTE.match(value):
                continue
            if value not in listed:
                missing.setdefault(value, []).append(module.name)
    assert not missing, f"names with no row in spanfold.semconv.written: {missing}"


@pytest.mark.parametrize("provider", [p for p in PROVIDERS if PROVIDERS[p].installed()])
def test_a_real_run_writes_only_names_of_the_table(traced: Any, global_spans: Any, provider: str) -> None:
    api = PROVIDERS[provider]
    with MockLLMServer(WEATHER.replies) as server, spanfold.agent("weather"):
        api.run(api.client(server))
    traced.one()
    spans = global_spans.get_finished_spans()
    assert {s.name.partition(" ")[0] for s in spans} >= {"chat", "execute_tool", "invoke_agent"} or provider == "ollama"
    assert unlisted(spans) == set()
