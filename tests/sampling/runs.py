"""Runs with seeded failures for the sampling tests: the real openai SDK over real HTTP to the mock server, each run an
agent span around one chat call, its kind (ok, fail, slow, pricey, wrong) in the question."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import openai
from opentelemetry import trace

import spanfold
from spanfold.testing import MockLLMServer, MockRequest, Reply, Usage

MODEL = "gpt-4o-mini"
#: What a million tokens of the mock's model cost in these tests (US dollars), so a "pricey" run costs $2.
PRICES = [{"model": MODEL, "input_mtok": 1.0, "output_mtok": 1.0}]
SLOW_S = 0.1
KINDS = ("ok", "fail", "slow", "pricey", "wrong")


def responder(request: MockRequest) -> Reply:
    """The reply each kind of run gets: ``fail`` a 500, ``pricey`` two million output tokens, ``wrong`` an answer the
    check refuses; else a short text."""
    question = request.last_user_text() or ""
    kind = question.split(" ", 1)[0]
    if kind == "fail":
        return Reply.error(500, "seeded failure", should_retry=False)
    if kind == "pricey":
        return Reply.text("an expensive answer", usage=Usage(input_tokens=10, output_tokens=2_000_000))
    if kind == "wrong":
        return Reply.text("WRONG")
    return Reply.text(f"answer to {question}")


def answer_is_right(trace: Any) -> bool:
    """The check the sampler is given: a run passes unless its last event says WRONG."""
    return not (trace.events and trace.events[-1].content == "WRONG")


@dataclass
class Played:
    kind: str
    question: str
    trace_id: int


def seeded_kinds(n: int, seed: int = 50) -> list[str]:
    """``n`` kinds: about 4% each of the failing kinds, the rest ``ok``; the same for a seed."""
    rng = random.Random(seed)
    return [rng.choices(KINDS, weights=(84, 4, 4, 4, 4))[0] for _ in range(n)]


def play(server: MockLLMServer, kinds: list[str]) -> Iterator[Played]:
    """One run per kind, in order."""
    client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    for i, kind in enumerate(kinds):
        question = f"{kind} {i}"
        trace_id = 0
        try:
            with spanfold.agent("sampled-bot"):
                trace_id = trace.get_current_span().get_span_context().trace_id
                client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": question}])
                if kind == "slow":
                    time.sleep(SLOW_S)
        except openai.InternalServerError:
            assert kind == "fail"
        yield Played(kind, question, trace_id)
