"""Bedrock ``invoke_model`` / ``invoke_model_with_response_stream`` bodies -> GenAI semconv span attributes.

The body is the model family's own JSON. Two families are mapped, through the modules that already know their
shapes: Anthropic Claude (the Messages format: :mod:`spanfold.instrumentation.providers.anthropic.messages`) and
Amazon Nova
(the Converse shapes: :mod:`spanfold.instrumentation.providers.bedrock.converse`). Any other body gets a model span
with what
every family has: the model id, the usage Bedrock reports beside the body (the ``X-Amzn-Bedrock-*-Token-Count``
response headers; a stream's ``amazon-bedrock-invocationMetrics``), errors, and no content.

The request body is read without consuming it: ``bytes`` / ``str`` as they are, a seekable file read and put back
where it was (botocore seeks it too); anything else, or a body over :data:`MAX_BODY` bytes, is not read. The response
body is the user's: :mod:`spanfold.instrumentation.providers.bedrock.body` shows the span the bytes the user reads.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, Final

from spanfold import semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.anthropic import messages as anthropic_messages
from spanfold.instrumentation.providers.bedrock import converse as bedrock_converse
from spanfold.instrumentation.toolkit.reading import messages as m
from spanfold.instrumentation.toolkit.reading import params

#: Larger bodies are not parsed (their content is left out of the span; usage is still read).
MAX_BODY: Final = 8 * 1024 * 1024
_CONVERSE_EVENTS: Final = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}
)
_METRICS: Final = "amazon-bedrock-invocationMetrics"


def _loads(data: Any) -> Any:
    try:
        return json.loads(data)
    except ValueError:  # not JSON: a family spanfold does not read
        return None


def read_body(body: Any) -> Any:
    """The request body as JSON, or None; never consumes what the SDK will send."""
    if isinstance(body, (bytes, bytearray, str)):
        return _loads(body) if len(body) <= MAX_BODY else None
    seekable = getattr(body, "seekable", None)
    if not (callable(seekable) and seekable() and hasattr(body, "read")):
        return None
    start = body.tell()
    try:
        if body.seek(0, 2) - start > MAX_BODY:
            return None
        body.seek(start)
        data = body.read()
    finally:
        body.seek(start)
    return _loads(data)


def _is_claude(model: str | None, body: dict[str, Any]) -> bool:
    return "anthropic_version" in body or (model is not None and "anthropic." in model)


def request_attributes(request: dict[str, Any], rt: Runtime) -> tuple[str | None, dict[str, Any]]:
    """The model id and, for a Claude or Nova body, its request attributes."""
    model = params.model_name(request.get("modelId"))
    body = read_body(request.get("body"))
    attrs: dict[str, Any] = {}
    if isinstance(body, dict) and "messages" in body:
        if _is_claude(model, body):
            attrs = anthropic_messages.request_attributes(body, rt)[1]
        else:  # Nova (schemaVersion messages-v1): the Converse shapes
            attrs = bedrock_converse.request_attributes(body, rt)[1]
    attrs[semconv.REQUEST_MODEL] = model
    return model, attrs


def _usage(input_tokens: Any, output_tokens: Any) -> dict[str, Any]:
    def number(value: Any) -> int | None:
        try:
            return int(value)
        except (TypeError, ValueError):
            return None

    return {semconv.USAGE_INPUT_TOKENS: number(input_tokens), semconv.USAGE_OUTPUT_TOKENS: number(output_tokens)}


def _merge(base: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    """``base`` updated by the values ``attrs`` has (a body's own usage wins over the headers')."""
    base.update((key, value) for key, value in attrs.items() if value is not None)
    return base


def header_attributes(response: Any) -> dict[str, Any]:
    """Usage and the request id from the response headers (every model family)."""
    headers = m.get(m.get(response, "ResponseMetadata"), "HTTPHeaders") or {}
    attrs = _usage(headers.get("x-amzn-bedrock-input-token-count"), headers.get("x-amzn-bedrock-output-token-count"))
    attrs[semconv.AWS_REQUEST_ID] = m.get(m.get(response, "ResponseMetadata"), "RequestId")
    return attrs


def body_attributes(body: Any, rt: Runtime) -> dict[str, Any]:
    """A complete response body of a family spanfold reads (Claude ``message``, Nova ``output``), else nothing."""
    if not isinstance(body, dict):
        return {}
    if body.get("type") == "message":
        return anthropic_messages.response_attributes(body, rt)
    if isinstance(body.get("output"), dict):
        return bedrock_converse.response_attributes(body, rt)
    return {}


class BodyAccumulator:
    """The bytes of an ``invoke_model`` body as the user reads them (bounded), parsed once at the end."""

    __slots__ = ("base", "chunks", "rt", "size")

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.chunks: list[bytes] = []
        self.size = 0
        self.base: dict[str, Any] = {}  # from the response headers, set when the body is proxied

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size <= MAX_BODY:
            self.chunks.append(chunk)
        else:
            self.chunks.clear()

    def attributes(self) -> dict[str, Any]:
        body = _loads(b"".join(self.chunks)) if self.chunks and self.size <= MAX_BODY else None
        return _merge(dict(self.base), body_attributes(body, self.rt))


def _claude_event(data: dict[str, Any]) -> SimpleNamespace:
    """A Messages stream event as the attribute view the Messages accumulator reads (``event.delta.text``)."""
    event = SimpleNamespace(**data)
    for key in ("delta", "message"):
        if isinstance(data.get(key), dict):
            setattr(event, key, SimpleNamespace(**data[key]))
    return event


class StreamAccumulator:
    """``invoke_model_with_response_stream`` events: each ``chunk``'s bytes is one event of the family's own stream
    (Claude Messages events, Nova Converse events), fed to that family's accumulator; any family's usage from the
    ``amazon-bedrock-invocationMetrics`` of the last chunk."""

    __slots__ = ("inner", "metrics", "rt", "wrap")

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.inner: Any = None
        self.wrap: Any = None
        self.metrics: Any = None

    def _start(self, data: dict[str, Any]) -> None:
        if "type" in data:
            self.inner, self.wrap = anthropic_messages.MessageStreamAccumulator(self.rt), _claude_event
        elif _CONVERSE_EVENTS.intersection(data):
            self.inner, self.wrap = bedrock_converse.ConverseStreamAccumulator(self.rt), None

    def add(self, event: Any) -> None:
        chunk = event.get("chunk")
        if chunk is None:
            return
        data = _loads(chunk.get("bytes") or b"null")
        if not isinstance(data, dict):
            return
        if _METRICS in data:
            self.metrics = data[_METRICS]
        if self.inner is None:
            self._start(data)
        if self.inner is not None:
            self.inner.add(self.wrap(data) if self.wrap is not None else data)

    def attributes(self) -> dict[str, Any]:
        attrs = _usage(m.get(self.metrics, "inputTokenCount"), m.get(self.metrics, "outputTokenCount"))
        return _merge(attrs, self.inner.attributes()) if self.inner is not None else attrs
