"""GenAI client metrics, recorded where a model call's span ends (:class:`~.spans.ModelSpan`), through the
OpenTelemetry metrics API: ``gen_ai.client.operation.duration`` (seconds, the span's own duration),
``gen_ai.client.token.usage`` (tokens, by ``gen_ai.token.type``) and, for a stream,
``gen_ai.client.inference.time_to_first_chunk``, each with the conventions' bucket boundaries (as advice: a view of
the application's wins) and attributes: the operation, provider, request and response model, server address and
port, and ``error.type`` on the duration of a call that failed.

Read from the span's attributes once it ended (what the toolkit wrote on it), so nothing is computed twice and a
provider writes nothing for metrics. Off unless :func:`activate` was given a recorder (``spanfold.init()``: when the
application set a MeterProvider, or ``metrics=True``): then a model span costs nothing more than a ``None`` check.

With ``defer`` (``spanfold.init()``: the folding worker's queue) the calling thread only queues the ended span; the
points are recorded on the worker (the SDK's ``record`` costs ~10 µs a point), each in the model span's context, so an
exemplar still names the call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Final

from opentelemetry import trace as otel_trace
from opentelemetry.metrics import Meter, MeterProvider

from spanfold import semconv
from spanfold.version import __version__

#: ``gen_ai.client.operation.duration``'s and the time to first chunk's boundaries (seconds), the conventions' advice.
DURATION_BUCKETS: Final = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
#: ``gen_ai.client.token.usage``'s boundaries, the conventions' advice (powers of 4).
TOKEN_BUCKETS: Final = tuple(4**i for i in range(14))
#: The span attributes a metric point carries (the conventions' metric attributes).
_KEYS: Final = (
    semconv.OPERATION_NAME,
    semconv.PROVIDER_NAME,
    semconv.REQUEST_MODEL,
    semconv.RESPONSE_MODEL,
    semconv.SERVER_ADDRESS,
    semconv.SERVER_PORT,
)
_INPUT: Final = {semconv.TOKEN_TYPE: "input"}
_OUTPUT: Final = {semconv.TOKEN_TYPE: "output"}


class ModelMetrics:
    """The model-call instruments of one meter."""

    def __init__(self, meter: Meter, defer: Callable[[Callable[[], object]], None] | None = None) -> None:
        #: Where the recording is handed to (None: recorded on the calling thread).
        self.defer = defer
        self.duration = meter.create_histogram(
            semconv.METRIC_OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        self.tokens = meter.create_histogram(
            semconv.METRIC_TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS),
        )
        self.first_chunk = meter.create_histogram(
            semconv.METRIC_TIME_TO_FIRST_CHUNK,
            unit="s",
            description="Time to receive the first chunk of a streamed response",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )

    @classmethod
    def of(cls, provider: MeterProvider, defer: Callable[[Callable[[], object]], None] | None = None) -> ModelMetrics:
        return cls(provider.get_meter("spanfold", __version__), defer)

    def ended(self, span: Any, first_chunk_ns: int | None) -> None:
        """A model span ended (``first_chunk_ns``: when a stream's first chunk came): its points, recorded now or
        handed to :attr:`defer`."""
        if self.defer is None:
            self.record(span, first_chunk_ns)
        else:
            self.defer(partial(self.record, span, first_chunk_ns))

    def record(self, span: Any, first_chunk_ns: int | None) -> None:
        """One ended model span's points (an SDK span: its attributes and times; any other span records nothing)."""
        attributes: Mapping[str, Any] | None = getattr(span, "attributes", None)
        if not attributes:
            return
        context = otel_trace.set_span_in_context(span)  # the points' exemplars name the call
        point = {key: attributes[key] for key in _KEYS if key in attributes}
        start, end = getattr(span, "start_time", None), getattr(span, "end_time", None)
        if start and end:
            error = attributes.get(semconv.ERROR_TYPE)
            timed = {**point, semconv.ERROR_TYPE: error} if error else point
            self.duration.record(max(end - start, 0) / 1e9, timed, context)
            if first_chunk_ns is not None:
                self.first_chunk.record(max(first_chunk_ns - start, 0) / 1e9, point, context)
        used = attributes.get(semconv.USAGE_INPUT_TOKENS)
        if isinstance(used, int) and not isinstance(used, bool):
            self.tokens.record(used, {**point, **_INPUT}, context)
        used = attributes.get(semconv.USAGE_OUTPUT_TOKENS)
        if isinstance(used, int) and not isinstance(used, bool):
            self.tokens.record(used, {**point, **_OUTPUT}, context)


_active: list[ModelMetrics | None] = [None]


def activate(recorder: ModelMetrics | None) -> None:
    """The recorder every model span from now on records to (None: metrics off)."""
    _active[0] = recorder


def active() -> ModelMetrics | None:
    return _active[0]
