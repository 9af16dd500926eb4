"""A provider's patches as a table, applied and removed by one instrumentor base class.

A provider module lists :class:`Patch` entries (module, ``"Class.method"`` or function, and the wrapper factory) and
subclasses :class:`TableInstrumentor` with its library's name and supported range. Methods an SDK version does not
have (``Responses`` in an old openai 1.x, a beta namespace, the SDK's own tracing hooks) are skipped quietly: the
instrumentor wraps what exists. A patch is applied when its module is imported (a post-import hook; at once when it
already is), so an SDK that loads its resource modules lazily still loads only those the application uses.
``uninstrument()`` restores exactly what was wrapped, and hooks that have not fired yet will not patch.

The kinds of entry the providers share are built here, so a provider's table says only what it patches:

* :func:`model_methods` (:func:`model_method`): an SDK's model methods, a span per call, sync and async classes;
* :func:`plain`: a hook with a fixed wrapper;
* :func:`helper_closes`: a stream helper's ``close()`` ends the span of the stream it reads (openai's ``stream()``);
* :func:`deferred_requests` and :func:`adopting_managers`: a stream helper whose manager makes the request when it
  is entered (anthropic's ``stream()``), and older SDKs' managers handed our proxy;
* :func:`class_factory`: a class factory whose accepted products get a method of their own, taken back by
  ``uninstrument()`` (botocore's client classes; :func:`~spanfold.instrumentation.toolkit.calls.by_operation` is
  the method's wrapper there).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import sys
import threading
import weakref
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar, Final

import wrapt
from opentelemetry.trace import Tracer, get_tracer

from spanfold import counters
from spanfold.content import runtime
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit import versions
from spanfold.instrumentation.toolkit.calls import ModelApi, Wrapper, async_wrapper, sync_wrapper
from spanfold.instrumentation.toolkit.hooks import ImportHooks
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.streams import AsyncStreamProxy, SyncStreamProxy
from spanfold.stitching import conversations
from spanfold.version import __version__

_log = logging.getLogger(__name__)

#: Held while a table is applied or removed (post-import hooks fire on whichever thread imports the module).
_LOCK = threading.RLock()

#: (tracer, runtime) -> the wrapt wrapper of one patched function.
WrapperFactory = Callable[[Tracer, Runtime], Wrapper]


@dataclass(frozen=True, slots=True)
class Patch:
    """``module``'s ``name`` (``"Class.method"`` or a function) wrapped by ``factory(tracer, runtime)``; ``restore``:
    what ``uninstrument()`` undoes beyond that wrapper (the methods a class factory's products were given)."""

    module: str
    name: str
    factory: WrapperFactory
    restore: Callable[[], None] | None = None


def model_method(module: str, name: str, api: ModelApi, is_async: bool) -> Patch:
    """A model API method: a span per call from ``api``."""
    make = async_wrapper if is_async else sync_wrapper
    return Patch(module, name, lambda tracer, rt: make(api, tracer, rt))


def model_methods(module: str, classes: Sequence[str], methods: Sequence[str], api: ModelApi) -> tuple[Patch, ...]:
    """Each of ``methods`` of each of ``module``'s ``classes`` as a model method of ``api``. A class whose name starts
    with ``Async`` is an SDK's async twin (``AsyncCompletions``, ``AsyncMessages``, ``AsyncModels``): its methods are
    coroutine functions, given the async wrapper."""
    return tuple(
        model_method(module, f"{cls}.{method}", api, cls.startswith("Async")) for cls in classes for method in methods
    )


def plain(module: str, name: str, wrapper: Wrapper) -> Patch:
    """A function wrapped by a fixed wrapper (a hook that needs neither tracer nor runtime)."""
    return Patch(module, name, lambda tracer, rt: wrapper)


#: Where a Stainless SDK's stream helper (openai's ``ChatCompletionStream``, anthropic's ``MessageStream``) keeps the
#: stream it reads: the one a model call returned, our proxy.
HELPER_STREAM: Final = "_raw_stream"


def helper_closes(module: str, classes: Sequence[str]) -> tuple[Patch, ...]:
    """``close()`` of each of ``module``'s stream helper ``classes`` (openai's ``ChatCompletionStream``, sync and
    async) ends the span of the stream the helper reads at once: the helper closes the HTTP response, not that
    stream, whose proxy would otherwise never see the end."""
    return tuple(plain(module, f"{cls}.close", _close_helper) for cls in classes)


def _close_helper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        stream = getattr(instance, HELPER_STREAM, None)
        if isinstance(stream, (SyncStreamProxy, AsyncStreamProxy)):
            stream._self_state.finish()
    except Exception as exc:
        counters.fault("patch.helper_close", exc)
    return wrapped(*args, **kwargs)


def deferred_requests(
    module: str, classes: Sequence[str], method: str, api: ModelApi, *, materialize: Sequence[str] = ()
) -> tuple[Patch, ...]:
    """``method`` of each of ``module``'s ``classes`` (anthropic's ``Messages.stream``; a class named ``Async...`` is
    the async twin) is a stream helper: it returns a manager holding the request (a callable, or an un-awaited
    coroutine for the async class, in its private ``__api_request``) that the manager makes when it is entered. The
    request is made through ``api``'s model wrapper then, so the span starts there; the stream that gives is kept on
    the manager for :func:`adopting_managers`. ``materialize``: keyword arguments whose one-shot iterators are made
    lists first (the manager keeps the very arguments, and reading the request must not consume them)."""
    return tuple(
        Patch(
            module, f"{cls}.{method}", functools.partial(_deferring, api, cls.startswith("Async"), tuple(materialize))
        )
        for cls in classes
    )


def adopting_managers(module: str, classes: Sequence[str]) -> tuple[Patch, ...]:
    """``__enter__`` (``__aenter__`` for a class named ``Async...``) of each of ``module``'s stream manager
    ``classes``: where an older SDK (anthropic 0.40, the 0.x prompt-caching beta) builds the helper's stream anew over
    the HTTP response of the stream the deferred request returned, so our proxy would never be read, the helper reads
    our proxy instead (the same response, not yet read). Newer SDKs hand the helper our proxy itself: nothing to do."""
    return tuple(
        plain(module, f"{cls}.__aenter__", _aenter)
        if cls.startswith("Async")
        else plain(module, f"{cls}.__enter__", _enter)
        for cls in classes
    )


#: The attribute of a stream manager that holds the stream our wrapper returned for its deferred request.
_OUR_STREAM: Final = "_spanfold_stream"


def _deferring(api: ModelApi, is_async: bool, materialize: tuple[str, ...], tracer: Tracer, rt: Runtime) -> Wrapper:
    start = (async_wrapper if is_async else sync_wrapper)(api, tracer, rt)

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            m.materialize(kwargs, *materialize)
        except Exception as exc:
            counters.fault(f"{api.kind}.stream_helper", exc)
        manager = wrapped(*args, **kwargs)
        try:
            _defer(manager, start, instance, kwargs, is_async)
        except Exception as exc:
            counters.fault(f"{api.kind}.stream_helper", exc)
        return manager

    return wrapper


def _defer(manager: Any, start: Wrapper, instance: Any, kwargs: dict[str, Any], is_async: bool) -> None:
    """The manager's request made through ``start`` (our span) when the manager is entered; the stream that gives is
    kept on the manager (:func:`_adopt`)."""
    name = next((key for key in vars(manager) if key.endswith("__api_request")), None)
    if name is None:
        return
    request, kept = getattr(manager, name), vars(manager)
    if is_async:

        async def send(**_: Any) -> Any:
            return await request

        async def started() -> Any:
            kept[_OUR_STREAM] = stream = await start(send, instance, (), kwargs)
            return stream

        setattr(manager, name, started())  # a coroutine the manager awaits
    else:

        def sent() -> Any:
            kept[_OUR_STREAM] = stream = start(lambda **_: request(), instance, (), kwargs)
            return stream

        setattr(manager, name, sent)


def _adopt(manager: Any, helper_stream: Any) -> Any:
    """The helper's stream, reading our proxy where the SDK made it a new stream over our stream's response."""
    try:
        ours = vars(manager).get(_OUR_STREAM)
        raw = getattr(helper_stream, HELPER_STREAM, None)
        if ours is not None and raw is not None and raw is not ours and raw.response is ours.response:
            setattr(helper_stream, HELPER_STREAM, ours)
    except Exception as exc:
        counters.fault("patch.stream_manager", exc)
    return helper_stream


def _enter(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return _adopt(instance, wrapped(*args, **kwargs))


async def _aenter(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return _adopt(instance, await wrapped(*args, **kwargs))


def class_factory(
    module: str,
    name: str,
    accepts: Callable[[tuple[Any, ...], dict[str, Any]], bool],
    method: str,
    wrapper: Callable[[Tracer, Runtime, bool], Wrapper],
    *,
    is_async: bool = False,
) -> Patch:
    """``module``'s class factory ``name`` (botocore's ``ClientCreator._create_client_class``): a class it makes from
    arguments ``accepts(args, kwargs)`` takes (a Bedrock Runtime client's) gets its inherited ``method`` wrapped, as an
    attribute of its own, by ``wrapper(tracer, runtime, is_async_method)`` (``is_async_method``: that method is a
    coroutine function); every other class keeps the method it inherits, so no wrapper runs on its calls.
    ``uninstrument()`` takes the wrappers back: the classes inherit their method again. ``is_async``: the factory
    itself is a coroutine function (aiobotocore's). A class made before ``instrument()`` is not wrapped."""
    products = _Products(method)
    factory = functools.partial(_class_factory, products, accepts, wrapper, is_async)
    return Patch(module, name, factory, restore=products.restore)


class _Products:
    """The classes a class factory's patch gave a wrapped ``method`` (weakly held: a class may go)."""

    __slots__ = ("classes", "method")

    def __init__(self, method: str) -> None:
        self.method = method
        self.classes: weakref.WeakSet[type] = weakref.WeakSet()

    def adopt(self, cls: type, wrapper: Callable[[bool], Wrapper]) -> None:
        if self.method in vars(cls):  # a method of its own, or wrapped already: left alone
            return
        is_async = inspect.iscoroutinefunction(getattr(cls, self.method))
        with _LOCK:
            wrapt.wrap_function_wrapper(cls, self.method, wrapper(is_async))
            self.classes.add(cls)

    def restore(self) -> None:
        with _LOCK:
            for cls in list(self.classes):
                if isinstance(vars(cls).get(self.method), wrapt.FunctionWrapper):
                    delattr(cls, self.method)
            self.classes.clear()


def _class_factory(
    products: _Products,
    accepts: Callable[[tuple[Any, ...], dict[str, Any]], bool],
    wrapper: Callable[[Tracer, Runtime, bool], Wrapper],
    is_async: bool,
    tracer: Tracer,
    rt: Runtime,
) -> Wrapper:
    def adopt(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            if isinstance(cls, type) and accepts(args, kwargs):
                products.adopt(cls, lambda is_async_method: wrapper(tracer, rt, is_async_method))
        except Exception as exc:
            counters.fault(f"patch.{products.method}", exc)

    if is_async:

        async def async_factory(
            wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
        ) -> Any:
            cls = await wrapped(*args, **kwargs)
            adopt(cls, args, kwargs)
            return cls

        return async_factory

    def factory(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        cls = wrapped(*args, **kwargs)
        adopt(cls, args, kwargs)
        return cls

    return factory


def _owner(patch: Patch) -> tuple[Any, str] | None:
    """(the object holding the attribute, the attribute) when both exist in the installed SDK."""
    try:
        owner: Any = importlib.import_module(patch.module)
    except ImportError:
        return None
    *path, attr = patch.name.split(".")
    for part in path:
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    return (owner, attr) if hasattr(owner, attr) else None


def scope_name(module: str) -> str:
    """The instrumentation scope a spanfold instrumentor's spans carry: ``spanfold.instrumentation.<provider>`` for a
    provider (whichever module of its folder patches it), the module's name for a framework."""
    head, sep, tail = module.partition(".providers.")
    return f"{head}.{tail.split('.')[0]}" if sep else module


#: What every wrapt wrapper is (wrapt 2's function wrappers are no ``ObjectProxy``; wrapt 1 has only that).
_PROXY: Final[type] = getattr(wrapt, "BaseObjectProxy", wrapt.ObjectProxy)


def unwrap(owner: Any, attr: str) -> None:
    """``owner.attr`` as it was before ``wrapt.wrap_function_wrapper`` wrapped it (nothing when it is not wrapped)."""
    wrapped = getattr(owner, attr, None)
    if isinstance(wrapped, _PROXY) and hasattr(wrapped, "__wrapped__"):
        setattr(owner, attr, wrapped.__wrapped__)


class TableInstrumentor:
    """``Instrumentor().instrument(tracer_provider=..., runtime=...)``; ``uninstrument()`` restores the library.

    OpenTelemetry's instrumentor contract (``opentelemetry.instrumentation.instrumentor.BaseInstrumentor``: one
    instance per class, ``instrument`` / ``uninstrument`` once each, ``is_instrumented_by_opentelemetry``,
    ``instrumentation_dependencies``), kept without subclassing it: importing OpenTelemetry's instrumentation package
    (its dependency checks read requirements with ``packaging``) costs ~30 ms of ``init()``, and spanfold checks each
    library's version itself (:mod:`~spanfold.instrumentation.toolkit.versions`). ``opentelemetry-instrument`` loads
    the entry points and calls ``instrument()``, as it does any instrumentor's.

    A provider's instrumentor is its record, in the class statement::

        class GroqInstrumentor(TableInstrumentor, library="groq", supported="groq >= 1.0, < 2", table=PATCHES): ...

    (an instrumentor whose patches depend on the Runtime implements :meth:`patches` instead of giving ``table``)."""

    def __init_subclass__(
        cls,
        *,
        library: str | None = None,
        supported: str | None = None,
        table: Sequence[Patch] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if library is not None:
            cls.library = library
        if supported is not None:
            cls.dependencies = (supported,)
        if table is not None:
            cls._table = tuple(table)

    #: The import name of the library it patches (the registry's key for it: checked by a test).
    library: ClassVar[str]
    #: The pip requirement(s) the instrumented library must satisfy (``instrumentation_dependencies``).
    dependencies: ClassVar[tuple[str, ...]] = ()
    _applied: ClassVar[list[tuple[Any, str]]]
    _restores: ClassVar[list[Callable[[], None]]]
    _hooks: ClassVar[ImportHooks]
    _table: ClassVar[tuple[Patch, ...] | None] = None

    @classmethod
    def hooks(cls) -> ImportHooks:
        """This class's post-import hooks (each instrumentor class has its own)."""
        hooks: ImportHooks | None = cls.__dict__.get("_hooks")
        if hooks is None:
            hooks = cls._hooks = ImportHooks()
        return hooks

    _instance: ClassVar[Any] = None
    _is_instrumented_by_opentelemetry: bool = False

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        instance = cls.__dict__.get("_instance")
        if instance is None:  # one per class, as OpenTelemetry's instrumentors
            instance = object.__new__(cls)
            cls._instance = instance
        return instance

    @property
    def is_instrumented_by_opentelemetry(self) -> bool:
        return self._is_instrumented_by_opentelemetry

    def instrumentation_dependencies(self) -> Collection[str]:
        return self.dependencies

    def patches(self, rt: Runtime) -> Sequence[Patch]:
        """What this instrumentor wraps (its ``table``)."""
        if self._table is None:
            raise NotImplementedError(f"{type(self).__name__} has no table of patches")
        return self._table

    def instrument(self, **kwargs: Any) -> Any:
        """Patch the library when its installed version is in :attr:`dependencies`; otherwise say so once and patch
        nothing. The check runs even when the caller skipped OpenTelemetry's (zero-code passes ``skip_dep_check``
        after checking the whole distribution, which holds several instrumentors): it is per library, and the same
        for ``init()`` and ``opentelemetry-instrument``."""
        kwargs.pop("skip_dep_check", None)
        kwargs.pop("raise_exception_on_conflict", None)
        if self._is_instrumented_by_opentelemetry:
            _log.warning("Attempting to instrument while already instrumented")
            return None
        if not versions.supported(self.instrumentation_dependencies()):
            return None
        if "runtime" not in kwargs and self._defer(kwargs):
            return None
        return self._instrument_now(kwargs)

    def _instrument_now(self, kwargs: dict[str, Any]) -> None:
        self._instrument(**kwargs)
        self._is_instrumented_by_opentelemetry = True

    def uninstrument(self, **kwargs: Any) -> None:
        """Restore the library (wrapped methods unwrapped, hooks not yet fired withdrawn)."""
        if not self._is_instrumented_by_opentelemetry:
            _log.warning("Attempting to uninstrument while already uninstrumented")
            return
        self._uninstrument(**kwargs)
        self._is_instrumented_by_opentelemetry = False

    def _defer(self, kwargs: dict[str, Any]) -> bool:
        """``opentelemetry-instrument`` instruments every installed library at start-up: a library the program has
        not imported is patched when it imports it (a post-import hook), never imported by spanfold (importing every
        installed SDK would cost seconds, and some reach the network when imported)."""
        library = type(self).library
        if library in sys.modules:
            return False

        def on_import(module: ModuleType) -> None:
            try:
                if not self.is_instrumented_by_opentelemetry:
                    self._instrument_now(kwargs)
            except Exception as exc:
                counters.fault(f"instrument.{library}", exc)

        hooks = type(self).hooks()
        hooks.register(library, hooks.current(), on_import)
        return True

    def _instrument(self, **kwargs: Any) -> None:
        """Wrap each patch's method when its module is imported (at once when it already is): an SDK that loads its
        resources lazily (openai's ``client.responses``) loads only those the application uses, not every one
        spanfold can trace."""
        tracer: Tracer = get_tracer(scope_name(type(self).__module__), __version__, kwargs.get("tracer_provider"))
        rt: Runtime = kwargs.get("runtime") or runtime.active()
        conversations.ensure()
        cls = type(self)
        patches = self.patches(rt)
        with _LOCK:
            generation = cls.hooks().renew()
            cls._applied = []
            cls._restores = [patch.restore for patch in patches if patch.restore is not None]
        by_module: dict[str, list[Patch]] = {}
        for patch in patches:
            by_module.setdefault(patch.module, []).append(patch)
        for module, patches in by_module.items():
            cls.hooks().register(module, generation, functools.partial(self._apply, generation, tracer, rt, patches))

    def _apply(self, generation: int, tracer: Tracer, rt: Runtime, patches: list[Patch], module: ModuleType) -> None:
        """The post-import hook of one module: wrap its patches, unless a later (un)instrument made it stale."""
        cls = type(self)
        found: list[tuple[Patch, tuple[Any, str]]] = []
        for patch in patches:  # outside the lock: looking a module up may wait on another thread's import of it
            try:
                target = _owner(patch)
            except Exception as exc:
                counters.fault(f"patch.{patch.module}", exc)
                continue
            if target is not None:  # else not in this version of the SDK
                found.append((patch, target))
        with _LOCK:
            if not cls.hooks().valid(generation):
                return
            for patch, (owner, attr) in found:
                try:
                    if any(o is owner and a == attr for o, a in cls._applied):
                        continue  # the same class reached through an old and a new module path
                    wrapt.wrap_function_wrapper(owner, attr, patch.factory(tracer, rt))
                    cls._applied.append((owner, attr))
                except Exception as exc:
                    counters.fault(f"patch.{patch.module}", exc)

    def _uninstrument(self, **kwargs: Any) -> None:
        cls = type(self)
        with _LOCK:
            cls.hooks().withdraw()  # hooks not yet fired will not patch
            for owner, attr in getattr(cls, "_applied", []):
                unwrap(owner, attr)
            cls._applied = []
            for restore in getattr(cls, "_restores", []):
                try:
                    restore()
                except Exception as exc:
                    counters.fault(f"unpatch.{cls.library}", exc)
            cls._restores = []
