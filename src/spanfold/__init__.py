"""spanfold: OpenTelemetry tracing for AI agents, folded into flat, readable traces.

import spanfold
spanfold.init()                      # patch the installed LLM clients; traces go to ./traces/*.jsonl

@spanfold.tool                       # optional: an execute_tool span per call
def get_weather(city: str) -> str: ...

with spanfold.agent("weather-bot"):  # optional: one trace for the whole run
    ...
"""

from __future__ import annotations

from os import PathLike
from typing import TYPE_CHECKING, Any

from spanfold import counters as _counters
from spanfold.instrumentation.tools import agent, tool
from spanfold.version import __version__

if TYPE_CHECKING:  # the SDK-side modules load on first init(), not on import
    from spanfold.setup import Handle

__all__ = ["Handle", "__version__", "agent", "flush", "init", "shutdown", "stats", "tool"]


def __getattr__(name: str) -> Any:
    if name == "Handle":
        from spanfold.setup import Handle

        return Handle
    raise AttributeError(f"module 'spanfold' has no attribute {name!r}")


def init(
    output: str | PathLike[str] | None = None,
    format: str | None = None,
    capture_content: bool | None = None,
    **options: Any,
) -> Handle:
    """Patch the installed LLM client libraries and write every agent run as a flat trace.

    ``output``: directory for the ``*.jsonl`` trace files (default ``./traces``, env ``SPANFOLD_OUTPUT``).
    ``format``: ``"invariant"`` (default, env ``SPANFOLD_FORMAT``), ``"agentv"`` or ``"otlp-json"`` (each trace's
    spans as one OTLP/JSON line in ``traces.otlp.jsonl``, the Collector file exporter's layout).
    ``capture_content``: record prompts, completions and tool arguments/results (default on; env
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``). Other options: see ``spanfold.config.OPTIONS``.

    Idempotent: a second call returns the first call's handle. Reuses an SDK ``TracerProvider`` already set,
    else installs one. ``SPANFOLD_DISABLED=1`` makes it a no-op.
    """
    from spanfold import setup

    overrides = dict(options)
    overrides.update(output=output, format=format, capture_content=capture_content)
    return setup.start(overrides)


def flush(timeout: float | None = None) -> bool:
    """Block until every finished trace is on disk (at most ``timeout`` seconds); True when all were written."""
    from spanfold import setup

    handle = setup.current()
    return True if handle is None else handle.flush(timeout)


def shutdown() -> None:
    """Flush, stop spanfold's worker and restore the patched libraries. ``init()`` may be called again."""
    from spanfold import setup

    setup.stop()


def stats() -> dict[str, Any]:
    """Counters: spans received, traces written, drops, and internal faults by kind."""
    from spanfold import setup

    out = _counters.snapshot()
    handle = setup.current()
    if handle is not None and handle.processor is not None:
        out.update(handle.processor.stats())
    return out
