"""Claude Agent SDK (``claude-agent-sdk`` >= 0.2, < 0.3; tested with 0.2.189 and the CLI 2.1.332 it bundles): what
is patched, once on the classes. The agent loop and the model calls run in the bundled Claude Code CLI, a subprocess
no patched SDK sees: the messages the application receives are all there is (:mod:`.session` says what each becomes).

* ``InternalClient.process_query``, what ``query()`` iterates: the run, current while the SDK works for each message
  (so the control tasks it starts, the in-process MCP servers among them, and the CLI's ``TRACEPARENT`` are in the
  run), ended with the stream: exhausted, failed (the run fails with the exception: ``ResultError`` after an error
  result), closed or collected;
* ``ClaudeSDKClient.connect`` / ``query`` (the prompts sent; a turn opens with one), ``receive_messages`` (which
  ``receive_response`` reads: the messages received; a turn ends with its ``ResultMessage``) and ``disconnect``
  (a turn still open ends);
* ``Query._handle_sdk_mcp_request``: an in-process MCP server's ``tools/call`` carries the trace context of its tool
  use's span, so the server's own span joins the run (it folds into that tool step).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable
from typing import Any, Final
from weakref import WeakKeyDictionary

from opentelemetry import context as otel_context
from opentelemetry.trace import Tracer

from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.claude_agent_sdk.session import Session
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor
from spanfold.instrumentation.toolkit.watched import AsyncWatched, called_within

SUPPORTED: Final = "claude-agent-sdk >= 0.2, < 0.3"

#: The session whose run the SDK's tasks belong to, in the context they start in.
_SESSION: Final = otel_context.create_key("spanfold.claude_agent_sdk.session")
#: Each client's session (its conversation outlives its turns).
_CLIENTS: WeakKeyDictionary[Any, Session] = WeakKeyDictionary()


def _messages(stream: Any, session: Session, context: otel_context.Context | None, ends: bool) -> AsyncWatched:
    """The SDK's message stream: each message handed to the session as the application gets it, ``context`` (a
    ``query()``'s run) current while the SDK works for it; ``ends``: the stream's end ends the run (``query()``),
    else only its failure does (a client's stream outlives its turns)."""

    def ended(error: BaseException | None) -> None:
        if ends or error is not None:
            session.end_turn(error)

    return AsyncWatched(stream, "claude_agent_sdk.messages", context, session.message, ended)


def _with_prompt(
    session: Session, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments, its ``prompt`` (the first) told to the session: a string now, an async iterable's
    messages as the SDK reads them."""
    prompt = args[0] if args else kwargs.get("prompt")
    if isinstance(prompt, str):
        session.prompt(prompt)
    elif isinstance(prompt, AsyncIterable):
        watched = AsyncWatched(aiter(prompt), "claude_agent_sdk.prompt", on_item=session.prompt)
        return ((watched, *args[1:]), kwargs) if args else (args, {**kwargs, "prompt": watched})
    return args, kwargs


def _client_session(tracer: Tracer, rt: Runtime, client: Any) -> Session:
    session = _CLIENTS.get(client)
    if session is None:
        session = _CLIENTS[client] = Session(tracer, rt, getattr(client, "options", None), turns=True)
    return session


def query_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    """``InternalClient.process_query(prompt, options, transport)``: one run."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            options = args[1] if len(args) > 1 else kwargs.get("options")
            session = Session(tracer, rt, options, turns=False)
            session.open_turn()
            args, kwargs = _with_prompt(session, args, kwargs)
            context = otel_context.set_value(_SESSION, session, session.main.context)
        except Exception as exc:
            counters.fault("claude_agent_sdk.run_start", exc)
            return wrapped(*args, **kwargs)
        try:
            stream = wrapped(*args, **kwargs)
        except BaseException as exc:
            session.end_turn(exc)
            raise
        return _messages(stream, session, context, ends=True)

    return wrapper


def prompt_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    """``ClaudeSDKClient.connect(prompt)`` / ``query(prompt)``: a prompt sent (a turn opens with it); the tasks the
    call starts know the client's session."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            session = _client_session(tracer, rt, instance)
            args, kwargs = _with_prompt(session, args, kwargs)
            context = otel_context.set_value(_SESSION, session)
        except Exception as exc:
            counters.fault("claude_agent_sdk.prompt", exc)
            return wrapped(*args, **kwargs)
        return called_within(context, lambda: wrapped(*args, **kwargs), "claude_agent_sdk.prompt")

    return wrapper


def receive_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    """``ClaudeSDKClient.receive_messages()`` (``receive_response()`` reads it): the messages received."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        stream = wrapped(*args, **kwargs)
        try:
            return _messages(stream, _client_session(tracer, rt, instance), None, ends=False)
        except Exception as exc:
            counters.fault("claude_agent_sdk.receive", exc)
            return stream

    return wrapper


def disconnect_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    """``ClaudeSDKClient.disconnect()``: a turn still open ends (its result never came)."""

    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            session = _CLIENTS.get(instance)
            if session is not None:
                session.end_turn()
        except Exception as exc:
            counters.fault("claude_agent_sdk.disconnect", exc)
        return await wrapped(*args, **kwargs)

    return wrapper


def mcp_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    """``Query._handle_sdk_mcp_request(server_name, message)``: a ``tools/call`` in its tool use's trace context."""

    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            session = otel_context.get_value(_SESSION)
            if isinstance(session, Session) and len(args) == 2 and not kwargs:
                traced = session.mcp_call(args[0], args[1])
                if traced is not None:
                    args = (args[0], traced)
        except Exception as exc:
            counters.fault("claude_agent_sdk.mcp_call", exc)
        return await wrapped(*args, **kwargs)

    return wrapper


PATCHES: Final = (
    Patch("claude_agent_sdk._internal.client", "InternalClient.process_query", query_wrapper),
    Patch("claude_agent_sdk.client", "ClaudeSDKClient.connect", prompt_wrapper),
    Patch("claude_agent_sdk.client", "ClaudeSDKClient.query", prompt_wrapper),
    Patch("claude_agent_sdk.client", "ClaudeSDKClient.receive_messages", receive_wrapper),
    Patch("claude_agent_sdk.client", "ClaudeSDKClient.disconnect", disconnect_wrapper),
    Patch("claude_agent_sdk._internal.query", "Query._handle_sdk_mcp_request", mcp_wrapper),
)


class ClaudeAgentSDKInstrumentor(TableInstrumentor, library="claude_agent_sdk", supported=SUPPORTED, table=PATCHES):
    """Claude Agent SDK runs (``query()``, a client's turns) with their model steps and tool runs."""
