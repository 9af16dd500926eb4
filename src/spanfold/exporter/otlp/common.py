"""What the OTLP decoders (:mod:`~spanfold.exporter.otlp.json_in`, :mod:`~spanfold.exporter.otlp.proto_in`) share: the
enum tables, id checks, the span-flag bits and :class:`Decoded`, the result of decoding one export request.

A span that cannot be read (a bad id, a missing field) is rejected on its own, as the OTLP partial-success response
allows; the rest of the request still counts. Callers decide what a rejection means: the receiver answers with a
partial success, ``spanfold fold`` stops with ``FILE:LINE: problem``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from spanfold.exporter.records import SpanRecord, StatusName

#: ``Span.SpanKind`` numbers -> the SDK's ``SpanKind`` names (UNSPECIFIED reads as INTERNAL, as the SDK does).
KINDS: Final[dict[int, str]] = {0: "INTERNAL", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
#: ``Status.StatusCode`` numbers -> status names.
STATUSES: Final[dict[int, StatusName]] = {0: "UNSET", 1: "OK", 2: "ERROR"}
#: ``SpanFlags``: bit 8 says whether bit 9 (the parent is remote) is known.
HAS_IS_REMOTE: Final = 0x100
IS_REMOTE: Final = 0x200
#: Rejection messages kept per request (the count is exact).
MAX_MESSAGES: Final = 5


class OtlpError(ValueError):
    """The request (or file) as a whole cannot be read: not OTLP, bad JSON, bad protobuf."""


@dataclass(slots=True)
class Decoded:
    """The spans of one export request, and those that had to be left out."""

    records: list[SpanRecord] = field(default_factory=list)
    rejected: int = 0
    messages: list[str] = field(default_factory=list)

    def reject(self, where: str, problem: str) -> None:
        self.rejected += 1
        if len(self.messages) < MAX_MESSAGES:
            self.messages.append(f"{where}: {problem}" if where else problem)

    def extend(self, other: Decoded) -> None:
        self.records.extend(other.records)
        self.rejected += other.rejected
        self.messages.extend(other.messages[: MAX_MESSAGES - len(self.messages)])


def id_of(raw: bytes, size: int, what: str) -> int:
    """A trace (16 bytes) or span (8 bytes) id as the OTel integer; a wrong length or all zeros is an error."""
    if len(raw) != size:
        raise ValueError(f"{what} must be {size} bytes, got {len(raw)}")
    value = int.from_bytes(raw, "big")
    if value == 0:
        raise ValueError(f"{what} is all zeros (invalid)")
    return value


def parent_of(raw: bytes) -> int | None:
    """A parent span id: None when empty (the span is a root)."""
    return id_of(raw, 8, "parentSpanId") if raw else None


def remote_parent(flags: int) -> bool:
    return bool(flags & HAS_IS_REMOTE and flags & IS_REMOTE)
