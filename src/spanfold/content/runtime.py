"""What every recording of content depends on, as one object: content capture, redaction, how much of each tool
definition is recorded, where blobs go instead of the spans (:mod:`spanfold.content.media`).

``setup`` builds one :class:`Runtime` from the config and passes it down: to each instrumentor (``runtime=``), whose
wrappers hand it to the part builders of :mod:`spanfold.semconv.parts`, the only code that puts content into a span.
``@spanfold.tool`` functions are decorated before ``init()`` runs, so they read the runtime ``setup`` made
:func:`active` (the default one until then: capture from the environment, no redaction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spanfold.config import capture_content_default
from spanfold.content.media import MediaStore
from spanfold.content.redaction import Redaction


@dataclass(frozen=True, slots=True, eq=False)
class Runtime:
    """Content capture and redaction. Immutable: a new configuration is a new Runtime (caches of converted content
    are kept per Runtime, so nothing converted under one is reused under another)."""

    capture_content: bool = True
    redaction: Redaction | None = None
    #: Tool definitions with their descriptions and parameter schemas (else each tool's type and name only).
    full_tool_definitions: bool = False
    #: Ask streams that report usage only when asked (OpenAI Chat Completions' ``stream_options.include_usage``) for
    #: it, keeping the chunk that carries it from the application (:attr:`~spanfold.instrumentation.toolkit.calls.
    #: ModelApi.ask_usage`).
    stream_usage: bool = False
    #: The conventions' ``gen_ai.client.inference.operation.details`` event of each model call (capture mode
    #: ``EVENT_ONLY`` or ``SPAN_AND_EVENT``): where it is emitted and what it records; None: no event.
    events: Events | None = None
    #: Where each recorded blob of at least its ``min_bytes`` is stored, a ``uri`` part recorded in its place (the
    #: ``media`` option); None: blobs are recorded inline.
    media: MediaStore | None = None

    def content(self, value: Any) -> Any:
        """``value`` as it may be recorded: redacted when redaction is on (strings inside lists and dicts too)."""
        redaction = self.redaction
        return value if redaction is None else redaction.value(value)


@dataclass(frozen=True, slots=True, eq=False)
class Events:
    """Where a model call's details event goes, and whether the call's content leaves its span for it
    (``EVENT_ONLY``) or is in both (``SPAN_AND_EVENT``)."""

    #: An OpenTelemetry Logs API ``Logger`` (``opentelemetry._logs``): setup gives the application's LoggerProvider's,
    #: or spanfold's own, which hands the events to the fold only.
    logger: Any
    #: The model call's content is in its event only (its span keeps none of it).
    only: bool = False


def default() -> Runtime:
    """Capture as the environment says (``SPANFOLD_CAPTURE_CONTENT`` / ``OTEL_INSTRUMENTATION_GENAI_...``), no
    redaction."""
    return Runtime(capture_content=capture_content_default())


_active: list[Runtime] = [default()]


def active() -> Runtime:
    """The runtime of the running ``init()`` (the default one outside it)."""
    return _active[-1]


def activate(runtime: Runtime | None) -> None:
    """``setup``'s hand-over: ``runtime`` is in force from now on (None: back to the default)."""
    _active[-1] = runtime if runtime is not None else default()
