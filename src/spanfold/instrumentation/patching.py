"""A provider's patches as a table, applied and removed by one instrumentor base class.

A provider module lists :class:`Patch` entries (module, ``"Class.method"`` or function, and the wrapper factory) and
subclasses :class:`TableInstrumentor` with its library's name and supported range. Methods an SDK version does not
have (``Responses`` in an old openai 1.x, a beta namespace, the SDK's own tracing hooks) are skipped quietly: the
instrumentor wraps what exists. ``uninstrument()`` restores exactly what was wrapped.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar

import wrapt
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from opentelemetry.trace import Tracer, get_tracer

from spanfold import counters, runtime
from spanfold.instrumentation import conversations, versions
from spanfold.instrumentation.calls import ModelApi, Wrapper, async_wrapper, sync_wrapper
from spanfold.runtime import Runtime
from spanfold.version import __version__

#: (tracer, runtime) -> the wrapt wrapper of one patched function.
WrapperFactory = Callable[[Tracer, Runtime], Wrapper]


@dataclass(frozen=True, slots=True)
class Patch:
    """``module``'s ``name`` (``"Class.method"`` or a function) wrapped by ``factory(tracer, runtime)``."""

    module: str
    name: str
    factory: WrapperFactory


def model_method(module: str, name: str, api: ModelApi, is_async: bool) -> Patch:
    """A model API method: a span per call from ``api``."""
    make = async_wrapper if is_async else sync_wrapper
    return Patch(module, name, lambda tracer, rt: make(api, tracer, rt))


def plain(module: str, name: str, wrapper: Wrapper) -> Patch:
    """A function wrapped by a fixed wrapper (a hook that needs neither tracer nor runtime)."""
    return Patch(module, name, lambda tracer, rt: wrapper)


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


class TableInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """``Instrumentor().instrument(tracer_provider=..., runtime=...)``; ``uninstrument()`` restores the library.

    Subclasses set :attr:`dependencies` and implement :meth:`patches` (they may also add setup in
    :meth:`_prepare`)."""

    #: The pip requirement(s) the instrumented library must satisfy (``instrumentation_dependencies``).
    dependencies: ClassVar[tuple[str, ...]] = ()
    _applied: ClassVar[list[tuple[Any, str]]]

    def instrumentation_dependencies(self) -> Collection[str]:
        return self.dependencies

    def patches(self, rt: Runtime) -> Sequence[Patch]:
        raise NotImplementedError

    def instrument(self, **kwargs: Any) -> Any:
        """Patch the library when its installed version is in :attr:`dependencies`; otherwise say so once and patch
        nothing. The check runs even when the caller skipped OpenTelemetry's (zero-code passes ``skip_dep_check``
        after checking the whole distribution, which holds several instrumentors): it is per library, and the same
        for ``init()`` and ``opentelemetry-instrument``."""
        kwargs.pop("skip_dep_check", None)
        kwargs.pop("raise_exception_on_conflict", None)
        if not versions.supported(self.instrumentation_dependencies()):
            return None
        if "runtime" not in kwargs and self._defer(kwargs):
            return None
        return super().instrument(skip_dep_check=True, **kwargs)

    def _defer(self, kwargs: dict[str, Any]) -> bool:
        """``opentelemetry-instrument`` instruments every installed library at start-up: a library the program has
        not imported is patched when it imports it (a post-import hook), never imported by spanfold (importing every
        installed SDK would cost seconds, and some reach the network when imported)."""
        from spanfold.instrumentation import registry

        library = registry.library_of(type(self))
        if library is None or library in sys.modules:
            return False

        def on_import(module: ModuleType) -> None:
            try:
                if not self.is_instrumented_by_opentelemetry:
                    BaseInstrumentor.instrument(self, skip_dep_check=True, **kwargs)
            except Exception as exc:
                counters.fault(f"instrument.{library}", exc)

        wrapt.register_post_import_hook(on_import, library)
        return True

    def _instrument(self, **kwargs: Any) -> None:
        tracer: Tracer = get_tracer(type(self).__module__, __version__, kwargs.get("tracer_provider"))
        rt: Runtime = kwargs.get("runtime") or runtime.active()
        conversations.ensure()
        applied: list[tuple[Any, str]] = []
        for patch in self.patches(rt):
            target = _owner(patch)
            if target is None:
                continue  # not in this version of the SDK
            owner, attr = target
            if any(o is owner and a == attr for o, a in applied):
                continue  # the same class reached through an old and a new module path
            wrapt.wrap_function_wrapper(owner, attr, patch.factory(tracer, rt))
            applied.append(target)
        type(self)._applied = applied

    def _uninstrument(self, **kwargs: Any) -> None:
        for owner, attr in getattr(type(self), "_applied", []):
            unwrap(owner, attr)
        type(self)._applied = []
