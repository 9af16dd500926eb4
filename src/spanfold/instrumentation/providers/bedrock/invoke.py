"""Bedrock ``invoke_model`` / ``invoke_model_with_response_stream`` bodies -> a typed invocation.

The body is the model family's own JSON. Two families are mapped, through the modules that already know their
shapes: Anthropic Claude (the Messages format: :mod:`spanfold.instrumentation.providers.anthropic.messages`) and
Amazon Nova (the Converse shapes: :mod:`spanfold.instrumentation.providers.bedrock.converse`). Any other body gets a
model span with what every family has: the model id, the usage Bedrock reports beside the body (the
``X-Amzn-Bedrock-*-Token-Count`` response headers; a stream's ``amazon-bedrock-invocationMetrics``), errors, and no
content (a response with no messages).

The request body is read without consuming it: ``bytes`` / ``str`` as they are, a seekable file read and put back
where it was (botocore seeks it too); anything else, or a body over :data:`MAX_BODY` bytes, is not read. The response
body is the user's: :mod:`spanfold.instrumentation.providers.bedrock.body` shows the span the bytes the user reads.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, Final

from spanfold.instrumentation.providers.anthropic import messages as anthropic_messages
from spanfold.instrumentation.providers.bedrock import converse as bedrock_converse
from spanfold.instrumentation.toolkit.invocation import Request, Response, Usage
from spanfold.instrumentation.toolkit.reading import fields as m
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


def request(call: dict[str, Any]) -> Request:
    """The model id and, for a Claude or Nova body, what the body asks."""
    model = params.model_name(call.get("modelId"))
    body = read_body(call.get("body"))
    req = Request()
    if isinstance(body, dict) and "messages" in body:  # Claude's Messages, else Nova's (messages-v1): Converse shapes
        req = (anthropic_messages.request if _is_claude(model, body) else bedrock_converse.request)(body)
    req.model = model
    return req


def _count(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _beside(input_tokens: Any, output_tokens: Any, request_id: Any = None) -> Response:
    """What Bedrock reports beside any family's body: its token counts (text), the request id; no messages."""
    usage = Usage(input_tokens=_count(input_tokens), output_tokens=_count(output_tokens))
    return Response(messages=None, usage=usage, request_id=request_id)


def completed(found: Response | None, beside: Response) -> Response:
    """The body's response, what it lacks taken from what Bedrock reported beside it (the body's own values win)."""
    if found is None:
        return beside
    usage, known = found.usage, beside.usage
    if usage is None:
        found.usage = known
    elif known is not None:
        if usage.input_tokens is None:
            usage.input_tokens = known.input_tokens
        if usage.output_tokens is None:
            usage.output_tokens = known.output_tokens
    if found.request_id is None:
        found.request_id = beside.request_id
    return found


def headers(answer: Any) -> Response:
    """Usage and the request id from the response headers (every model family)."""
    metadata = m.get(answer, "ResponseMetadata")
    values = m.get(metadata, "HTTPHeaders") or {}
    return _beside(
        values.get("x-amzn-bedrock-input-token-count"),
        values.get("x-amzn-bedrock-output-token-count"),
        m.get(metadata, "RequestId"),
    )


def unread(answer: Any) -> Response:
    """An answer without a body to read (a stubbed one): nothing known."""
    return Response(messages=None)


def body_response(body: Any) -> Response | None:
    """A complete response body of a family spanfold reads (Claude ``message``, Nova ``output``), else None."""
    if not isinstance(body, dict):
        return None
    if body.get("type") == "message":
        return anthropic_messages.response(body)
    if isinstance(body.get("output"), dict):
        return bedrock_converse.response(body)
    return None


class BodyAccumulator:
    """The bytes of an ``invoke_model`` body as the user reads them (bounded), parsed once at the end."""

    __slots__ = ("beside", "chunks", "size")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.beside = Response(messages=None)  # from the response headers, set when the body is proxied

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size <= MAX_BODY:
            self.chunks.append(chunk)
        else:
            self.chunks.clear()

    def result(self) -> Response:
        return completed(body_response(parsed(self)), self.beside)


def parsed(body: BodyAccumulator) -> Any:
    """The JSON of the bytes a body accumulator kept (None when there were none, too many, or not JSON)."""
    return _loads(b"".join(body.chunks)) if body.chunks and body.size <= MAX_BODY else None


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

    __slots__ = ("inner", "metrics", "wrap")

    def __init__(self) -> None:
        self.inner: Any = None
        self.wrap: Any = None
        self.metrics: Any = None

    def _start(self, data: dict[str, Any]) -> None:
        if "type" in data:
            self.inner, self.wrap = anthropic_messages.MessageStreamAccumulator(), _claude_event
        elif _CONVERSE_EVENTS.intersection(data):
            self.inner, self.wrap = bedrock_converse.ConverseStreamAccumulator(), None

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

    def result(self) -> Response:
        beside = _beside(m.get(self.metrics, "inputTokenCount"), m.get(self.metrics, "outputTokenCount"))
        return completed(self.inner.result() if self.inner is not None else None, beside)
