"""The instrumentors spanfold knows, and turning on those whose client library is installed."""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Collection
from typing import Any

from spanfold import counters
from spanfold.instrumentation.spans import Settings

logger = logging.getLogger("spanfold")

#: name -> (the client library's import name, "module:Instrumentor")
INSTRUMENTORS: dict[str, tuple[str, str]] = {
    "openai": ("openai", "spanfold.instrumentation.openai:OpenAIInstrumentor"),
    "anthropic": ("anthropic", "spanfold.instrumentation.anthropic:AnthropicInstrumentor"),
}


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def available() -> list[str]:
    """Instrumentations whose client library is importable here."""
    return [name for name, (lib, _) in INSTRUMENTORS.items() if importlib.util.find_spec(lib) is not None]


def instrument_all(tracer_provider: Any, settings: Settings, only: Collection[str] | None = None) -> list[str]:
    """Instrument every installed library (or those named in ``only``); return the names now instrumented."""
    done = []
    for name in available():
        if only is not None and name not in only:
            continue
        try:
            instrumentor = _load(INSTRUMENTORS[name][1])()
            instrumentor.instrument(tracer_provider=tracer_provider, settings=settings)
            if instrumentor.is_instrumented_by_opentelemetry:
                done.append(name)
        except Exception as exc:
            counters.fault(f"instrument.{name}", exc)
    return done


def uninstrument_all() -> None:
    """Restore every library spanfold patched."""
    for name in available():
        try:
            instrumentor = _load(INSTRUMENTORS[name][1])()
            if instrumentor.is_instrumented_by_opentelemetry:
                instrumentor.uninstrument()
        except Exception as exc:
            counters.fault(f"uninstrument.{name}", exc)
