"""The provider toolkit's own guarantees, on a small client whose methods have the shapes real SDKs have (botocore's
positional ``_make_api_call(operation, params)``, a response dict holding a stream, a server address that raises).

Provider tests (the real SDKs over real HTTP) show the same guarantees end to end; these pin the toolkit itself.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
import wrapt
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from spanfold import counters
from spanfold.content.redaction import Redaction
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit import tool_spans as tools
from spanfold.instrumentation.toolkit.calls import ModelApi, Result, async_wrapper, by_operation, sync_wrapper
from spanfold.instrumentation.toolkit.invocation import Endpoint, Request, Response
from spanfold.instrumentation.toolkit.patching import TableInstrumentor, class_factory
from spanfold.instrumentation.toolkit.reading.blocks import IndexedBlocks
from spanfold.semconv import parts as p


class Chunks:
    """An SDK-like stream: iterable once, closable."""

    def __init__(self, items: list[str]) -> None:
        self._it = iter(items)
        self.closed = False

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        return next(self._it)

    def close(self) -> None:
        self.closed = True


class Accumulator:
    def __init__(self) -> None:
        self.text: list[str] = []

    def add(self, chunk: str) -> None:
        self.text.append(chunk)

    def result(self) -> Response:
        return Response(id="".join(self.text))


def _bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
    operation, params = args
    return params if operation in ("Converse", "ConverseStream") else None


def _classify(result: Any) -> Result:
    return Result.NESTED_STREAM if isinstance(result, dict) and "stream" in result else Result.RESPONSE


def _server(instance: Any) -> Endpoint:
    raise RuntimeError("no endpoint")


API = ModelApi(
    kind="test.converse",
    provider="test",
    operation="chat",
    request=lambda request: Request(model=request.get("modelId")),
    response=lambda result: Response(id=result.get("id")),
    accumulator=Accumulator,
    classify=_classify,
    server=_server,
    bind=_bind,
    nested_stream="stream",
)


class Client:
    calls: list[tuple[str, dict[str, Any]]]

    def __init__(self) -> None:
        self.calls = []

    def _make_api_call(self, operation: str, params: dict[str, Any]) -> Any:
        self.calls.append((operation, params))
        if operation == "ConverseStream":
            return {"ResponseMetadata": {"RequestId": "r1"}, "stream": Chunks(["a", "b"])}
        return {"id": operation}


@pytest.fixture
def traced() -> Iterator[tuple[Client, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client = Client()
    wrapper = sync_wrapper(API, provider.get_tracer("t"), Runtime())
    client._make_api_call = wrapt.FunctionWrapper(client._make_api_call, wrapper)  # type: ignore[method-assign]
    yield client, exporter


def test_positional_request_is_bound_and_other_operations_pass_through(traced: Any) -> None:
    client, exporter = traced
    params = {"Bucket": "b", "Key": "k"}
    assert client._make_api_call("PutObject", params) == {"id": "PutObject"}
    assert exporter.get_finished_spans() == ()  # not a model call: no span
    assert client.calls[-1] == ("PutObject", params)  # ... and the call untouched
    assert client._make_api_call("Converse", {"modelId": "m1"}) == {"id": "Converse"}
    (span,) = exporter.get_finished_spans()
    assert span.name == "chat m1"
    assert span.attributes["gen_ai.response.id"] == "Converse"


def test_a_fault_reading_the_server_address_keeps_the_span(traced: Any) -> None:
    client, exporter = traced
    before = counters.snapshot().get("fault.test.converse.server", 0)
    client._make_api_call("Converse", {"modelId": "m1"})
    (span,) = exporter.get_finished_spans()
    assert "server.address" not in span.attributes
    assert counters.snapshot()["fault.test.converse.server"] == before + 1


def test_a_stream_nested_in_a_response_dict_is_proxied_in_place(traced: Any) -> None:
    client, exporter = traced
    response = client._make_api_call("ConverseStream", {"modelId": "m1"})
    assert type(response) is dict and response["ResponseMetadata"] == {"RequestId": "r1"}
    assert exporter.get_finished_spans() == ()  # the span ends with the stream
    assert list(response["stream"]) == ["a", "b"]
    assert isinstance(response["stream"], Chunks)  # the proxy passes isinstance
    (span,) = exporter.get_finished_spans()
    assert span.attributes["gen_ai.response.id"] == "ab"


def test_a_cancelled_stream_is_an_error_not_a_success() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    class Slow:
        def __aiter__(self) -> Slow:
            return self

        async def __anext__(self) -> str:
            await asyncio.sleep(10)
            return "x"

    async def create(**kwargs: Any) -> Any:
        return Slow()

    api = ModelApi(
        kind="test.async",
        provider="test",
        operation="chat",
        request=lambda request: Request(model="m"),
        response=lambda result: Response(),
        accumulator=Accumulator,
        classify=lambda result: Result.ASYNC_STREAM,
    )
    wrapped = wrapt.FunctionWrapper(create, async_wrapper(api, provider.get_tracer("t"), Runtime()))

    async def main() -> None:
        stream = await wrapped(model="m")

        async def read() -> None:
            async for _ in stream:
                pass

        task = asyncio.create_task(read())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "asyncio.exceptions.CancelledError"


def test_indexed_blocks_read_in_index_order_whatever_the_arrival() -> None:
    blocks = IndexedBlocks()
    blocks.start(1, {"type": "tool_use"})
    blocks.add(1, '{"a"')
    blocks.open(0).fragments.append("hi")
    blocks.add(1, ": 1}")
    blocks.add(7, "dropped: never started")
    blocks.add_part(1, 1, "second")
    blocks.add_part(1, 0, "first")
    blocks.stop(2, {"type": "done-only"})
    assert [b.start for b in blocks.ordered()] == [None, {"type": "tool_use"}, {"type": "done-only"}]
    assert [b.text() for b in blocks.ordered()] == ["hi", '{"a": 1}', ""]
    assert blocks.ordered()[1].part_texts() == ["first", "second"]
    assert blocks.ordered()[2].done == {"type": "done-only"}


LAZY = textwrap.dedent(
    """
    import sys, spanfold, wrapt
    def patched(cls, name):
        return isinstance(vars(cls)[name], wrapt.FunctionWrapper)
    spanfold.init(output=sys.argv[1])
    assert "openai" not in sys.modules and "anthropic" not in sys.modules, "init() imported an SDK"
    for later in ("spanfold.exporter.fold.folding", "spanfold.exporter.dialects.dispatch", "opentelemetry.sdk._logs"):
        assert later not in sys.modules, f"init() imported {later} (loaded with the first trace, or never)"
    import openai
    lazy = "openai.resources.responses.responses"
    assert lazy not in sys.modules, "patching imported a resource module the SDK loads lazily"
    from openai.resources.chat.completions import completions
    assert patched(completions.Completions, "create"), "openai not patched on import"
    assert lazy not in sys.modules
    client = openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    assert patched(type(client.responses), "create"), "a lazily loaded resource not patched when loaded"
    assert "anthropic" not in sys.modules
    spanfold.shutdown()
    assert not patched(completions.Completions, "create"), "not restored"
    import anthropic
    from anthropic.resources.messages import messages
    assert not patched(messages.Messages, "create"), "a hook of a shut-down init() patched"
    print("ok")
    """
)


def test_init_imports_no_sdk_and_patches_each_on_import(tmp_path: Any) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LAZY, str(tmp_path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def _recorded_tool_call(rt: Runtime, **given: Any) -> dict[str, Any]:
    """The attributes ``record_tool_call`` leaves on a span another producer started and ends."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    span = provider.get_tracer("other").start_span("execute_tool get_weather")
    tools.record_tool_call(span, rt, **given)
    span.end()
    (finished,) = exporter.get_finished_spans()
    return dict(finished.attributes or {})


def test_a_tool_call_recorded_on_another_producers_span_follows_the_runtime() -> None:
    secret = Runtime(
        redaction=Redaction(lambda text: text.replace("secret", "[x]").replace("image", "[x]"), builtin=False)
    )
    parts = [p.text("the secret image"), p.blob("c2VjcmV0", "image/png", "image")]
    attrs = _recorded_tool_call(secret, arguments={"city": "secret"}, result=parts)
    assert attrs["gen_ai.tool.call.arguments"] == '{"city":"[x]"}'
    assert json.loads(attrs["gen_ai.tool.call.result"]) == [  # each text redacted once; type, modality, data kept
        {"type": "text", "content": "the [x] [x]"},
        {"type": "blob", "mime_type": "image/png", "modality": "image", "content": "c2VjcmV0"},
    ]
    assert _recorded_tool_call(secret, result=[{"note": "secret"}])["gen_ai.tool.call.result"] == '[{"note":"[x]"}]'
    assert _recorded_tool_call(Runtime(), result="plain text") == {"gen_ai.tool.call.result": "plain text"}
    assert _recorded_tool_call(Runtime(), result=None) == {"gen_ai.tool.call.result": "null"}  # given: recorded
    assert _recorded_tool_call(Runtime(capture_content=False), arguments={"a": 1}, result="r") == {}


PROBE = textwrap.dedent(
    """
    class Client:
        def call(self, operation, params):
            return {"id": operation}

    class Creator:
        def make(self, service):
            return type(service, (Client,), {})
    """
)


def test_a_class_factorys_accepted_products_are_wrapped_by_operation_and_restored(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``class_factory`` + ``by_operation`` on a small botocore-like factory: only the accepted classes get the
    method of their own, only the named operations a span, and ``uninstrument()`` takes every wrapper back."""
    (tmp_path / "spanfold_factory_probe.py").write_text(PROBE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import spanfold_factory_probe as probe

    def accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        return args[0] == "runtime"

    operations = by_operation({"Converse": API}, lambda args, kwargs: args[0])
    table = (class_factory("spanfold_factory_probe", "Creator.make", accepts, "call", operations),)

    class ProbeInstrumentor(TableInstrumentor, library="spanfold_factory_probe", table=table):
        pass

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = ProbeInstrumentor()
    instrumentor.instrument(tracer_provider=provider, runtime=Runtime())
    try:
        runtime_class, other_class = probe.Creator().make("runtime"), probe.Creator().make("s3")
        assert "call" in vars(runtime_class) and "call" not in vars(other_class)
        assert other_class().call("Converse", {"modelId": "m1"}) == {"id": "Converse"}
        assert runtime_class().call("PutObject", {}) == {"id": "PutObject"}
        assert exporter.get_finished_spans() == ()  # neither a product nor an operation it traces
        assert runtime_class().call("Converse", {"modelId": "m1"}) == {"id": "Converse"}
        assert [span.name for span in exporter.get_finished_spans()] == ["chat m1"]
    finally:
        instrumentor.uninstrument()
        sys.modules.pop("spanfold_factory_probe", None)
    assert "call" not in vars(runtime_class)  # inherited again
    assert "call" not in vars(probe.Creator().make("runtime"))  # the factory itself restored
