"""The OpenTelemetry context carried into threads and thread pools (the ``threads`` option), so a run whose tools run
in a ``ThreadPoolExecutor`` stays one trace and ``spanfold.context``'s values reach them.

What OpenTelemetry's ``opentelemetry-instrumentation-threading`` does, without importing it: that package's
instrumentor base and dependency checks cost ``init()`` ~35 ms in an openai application, and the ~3,000 objects they
leave were what set off a full collection in the application's first calls (``bench/first_calls.py``):

* ``Thread.start`` (``Timer`` too) keeps the starting thread's current context on the thread; its ``run`` runs in it;
* ``ThreadPoolExecutor.submit`` runs the function in the context current when it was submitted.

Process-wide, as that package is: a long-lived thread started inside a span keeps that span as its parent. Not done
twice: when OpenTelemetry's instrumentation is on already (``opentelemetry-instrument`` turned it on), this is not.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from concurrent import futures
from typing import Any

from opentelemetry import context
from wrapt import wrap_function_wrapper

from spanfold.instrumentation.toolkit.patching import unwrap

#: Where the context a thread starts with is kept on it (OpenTelemetry's instrumentation keeps it under the same name,
#: so a thread started under either runs in it).
_KEPT = "_otel_context"
_carrying = False


def _start(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    setattr(instance, _KEPT, context.get_current())
    return wrapped(*args, **kwargs)


def _run(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    kept = getattr(instance, _KEPT, None)
    token = context.attach(kept) if kept is not None else None
    try:
        return wrapped(*args, **kwargs)
    finally:
        if token is not None:
            context.detach(token)


def _submit(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if not args:  # submit(fn=...) is refused by the executor itself: let it say so
        return wrapped(*args, **kwargs)
    function, current = args[0], context.get_current()

    def in_context(*call_args: Any, **call_kwargs: Any) -> Any:
        token = context.attach(current)
        try:
            return function(*call_args, **call_kwargs)
        finally:
            context.detach(token)

    return wrapped(in_context, *args[1:], **kwargs)


#: What is wrapped, and with what (``Timer`` overrides ``run``).
_PATCHES: tuple[tuple[type, str, Callable[..., Any]], ...] = (
    (threading.Thread, "start", _start),
    (threading.Thread, "run", _run),
    (threading.Timer, "run", _run),
    (futures.ThreadPoolExecutor, "submit", _submit),
)


def _opentelemetrys_on() -> bool:
    """Whether OpenTelemetry's threading instrumentation is on (looked up only when something imported it)."""
    module = sys.modules.get("opentelemetry.instrumentation.threading")
    instrumentor = getattr(module, "ThreadingInstrumentor", None)
    try:
        return bool(instrumentor is not None and instrumentor().is_instrumented_by_opentelemetry)
    except Exception:
        return False


def carry() -> bool:
    """Carry the context into threads and thread pools from now on; False when it is carried already."""
    global _carrying
    if _carrying or _opentelemetrys_on():
        return False
    _carrying = True
    for owner, name, wrapper in _PATCHES:
        wrap_function_wrapper(owner, name, wrapper)
    return True


def stop() -> None:
    """Threads and pools as they were before :func:`carry`."""
    global _carrying
    if _carrying:
        _carrying = False
        for owner, name, _ in _PATCHES:
            unwrap(owner, name)
