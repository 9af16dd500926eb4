"""The pytest plugin, through pytest's own ``pytester``: the spanfold_traces fixture and readable failures."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest_plugins = ["pytester"]  # here, not in a conftest: pytest refuses pytest_plugins in a non-root conftest

INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"

#: An inner conftest standing in for spanfold's capture: traces appended to ``pending`` arrive on flush.
FAKE_CAPTURE = """
    from contextlib import contextmanager

    import pytest

    from spanfold.checks import captured
    from spanfold.trace import Message, ToolCall, Trace, TraceMeta


    def make(*names, answer="done"):
        events = [Message("user", "What is the weather in Paris?")]
        for i, name in enumerate(names):
            events.append(Message("assistant", None, tool_calls=[ToolCall(f"c{i}", name, {"city": "Paris"})]))
            events.append(Message("tool", f"{name} ok", tool_call_id=f"c{i}"))
        events.append(Message("assistant", answer))
        return Trace(events, TraceMeta(trace_id=f"t-{'-'.join(names)}"))


    class Fake:
        def __init__(self):
            self.sink, self.pending, self.flushes, self.opened, self.closed = [], [], 0, 0, 0

        @contextmanager
        def open(self):
            self.opened += 1
            yield self.sink
            self.closed += 1

        def flush(self):
            self.flushes += 1
            self.sink.extend(self.pending)
            self.pending.clear()


    @pytest.fixture(autouse=True)
    def fake(monkeypatch):
        f = Fake()
        monkeypatch.setattr(captured, "open_capture", f.open)
        monkeypatch.setattr(captured, "flush_traces", f.flush)
        return f
"""


@pytest.fixture
def fake_pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(INI)
    pytester.makeconftest(textwrap.dedent(FAKE_CAPTURE))
    return pytester


def test_plugin_registers_the_fixture(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    result = pytester.runpytest("--fixtures")
    result.stdout.fnmatch_lines(["*spanfold_traces*", "*captured in memory*"])


def test_reads_flush_first(fake_pytester: pytest.Pytester) -> None:
    fake_pytester.makepyfile(
        """
        from conftest import make

        def test_lazy(spanfold_traces, fake):
            assert fake.opened == 1 and fake.flushes == 0
            fake.pending.append(make("get_weather"))
            assert len(spanfold_traces) == 1 and fake.flushes == 1
            fake.pending.append(make("get_weather", "convert"))
            assert spanfold_traces.last.meta.trace_id == "t-get_weather-convert"
            assert [t.meta.trace_id for t in spanfold_traces] == ["t-get_weather", "t-get_weather-convert"]
            assert spanfold_traces[0].meta.trace_id == "t-get_weather"
            assert len(spanfold_traces.traces) == 2
            assert spanfold_traces.invariant()[0][0] == {"role": "user", "content": "What is the weather in Paris?"}

        def test_closed_after(fake):
            pass
        """
    )
    fake_pytester.runpytest().assert_outcomes(passed=2)


def test_passing_assertions(fake_pytester: pytest.Pytester) -> None:
    fake_pytester.makepyfile(
        """
        from conftest import make
        from spanfold.checks import assert_messages, assert_trajectory, tool_trajectory

        def test_ok(spanfold_traces, fake):
            fake.pending.append(make("get_weather", "get_weather", "answer"))
            trace = spanfold_traces.one()
            assert_trajectory(trace, ["get_weather", "answer"])
            assert_trajectory(trace, ["get_weather", "get_weather", "answer"], mode="exact")
            assert_trajectory(trace, minimums={"get_weather": 2}, mode="any_order")
            assert_trajectory(trace, [{"tool": "get_weather", "args": {"city": "Paris"}}], mode="superset")
            spec = [{"role": "user", "content": {"contains": "Paris"}}, {"role": "assistant", "content": "done"}]
            assert_messages(trace, spec)
            assert tool_trajectory(trace, mode="in_order", expected=["answer"])
        """
    )
    fake_pytester.runpytest().assert_outcomes(passed=1)


def test_failure_output_is_readable(fake_pytester: pytest.Pytester) -> None:
    fake_pytester.makepyfile(
        """
        from conftest import make
        from spanfold.checks import assert_messages, assert_trajectory, tool_trajectory

        def test_trajectory(spanfold_traces, fake):
            fake.pending.append(make("search", "answer"))
            assert_trajectory(spanfold_traces.last, ["search", "search", "answer"], mode="in_order")

        def test_messages(spanfold_traces, fake):
            fake.pending.append(make("search"))
            assert_messages(spanfold_traces.last, [{"role": "assistant", "content": {"regex": "^sunny"}}])

        def test_plain_assert(spanfold_traces, fake):
            fake.pending.append(make("b"))
            assert tool_trajectory(spanfold_traces.last, mode="exact", expected=["a"])

        def test_compare(spanfold_traces, fake):
            fake.pending.append(make("b"))
            assert tool_trajectory(spanfold_traces.last, mode="exact", expected=["a"], name="first") == True

        def test_nothing_captured(spanfold_traces):
            assert_trajectory(spanfold_traces.last, ["a"])
        """
    )
    result = fake_pytester.runpytest("-q")
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: tool_trajectory (in_order) failed: score 0.67 < threshold 1.00",
            '*  - call 2: expected search (expected?1?) but got answer(city="Paris"); no later call matches',
            "*actual tool calls:",
            '*  1. search(city="Paris")',
            '*  2. answer(city="Paris")',
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: expected_messages failed: score 0.00 < threshold 1.00",
            "*expected_messages?0? (assistant text matching /^sunny/): not found in the trace; closest: event 2 *",
            "*actual messages:",
            '*  event 1 user: "What is the weather in Paris?"',
            '*  event 2 assistant: -> search(city="Paris")',
            '*  event 4 assistant: "done"',
        ]
    )
    result.stdout.fnmatch_lines(["*assert CheckResult(tool_trajectory: FAIL (score 0.00, threshold 1.00)*"])
    result.stdout.fnmatch_lines(['*call 1: expected a but got b(city="Paris")*'])
    result.stdout.fnmatch_lines(["*first FAIL (score 0.00, threshold 1.00)*"])
    result.stdout.fnmatch_lines(["*NoTraceError: spanfold captured no traces in this test*"])
    # the helpers hide their own frames: the failure points at the test's line
    assert "asserts.py" not in result.stdout.str()


def test_plugin_import_is_cheap() -> None:
    code = (
        "import sys, spanfold.checks.pytest_plugin as p; "
        "print(sorted(m for m in ('yaml', 'spanfold.setup', 'spanfold.checks.spec', 'opentelemetry.sdk.trace') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _capture_available() -> bool:
    try:
        import openai  # noqa: F401

        from spanfold.setup import capture_traces  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _capture_available(), reason="spanfold.setup.capture_traces (or openai) not importable yet")
def test_real_capture_with_the_mock_server(pytester: pytest.Pytester) -> None:
    """The whole path: the real openai SDK against the mock server, folded in memory, checked."""
    pytester.makeini(INI)
    pytester.makepyfile(
        """
        import json

        import openai

        from spanfold.checks import assert_messages, assert_trajectory
        from spanfold.testing import MockLLMServer, scenarios

        def run_agent(base_url):
            client = openai.OpenAI(api_key="test-key", base_url=base_url, max_retries=0)
            messages = [{"role": "user", "content": "Weather in Paris and Tokyo, in fahrenheit?"}]
            for _ in range(6):
                msg = client.chat.completions.create(
                    model="gpt-4o-mini", messages=messages, tools=scenarios.WEATHER_TOOLS_OPENAI
                ).choices[0].message
                messages.append(msg)
                if not msg.tool_calls:
                    return msg.content
                for call in msg.tool_calls:
                    result = scenarios.run_weather_tool(call.function.name, json.loads(call.function.arguments))
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

        def test_weather_agent(spanfold_traces):
            with MockLLMServer(scenarios.weather_agent) as server:
                run_agent(server.base_url)
            trace = spanfold_traces.last
            assert_trajectory(trace, ["get_weather", "get_weather", "convert_temperature"], mode="exact")
            assert_trajectory(trace, [{"tool": "get_weather", "args": {"city": "Tokyo"}}], mode="superset")
            assert_messages(trace, [
                {"role": "user", "content": {"contains": "Paris"}},
                {"role": "assistant", "tool_calls": [{"tool": "get_weather", "input": {"city": "Paris"}},
                                                     {"tool": "get_weather", "input": {"city": "Tokyo"}}]},
                {"role": "assistant", "content": {"contains": "Fahrenheit"}},
            ])

        def test_wrong_expectation_fails(spanfold_traces):
            with MockLLMServer(scenarios.weather_agent) as server:
                run_agent(server.base_url)
            assert_trajectory(spanfold_traces.last, ["search"], mode="in_order")
        """
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(['*call 1: expected search (expected?0?) but got get_weather(city="Paris")*'])
