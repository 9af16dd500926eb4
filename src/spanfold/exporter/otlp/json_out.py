""":class:`~spanfold.exporter.records.SpanRecord` s -> OTLP/JSON, as the OpenTelemetry Collector's ``file`` exporter
writes it (the ``format="otlp-json"`` output): one ``ExportTraceServiceRequest`` per line, in the OTLP/JSON encoding
of the protobuf JSON mapping.

* ``resourceSpans`` -> ``scopeSpans`` -> ``spans``: spans grouped by their resource, then by their scope, in the order
  they came;
* ``traceId`` / ``spanId`` / ``parentSpanId`` as lowercase hex (the OTLP/JSON rule, not base64); ``parentSpanId``
  left out for a root;
* times (``fixed64``) and ``intValue`` (``int64``) as decimal strings, ``kind`` and ``status.code`` as numbers;
  fields holding their default (an empty list, 0, ``""``) left out, as the protobuf JSON mapping does;
* attributes as typed ``AnyValue`` s: ``stringValue``, ``boolValue``, ``intValue``, ``doubleValue`` (``"NaN"``,
  ``"Infinity"``, ``"-Infinity"`` as strings), ``bytesValue`` (base64), ``arrayValue`` (a tuple or list),
  ``kvlistValue`` (a mapping).

:mod:`~spanfold.exporter.otlp.json_in` reads it back (``spanfold fold``, and every command that opens an OTLP JSON
file).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any, Final

from spanfold.exporter.otlp.common import HAS_IS_REMOTE, IS_REMOTE
from spanfold.exporter.records import SpanEvent, SpanRecord
from spanfold.trace.formats import writable

#: SDK span kind names -> ``Span.SpanKind`` numbers.
KIND_NUMBERS: Final[dict[str, int]] = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}
#: Status names -> ``Status.StatusCode`` numbers.
STATUS_NUMBERS: Final[dict[str, int]] = {"UNSET": 0, "OK": 1, "ERROR": 2}
_INT64: Final = range(-(2**63), 2**63)


def _double(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def any_value(value: Any) -> dict[str, Any]:
    """A Python value as an OTLP/JSON ``AnyValue`` (None: the empty ``AnyValue``)."""
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)} if value in _INT64 else {"stringValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": _double(value)}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"bytesValue": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": attributes(value)}}
    if isinstance(value, (tuple, list)):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if value is None:
        return {}
    return {"stringValue": str(value)}


def attributes(attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A mapping as a list of ``KeyValue``."""
    return [{"key": str(key), "value": any_value(value)} for key, value in attrs.items()]


def _event(event: SpanEvent) -> dict[str, Any]:
    out: dict[str, Any] = {"timeUnixNano": str(event.timestamp), "name": event.name}
    if event.attributes:
        out["attributes"] = attributes(event.attributes)
    return out


def span(record: SpanRecord) -> dict[str, Any]:
    """One ``Span``, its fields in the order of the proto (as the Collector writes them)."""
    out: dict[str, Any] = {"traceId": format(record.trace_id, "032x"), "spanId": format(record.span_id, "016x")}
    if record.parent_id is not None:
        out["parentSpanId"] = format(record.parent_id, "016x")
    out["flags"] = HAS_IS_REMOTE | (IS_REMOTE if record.parent_is_remote else 0)  # as the SDK's encoder sets them
    out["name"] = record.name
    kind = KIND_NUMBERS.get(record.kind, 0)
    if kind:
        out["kind"] = kind
    out["startTimeUnixNano"] = str(record.start_ns)
    out["endTimeUnixNano"] = str(record.end_ns)
    if record.attributes:
        out["attributes"] = attributes(record.attributes)
    if record.events:
        out["events"] = [_event(e) for e in record.events]
    status: dict[str, Any] = {}
    if record.status_description:
        status["message"] = record.status_description
    code = STATUS_NUMBERS.get(record.status_code, 0)
    if code:
        status["code"] = code
    out["status"] = status
    return out


def request(records: Iterable[SpanRecord]) -> dict[str, Any]:
    """The ``ExportTraceServiceRequest`` of ``records``: grouped by resource, then scope, first seen first."""
    resources: dict[int, tuple[Mapping[str, Any], dict[str | None, list[dict[str, Any]]]]] = {}
    alias: dict[int, int] = {}  # id of a resource -> the key of the first equal one (records of several requests)
    by_value: dict[str, int] = {}
    for record in records:
        key = alias.get(id(record.resource))
        if key is None:
            text = repr(sorted(record.resource.items(), key=lambda kv: kv[0]))
            key = alias[id(record.resource)] = by_value.setdefault(text, id(record.resource))
            resources.setdefault(key, (record.resource, {}))
        resources[key][1].setdefault(record.scope_name, []).append(span(record))
    out = []
    for resource, scopes in resources.values():
        scope_spans = [{"scope": {"name": name} if name else {}, "spans": spans} for name, spans in scopes.items()]
        item: dict[str, Any] = {"resource": {"attributes": attributes(resource)}} if resource else {"resource": {}}
        item["scopeSpans"] = scope_spans
        out.append(item)
    return {"resourceSpans": out}


def encode_line(records: Iterable[SpanRecord]) -> str:
    """One compact JSON line (no newline) holding ``records`` as one export request; a lone surrogate is written as
    its JSON escape (the line is UTF-8, and reads back as the very text)."""
    return writable(json.dumps(request(records), ensure_ascii=False, separators=(",", ":"), allow_nan=False))
