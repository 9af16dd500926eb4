"""OTLP/JSON -> :class:`~spanfold.exporter.records.SpanRecord`: the JSON encoding of an ``ExportTraceServiceRequest``
(an OTLP/HTTP JSON body) and the OpenTelemetry Collector file exporter's JSON lines (one request per line).

Tolerant where producers differ, strict where the data would be wrong:

* ids as hex (the OTLP/JSON rule) or base64 (the plain protobuf JSON mapping); a wrong length or all zeros rejects the
  span;
* times (``fixed64`` nanoseconds) as numbers or strings, 0 to 2**64 - 1 (what protobuf can carry): another number
  rejects the span, the rest of its trace is kept;
* lowerCamelCase or the proto field names; enums as numbers or names (``SPAN_KIND_CLIENT``); 64-bit integers as
  numbers or strings;
* ``AnyValue``: string, bool, int, double (``"NaN"``, ``"Infinity"`` too), bytes (base64), arrays -> tuples (as the
  SDK keeps them), key-value lists -> dicts.

Files (:func:`read_file`) are read a line at a time: JSON lines as the Collector writes them, or one (pretty-printed)
request, or a JSON array of requests, optionally gzip-compressed. Problems name the line.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gzip
import io
import json
import os
import zlib
from collections.abc import Generator, Iterator, Mapping
from typing import Any, Final

from spanfold.codecs import jsonio
from spanfold.exporter.otlp.common import (
    KINDS,
    STATUSES,
    Decoded,
    OtlpError,
    id_of,
    remote_parent,
)
from spanfold.exporter.records import SpanEvent, SpanRecord, StatusName
from spanfold.trace.read import open_input

_HEX: Final = frozenset("0123456789abcdefABCDEF")
_EMPTY: Mapping[str, Any] = {}
_GZIP_MAGIC: Final = b"\x1f\x8b"
#: The latest time a ``fixed64`` holds (protobuf cannot carry more; JSON can, and is refused past it).
MAX_TIME_NS: Final = 2**64 - 1
#: The problem of a value nested past Python's recursion limit (in the JSON, or AnyValues in AnyValues).
TOO_DEEP: Final = "nested too deeply"


class FileProblem(OtlpError):
    """A file that cannot be read, at ``line`` (1-based)."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(problem)
        self.line = line
        self.problem = problem


# --- scalars -------------------------------------------------------------------------------------------------


def _get(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{what} must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if value is None:
        return 0
    raise ValueError(f"{what} must be an integer, got {value!r}")


def _time(value: Any, what: str) -> int:
    """A ``fixed64`` time in nanoseconds since the epoch: what does not fit (negative, 2**64 or more) is an error, not a
    time that breaks the fold later."""
    ns = _int(value, what)
    if not 0 <= ns <= MAX_TIME_NS:
        raise ValueError(f"{what} {ns} is out of range (0 to {MAX_TIME_NS})")
    return ns


def id_bytes(value: Any, size: int, what: str) -> bytes:
    """The bytes of a hex (OTLP/JSON) or base64 (protobuf JSON mapping) id; ``b""`` when absent."""
    if value is None or value == "":
        return b""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, got {type(value).__name__}")
    if len(value) == 2 * size and _HEX.issuperset(value):
        return bytes.fromhex(value)
    try:
        altchars = b"-_" if "-" in value or "_" in value else None  # the URL-safe alphabet
        return base64.b64decode(value + "=" * (-len(value) % 4), altchars=altchars)
    except (binascii.Error, ValueError):
        raise ValueError(f"{what} {value!r} is neither hex nor base64") from None


def _enum(value: Any, prefix: str, table: Mapping[int, Any], what: str) -> Any:
    if isinstance(value, str) and not value.isdigit():
        name = value.upper().removeprefix(prefix)
        for number, mapped in table.items():
            if mapped == name and number:
                return mapped
        if name == "UNSPECIFIED":
            return table[0]
        raise ValueError(f"{what} {value!r} is not known")
    number = _int(value, what)
    if number not in table:
        raise ValueError(f"{what} {number} is not known")
    return table[number]


# --- AnyValue and attributes ---------------------------------------------------------------------------------


def _double(value: Any) -> float:
    return float(value)  # numbers, and the strings "NaN", "Infinity", "-Infinity"


def _bytes(value: Any) -> bytes:
    return base64.b64decode(value)


def _array(value: Any) -> tuple[Any, ...]:
    return tuple(any_value(v) for v in (value or {}).get("values") or ())


def _kvlist(value: Any) -> dict[str, Any]:
    return attributes((value or {}).get("values") or ())


_ANY: Final[dict[str, Any]] = {
    "stringValue": str,
    "string_value": str,
    "boolValue": bool,
    "bool_value": bool,
    "intValue": lambda v: _int(v, "intValue"),
    "int_value": lambda v: _int(v, "int_value"),
    "doubleValue": _double,
    "double_value": _double,
    "bytesValue": _bytes,
    "bytes_value": _bytes,
    "arrayValue": _array,
    "array_value": _array,
    "kvlistValue": _kvlist,
    "kvlist_value": _kvlist,
}


def any_value(value: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` as a Python value (None when empty)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"an AnyValue must be an object, got {type(value).__name__}")
    for key, raw in value.items():
        convert = _ANY.get(key)
        if convert is not None:
            return convert(raw)
    return None


def attributes(kvs: Any) -> dict[str, Any]:
    """A list of ``KeyValue`` as a dict (later keys win, as the SDK does)."""
    out: dict[str, Any] = {}
    for kv in kvs or ():
        key = kv.get("key")
        if not isinstance(key, str):
            raise ValueError(f"attribute key must be a string, got {key!r}")
        out[key] = any_value(kv.get("value") or {})
    return out


# --- spans ---------------------------------------------------------------------------------------------------


def _events(raw: Any) -> tuple[SpanEvent, ...]:
    return tuple(
        SpanEvent(
            str(e.get("name") or ""),
            _time(_get(e, "timeUnixNano", "time_unix_nano"), "events.timeUnixNano"),
            attributes(e.get("attributes")),
        )
        for e in raw or ()
    )


def span(raw: Mapping[str, Any], resource: Mapping[str, Any], scope: str | None) -> SpanRecord:
    """One OTLP/JSON ``Span``; ``ValueError`` names what is wrong."""
    status = raw.get("status") or {}
    code: StatusName = _enum(status.get("code", 0), "STATUS_CODE_", STATUSES, "status.code")
    parent = id_bytes(_get(raw, "parentSpanId", "parent_span_id"), 8, "parentSpanId")
    start = _time(_get(raw, "startTimeUnixNano", "start_time_unix_nano"), "startTimeUnixNano")
    end = _time(_get(raw, "endTimeUnixNano", "end_time_unix_nano"), "endTimeUnixNano")
    return SpanRecord(
        trace_id=id_of(id_bytes(_get(raw, "traceId", "trace_id"), 16, "traceId"), 16, "traceId"),
        span_id=id_of(id_bytes(_get(raw, "spanId", "span_id"), 8, "spanId"), 8, "spanId"),
        parent_id=id_of(parent, 8, "parentSpanId") if parent else None,
        parent_is_remote=remote_parent(_int(raw.get("flags"), "flags")),
        name=str(raw.get("name") or ""),
        kind=_enum(raw.get("kind", 0), "SPAN_KIND_", KINDS, "kind"),
        start_ns=start,
        end_ns=end or start,
        attributes=attributes(raw.get("attributes")),
        status_code=code,
        status_description=status.get("message") or None,
        events=_events(raw.get("events")),
        scope_name=scope,
        resource=resource,
    )


def _list(obj: Mapping[str, Any], camel: str, snake: str, where: str) -> list[Any]:
    value = _get(obj, camel, snake)
    if value is None:
        return []
    if not isinstance(value, list):
        raise OtlpError(f"{where}{camel} must be a list")
    return value


def decode_request(doc: Any) -> Decoded:
    """The spans of one ``ExportTraceServiceRequest`` in JSON (already parsed). ``OtlpError`` when it is not one;
    a span that cannot be read is rejected (counted, named) and the others are kept."""
    if not isinstance(doc, Mapping) or not ("resourceSpans" in doc or "resource_spans" in doc):
        other = next((k for k in ("resourceMetrics", "resourceLogs") if isinstance(doc, Mapping) and k in doc), None)
        hint = f" (it has {other}: metrics or logs, not traces)" if other else ""
        raise OtlpError(f"not an OTLP trace export request: no resourceSpans{hint}")
    out = Decoded()
    for i, rs in enumerate(_list(doc, "resourceSpans", "resource_spans", "")):
        where = f"resourceSpans[{i}]"
        if not isinstance(rs, Mapping):
            raise OtlpError(f"{where} must be an object")
        try:
            resource = attributes((rs.get("resource") or {}).get("attributes")) or _EMPTY
        except (ValueError, TypeError, AttributeError) as exc:
            raise OtlpError(f"{where}.resource: {exc}") from None
        scopes = _list(rs, "scopeSpans", "scope_spans", f"{where}.") or _list(
            rs, "instrumentationLibrarySpans", "instrumentation_library_spans", f"{where}."
        )
        for j, ss in enumerate(scopes):
            if not isinstance(ss, Mapping):
                raise OtlpError(f"{where}.scopeSpans[{j}] must be an object")
            scope = ss.get("scope") or ss.get("instrumentationLibrary") or {}
            scope_name = scope.get("name") if isinstance(scope, Mapping) else None
            for k, raw in enumerate(_list(ss, "spans", "spans", f"{where}.scopeSpans[{j}].")):
                try:
                    out.records.append(span(raw, resource, scope_name))
                except (ValueError, TypeError, AttributeError) as exc:
                    out.reject(f"{where}.scopeSpans[{j}].spans[{k}]", str(exc))
                except RecursionError:
                    out.reject(f"{where}.scopeSpans[{j}].spans[{k}]", TOO_DEEP)
    return out


def _loads(data: bytes) -> Any:
    """``json.loads``'s value (msgspec parses: 0.46x the standard library's time on a 21-span export line,
    ``bench/json_libs.py``); ``ValueError`` for a value nested too deeply to parse too (no ``RecursionError``)."""
    try:
        return jsonio.loads(data)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None


def decode_body(body: bytes) -> Decoded:
    """An OTLP/HTTP JSON request body."""
    try:
        doc = _loads(body)
    except ValueError as exc:  # UnicodeDecodeError included
        raise OtlpError(f"bad JSON: {exc}") from None
    return decode_request(doc)


# --- files ---------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _open(path: str | os.PathLike[str]) -> Iterator[io.BufferedIOBase]:
    """The input opened once (a pipe or a FIFO is read once), inflated when it is gzip."""
    with open_input(path) as opened:
        if opened.head.startswith(_GZIP_MAGIC):
            with gzip.GzipFile(fileobj=opened.handle, mode="rb") as inflated:
                yield inflated
        else:
            yield opened.handle


def _strict(decoded: Decoded, line: int) -> Decoded:
    if decoded.rejected:
        raise FileProblem(line, decoded.messages[0])
    return decoded


def _decode_line(text: bytes, line: int) -> Decoded:
    try:
        doc = _loads(text)
    except ValueError as exc:  # UnicodeDecodeError included
        raise FileProblem(line, f"bad JSON: {exc}") from None
    return _strict(_decode_checked(doc, line), line)


def read_file(path: str | os.PathLike[str]) -> Generator[tuple[int, Decoded], None, None]:
    """Each export request in an OTLP/JSON file with the line it starts on. Raises :class:`FileProblem` (with the
    line) at the first thing that cannot be read, a rejected span included."""
    with _open(path) as stream:
        first, lineno = b"", 0  # lineno: the last line read
        try:
            for lineno, first in enumerate(stream, 1):  # noqa: B007 (used after the loop)
                if first.strip():
                    break
            if not first.strip():
                return
            try:
                doc = _loads(first)
            except ValueError:
                doc = None
            if not isinstance(doc, Mapping):  # one document over several lines (or a list of requests)
                yield from _read_document(first + stream.read(), lineno)
                return
            yield lineno, _strict(_decode_checked(doc, lineno), lineno)
            for lineno, text in enumerate(stream, lineno + 1):  # noqa: B020 (the last line read, for problems)
                if text.strip():
                    yield lineno, _decode_line(text, lineno)
        except (OSError, EOFError, zlib.error) as exc:  # a corrupt or truncated gzip stream (BadGzipFile: OSError)
            raise FileProblem(lineno + 1, f"cannot read: {exc}") from None


def _decode_checked(doc: Any, line: int) -> Decoded:
    try:
        return decode_request(doc)
    except OtlpError as exc:
        raise FileProblem(line, str(exc)) from None


def _read_document(data: bytes, first_line: int) -> Iterator[tuple[int, Decoded]]:
    try:
        doc = _loads(data)
    except json.JSONDecodeError as exc:
        raise FileProblem(first_line + exc.lineno - 1, f"bad JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:  # UnicodeDecodeError and nesting included
        raise FileProblem(first_line, f"bad JSON: {exc}") from None
    for doc_item in doc if isinstance(doc, list) else [doc]:
        yield first_line, _strict(_decode_checked(doc_item, first_line), first_line)
