"""Tool runs as ``execute_tool {name}`` spans, for every tool producer: the functions ``@spanfold.tool`` traces
(:func:`traced_tool`, its per-call :class:`_ToolSpec`), a dispatcher's span named after the tool each call ran, MCP
calls and framework tool runs (:func:`start_tool_span`, :func:`end_tool_span`, :func:`fail_tool_span`,
:func:`run_in_tool_span`), another producer's tool span (:func:`record_tool_call`); and whether an invocation is open
here (:func:`in_invocation`).

Spans are made with the global tracer provider, so a traced tool works with ``spanfold.init()`` and with any other
OTel setup. The public decorators live in :mod:`spanfold.api.tool` and :mod:`spanfold.api.agent`.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar, Token
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from spanfold import counters, semconv
from spanfold.content import runtime
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit import shown
from spanfold.instrumentation.toolkit.reading.fields import dumps, get
from spanfold.instrumentation.toolkit.spans import clean, end_span, set_error
from spanfold.semconv.parts import applied_parts, parse_json_arguments
from spanfold.stitching import asked, conversations
from spanfold.version import __version__

F = TypeVar("F", bound=Callable[..., Any])

#: The keyword a caller may add to a tool call to record the model's tool-call id (``tool_call_id="call_1"``).
#: It is passed on to the function only when the function declares it.
CALL_ID_KEYWORD = "tool_call_id"

_tracer: Tracer | None = None


def tracer() -> Tracer:
    """spanfold's tracer, from the global tracer provider (taken at the first span, then kept)."""
    global _tracer
    if _tracer is None:
        _tracer = otel_trace.get_tracer("spanfold", __version__)
    return _tracer


def _result_text(value: Any) -> str:
    return value if isinstance(value, str) else dumps(value)


class _ToolSpec:
    """What a decorated function needs per call: its name, description, how to read its arguments, and whether it is
    a dispatcher (one function running many tools, named by each call)."""

    __slots__ = ("accepts_call_id", "description", "dispatch", "name", "signature")

    def __init__(self, fn: Callable[..., Any], name: str | None, description: str | None, dispatch: bool) -> None:
        self.name = name or getattr(fn, "__name__", "tool")
        self.dispatch = dispatch
        doc = description if description is not None else (None if dispatch else inspect.getdoc(fn))
        self.description = doc.strip().splitlines()[0] if doc else None
        try:
            self.signature: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            self.signature = None
        params = self.signature.parameters if self.signature else {}
        self.accepts_call_id = CALL_ID_KEYWORD in params or any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
        )

    def start(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Span | None, dict[str, Any]]:
        """Start the span; return it and the kwargs to call the function with."""
        call_id = kwargs.get(CALL_ID_KEYWORD)
        if CALL_ID_KEYWORD in kwargs and not self.accepts_call_id:  # None too: APIs without ids (Gemini, Ollama)
            kwargs = {k: v for k, v in kwargs.items() if k != CALL_ID_KEYWORD}
        if self in _FRAMEWORK_RUNS.get():  # a framework's tool run is calling us: its span is this call's
            _FRAMEWORK_RUNS.set(())
            return None, kwargs
        try:
            rt = runtime.active()
            name: Any = self.name
            values = self.arguments(args, kwargs)
            if self.dispatch:
                name, given_id, values = dispatched(values, name)
                call_id = call_id if call_id is not None else given_id
            arguments = dumps(values) if rt.capture_content else None
            extra = {semconv.TOOL_DESCRIPTION: self.description} if self.description else None
            span = start_tool_span(
                tracer(),
                str(name),
                rt,
                call_id=call_id,
                arguments=arguments,
                attributes=extra,
                argument_values=values,
            )
        except Exception as exc:
            counters.fault("tool.start", exc)
            return None, kwargs
        return span, kwargs

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.signature is None:
            return {"args": list(args), **kwargs}
        try:
            bound = self.signature.bind_partial(*args, **kwargs)
        except TypeError:
            return {"args": list(args), **kwargs}
        out = dict(bound.arguments)
        for name in ("self", "cls"):
            if name in out and next(iter(self.signature.parameters), None) == name:
                del out[name]
        return out


def _call_fields(call: Any) -> tuple[Any, Any, Any] | None:
    """(name, call id, arguments) of a tool call as an SDK returned it (an object or its dict): OpenAI chat's
    ``{id, function: {name, arguments}}``, Responses' ``function_call`` (``call_id``), Anthropic's ``tool_use``
    (``input``), Gemini's ``function_call`` (``args``), Bedrock's ``{"toolUse": {toolUseId, name, input}}``,
    Ollama's ``{function: {name, arguments}}``; None when ``call`` is none of them."""
    if isinstance(call, (str, bytes, int, float)) or call is None:
        return None
    function = get(call, "function")
    if function is not None:
        return get(function, "name"), get(call, "id"), get(function, "arguments")
    use = get(call, "toolUse")
    if use is not None:
        call = use
    name = get(call, "name")
    if not isinstance(name, str):
        return None
    call_id = next((v for v in (get(call, k) for k in ("call_id", "toolUseId", "id")) if v is not None), None)
    arguments = next((v for v in (get(call, k) for k in ("arguments", "input", "args")) if v is not None), None)
    return name, call_id, arguments


def dispatched(values: Mapping[str, Any], default: Any) -> tuple[Any, Any, Any]:
    """(tool name, call id or None, the tool's arguments) of a call of a dispatcher, from its bound arguments in
    order: the first names the tool (a string), the second holds its arguments (a mapping, or JSON text), the
    others are the dispatcher's own; or the first is the tool call itself (:func:`_call_fields`). Anything else
    keeps the function's own name and arguments."""
    items = list(values.items())
    if not items:
        return default, None, values
    first = items[0][1]
    if isinstance(first, str):
        if len(items) == 1:
            return first, None, {}
        rest = items[1][1]
        return first, None, parse_json_arguments(rest)
    fields = _call_fields(first)
    if fields is None:
        return default, None, values
    name, call_id, arguments = fields
    return name, call_id, parse_json_arguments(arguments) if arguments is not None else {}


def tool_context(call_id: Any, name: Any, arguments: Any) -> otel_context.Context | None:
    """The context a tool run's span starts in: the current one, or for an un-parented run the zero-code conversation
    whose model asked for it (by ``call_id``, else ``name`` and ``arguments``), else the run's external parent
    (:mod:`~spanfold.stitching.conversations`). For every ``execute_tool`` span spanfold starts."""
    return _placed(call_id, name, arguments)[0]


def _placed(
    call_id: Any, name: Any, arguments: Any, conversation_id: Any = None
) -> tuple[otel_context.Context | None, tuple[conversations.Conversations, Any] | None, bool, str | None, str | None]:
    """:func:`tool_context`, the zero-code conversations and conversation the run joins (None: none), whether the
    source decided the run's place (stitching on, an un-parented run), the id of the model's call the source paired a
    run without one with, and the run's id under an external parent (``spanfold.run.id``)."""
    source = conversations.active()
    if source is None or otel_trace.get_current_span().get_span_context().is_valid:
        return None, None, False, None, None
    if not source.stitch:
        return source.parent, None, False, None, None
    try:
        context, conv, answered, run_id = source.tool_context(call_id, name, arguments, conversation_id)
    except Exception as exc:
        counters.fault("tool.stitch", exc)
        return source.parent, None, False, None, None
    return context, ((source, conv) if conv is not None else None), True, answered, run_id


def _answers(attrs: dict[str, Any], name: str, arguments: Any) -> None:
    """Pair a run inside a traced run with the model's call of its trace it answers (:mod:`.asked`): a run that
    brought an id answers that call; one without gets the id of the call with its exact name and arguments."""
    try:
        trace_id = otel_trace.get_current_span().get_span_context().trace_id
        if not trace_id:
            return
        given = attrs.get(semconv.TOOL_CALL_ID)
        if given is not None:
            asked.answered(trace_id, given)
        elif (found := asked.take(trace_id, name, arguments)) is not None:
            attrs[semconv.TOOL_CALL_ID] = found
    except Exception as exc:
        counters.fault("tool.pair", exc)


def start_tool_span(
    tracer: Tracer,
    name: str,
    rt: Runtime,
    *,
    call_id: Any = None,
    arguments: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    kind: SpanKind = SpanKind.INTERNAL,
    argument_values: Any = None,
    span_name: str | None = None,
) -> Span:
    """An ``execute_tool {name}`` span (not made current), for every tool producer: ``@tool`` functions, MCP calls,
    framework tool runs. ``arguments``: the call's arguments as JSON, recorded (through ``rt``'s redaction) only with
    content capture on; ``attributes``: the producer's own (``gen_ai.tool.type`` defaults to ``function``);
    ``argument_values``: the arguments as values, for an un-parented run to find the zero-code conversation whose model
    asked for it (:func:`tool_context`); ``span_name``: the span's name where the producer's conventions name it
    otherwise (an MCP client's ``tools/call {name}``)."""
    attrs: dict[str, Any] = {
        semconv.OPERATION_NAME: semconv.OP_EXECUTE_TOOL,
        semconv.TOOL_NAME: name,
        semconv.TOOL_TYPE: "function",
    }
    if attributes:
        attrs.update(clean(attributes))
    if call_id is not None:
        attrs[semconv.TOOL_CALL_ID] = str(call_id)
    if arguments is not None and rt.capture_content:
        attrs[semconv.TOOL_CALL_ARGUMENTS] = rt.content(arguments)
        attrs.update(shown.tool_input(attrs[semconv.TOOL_CALL_ARGUMENTS]))
    context, joined, decided, answered, run_id = _placed(
        call_id, name, argument_values, attrs.get(semconv.CONVERSATION_ID)
    )
    if decided:
        attrs[semconv.SPANFOLD_STITCHED] = True
    if run_id:
        attrs[semconv.SPANFOLD_RUN_ID] = run_id
    if answered is not None and call_id is None:  # the model's call the source paired the run with
        attrs[semconv.TOOL_CALL_ID] = answered
    elif context is None:  # inside a run: the call of its trace it answers, by id, else by name and arguments
        _answers(attrs, name, argument_values)
    span = tracer.start_span(
        span_name or semconv.span_name(semconv.OP_EXECUTE_TOOL, name), context, kind=kind, attributes=attrs
    )
    if run_id == conversations.OWN_RUN:
        conversations.name_run(span)
    if joined is not None:
        try:
            joined[0].running(joined[1], span)  # the conversation stays open while the tool runs, however long
        except Exception as exc:
            counters.fault("tool.stitch", exc)
    return span


def end_tool_span(span: Span | None, result: Any, rt: Runtime | None = None) -> None:
    """Record a tool's result (content capture on: text as it is, anything else as JSON) and end its span."""
    _end_ok(span, result, rt)


#: What :func:`record_tool_call` records for an argument not given: nothing.
_NOT_GIVEN: Any = object()


def record_tool_call(span: Span, rt: Runtime, *, arguments: Any = _NOT_GIVEN, result: Any = _NOT_GIVEN) -> None:
    """A tool call's arguments and result on a span another producer starts and ends (the anthropic tool runner's
    ``execute_tool`` spans), as :func:`start_tool_span` and :func:`end_tool_span` record them: only with content
    capture on, text as it is and anything else as JSON, through ``rt``'s redaction; a result made of parts (text and
    media, :mod:`spanfold.semconv.parts`) as JSON of its parts with ``rt`` applied part by part (text redacted; types,
    modalities and base64 data as they are). What is not given is not recorded.
    Never raises (a fault is counted); a span that is not recording is left alone."""
    try:
        if not rt.capture_content or not span.is_recording():
            return
        if arguments is not _NOT_GIVEN:
            span.set_attribute(semconv.TOOL_CALL_ARGUMENTS, rt.content(_result_text(arguments)))
        if result is not _NOT_GIVEN:
            text = dumps(applied_parts(result, rt)) if _are_parts(result) else rt.content(_result_text(result))
            span.set_attribute(semconv.TOOL_CALL_RESULT, text)
    except Exception as exc:
        counters.fault("tool.record", exc)


def _are_parts(value: Any) -> bool:
    """Whether ``value`` is a list of parts (each a dict of a part type the conventions name)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, dict) and item.get("type") in semconv.PART_TYPES for item in value)
    )


def fail_tool_span(span: Span | None, exc: BaseException, rt: Runtime | None = None) -> None:
    """Record ``exc`` on a tool's span (:func:`~spanfold.instrumentation.toolkit.spans.set_error`) and end it."""
    _end_error(span, exc, rt)


def _end_ok(span: Span | None, result: Any, rt: Runtime | None = None) -> None:
    if span is None:
        return
    try:
        rt = rt or runtime.active()
        if rt.capture_content:
            text = rt.content(_result_text(result))
            span.set_attribute(semconv.TOOL_CALL_RESULT, text)
            span.set_attributes(shown.tool_output(text, isinstance(result, str)))
    except Exception as exc:
        counters.fault("tool.result", exc)
    end_span(span)


def _end_error(span: Span | None, exc: BaseException, rt: Runtime | None = None) -> None:
    if span is None:
        return
    try:
        set_error(span, exc, rt or runtime.active())
    except Exception as fault:
        counters.fault("tool.error", fault)
    end_span(span)


#: Marks the functions :func:`tool` made.
_TRACED_MARK = "__spanfold_tool__"
#: Where a traced function keeps its :class:`_ToolSpec`.
_SPEC_ATTRIBUTE = "__spanfold_tool_spec__"
#: The ``@tool`` functions a framework's own tool run (with its own span) is calling now, as their specs: their call
#: makes no second span (see :func:`framework_tool_run`).
_FRAMEWORK_RUNS: ContextVar[tuple[_ToolSpec, ...]] = ContextVar("spanfold_framework_tool_runs", default=())


def traced(fn: F) -> F:
    """``fn`` traced as ``@tool`` traces it, for a function a library runs for the model itself (google-genai's
    automatic function calling): ``fn`` itself when it is a ``@tool`` already, else a traced twin for this call."""
    if getattr(fn, _TRACED_MARK, False):
        return fn
    return traced_tool(fn, None, None)


def traced_tool(fn: F, name: str | None, description: str | None, dispatch: bool = False) -> F:
    """``fn`` traced: each call an ``execute_tool`` span (see :func:`spanfold.tool`)."""
    wrapped = _make_tool(fn, name, description, dispatch)
    setattr(wrapped, _TRACED_MARK, True)  # a function made here: it takes attributes
    return wrapped


def _make_tool(fn: F, name: str | None, description: str | None, dispatch: bool) -> F:
    spec = _ToolSpec(fn, name, description, dispatch)
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        # A generator's body runs after the call returns, item by item: a span around the call would record neither
        # its time nor its result, and hide the result the model is sent next. Untraced (``tool_call_id=`` still
        # taken off), its output reaches the flat trace from the next model call's inputs.
        @functools.wraps(fn)
        def untraced(*args: Any, **kwargs: Any) -> Any:
            if not spec.accepts_call_id:
                kwargs.pop(CALL_ID_KEYWORD, None)
            return fn(*args, **kwargs)

        return untraced  # type: ignore[return-value]

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            span, kwargs = spec.start(args, kwargs)
            if span is None:
                return await fn(*args, **kwargs)
            with otel_trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as exc:
                    _end_error(span, exc)
                    raise
            _end_ok(span, result)
            return result

        setattr(run_async, _SPEC_ATTRIBUTE, spec)
        return run_async  # type: ignore[return-value]

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        span, kwargs = spec.start(args, kwargs)
        if span is None:
            return fn(*args, **kwargs)
        with otel_trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                _end_error(span, exc)
                raise
        _end_ok(span, result)
        return result

    setattr(run, _SPEC_ATTRIBUTE, spec)
    return run  # type: ignore[return-value]


def end_tool_span_with_error_result(span: Span | None, result: Any, rt: runtime.Runtime | None = None) -> None:
    """End the span of a tool run that failed but answered (an error the framework turned into the result the model
    is sent): status ERROR, ``error.type`` ``tool_error``, the result as the error's description (with content
    capture on)."""
    if span is None:
        return
    try:
        rt = rt or runtime.active()
        span.set_attribute(semconv.ERROR_TYPE, semconv.TOOL_ERROR)
        if rt.capture_content:
            text = rt.content(_result_text(result))
            span.set_attribute(semconv.TOOL_CALL_RESULT, text)
            span.set_attributes(shown.tool_output(text, isinstance(result, str)))
            span.set_status(Status(StatusCode.ERROR, str(text)))
        else:
            span.set_status(Status(StatusCode.ERROR))
    except Exception as exc:
        counters.fault("tool.error_result", exc)
    end_span(span)


def tool_span_of(name: str) -> Span | None:
    """The current span when spanfold made it for a run of the tool ``name`` (a ``@tool`` function's, a framework's
    tool run's), else None: a producer that runs that very tool under it (an MCP call) adds its attributes to that
    span instead of making a second one."""
    span = otel_trace.get_current_span()
    scope = getattr(getattr(span, "instrumentation_scope", None), "name", None)
    if (
        not span.is_recording()
        or not isinstance(scope, str)
        or not (scope == "spanfold" or scope.startswith("spanfold."))
    ):
        return None
    attributes = getattr(span, "attributes", None)
    if not isinstance(attributes, Mapping) or attributes.get(semconv.OPERATION_NAME) != semconv.OP_EXECUTE_TOOL:
        return None
    return span if attributes.get(semconv.TOOL_NAME) == name else None


#: Set in the context a ``spanfold.agent`` run's code runs in (:func:`invocation_context`).
_INVOCATION_KEY = otel_context.create_key("spanfold.agent_open")


def invocation_context(context: otel_context.Context) -> otel_context.Context:
    """``context`` marked as inside a ``spanfold.agent`` run: every span started in it, however deep, is inside an
    invocation (:func:`in_invocation`)."""
    return otel_context.set_value(_INVOCATION_KEY, True, context)


def in_invocation() -> bool:
    """Whether an invocation runs here in this process: a ``spanfold.agent`` run is open, or the current span is one
    (``invoke_agent``, ``invoke_workflow``, ``handle_conversation_turn``: spanfold's or another producer's). An
    invocation started here is nested (``gen_ai.invocation.is_nested``)."""
    if otel_context.get_value(_INVOCATION_KEY):
        return True
    attributes = getattr(otel_trace.get_current_span(), "attributes", None)
    return isinstance(attributes, Mapping) and attributes.get(semconv.OPERATION_NAME) in semconv.INVOCATION_OPERATIONS


def framework_tool_run(*functions: Any) -> Token[tuple[Any, ...]] | None:
    """A framework's tool run, which has a span of its own, is about to call ``functions``: those that are ``@tool``
    functions make no second span for that call (a LangChain ``@tool`` around a ``@spanfold.tool`` function is one
    tool step). Pass the token back to :func:`framework_tool_run_end` when the run ends."""
    specs = tuple(spec for f in functions if (spec := getattr(f, _SPEC_ATTRIBUTE, None)) is not None)
    return _FRAMEWORK_RUNS.set(specs) if specs else None


def framework_tool_run_end(token: Token[tuple[Any, ...]] | None) -> None:
    if token is not None:
        with contextlib.suppress(ValueError):  # ended in another context than it began in: that value dies with it
            _FRAMEWORK_RUNS.reset(token)


ToolFailure = Callable[[Span, BaseException, Runtime], None]


def _fail_tool(span: Span, exc: BaseException, rt: Runtime) -> None:
    fail_tool_span(span, exc, rt)


def _in_tool_span(span: Span) -> Any:
    return otel_trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False)


def run_in_tool_span(
    span: Span,
    rt: Runtime,
    call: Callable[[], Any],
    token: Token[tuple[Any, ...]] | None = None,
    fail: ToolFailure = _fail_tool,
) -> Any:
    """A framework's tool run: ``call()`` with its tool span current; a raise fails the span (``fail``: a framework
    whose control-flow exceptions are no failure) and propagates. ``token``: :func:`framework_tool_run`'s, handed
    back when the call returns. The caller ends the span from what ``call()`` returned."""
    with _in_tool_span(span):
        try:
            return call()
        except BaseException as exc:
            fail(span, exc, rt)
            raise
        finally:
            framework_tool_run_end(token)


async def arun_in_tool_span(
    span: Span,
    rt: Runtime,
    call: Callable[[], Awaitable[Any]],
    token: Token[tuple[Any, ...]] | None = None,
    fail: ToolFailure = _fail_tool,
) -> Any:
    """:func:`run_in_tool_span` for a coroutine."""
    with _in_tool_span(span):
        try:
            return await call()
        except BaseException as exc:
            fail(span, exc, rt)
            raise
        finally:
            framework_tool_run_end(token)
