"""OTLP protobuf -> :class:`~spanfold.exporter.records.SpanRecord`: an ``ExportTraceServiceRequest`` as the standard
``OTLPSpanExporter`` (and a Collector's ``otlphttp`` exporter) sends it, through ``opentelemetry-proto`` (installed
with ``spanfold[otlp]`` / ``spanfold[serve]``). Values map as in :mod:`~spanfold.exporter.otlp.json_in`: arrays ->
tuples, key-value lists -> dicts, bytes stay bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from spanfold.exporter.otlp.common import KINDS, STATUSES, Decoded, OtlpError, id_of, parent_of, remote_parent
from spanfold.exporter.records import SpanEvent, SpanRecord

_EMPTY: Mapping[str, Any] = {}


def any_value(value: AnyValue) -> Any:
    """A protobuf ``AnyValue`` as a Python value (None when unset)."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return tuple(any_value(v) for v in value.array_value.values)
    if which == "kvlist_value":
        return attributes(value.kvlist_value.values)
    return getattr(value, which)


def attributes(kvs: Iterable[KeyValue]) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in kvs}


def span(raw: Span, resource: Mapping[str, Any], scope: str | None) -> SpanRecord:
    """One protobuf ``Span``; ``ValueError`` names what is wrong."""
    start = raw.start_time_unix_nano
    status = raw.status
    return SpanRecord(
        trace_id=id_of(raw.trace_id, 16, "traceId"),
        span_id=id_of(raw.span_id, 8, "spanId"),
        parent_id=parent_of(raw.parent_span_id),
        parent_is_remote=remote_parent(raw.flags),
        name=raw.name,
        kind=KINDS.get(raw.kind, "INTERNAL"),
        start_ns=start,
        end_ns=raw.end_time_unix_nano or start,
        attributes=attributes(raw.attributes) if raw.attributes else _EMPTY,
        status_code=STATUSES.get(status.code, "UNSET"),
        status_description=status.message or None,
        events=tuple(SpanEvent(e.name, e.time_unix_nano, attributes(e.attributes)) for e in raw.events),
        scope_name=scope,
        resource=resource,
    )


def decode_body(body: bytes) -> Decoded:
    """The spans of a serialized ``ExportTraceServiceRequest``: ``OtlpError`` when it does not parse; a span that
    cannot be read is rejected (counted, named) and the others kept."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, ValueError) as exc:
        raise OtlpError(f"bad protobuf: {exc}") from None
    out = Decoded()
    for i, rs in enumerate(request.resource_spans):
        resource = attributes(rs.resource.attributes) or _EMPTY
        for j, ss in enumerate(rs.scope_spans):
            scope = ss.scope.name or None
            for k, raw in enumerate(ss.spans):
                try:
                    out.records.append(span(raw, resource, scope))
                except ValueError as exc:
                    out.reject(f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]", str(exc))
    return out


def encode_response(rejected: int = 0, message: str = "") -> bytes:
    """An ``ExportTraceServiceResponse`` (with ``partial_success`` when spans were rejected)."""
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    data: bytes = response.SerializeToString()
    return data
