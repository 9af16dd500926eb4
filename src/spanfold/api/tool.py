"""``@spanfold.tool``: every call of a tool function an ``execute_tool {name}`` span
(:mod:`spanfold.instrumentation.toolkit.tool_spans` makes it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from spanfold.instrumentation.toolkit.tool_spans import traced_tool

F = TypeVar("F", bound=Callable[..., Any])


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(*, name: str | None = None, description: str | None = None, dispatch: bool = False) -> Callable[[F], F]: ...


def tool(
    fn: F | None = None, /, *, name: str | None = None, description: str | None = None, dispatch: bool = False
) -> Any:
    """Trace every call of a tool function as an ``execute_tool {name}`` span.

    Use bare (``@spanfold.tool``) or with options (``@spanfold.tool(name="search")``), on sync or async
    functions; generator functions are not traced (their items reach the trace through the next model call's
    inputs). Pass ``tool_call_id=`` in a call to record the model's tool-call id (it reaches the function only when
    the function declares that parameter); without it the fold pairs the call by name and arguments.

    ``dispatch=True``: the function runs many tools, and each call says which. Its first argument is the tool's name
    and its second the tool's arguments (a mapping or JSON text; further arguments are the dispatcher's own), as in
    ``run_tool(call.function.name, call.function.arguments, tool_call_id=call.id)``; or its first argument is the
    tool call the SDK returned (OpenAI, Responses, Anthropic, Gemini, Bedrock, Ollama), which gives the name, the
    arguments and the call id. Each call is then an ``execute_tool {that tool}`` span with that tool's arguments.
    """
    if fn is not None:
        return traced_tool(fn, name, description, dispatch)
    return lambda f: traced_tool(f, name, description, dispatch)
