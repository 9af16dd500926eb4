"""Instructor under spanfold.init() (its own venv, ``.ci/frameworks``: it pins ``jiter < 0.15``, older than the test
environment's openai allows): ``instructor.from_openai`` on the real openai SDK against the embedded mock server. An
extraction is one ``invoke_workflow extract {Model}`` step, each attempt a model call under it: a reply that fails
validation, the validation error Instructor sends back as the tool output, the attempt that passes; the parsed output
on the span; retries run out: the run failed. Asserted event by event."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import instructor
import openai
import pytest
from instructor.core.exceptions import InstructorRetryException
from opentelemetry.trace import StatusCode
from pydantic import BaseModel

from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

from ..conftest import Traced, traced_into
from ..semconv.names_check import unlisted
from .contract import Contract, Framework, events_are


class User(BaseModel):
    name: str
    age: int


QUESTION = {"role": "user", "content": "Jason is 25 years old"}
WRONG = {"name": "Jason", "age": "twenty"}
RIGHT = {"name": "Jason", "age": 25}
#: What Instructor sends back after the first reply (pydantic's message, Instructor's request to fix it).
VALIDATION_ERROR = (
    "Validation Error found:\n1 validation error for User\nage\n  Input should be a valid integer [type=int_type, "
    "input_value='twenty', input_type=str]\n    For further information visit https://errors.pydantic.dev/2.14/v/int_type"
    "\nRecall the function correctly, fix the errors"
)


def extraction(call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": "User", "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def client(server: MockLLMServer) -> Any:
    return instructor.from_openai(openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0))


def extract(server: MockLLMServer, max_retries: int = 2) -> User:
    return client(server).chat.completions.create(
        model="gpt-4o-mini", response_model=User, max_retries=max_retries, messages=[QUESTION]
    )


def workflow_spans(global_spans: Any) -> list[Any]:
    return [s for s in global_spans.get_finished_spans() if s.name.startswith("invoke_workflow")]


def test_an_extraction_with_a_retry_is_one_run_with_every_attempt(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        server.script(Reply.tools([ToolCallSpec("User", WRONG)]), Reply.tools([ToolCallSpec("User", RIGHT)]))
        user = extract(server)
    assert user.model_dump() == RIGHT
    assert traced.one() == [
        QUESTION,
        extraction("call_mock_1", WRONG),
        {"role": "tool", "content": VALIDATION_ERROR, "tool_call_id": "call_mock_1"},
        extraction("call_mock_2", RIGHT),
    ]
    meta = traced.metas()[0]["metadata"]
    assert meta["name"] == "extract User" and meta["status"] == "complete"
    assert [step["kind"] for step in meta["steps"]] == ["model", "model"]
    (span,) = workflow_spans(global_spans)
    assert span.name == "invoke_workflow extract User"
    assert span.attributes["gen_ai.workflow.name"] == "extract User"
    assert json.loads(span.attributes["output.value"]) == RIGHT
    chats = [s for s in global_spans.get_finished_spans() if s.name.startswith("chat")]
    assert len(chats) == 2 and all(s.parent.span_id == span.context.span_id for s in chats)
    assert not unlisted(global_spans.get_finished_spans())


def test_retries_that_run_out_fail_the_run(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        server.script(Reply.tools([ToolCallSpec("User", WRONG)]), Reply.tools([ToolCallSpec("User", WRONG)]))
        with pytest.raises(InstructorRetryException):
            extract(server, max_retries=1)
    events = traced.one()
    assert [e["role"] for e in events] == ["user", "assistant", "tool", "assistant"]
    assert traced.metas()[0]["metadata"]["status"] == "error"
    (span,) = workflow_spans(global_spans)
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "instructor.v2.core.errors.InstructorRetryException"


def test_an_async_extraction(traced: Traced, global_spans: Any) -> None:
    async def run(server: MockLLMServer) -> User:
        aclient = instructor.from_openai(openai.AsyncOpenAI(api_key="k", base_url=server.base_url, max_retries=0))
        result: User = await aclient.chat.completions.create(
            model="gpt-4o-mini", response_model=User, messages=[QUESTION]
        )
        return result

    with MockLLMServer() as server:
        server.script(Reply.tools([ToolCallSpec("User", RIGHT)]))
        assert asyncio.run(run(server)).model_dump() == RIGHT
    assert traced.one() == [QUESTION, extraction("call_mock_1", RIGHT)]
    assert traced.metas()[0]["metadata"]["name"] == "extract User"
    assert json.loads(workflow_spans(global_spans)[0].attributes["output.value"]) == RIGHT


class TestContract(Contract):
    @pytest.fixture
    def framework(self) -> Framework:
        """An extraction inside the application's run is a step of that run, with the run's other model calls."""
        summary = {"role": "user", "content": "Summarise Jason"}

        def run(server: MockLLMServer) -> None:
            server.script(Reply.tools([ToolCallSpec("User", RIGHT)]), Reply.text("Jason is 25."))
            extract(server)
            openai.OpenAI(api_key="k", base_url=server.base_url).chat.completions.create(
                model="gpt-4o-mini", messages=[summary]
            )

        said = [QUESTION, extraction("call_mock_1", RIGHT), summary, {"role": "assistant", "content": "Jason is 25."}]
        return Framework(run, events_are(said), nested=("invoke_workflow extract User",))


def test_a_call_without_a_response_model_is_the_clients_call_alone(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        server.script(Reply.text("Hello"))
        client(server).chat.completions.create(model="gpt-4o-mini", response_model=None, messages=[QUESTION])
    assert workflow_spans(global_spans) == []
    assert traced.one() == [QUESTION, {"role": "assistant", "content": "Hello"}]


def test_with_content_capture_off_the_output_is_not_recorded(traced_off: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        server.script(Reply.tools([ToolCallSpec("User", RIGHT)]))
        extract(server)
    (span,) = workflow_spans(global_spans)
    assert "output.value" not in span.attributes
    assert traced_off.metas()[0]["metadata"]["name"] == "extract User"


def test_redaction_applies_to_the_events_and_the_parsed_output(
    tmp_path: Any, _global_provider: Any, global_spans: Any
) -> None:
    with traced_into(tmp_path / "traces", redact=lambda text: text.replace("Jason", "[name]")) as traced:
        with MockLLMServer() as server:
            server.script(Reply.tools([ToolCallSpec("User", RIGHT)]))
            assert extract(server).name == "Jason"  # the application's own result untouched
        events = traced.one()
    assert "Jason" not in json.dumps(events)
    (span,) = workflow_spans(global_spans)
    assert json.loads(span.attributes["output.value"]) == {"name": "[name]", "age": 25}


def test_a_streamed_partial_extraction_is_one_run(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        server.script(Reply.tools([ToolCallSpec("User", RIGHT)]))
        partials = list(
            client(server).chat.completions.create_partial(
                model="gpt-4o-mini", response_model=User, messages=[QUESTION]
            )
        )
        assert server.requests[0].body.get("stream") is True
    assert partials[-1].model_dump() == RIGHT
    assert traced.one() == [QUESTION, extraction("call_mock_1", RIGHT)]
    assert traced.metas()[0]["metadata"]["name"].startswith("extract")
    assert len(workflow_spans(global_spans)) == 1
