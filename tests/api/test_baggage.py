"""Opt-in W3C baggage (``spanfold.init(baggage=True)`` / ``SPANFOLD_BAGGAGE``) across two real processes on loopback:
a tiny HTTP front end opens ``spanfold.context(user_id=, session_id=)`` and calls the agent service, its request's
headers made by OpenTelemetry's global propagator (``propagate.inject``: what every HTTP instrumentation calls); the
agent service takes the request's context as a server instrumentation does (``propagate.extract`` +
``context.attach``) and runs an agent (the real openai SDK to the mock server) folded by ``spanfold.init()``. The
agent's folded run's metadata line is asserted, with baggage on both sides, off on either, and with the agent's own
context naming a user."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import baggage as otel_baggage
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import TracerProvider

import spanfold
from spanfold import counters
from spanfold.api import baggage
from spanfold.api.processor import ContextSpanProcessor

AGENT = textwrap.dedent(
    """
    import json, os, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer

    import openai
    from opentelemetry import context, propagate

    import spanfold
    from spanfold.testing import MockLLMServer

    spanfold.init(output=sys.argv[1])
    own = json.loads(sys.argv[2])  # the agent service's own spanfold.context, if any

    class Agent(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            token = context.attach(propagate.extract(self.headers))  # what a server instrumentation does
            try:
                with MockLLMServer() as server, spanfold.context(**own), spanfold.agent("support"):
                    client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
                    client.chat.completions.create(
                        model="gpt-4o-mini", messages=[{"role": "user", "content": "Where is my order?"}]
                    )
            finally:
                context.detach(token)
            spanfold.flush(timeout=30)
            body = json.dumps({"baggage": self.headers.get("baggage"), "traceparent": self.headers.get("traceparent")})
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Agent)
    print(httpd.server_address[1], flush=True)
    httpd.handle_request()
    """
)

FRONT_END = textwrap.dedent(
    """
    import json, sys, urllib.request

    from opentelemetry import propagate, trace

    import spanfold

    spanfold.init(output=sys.argv[1])
    tracer = trace.get_tracer("front-end")
    with spanfold.context(user_id="u-42", session_id="chat-7", tags=["web"]):
        with tracer.start_as_current_span("POST /ask"):
            headers = {"content-type": "application/json"}
            propagate.inject(headers)  # what the HTTP client instrumentation does on every request
            request = urllib.request.Request(sys.argv[2], data=b"{}", headers=headers, method="POST")
            with urllib.request.urlopen(request, timeout=60) as response:
                print(response.read().decode())
    """
)


def serve_and_call(
    tmp_path: Path, *, front_end: bool, agent: bool, own: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the agent service and the front end (each with ``SPANFOLD_BAGGAGE`` as given); what the agent received
    and its run's metadata line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPANFOLD_", "OTEL_"))}
    agent_dir, front_dir = tmp_path / "agent", tmp_path / "front"
    server = subprocess.Popen(
        [sys.executable, "-c", AGENT, str(agent_dir), json.dumps(own or {})],
        env={**env, "SPANFOLD_BAGGAGE": "1" if agent else "0"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        client = subprocess.run(
            [sys.executable, "-c", FRONT_END, str(front_dir), f"http://127.0.0.1:{port}/ask"],
            env={**env, "SPANFOLD_BAGGAGE": "1" if front_end else "0"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert client.returncode == 0, client.stderr
        assert server.wait(timeout=60) == 0, server.stderr.read() if server.stderr else ""
    finally:
        if server.poll() is None:
            server.kill()
    received = json.loads(client.stdout.strip().splitlines()[-1])
    metas = [json.loads(line)["metadata"] for line in (agent_dir / "traces.meta.jsonl").read_text().splitlines()]
    assert len(metas) == 1
    return received, metas[0]


def test_the_front_end_s_user_and_session_reach_the_agent_s_run(tmp_path: Path) -> None:
    received, meta = serve_and_call(tmp_path, front_end=True, agent=True)
    entries = dict(item.strip().split("=", 1) for item in received["baggage"].split(","))
    assert entries == {"user.id": "u-42", "session.id": "chat-7"}  # the header, as sent (tags stay home)
    assert meta["user_id"] == "u-42"
    assert meta["session_id"] == "chat-7"
    assert "tags" not in meta
    front_trace = received["traceparent"].split("-")[1]  # one OTel trace across the two services
    assert front_trace in [meta["trace_id"], *meta.get("otel_trace_ids", [])]


def test_an_agent_without_baggage_on_ignores_the_header(tmp_path: Path) -> None:
    received, meta = serve_and_call(tmp_path, front_end=True, agent=False)
    assert "user.id=u-42" in received["baggage"]
    assert "user_id" not in meta and "session_id" not in meta


def test_a_front_end_without_baggage_on_sends_none(tmp_path: Path) -> None:
    received, meta = serve_and_call(tmp_path, front_end=False, agent=True)
    assert received["baggage"] is None and received["traceparent"]
    assert "user_id" not in meta and "session_id" not in meta


def test_the_agent_s_own_context_wins_key_by_key(tmp_path: Path) -> None:
    _, meta = serve_and_call(tmp_path, front_end=True, agent=True, own={"user_id": "u-local", "tags": ["agent"]})
    assert (meta["user_id"], meta["session_id"], meta["tags"]) == ("u-local", "chat-7", ["agent"])


# --- in one process: the pieces --------------------------------------------------------------------------------------


@pytest.fixture
def baggage_on() -> Any:
    baggage.activate(True)
    yield
    baggage.activate(False)


def test_a_context_puts_its_user_and_session_in_the_baggage_only_when_on(baggage_on: Any) -> None:
    with spanfold.context(user_id="u-1", session_id="s-1"), spanfold.context(user_id="u-2", tags=["x"]):
        assert otel_baggage.get_all() == {"user.id": "u-2", "session.id": "s-1"}
    assert otel_baggage.get_all() == {}
    baggage.activate(False)
    with spanfold.context(user_id="u-1"):
        assert otel_baggage.get_all() == {}


def test_an_incoming_value_that_is_no_id_is_refused_and_counted(baggage_on: Any) -> None:
    provider = TracerProvider()
    provider.add_span_processor(ContextSpanProcessor())
    tracer = provider.get_tracer("t")
    ctx = otel_baggage.set_baggage("user.id", "x" * 300, otel_baggage.set_baggage("session.id", "s-9"))
    before = counters.snapshot().get("context.baggage_refused", 0)
    token = otel_context.attach(ctx)
    try:
        with tracer.start_as_current_span("step") as span:
            attributes = dict(span.attributes or {})  # type: ignore[attr-defined]
    finally:
        otel_context.detach(token)
    assert "user.id" not in attributes
    assert attributes["session.id"] == "s-9" and attributes["gen_ai.conversation.id"] == "s-9"
    assert counters.snapshot()["context.baggage_refused"] == before + 1


def test_the_option_reads_its_environment_variable() -> None:
    from spanfold import config

    assert config.load({}, environ={}).baggage is False
    assert config.load({}, environ={"SPANFOLD_BAGGAGE": "true"}).baggage is True
    assert config.load({"baggage": True}, environ={}).baggage is True
