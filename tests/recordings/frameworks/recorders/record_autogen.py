# ruff: noqa  # a recorder script, run by hand (see ../README.md), not part of the suite
"""An AutoGen AgentChat team (the weather agent and a critic taking turns, ``RoundRobinGroupChat``) against the
embedded mock server, with AutoGen's own spans and spanfold's openai and AutoGen instrumentors, as OTLP/JSON: the
spans of the team's run (one trace). Run in a venv with spanfold, ``autogen-agentchat``, ``autogen-ext[openai]`` and
``opentelemetry-exporter-otlp-proto-common``: ``python record_autogen.py ../autogen_team.otlp.json``."""

import asyncio
import base64
import json
import sys
import warnings

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.autogen import AutoGenInstrumentor
from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor
from spanfold.testing import WEATHER, MockLLMServer, Reply, ToolCallSpec, scenarios

warnings.simplefilter("ignore")
exp = InMemorySpanExporter()
tp = TracerProvider()
tp.add_span_processor(SimpleSpanProcessor(exp))
trace.set_tracer_provider(tp)
for instrumentor in (OpenAIInstrumentor(), AutoGenInstrumentor()):
    instrumentor.instrument(tracer_provider=tp, runtime=Runtime(capture_content=True))

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.models import ModelInfo
from autogen_ext.models.openai import OpenAIChatCompletionClient

INFO = ModelInfo(vision=False, function_calling=True, json_output=False, family="unknown", structured_output=False)


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return scenarios.get_weather(city)


def convert_temperature(celsius: float, to: str = "fahrenheit") -> str:
    """Convert a temperature in degrees Celsius to another unit."""
    return scenarios.convert_temperature(celsius, to)


async def main() -> None:
    with MockLLMServer() as server:
        server.script(
            Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]),
            Reply.text("Say it in Fahrenheit."),
            Reply.tools([ToolCallSpec("convert_temperature", {"celsius": 18})]),
        )

        def client() -> OpenAIChatCompletionClient:
            return OpenAIChatCompletionClient(
                model="weather-model", base_url=server.base_url, api_key="test", model_info=INFO, max_retries=0
            )

        agent = AssistantAgent(
            "weather_agent",
            model_client=client(),
            tools=[get_weather, convert_temperature],
            system_message=WEATHER.system,
        )
        critic = AssistantAgent("critic", model_client=client(), system_message="Critique the answer.")
        team = RoundRobinGroupChat([agent, critic], termination_condition=MaxMessageTermination(4), name="weather_team")
        result = await team.run(task="Weather in Paris?")
        print(result.messages[-1].to_text(), file=sys.stderr)


asyncio.run(main())
tp.force_flush()
spans = exp.get_finished_spans()
(team,) = [s for s in spans if s.name == "invoke_agent weather_team"]
run = [s for s in spans if s.context.trace_id == team.context.trace_id]  # not the agents' create_agent spans
doc = MessageToDict(encode_spans(run), use_integers_for_enums=True)


def hexids(n):
    if isinstance(n, list):
        return [hexids(v) for v in n]
    if not isinstance(n, dict):
        return n
    return {
        k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else hexids(v))
        for k, v in n.items()
    }


json.dump(hexids(doc), open(sys.argv[1], "w"), indent=1, ensure_ascii=False)
