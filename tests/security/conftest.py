"""Security fixtures: spanfold.init() writing every file it can (JSONL and per-trace JSON) beside an in-memory copy of
every span the process made, agent runs over every API through the real SDKs to the embedded mock server (over real
HTTP), and a scan of everything recorded."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import spanfold
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

OPENAI_KEY = "sk-proj-SECRETopenaiKEY0123456789abcdefXYZ"
ANTHROPIC_KEY = "sk-ant-api03-SECRETanthropicKEY0123456789abcdef"
CUSTOM_TOKEN = "Bearer custom-SECRET-token-9f8e7d6c5b4a"
ORG_ID = "org-SECRETorganisation42"
BASIC_PASSWORD = "SECRETbasicPass77"
#: Everything that must never be recorded: the keys, header values, and a distinctive core of each.
CREDENTIALS = [OPENAI_KEY, ANTHROPIC_KEY, CUSTOM_TOKEN, ORG_ID, BASIC_PASSWORD, "SECRETopenaiKEY", "SECRETanthropicKEY",
               "custom-SECRET-token", "SECRETorganisation", "SECRETbasic"]  # fmt: skip


@dataclass
class Recorded:
    """Everything spanfold recorded: the spans (as text) and every file under the output directory."""

    spans: str
    files: dict[str, str]

    @property
    def text(self) -> str:
        return self.spans + "\n".join(self.files.values())

    def missing(self, needles: list[str]) -> list[str]:
        """The needles found nowhere (a check that content we expect to see was recorded at all)."""
        return [n for n in needles if n not in self.text]

    def leaks(self, needles: list[str]) -> list[tuple[str, str]]:
        """(needle, where) for every needle found in a span or a file."""
        out = [(n, "spans") for n in needles if n in self.spans]
        out += [(n, name) for name, body in self.files.items() for n in needles if n in body]
        return out


def span_dump(spans: Any) -> str:
    rows = []
    for s in spans:
        rows.append(
            {
                "name": s.name,
                "attributes": dict(s.attributes or {}),
                "events": [(e.name, dict(e.attributes or {})) for e in s.events],
                "status": s.status.description,
                "resource": dict(s.resource.attributes),
                "links": [dict(link.attributes or {}) for link in s.links],
            }
        )
    return json.dumps(rows, default=str, ensure_ascii=False)


@dataclass
class Session:
    directory: Path
    exporter: Any

    def recorded(self) -> Recorded:
        assert spanfold.flush(timeout=30)
        files = {
            str(p.relative_to(self.directory)): p.read_bytes().decode("utf-8", "replace")
            for p in sorted(self.directory.rglob("*"))
            if p.is_file()
        }
        return Recorded(span_dump(self.exporter.get_finished_spans()), files)


@pytest.fixture
def session(tmp_path: Path, global_spans: Any) -> Iterator[Callable[..., Session]]:
    """``session(**init_options)``: spanfold.init() into a fresh directory (JSONL and per-trace JSON files)."""

    def start(**options: Any) -> Session:
        directory = tmp_path / "traces"
        spanfold.init(output=str(directory), file_per_trace=True, **options)
        return Session(directory, global_spans)

    yield start
    spanfold.shutdown()


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as srv:
        yield srv


# --- the agent runs ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Texts:
    """The content an agent run sends and receives; tests plant markers or secrets in them."""

    system: str = "You are the weather bot."
    prompt: str = "What is the weather in Paris?"
    arguments: str = "Paris"
    result: str = "sunny, 21 C"
    answer: str = "It is sunny in Paris."


def run_everything(server: MockLLMServer, texts: Texts, **client_options: Any) -> None:
    """One agent run per API and mode (OpenAI chat plain and streaming, Responses, Anthropic plain and streaming), each
    a tool call, a traced tool and the final answer; then a failing call of each provider."""

    @spanfold.tool(name="get_weather")
    def get_weather(city: str) -> str:
        return texts.result

    oa = openai.OpenAI(
        api_key=OPENAI_KEY, base_url=server.base_url, max_retries=0, organization=ORG_ID, **client_options
    )
    an = anthropic.Anthropic(api_key=ANTHROPIC_KEY, base_url=server.anthropic_base_url, max_retries=0, **client_options)
    call = Reply.tools([ToolCallSpec("get_weather", {"city": texts.arguments})])
    final = Reply.text(texts.answer)

    for stream in (False, True):
        server.script(call, final)
        with spanfold.agent("chat-bot"):
            history: list[Any] = [
                {"role": "system", "content": texts.system},
                {"role": "user", "content": texts.prompt},
            ]
            first = _chat(oa, history, stream)
            tool_call = first["tool_calls"][0]
            result = get_weather(json.loads(tool_call["function"]["arguments"])["city"], tool_call_id=tool_call["id"])
            history += [first, {"role": "tool", "tool_call_id": tool_call["id"], "content": result}]
            _chat(oa, history, stream)

    server.script(call, final)
    with spanfold.agent("responses-bot"):
        r1 = oa.responses.create(model="gpt-4o", instructions=texts.system, input=texts.prompt)
        fc = next(item for item in r1.output if item.type == "function_call")
        out = get_weather(json.loads(fc.arguments)["city"], tool_call_id=fc.call_id)
        oa.responses.create(
            model="gpt-4o",
            instructions=texts.system,
            previous_response_id=r1.id,
            input=[{"type": "function_call_output", "call_id": fc.call_id, "output": out}],
        )

    for stream in (False, True):
        server.script(call, final)
        with spanfold.agent("claude-bot"):
            messages: list[Any] = [{"role": "user", "content": texts.prompt}]
            content = _claude(an, texts.system, messages, stream)
            use = next(b for b in content if b["type"] == "tool_use")
            result = get_weather(use["input"]["city"], tool_call_id=use["id"])
            messages += [
                {"role": "assistant", "content": content},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": result}]},
            ]
            _claude(an, texts.system, messages, stream)

    server.script(Reply.error(401, "Incorrect API key provided.", should_retry=False))
    with pytest.raises(openai.AuthenticationError):
        oa.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": texts.prompt}])
    server.script(Reply.error(401, "invalid x-api-key", should_retry=False))
    with pytest.raises(anthropic.AuthenticationError):
        an.messages.create(model="claude-x", max_tokens=64, messages=[{"role": "user", "content": texts.prompt}])


def _chat(client: Any, history: list[Any], stream: bool) -> dict[str, Any]:
    if not stream:
        message = client.chat.completions.create(model="gpt-4o", messages=history).choices[0].message
        return message.model_dump(exclude_none=True)
    with client.chat.completions.stream(model="gpt-4o", messages=history) as s:
        return s.get_final_completion().choices[0].message.model_dump(exclude_none=True)


def _claude(client: Any, system: str, messages: list[Any], stream: bool) -> list[dict[str, Any]]:
    if not stream:
        msg = client.messages.create(model="claude-x", max_tokens=256, system=system, messages=messages)
    else:
        with client.messages.stream(model="claude-x", max_tokens=256, system=system, messages=messages) as s:
            msg = s.get_final_message()
    return [b.model_dump(exclude_none=True) for b in msg.content]
