"""Multi-tenant stitching in the fold: another producer's spans (the official ``opentelemetry-instrumentation-
openai-v2``, latest experimental attributes, no agent span) exported over OTLP/HTTP to a real ``spanfold serve``.

The fold decides for un-parented calls of other producers by the same rule as the source
(:mod:`spanfold.stitching.evidence`): two users whose conversations open alike (one system prompt, "Hi", the same
greeting back) are never merged, and a user's failed call never adopts another user's identical opening. The fold
cannot see where a call was made, so a later call joins a conversation only on evidence no other user could bring (a
tool-call id its model made, a response id, a conversation id): a plain chat's next turn, whose history a stored
transcript could read alike, is a trace of its own, counted (``stitch_splits``, ``no_context``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from spanfold.testing import MockLLMServer, MockRequest, Reply

from .producers import environ, instrumented

SYSTEM = "You are the support assistant of Example Bank. Be brief."
GREETING = "Hello! How can I help?"
A_PRIVATE = "my account number is A-123-456"
B_PRIVATE = "my account number is B-987-654"
B_MORE = "and block my card B-987-654"


def answerer() -> Any:
    """Identical inputs, identical answers ("Hi" gets the same greeting back), but the first "Hi there" is refused."""
    refused: list[str] = []

    def answer(request: MockRequest) -> Reply:
        text = request.last_user_text() or ""
        if text == "Hi there" and not refused:
            refused.append(text)
            return Reply.error(429, "Rate limit reached", should_retry=False)
        return Reply.text(GREETING if text.startswith("Hi") else f"Noted: {text}")

    return answer


class Serve:
    """``spanfold serve --port 0`` in a child process; :meth:`stop` ends it (SIGINT: it folds and writes what it
    holds) and returns the traces written."""

    def __init__(self, out: Path) -> None:
        self.out = out
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        cmd = [sys.executable, "-m", "spanfold", "serve", "--port", "0", "-o", str(out)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        assert "listening on http://" in line, line
        self.endpoint = line.split("listening on ", 1)[1].split(",", 1)[0]

    def stop(self) -> list[list[dict[str, Any]]]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        path = self.out / "traces.jsonl"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    s = Serve(tmp_path / "out")
    try:
        yield s
    finally:
        s.stop()
        for stream in (s.proc.stdout, s.proc.stderr):
            if stream is not None:
                stream.close()


def _chat(client: openai.OpenAI, history: list[dict[str, Any]], text: str) -> str | None:
    """One user turn: a new list built from the stored history (as a server loading it from a database)."""
    messages = [{"role": "system", "content": SYSTEM}, *history, {"role": "user", "content": text}]
    try:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)  # type: ignore[arg-type]
    except openai.RateLimitError:
        return None
    content = reply.choices[0].message.content
    history += [{"role": "user", "content": text}, {"role": "assistant", "content": content}]
    return content


def _run_users(endpoint: str) -> None:
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    provider = TracerProvider(resource=Resource.create({"service.name": "bank-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    env = {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
    }
    try:
        with (
            environ(**env),
            instrumented(OpenAIInstrumentor(), tracer_provider=provider),
            MockLLMServer(answerer()) as server,
        ):
            client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
            a: list[dict[str, Any]] = []
            b: list[dict[str, Any]] = []
            c: list[dict[str, Any]] = []
            assert _chat(client, a, "Hi") == GREETING  # two users open alike
            assert _chat(client, b, "Hi") == GREETING
            _chat(client, a, A_PRIVATE)
            _chat(client, b, B_PRIVATE)
            assert _chat(client, c, "Hi there") is None  # user C's call fails, and C gives up
            d: list[dict[str, Any]] = []
            assert _chat(client, d, "Hi there") == GREETING  # user D opens as C did: never C's retry
            _chat(client, d, "D goes on")
            _chat(client, b, B_MORE)  # B's history is plain text: the fold cannot tell it from a stored transcript
    finally:
        provider.shutdown()


def _owners(contents: list[Any]) -> set[str]:
    marks = {"A": "A-123", "B": "B-987", "D": "D goes"}
    return {user for user, mark in marks.items() if any(isinstance(t, str) and mark in t for t in contents)}


def test_users_who_open_alike_are_never_merged_by_the_fold(serve: Serve) -> None:
    _run_users(serve.endpoint)
    traces = serve.stop()
    texts = [[e.get("content") for e in events] for events in traces]
    for contents in texts:
        assert len(_owners(contents)) <= 1, contents  # no trace holds two users' messages
    # A's private turn and B's first private turn extend a history both hold: each its own trace (a split, counted)
    assert [t for t in texts if any(isinstance(x, str) and A_PRIVATE in x for x in t)] == [
        [SYSTEM, "Hi", GREETING, A_PRIVATE, f"Noted: {A_PRIVATE}"]
    ]
    # B's later turn extends B's own call, by text alone: a trace of its own (what it was handed, then its turn)
    assert [t for t in texts if any(isinstance(x, str) and "B-987" in x for x in t)] == [
        [SYSTEM, "Hi", GREETING, B_PRIVATE, f"Noted: {B_PRIVATE}"],
        [SYSTEM, "Hi", GREETING, B_PRIVATE, f"Noted: {B_PRIVATE}", B_MORE, f"Noted: {B_MORE}"],
    ]
    # C's failed call is a trace of its own, with nobody else's messages in it; D's run is one trace
    (failed,) = [events for events in traces if any(e["role"] == "error" for e in events)]
    assert [e["role"] for e in failed] == ["system", "user", "error"]
    assert [e.get("content") for e in failed][:2] == [SYSTEM, "Hi there"]
    assert [t for t in texts if "D goes on" in t] == [[SYSTEM, "Hi there", GREETING, "D goes on", "Noted: D goes on"]]
    assert len(traces) == 8  # A's and B's greetings, A's turn, B's two turns, C's failure, D's greeting and turn
