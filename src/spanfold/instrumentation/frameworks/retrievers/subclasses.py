"""Patch table entries for methods every subclass of a base class defines itself (a LangChain vector store's
``similarity_search``: abstract on ``VectorStore``, each store's own), so patching the base alone reaches none of them.

:func:`every_subclass` gives the base's own methods as ordinary patch table entries
(:class:`~spanfold.instrumentation.toolkit.patching.Patch`); the first of them also, when the base's module is imported
and the table applied, wraps the methods each subclass already defined (walked through ``__subclasses__``) and gives
the base an ``__init_subclass__`` that wraps those of every subclass defined later (a store's package imported after
``init()``). Only a subclass's own definitions are wrapped (``vars(cls)``), each once: a subclass inheriting a wrapped
method runs that wrapper. ``uninstrument()`` (the entry's ``restore``) unwraps every subclass's methods and takes the
``__init_subclass__`` back.
"""

from __future__ import annotations

import inspect
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import wrapt
from opentelemetry.trace import Tracer

from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.patching import Patch

#: (tracer, runtime, the method is a coroutine function) -> the wrapper of one method.
MethodFactory = Callable[[Tracer, Runtime, bool], Wrapper]

_LOCK = threading.RLock()


class _Subclasses:
    """The base class's subclasses this entry gave wrapped methods (weakly held: a class may go)."""

    __slots__ = ("base", "classes", "factory", "hook", "methods", "original")

    def __init__(self, methods: Sequence[str], factory: MethodFactory) -> None:
        self.methods = tuple(methods)
        self.factory = factory
        self.classes: weakref.WeakSet[type] = weakref.WeakSet()
        self.base: type | None = None
        #: The ``__init_subclass__`` given to the base, and the one the base had of its own (None: inherited).
        self.hook: Any = None
        self.original: Any = None

    def adopt(self, cls: type, tracer: Tracer, rt: Runtime) -> None:
        """Wrap the methods ``cls`` defines itself."""
        for name in self.methods:
            own = vars(cls).get(name)
            if not inspect.isfunction(own):  # inherited, wrapped already, or no plain method
                continue
            with _LOCK:
                wrapt.wrap_function_wrapper(cls, name, self.factory(tracer, rt, inspect.iscoroutinefunction(own)))
                self.classes.add(cls)

    def install(self, base: type, tracer: Tracer, rt: Runtime) -> None:
        """Wrap every subclass's methods now and at each later subclass's definition."""
        owner: Any = base
        original = vars(base).get("__init_subclass__")
        adopt = self.adopt

        def __init_subclass__(cls: Any, /, **kwargs: Any) -> None:
            parent = original.__get__(None, cls) if original is not None else super(owner, cls).__init_subclass__
            parent(**kwargs)
            try:
                adopt(cls, tracer, rt)
            except Exception as exc:
                counters.fault(f"patch.{owner.__name__}.subclass", exc)

        with _LOCK:
            self.base, self.hook, self.original = base, classmethod(__init_subclass__), original
            owner.__init_subclass__ = self.hook
        pending: list[type] = list(base.__subclasses__())
        while pending:
            cls = pending.pop()
            pending.extend(cls.__subclasses__())
            try:
                self.adopt(cls, tracer, rt)
            except Exception as exc:
                counters.fault(f"patch.{base.__name__}.subclass", exc)

    def restore(self) -> None:
        with _LOCK:
            for cls in list(self.classes):
                for name in self.methods:
                    if isinstance(vars(cls).get(name), wrapt.FunctionWrapper):
                        setattr(cls, name, vars(cls)[name].__wrapped__)
            self.classes.clear()
            base: Any = self.base
            if base is not None and vars(base).get("__init_subclass__") is self.hook:
                if self.original is not None:
                    base.__init_subclass__ = self.original
                else:
                    del base.__init_subclass__
            self.base = None
            self.hook = None


def every_subclass(module: str, base: str, methods: Sequence[str], factory: MethodFactory) -> tuple[Patch, ...]:
    """Each of ``methods`` of ``module``'s class ``base`` and of every subclass of it that defines it itself, present
    or future, wrapped by ``factory(tracer, runtime, is_coroutine_function)``. The base's own methods are ordinary
    entries (a subclass inheriting a concrete one runs through its wrapper); the first entry also reaches the
    subclasses when the table is applied."""
    subclasses = _Subclasses(methods, factory)

    def first(tracer: Tracer, rt: Runtime) -> Wrapper:
        found = _base(module, base)
        if found is not None:
            subclasses.install(found, tracer, rt)
        return _method_wrapper(found, methods[0], factory, tracer, rt)

    head = Patch(module, f"{base}.{methods[0]}", first, restore=subclasses.restore)
    rest = tuple(Patch(module, f"{base}.{name}", _bound(module, base, name, factory)) for name in methods[1:])
    return head, *rest


def _base(module: str, base: str) -> type | None:
    found = getattr(sys.modules.get(module), base, None)
    return found if isinstance(found, type) else None


def _method_wrapper(base: type | None, name: str, factory: MethodFactory, tracer: Tracer, rt: Runtime) -> Wrapper:
    method = getattr(base, name, None)
    return factory(tracer, rt, inspect.iscoroutinefunction(method))


def _bound(module: str, base: str, name: str, factory: MethodFactory) -> Callable[[Tracer, Runtime], Wrapper]:
    return lambda tracer, rt: _method_wrapper(_base(module, base), name, factory, tracer, rt)
