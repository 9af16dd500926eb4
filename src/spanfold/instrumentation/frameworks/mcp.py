"""The MCP client (``mcp`` Python SDK): each ``ClientSession.call_tool`` as a ``tools/call {tool}`` client span.

The span follows the semantic conventions for MCP clients (name ``{mcp.method.name} {gen_ai.tool.name}``, kind
CLIENT, ``mcp.method.name`` = ``tools/call``, ``mcp.session.id`` when the session knows one, ``mcp.protocol.version``)
and is a GenAI tool run too (``gen_ai.operation.name`` = ``execute_tool``, ``gen_ai.tool.name``,
``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``: content, so only with capture on, through the runtime's
redaction). A result with ``isError`` set is the span's error (``error.type`` = ``tool_error``, the result's text as
the description); an exception is recorded and raised unchanged; the caller gets the very same result object.

Where spanfold already traces the tool's run (the call is made inside a ``@spanfold.tool`` function, an OpenAI Agents
SDK function span or a LangChain tool run of the same tool) there is no second span: the MCP attributes go on that
tool span, as the conventions ask.

Trace context: the request carries the call's context in its ``params._meta`` (W3C ``traceparent`` / ``tracestate``
through the configured propagators), so the server's spans join the client's trace. mcp 2.x injects it itself (from
its own ``MCP send`` span, under this one); for mcp 1.x, whose ``call_tool`` takes ``meta=``, spanfold adds it,
keeping every key the caller put in ``meta``.

The model's tool-call id, when the agent passes it (``session.call_tool(name, args, tool_call_id=call.id)``, the
keyword ``@spanfold.tool`` takes), is recorded as ``gen_ai.tool.call.id`` and taken off before the SDK sees the call;
without it the fold pairs the run with the model's call by name and arguments, and the span gets the id of the call
whose name and arguments it matched: in a zero-code run the source's (which pairs it the same way to place the span),
inside a traced run the call of the same trace (:mod:`~spanfold.stitching.asked`). The SDK's own
``MCP send tools/call`` span nests under this one and is not a tool step; a server's ``tools/call`` span (same
process, or received by ``spanfold serve``) nested under it is folded into this one
(:mod:`spanfold.exporter.fold.nested_tools`).

The SDK has no synchronous client: ``call_tool`` is the one path (``mcp.client.Client`` and ``ClientSessionGroup``
call it). mcp 1.x takes the same path; its result names its fields in camelCase (``isError``,
``structuredContent``), and its session keeps no protocol version.
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from opentelemetry import propagate
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span, SpanKind, Tracer

from spanfold import counters, semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.invocations import tool_runs
from spanfold.instrumentation.invocations.tool_runs import ToolRun
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.spans import set_failure
from spanfold.instrumentation.toolkit.tool_spans import (
    CALL_ID_KEYWORD,
    end_tool_span,
    fail_tool_span,
    tool_span_of,
)

SUPPORTED = "mcp >= 1.0, < 3"


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(name)


def result_text(result: Any) -> str:
    """What a tool result says: its text blocks joined when it is all text (what an agent hands the model), else
    its structured content, else its content blocks, as JSON."""
    content = m.as_list(m.get(result, "content")) or []
    texts = [m.get(block, "text") for block in content if m.get(block, "type") == "text"]
    if content and len(texts) == len(content):
        return "\n".join(str(t) for t in texts)
    structured = _field(result, "structured_content", "structuredContent")
    if structured is not None:
        return m.dumps(structured)
    return m.dumps([_plain(block) for block in content])


def _field(result: Any, name: str, name_1x: str) -> Any:
    """A result field by its 2.x name, else by its 1.x (camelCase) name."""
    value = m.get(result, name)
    return m.get(result, name_1x) if value is None else value


def _plain(block: Any) -> Any:
    dump = getattr(block, "model_dump", None)
    return dump(by_alias=True, exclude_none=True, mode="json") if callable(dump) else block


def _mcp_attributes(session: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {semconv.MCP_METHOD_NAME: semconv.MCP_TOOLS_CALL}
    session_id = getattr(session, "session_id", None)  # the Streamable HTTP session, where a session keeps it
    if isinstance(session_id, str):
        attrs[semconv.MCP_SESSION_ID] = session_id
    version = getattr(session, "protocol_version", None)
    if isinstance(version, str):
        attrs[semconv.MCP_PROTOCOL_VERSION] = version
    return attrs


def _tool_run(session: Any, name: Any, arguments: Any, call_id: Any) -> ToolRun:
    """A ``tools/call {name}`` client span (kind CLIENT, the MCP attributes)."""
    return ToolRun(
        str(name),
        call_id=call_id,
        arguments=arguments if arguments is not None else {},
        attributes=_mcp_attributes(session),
        kind=SpanKind.CLIENT,
        span_name=semconv.span_name(semconv.MCP_TOOLS_CALL, str(name)),
    )


def _outer(session: Any, name: Any) -> Span | None:
    """spanfold's span of the tool run this call is made in (the same tool), given the MCP attributes; None when
    there is none."""
    try:
        span = tool_span_of(str(name))
        if span is not None:
            span.set_attributes(_mcp_attributes(session))
        return span
    except Exception as exc:
        counters.fault("mcp.start", exc)
        return None


@lru_cache(maxsize=1)
def _sdk_propagates() -> bool:
    """Whether the installed mcp injects the trace context into requests itself (2.x)."""
    return importlib.util.find_spec("mcp.shared._otel") is not None


@lru_cache(maxsize=8)
def _takes_meta(method: Callable[..., Any]) -> bool:
    try:
        return "meta" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def with_trace_context(wrapped: Callable[..., Any], kwargs: dict[str, Any], span: Span) -> dict[str, Any]:
    """``kwargs`` with the span's context in the request's ``meta`` (W3C ``traceparent``, ``tracestate``), for an SDK
    that does not add it itself; the caller's own ``meta`` keys kept. ``kwargs`` itself when nothing is to be added."""
    try:
        if _sdk_propagates() or not _takes_meta(getattr(wrapped, "__func__", wrapped)):
            return kwargs
        given = kwargs.get("meta")
        if given is not None and not isinstance(given, dict):
            return kwargs
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=otel_trace.set_span_in_context(span))
        if not carrier:
            return kwargs
        return {**kwargs, "meta": {**carrier, **(given or {})}}
    except Exception as exc:
        counters.fault("mcp.trace_context", exc)
        return kwargs


def _finish(span: Span, result: Any, rt: Runtime) -> None:
    text: str | None = None
    try:
        text = result_text(result)
        if _field(result, "is_error", "isError") is True:
            set_failure(span, semconv.TOOL_ERROR, text, rt)
    except Exception as exc:
        counters.fault("mcp.result", exc)
    end_tool_span(span, text, rt)


def _outer_result(span: Span, result: Any, rt: Runtime) -> None:
    """An ``isError`` result makes the enclosing tool span an error (its owner records the result)."""
    try:
        if _field(result, "is_error", "isError") is True:
            set_failure(span, semconv.TOOL_ERROR, result_text(result), rt)
    except Exception as exc:
        counters.fault("mcp.result", exc)


def call_tool_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    """The wrapper of ``ClientSession.call_tool(name, arguments=None, ...)``."""

    async def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call_id = kwargs.pop(CALL_ID_KEYWORD, None)
        name = _argument(args, kwargs, 0, "name")
        outer = _outer(instance, name)
        if outer is not None:  # the tool's run is traced already: its span is this call's
            result = await wrapped(*args, **with_trace_context(wrapped, kwargs, outer))
            _outer_result(outer, result, rt)
            return result
        arguments = _argument(args, kwargs, 1, "arguments")
        started = tool_runs.start(tracer, rt, "mcp", lambda: _tool_run(instance, name, arguments, call_id))
        if started is None:
            return await wrapped(*args, **kwargs)
        span = started.span
        with otel_trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            try:
                result = await wrapped(*args, **with_trace_context(wrapped, kwargs, span))
            except BaseException as exc:
                fail_tool_span(span, exc, rt)
                raise
        _finish(span, result, rt)
        return result

    return wrapper


PATCHES: Sequence[Patch] = (Patch("mcp.client.session", "ClientSession.call_tool", call_tool_wrapper),)


class MCPInstrumentor(TableInstrumentor):
    """Traces MCP tool calls made through the ``mcp`` SDK's client sessions."""

    library = "mcp"

    dependencies = (SUPPORTED,)

    def patches(self, rt: Runtime) -> Sequence[Patch]:
        return PATCHES
