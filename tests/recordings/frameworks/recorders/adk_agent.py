# ruff: noqa  # a recorder script, run by hand (see ../README.md), not part of the suite
import asyncio
import base64
import json
import os
import sys

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exp = InMemorySpanExporter()
tp = TracerProvider()
tp.add_span_processor(SimpleSpanProcessor(exp))
trace.set_tracer_provider(tp)
LITELLM = os.environ.get("MODEL") == "litellm"  # ADK's LiteLlm model (OpenAI Chat Completions) instead of Gemini
if os.environ.get("SPANFOLD_PATCH"):  # spanfold's provider patch beside ADK's own spans (spanfold installed here)
    from spanfold.content.runtime import Runtime

    if LITELLM:
        from spanfold.instrumentation.providers.litellm import LiteLLMInstrumentor as Instrumentor
    else:
        from spanfold.instrumentation.providers.gemini.patches import GeminiInstrumentor as Instrumentor

    Instrumentor().instrument(tracer_provider=tp, runtime=Runtime(capture_content=True))
from google.adk.agents import LlmAgent
from google.adk.models import Gemini
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

FORECASTS = {"paris": "Paris: 18°C, sunny", "tokyo": "Tokyo: 24°C, cloudy"}


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return FORECASTS[city.lower()]


def convert_temperature(celsius: float, to: str) -> str:
    """Convert a temperature in degrees Celsius to another unit."""
    f = round(celsius * 9 / 5 + 32, 2)
    return f"{int(celsius) if celsius == int(celsius) else celsius}°C is {f}°F"


async def main():
    if LITELLM:
        from google.adk.models.lite_llm import LiteLlm

        model = LiteLlm(model="openai/gpt-4o-mini", api_base=os.environ["OPENAI_BASE_URL"], api_key="test-key")
    else:
        model = Gemini(model="gemini-2.0-flash", base_url=os.environ["GEMINI_BASE_URL"])
    agent = LlmAgent(
        name="weather_bot", model=model, instruction=os.environ["SYSTEM"], tools=[get_weather, convert_temperature]
    )
    runner = Runner(agent=agent, app_name="weather", session_service=InMemorySessionService(), auto_create_session=True)
    msg = types.Content(role="user", parts=[types.Part(text=os.environ["QUESTION"])])
    final = None
    async for event in runner.run_async(user_id="u1", session_id="s1", new_message=msg):
        if event.is_final_response() and event.content and event.content.parts:
            final = event.content.parts[0].text
    print(final, file=sys.stderr)


asyncio.run(main())
tp.force_flush()
doc = MessageToDict(encode_spans(exp.get_finished_spans()), use_integers_for_enums=True)


def hexids(n):
    if isinstance(n, list):
        return [hexids(v) for v in n]
    if not isinstance(n, dict):
        return n
    return {
        k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else hexids(v))
        for k, v in n.items()
    }


print(json.dumps(hexids(doc), ensure_ascii=False))
