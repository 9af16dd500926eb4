"""Providers whose shape maps still write attributes themselves, behind the typed :class:`~spanfold.instrumentation.
toolkit.calls.ModelApi` until each returns typed invocations (every provider is moving to them)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from spanfold import semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit.calls import ModelApi
from spanfold.instrumentation.toolkit.conversations import FULL
from spanfold.instrumentation.toolkit.invocation import Endpoint, Request, Response

RequestAttributes = Callable[[dict[str, Any], Runtime], tuple[str | None, dict[str, Any]]]
ResponseAttributes = Callable[[Any, Runtime], Mapping[str, Any]]


@dataclass(slots=True)
class RenderedRequest(Request):
    """A request whose attributes a provider's function writes."""

    kwargs: dict[str, Any] | None = None
    write: RequestAttributes | None = None

    def rendered(self, rt: Runtime) -> dict[str, Any]:
        assert self.write is not None and self.kwargs is not None
        model, attrs = self.write(self.kwargs, rt)
        self.model = model
        return attrs


@dataclass(slots=True)
class RenderedResponse(Response):
    """A response whose attributes a provider's function writes."""

    write: Callable[[Runtime], Mapping[str, Any]] | None = None

    def rendered(self, rt: Runtime) -> dict[str, Any]:
        assert self.write is not None
        return dict(self.write(rt))


class _Accumulator:
    """An accumulator made with a Runtime, asked for its attributes under any (it converts at the end)."""

    __slots__ = ("add", "inner")

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.add = inner.add

    def result(self) -> Response:
        inner = self.inner

        def write(rt: Runtime) -> Mapping[str, Any]:
            shadow = copy.copy(inner)
            shadow.rt = rt
            attrs: Mapping[str, Any] = shadow.attributes()
            return attrs

        return RenderedResponse(write=write)


def _endpoint(attrs: Mapping[str, Any]) -> Endpoint | None:
    if not attrs:
        return None
    return Endpoint(attrs.get(semconv.SERVER_ADDRESS), attrs.get(semconv.SERVER_PORT), attrs.get(semconv.PROVIDER_NAME))


def api(
    *,
    request: RequestAttributes,
    response: ResponseAttributes,
    accumulator: Callable[[Runtime], Any],
    server: Callable[[Any], Any] | None = None,
    **fields: Any,
) -> ModelApi:
    """A ModelApi over attribute-writing functions (``server`` may give attributes or an Endpoint)."""

    def endpoint(instance: Any) -> Endpoint | None:
        assert server is not None
        value = server(instance)
        return value if value is None or isinstance(value, Endpoint) else _endpoint(value)

    if server is not None:
        fields["server"] = endpoint
    return ModelApi(
        request=lambda kwargs: RenderedRequest(kwargs=kwargs, write=request),
        response=lambda result: RenderedResponse(write=lambda rt: response(result, rt)),
        accumulator=lambda: _Accumulator(accumulator(FULL)),
        **fields,
    )
