"""A neutral span record: what the fold reads, whoever produced the span.

Everything after the span processor works on :class:`SpanRecord`, so the same fold serves the in-process
``FoldingSpanProcessor``, OTLP-JSON files and an OTLP receiver. Converting an SDK ``ReadableSpan`` is cheap: its
attributes become a plain dict once (the SDK's bounded mapping is slow to read), events and resource are shared.

Also what every stage reads of a record besides its content: the process it came from (:func:`process_key`: runs are
stitched within one process) and its size (:func:`attribute_bytes`: what the bounds count).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

StatusName = Literal["UNSET", "OK", "ERROR"]

_EMPTY: Mapping[str, Any] = {}
_STATUS: dict[StatusCode, StatusName] = {StatusCode.UNSET: "UNSET", StatusCode.OK: "OK", StatusCode.ERROR: "ERROR"}


@dataclass(slots=True, frozen=True)
class SpanEvent:
    """A span event (``exception`` is the one the fold reads)."""

    name: str
    timestamp: int
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class SpanRecord:
    """One finished span. Times are nanoseconds since the epoch; ids are the OTel integers."""

    trace_id: int
    span_id: int
    parent_id: int | None
    name: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any] = field(default_factory=dict)
    parent_is_remote: bool = False
    kind: str = "INTERNAL"
    status_code: StatusName = "UNSET"
    status_description: str | None = None
    events: tuple[SpanEvent, ...] = ()
    scope_name: str | None = None
    resource: Mapping[str, Any] = field(default_factory=dict)
    #: The SDK span it was read from, kept only while a sampled run's spans wait for its decision to leave over OTLP
    #: together (``FoldWorker(forward=...)``); None otherwise.
    origin: ReadableSpan | None = field(default=None, compare=False, repr=False)

    @property
    def is_local_root(self) -> bool:
        """No parent, or a parent in another process: the root of this process's part of the trace."""
        return self.parent_id is None or self.parent_is_remote


def from_readable(span: ReadableSpan) -> SpanRecord:
    """A :class:`SpanRecord` of an ended SDK span."""
    ctx = span.context
    parent = span.parent
    status = span.status
    events = span.events
    scope = span.instrumentation_scope
    resource = span.resource
    start = span.start_time or 0
    return SpanRecord(
        trace_id=ctx.trace_id if ctx is not None else 0,
        span_id=ctx.span_id if ctx is not None else 0,
        parent_id=parent.span_id if parent is not None else None,
        parent_is_remote=bool(parent is not None and parent.is_remote),
        name=span.name,
        kind=span.kind.name,
        start_ns=start,
        end_ns=span.end_time or start,
        attributes=_plain(span.attributes) if span.attributes else _EMPTY,
        status_code=_STATUS.get(status.status_code, "UNSET"),
        status_description=status.description,
        events=tuple(SpanEvent(e.name, e.timestamp, e.attributes or _EMPTY) for e in events) if events else (),
        scope_name=scope.name if scope is not None else None,
        resource=resource.attributes if resource is not None else _EMPTY,
    )


def _plain(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The span's attributes as a plain dict: the SDK's ``BoundedAttributes`` copies its own dict (``copy()``, through
    the read-only proxy the span hands out: 0.14 against 2.65 µs for 20 attributes read one by one through its
    ``__getitem__``); any other mapping is read key by key."""
    try:
        copied = attributes.copy()  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        copied = None
    return copied if type(copied) is dict else dict(attributes)


class SenderResource(dict[str, Any]):
    """A resource that names no process (no ``service.instance.id``: opentelemetry-sdk before 1.43 and many other
    SDKs by default, so every process of a service sends the same one), as a receiver hands it to the fold: the same
    attributes, and ``sender``, the connection that carried it. Two such processes are never one sender."""

    __slots__ = ("sender",)

    def __init__(self, attributes: Mapping[str, Any], sender: int) -> None:
        super().__init__(attributes)
        self.sender = sender


def process_key(resource: Mapping[str, Any]) -> Hashable:
    """Which process a span came from, as far as its resource tells (one SDK: one resource), and for a
    :class:`SenderResource` the connection too: stitching never joins the calls of two processes (a receiver hears
    many). Remembered per resource object (an SDK's spans share theirs: each of its spans is keyed twice, by the
    assembler and by the runs stage)."""
    entry = _KEYS.get(id(resource))
    if entry is not None and entry[0] is resource:
        return entry[1]
    try:
        key: Hashable = frozenset(resource.items())
    except TypeError:  # an unhashable value (a key-value list)
        key = repr(sorted(resource.items(), key=lambda kv: kv[0]))
    if isinstance(resource, SenderResource):
        key = (key, resource.sender)
    if type(resource) is not dict:  # a plain dict may change: keyed again each time
        if len(_KEYS) >= _MAX_KEYS:
            _KEYS.clear()
        _KEYS[id(resource)] = (resource, key)  # the entry holds its resource: an id is never reused while kept
    return key


#: Process keys by resource object (resources are few and live as long as their SDK).
_KEYS: dict[int, tuple[Mapping[str, Any], Hashable]] = {}
_MAX_KEYS = 256


def attribute_bytes(record: SpanRecord) -> int:
    """The characters of a span's text attributes (message histories dominate a trace's memory)."""
    return sum([len(value) for value in record.attributes.values() if isinstance(value, str)])
