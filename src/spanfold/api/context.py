"""``spanfold.context``: who a run is for and what it belongs to, set once by the application.

::

    with spanfold.context(user_id="u-42", session_id="chat-7", tags=["beta"], metadata={"tenant": "acme"},
                          prompt=("support-answer", "v3")):
        answer(question)          # every span started inside carries them; the run's metadata line too

A context manager (``with`` / ``async with``) and a decorator (of plain, coroutine, generator and async-generator
functions: the values hold while the function's own code runs, not while its caller consumes a generator). Contexts
nest: an inner one wins per key (``user_id``, ``session_id``, ``prompt``, each metadata key), and tags add up (without
repeats, in the order first given).

The values live in the OpenTelemetry context (one key of it, :data:`KEY`), itself a ``contextvars.ContextVar``: they
follow the code into ``asyncio`` tasks (which copy the context) and, with the ``threads`` option (on by default:
:mod:`spanfold.instrumentation.threads`), into threads and thread pools, with the current span.
:class:`~spanfold.api.processor.ContextSpanProcessor` writes them on every span started while they hold, whoever makes
the span (:meth:`RunContext.attributes`).

Checked when the context is made (a decorator: when it decorates), each error naming the argument: ``TypeError`` for a
value of the wrong type, ``ValueError`` for one out of bounds. The bounds keep every span within the OpenTelemetry
SDK's default of 128 attributes whatever the application passes:

* ``user_id``, ``session_id``: a non-empty string of at most :data:`MAX_ID` (256) characters;
* ``tags``: a list (or tuple) of at most :data:`MAX_TAGS` (64) non-empty strings of at most :data:`MAX_TAG` (128)
  characters, the enclosing contexts' tags counted;
* ``metadata``: a mapping of at most :data:`MAX_METADATA_KEYS` (32) keys, the enclosing contexts' counted (each key
  is one attribute on every span for Langfuse), each a non-empty string of at most :data:`MAX_KEY` (128) characters,
  each value a JSON scalar: a string of at most :data:`MAX_VALUE` (1024) characters, a bool, an integer that fits 64
  bits, or a finite float (``None`` is no value: leave the key out);
* ``prompt``: the prompt template's name, or ``(name, version)``, the version a string or an integer (written as
  text), each of at most :data:`MAX_ID` characters.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Mapping
from contextvars import ContextVar
from types import TracebackType
from typing import Any, Final, TypeAlias, TypeVar

from opentelemetry import context as otel_context

from spanfold import semconv
from spanfold.api import baggage
from spanfold.codecs import jsonio
from spanfold.content.runtime import Runtime

F = TypeVar("F", bound=Callable[..., Any])

MAX_ID: Final = 256
MAX_TAGS: Final = 64
MAX_TAG: Final = 128
MAX_METADATA_KEYS: Final = 32
MAX_KEY: Final = 128
MAX_VALUE: Final = 1024
_INT64: Final = 2**63

#: The key of the OpenTelemetry context the open :class:`RunContext` is held under.
KEY: Final = otel_context.create_key("spanfold-context")

Scalar: TypeAlias = str | bool | int | float
Prompt: TypeAlias = str | tuple[str, str | int | None]


class RunContext:
    """The values of the contexts open here, merged (immutable). Its span attributes are made once per
    :class:`~spanfold.content.runtime.Runtime` (content capture and redaction decide what of the metadata is
    written) and shared by every span started while it holds."""

    __slots__ = ("_attributes", "metadata", "prompt_name", "prompt_version", "session_id", "tags", "user_id")

    def __init__(
        self,
        user_id: str | None = None,
        session_id: str | None = None,
        tags: tuple[str, ...] = (),
        metadata: Mapping[str, Scalar] | None = None,
        prompt_name: str | None = None,
        prompt_version: str | None = None,
    ) -> None:
        self.user_id = user_id
        self.session_id = session_id
        self.tags = tags
        self.metadata: Mapping[str, Scalar] = dict(metadata or {})
        self.prompt_name = prompt_name
        self.prompt_version = prompt_version
        self._attributes: tuple[Runtime, dict[str, Any]] | None = None

    def merged(self, inner: RunContext) -> RunContext:
        """This context with ``inner`` opened inside it: ``inner`` wins per key, tags add up (no repeats, in order)."""
        tags = self.tags + tuple(t for t in inner.tags if t not in self.tags) if inner.tags else self.tags
        if len(tags) > MAX_TAGS:
            raise ValueError(f"spanfold.context: tags: {len(tags)} with the enclosing contexts'; at most {MAX_TAGS}")
        metadata = {**self.metadata, **inner.metadata} if inner.metadata else self.metadata
        if len(metadata) > MAX_METADATA_KEYS:
            raise ValueError(
                f"spanfold.context: metadata: {len(metadata)} keys with the enclosing contexts'; at most "
                f"{MAX_METADATA_KEYS}"
            )
        named = inner.prompt_name is not None
        return RunContext(
            inner.user_id if inner.user_id is not None else self.user_id,
            inner.session_id if inner.session_id is not None else self.session_id,
            tags,
            metadata,
            inner.prompt_name if named else self.prompt_name,
            inner.prompt_version if named else self.prompt_version,
        )

    def attributes(self, rt: Runtime) -> dict[str, Any]:
        """The span attributes of these values (``gen_ai.conversation.id`` aside: the processor writes it only on a
        span without one): ``user.id``, ``session.id``, ``tag.tags`` and ``langfuse.trace.tags``,
        ``gen_ai.prompt.name`` / ``.version``; with content capture on, the metadata (redacted as the runtime says) as
        OpenInference's ``metadata`` JSON and one ``langfuse.trace.metadata.<key>`` per key. Capture off writes no
        metadata at all."""
        cached = self._attributes
        if cached is not None and cached[0] is rt:
            return cached[1]
        attrs: dict[str, Any] = {}
        if self.user_id is not None:
            attrs[semconv.USER_ID] = self.user_id
        if self.session_id is not None:
            attrs[semconv.OPENINFERENCE_SESSION_ID] = self.session_id
        if self.tags:
            attrs[semconv.OPENINFERENCE_TAGS] = self.tags
            attrs[semconv.LANGFUSE_TRACE_TAGS] = self.tags
        if self.prompt_name is not None:
            attrs[semconv.PROMPT_NAME] = self.prompt_name
            if self.prompt_version is not None:
                attrs[semconv.PROMPT_VERSION] = self.prompt_version
        if self.metadata and rt.capture_content:
            values = {k: rt.content(v) if isinstance(v, str) else v for k, v in self.metadata.items()}
            attrs[semconv.OPENINFERENCE_METADATA] = jsonio.dumps(values)
            for key, value in values.items():
                attrs[semconv.LANGFUSE_TRACE_METADATA_PREFIX + key] = value
        self._attributes = (rt, attrs)
        return attrs

    def as_dict(self) -> dict[str, Any]:
        """The values, as the run's metadata line names them (only those set)."""
        out: dict[str, Any] = {}
        if self.user_id is not None:
            out["user_id"] = self.user_id
        if self.session_id is not None:
            out["session_id"] = self.session_id
        if self.tags:
            out["tags"] = list(self.tags)
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        if self.prompt_name is not None:
            prompt = {"name": self.prompt_name}
            if self.prompt_version is not None:
                prompt["version"] = self.prompt_version
            out["prompt"] = prompt
        return out


def current() -> RunContext | None:
    """The values of the contexts open in this thread or task (merged), or None when none is open."""
    value = otel_context.get_value(KEY)
    return value if isinstance(value, RunContext) else None


def values() -> dict[str, Any]:
    """What :func:`current` holds, as the metadata line names it (``{}`` when no context is open)."""
    state = current()
    return state.as_dict() if state is not None else {}


# --- checks -----------------------------------------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return type(value).__name__


def _text(name: str, value: Any, limit: int) -> str:
    if not isinstance(value, str):
        raise TypeError(f"spanfold.context: {name} must be a string, not {_type_name(value)}")
    if not value:
        raise ValueError(f"spanfold.context: {name} is empty")
    if len(value) > limit:
        raise ValueError(f"spanfold.context: {name} is {len(value)} characters long; at most {limit}")
    return value


def _tags(value: Any) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable) or isinstance(value, Mapping):
        raise TypeError(f"spanfold.context: tags must be a list of strings, not {_type_name(value)}")
    out: list[str] = []
    for i, tag in enumerate(value):
        _text(f"tags[{i}]", tag, MAX_TAG)
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise ValueError(f"spanfold.context: tags: {len(out)} tags; at most {MAX_TAGS}")
    return tuple(out)


def _scalar(key: str, value: Any) -> Scalar:
    where = f"metadata[{key!r}]"
    if isinstance(value, str):
        if len(value) > MAX_VALUE:
            raise ValueError(f"spanfold.context: {where} is {len(value)} characters long; at most {MAX_VALUE}")
        return value
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -_INT64 <= value < _INT64:
            raise ValueError(f"spanfold.context: {where} does not fit in 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"spanfold.context: {where} is {value}; a finite number is expected")
        return value
    raise TypeError(f"spanfold.context: {where} must be a str, bool, int or float, not {_type_name(value)}")


def _metadata(value: Any) -> dict[str, Scalar]:
    if not isinstance(value, Mapping):
        raise TypeError(f"spanfold.context: metadata must be a mapping (a dict), not {_type_name(value)}")
    if len(value) > MAX_METADATA_KEYS:
        raise ValueError(f"spanfold.context: metadata: {len(value)} keys; at most {MAX_METADATA_KEYS}")
    out: dict[str, Scalar] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError(f"spanfold.context: metadata keys must be strings, not {_type_name(key)} ({key!r})")
        _text(f"metadata key {key!r}", key, MAX_KEY)
        out[key] = _scalar(key, item)
    return out


def _prompt(value: Any) -> tuple[str, str | None]:
    if isinstance(value, str):
        return _text("prompt", value, MAX_ID), None
    if not isinstance(value, tuple) or len(value) != 2:
        raise TypeError(
            f"spanfold.context: prompt must be a name or a (name, version) tuple, not {_type_name(value)}"
            + (f" of {len(value)}" if isinstance(value, (tuple, list)) else "")
        )
    name, version = value
    _text("prompt name", name, MAX_ID)
    if version is None:
        return name, None
    if isinstance(version, int) and not isinstance(version, bool):
        version = str(version)
    if not isinstance(version, str):
        raise TypeError(f"spanfold.context: prompt version must be a string or an integer, not {_type_name(version)}")
    return name, _text("prompt version", version, MAX_ID)


def checked(
    user_id: str | None = None,
    session_id: str | None = None,
    tags: Iterable[str] | None = None,
    metadata: Mapping[str, Scalar] | None = None,
    prompt: Prompt | None = None,
) -> RunContext:
    """The values given, checked (see the module docstring), as a :class:`RunContext` of their own."""
    name, version = _prompt(prompt) if prompt is not None else (None, None)
    return RunContext(
        _text("user_id", user_id, MAX_ID) if user_id is not None else None,
        _text("session_id", session_id, MAX_ID) if session_id is not None else None,
        _tags(tags) if tags is not None else (),
        _metadata(metadata) if metadata is not None else None,
        name,
        version,
    )


# --- the public context manager and decorator ----------------------------------------------------------------------

#: The contexts entered in this thread or task, innermost last: ``(context, token of the OpenTelemetry context)``.
#: One variable for every context object, so one object may be entered concurrently and nested.
_ENTERED: ContextVar[tuple[tuple[context, object], ...]] = ContextVar("spanfold_contexts", default=())


class context:
    """Who a run is for and what it belongs to, on every span started inside and in each run's metadata line: a
    context manager (``with`` / ``async with``) and a decorator (plain, coroutine, generator and async-generator
    functions). Nested contexts merge: the inner one wins per key, tags add up.

    * ``user_id``: the end user the run acts for (``user.id``; ``user_id`` in the metadata).
    * ``session_id``: the session or chat the run belongs to (``session.id``, and ``gen_ai.conversation.id`` on a span
      that names no conversation of its own; ``session_id`` in the metadata). Runs that share it are grouped by
      ``spanfold summary --by session``.
    * ``tags``: labels (``tag.tags`` and ``langfuse.trace.tags``; ``tags``).
    * ``metadata``: string keys and JSON-scalar values (OpenInference's ``metadata`` JSON and Langfuse's
      ``langfuse.trace.metadata.<key>``; ``metadata``). Content: written only with content capture on, redacted when
      redaction is on.
    * ``prompt``: the prompt template's name, or ``(name, version)`` (``gen_ai.prompt.name`` /
      ``gen_ai.prompt.version``; ``prompt`` ``{"name", "version"}``).

    Values are checked here, each error naming its argument (``TypeError``, ``ValueError``): ids of at most 256
    characters, at most 64 tags of at most 128, at most 32 metadata keys (the enclosing contexts' counted) with values
    of at most 1024 characters. See :mod:`spanfold.api.context`.
    """

    def __init__(
        self,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        tags: Iterable[str] | None = None,
        metadata: Mapping[str, Scalar] | None = None,
        prompt: Prompt | None = None,
    ) -> None:
        self.values = checked(user_id, session_id, tags, metadata, prompt)

    def __enter__(self) -> context:
        outer = current()
        state = self.values if outer is None else outer.merged(self.values)
        ctx = otel_context.set_value(KEY, state)
        if baggage.enabled() and (self.values.user_id is not None or self.values.session_id is not None):
            ctx = baggage.outgoing(ctx, state.user_id, state.session_id)  # to the services it calls (opt-in)
        token = otel_context.attach(ctx)
        _ENTERED.set((*_ENTERED.get(), (self, token)))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        stack = _ENTERED.get()
        if not stack or stack[-1][0] is not self:  # entering failed, or exits out of order: nothing of ours is open
            return
        _ENTERED.set(stack[:-1])
        otel_context.detach(stack[-1][1])  # type: ignore[arg-type]

    async def __aenter__(self) -> context:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def __call__(self, fn: F) -> F:
        """Use as a decorator: each call of ``fn`` runs inside this context (merged with the caller's, at the call)."""
        if inspect.isasyncgenfunction(fn):
            return self._async_generator(fn)  # type: ignore[return-value]
        if inspect.isgeneratorfunction(fn):
            return self._generator(fn)  # type: ignore[return-value]
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with self:
                    return await fn(*args, **kwargs)

            return run_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return run  # type: ignore[return-value]

    def _generator(self, fn: Callable[..., Generator[Any, Any, Any]]) -> Callable[..., Generator[Any, Any, Any]]:
        """The generator's own code runs inside the context, one step at a time (its consumer's code, between two
        items, does not)."""

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            with self:
                gen = fn(*args, **kwargs)
            sent: Any = None
            thrown: BaseException | None = None
            while True:
                with self:
                    try:
                        item = gen.send(sent) if thrown is None else gen.throw(thrown)
                    except StopIteration as stop:
                        return stop.value
                    finally:
                        thrown = None
                try:
                    sent = yield item
                except GeneratorExit:
                    with self:
                        gen.close()
                    raise
                except BaseException as exc:  # thrown in by the consumer: into the generator's code
                    sent, thrown = None, exc

        return run

    def _async_generator(self, fn: Callable[..., AsyncGenerator[Any, Any]]) -> Callable[..., AsyncGenerator[Any, Any]]:
        @functools.wraps(fn)
        async def run(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
            with self:
                gen = fn(*args, **kwargs)
            sent: Any = None
            thrown: BaseException | None = None
            while True:
                with self:
                    try:
                        item = await (gen.asend(sent) if thrown is None else gen.athrow(thrown))
                    except StopAsyncIteration:
                        return
                    finally:
                        thrown = None
                try:
                    sent = yield item
                except GeneratorExit:
                    with self:
                        await gen.aclose()
                    raise
                except BaseException as exc:
                    sent, thrown = None, exc

        return run
