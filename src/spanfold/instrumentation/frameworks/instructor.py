"""Instructor (``instructor``): a structured extraction is one step of the run, its retries visible.

Instructor patches a client's ``create`` (``instructor.from_openai(client)`` and the other ``from_*``): a call with a
``response_model`` runs Instructor's retry loop, each attempt one call of the client underneath, its reply parsed and
validated into the model; a reply that fails validation is sent back, with the validation error, as the next
attempt's input. spanfold wraps that loop (``retry_sync_v2`` / ``retry_async_v2``, where Instructor's patched
``create`` calls it) in an ``invoke_workflow extract {Model}`` span: each attempt is a model call under it (the
client's own instrumentation: openai, anthropic, ...), so the flat trace shows every attempt, the validation error as
the tool output Instructor sent back, and the last attempt's answer; the parsed output is the span's ``output.value``
(with content capture on). When the retries run out, Instructor's ``InstructorRetryException`` fails the span, and a
run of its own (an extraction outside any run) is written failed. A call without ``response_model`` is the client's
call alone. Supported: ``instructor`` >= 1.17, < 2.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from opentelemetry.trace import Tracer

from spanfold import counters, semconv
from spanfold.codecs import jsonio
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.invocations.agent_runs import open_run, traced_run
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor

SUPPORTED: Final = "instructor >= 1.17, < 2"
PATCH_MODULE: Final = "instructor.v2.core.patch"


def extraction_name(response_model: Any) -> str:
    """``extract {Model}``: the run's name, after the model the reply is parsed into."""
    name = getattr(response_model, "__name__", None)
    return f"extract {name}" if isinstance(name, str) and name else "extract"


def _output(rt: Runtime) -> Callable[[Any], Mapping[str, Any]]:
    """The span's output: what the reply was parsed into, as JSON (with content capture on)."""

    def answered(result: Any) -> Mapping[str, Any]:
        if not rt.capture_content:
            return {}
        dump = getattr(result, "model_dump", None)
        value = dump(mode="json") if callable(dump) else result
        return {
            semconv.OPENINFERENCE_OUTPUT_VALUE: jsonio.dumps(rt.content(value)),
            semconv.OPENINFERENCE_OUTPUT_MIME_TYPE: semconv.MIME_JSON,
        }

    return answered


def retry_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    """``retry_sync_v2`` / ``retry_async_v2`` (a coroutine: the span ends when it is done)."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        opened = None
        try:
            response_model = kwargs.get("response_model", args[1] if len(args) > 1 else None)
            if response_model is not None:
                attributes = {semconv.OUTPUT_TYPE: "json"}
                opened = open_run(
                    tracer,
                    rt,
                    extraction_name(response_model),
                    "instructor.extract",
                    attributes,
                    operation=semconv.OP_INVOKE_WORKFLOW,
                )
        except Exception as exc:
            counters.fault("instructor.extract_start", exc)
        if opened is None:
            return wrapped(*args, **kwargs)
        return traced_run(wrapped, args, kwargs, *opened, answered=_output(rt))

    return wrapper


PATCHES: Final = (
    Patch(PATCH_MODULE, "retry_sync_v2", retry_wrapper),
    Patch(PATCH_MODULE, "retry_async_v2", retry_wrapper),
)


class InstructorInstrumentor(TableInstrumentor, library="instructor", supported=SUPPORTED, table=PATCHES):
    """Instructor's structured extractions, each attempt a model call under it."""
