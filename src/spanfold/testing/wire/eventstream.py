"""The AWS event-stream binary framing (``application/vnd.amazon.eventstream``), for the Bedrock streaming routes.

One message::

    prelude:  total length (uint32, big-endian) | headers length (uint32) | prelude CRC32 (uint32, of those 8 bytes)
    headers:  per header: name length (uint8) | name | value type (uint8, 7 = string) | value length (uint16) | value
    payload:  the event's bytes (JSON)
    trailer:  message CRC32 (uint32, of every byte before it)

botocore's own ``EventStreamBuffer`` decodes what :func:`encode_message` writes (the tests check it).
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

EVENTSTREAM_CONTENT_TYPE = "application/vnd.amazon.eventstream"
_STRING = 7


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode("utf-8"), value.encode("utf-8")
    return struct.pack(">B", len(raw_name)) + raw_name + struct.pack(">BH", _STRING, len(raw_value)) + raw_value


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: prelude and its CRC, string headers, payload, message CRC."""
    header_bytes = b"".join(_header(name, value) for name, value in headers.items())
    prelude = struct.pack(">II", 16 + len(header_bytes) + len(payload), len(header_bytes))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + header_bytes + payload
    return message + struct.pack(">I", zlib.crc32(message))


@dataclass(frozen=True)
class EventMessage:
    """An event (``:message-type: event``) or a modeled exception (``exception``), ready to encode."""

    event_type: str
    payload: dict[str, Any] = field(default_factory=dict)
    message_type: str = "event"

    def encode(self) -> bytes:
        kind = ":exception-type" if self.message_type == "exception" else ":event-type"
        headers = {kind: self.event_type, ":content-type": "application/json", ":message-type": self.message_type}
        body = json.dumps(self.payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return encode_message(headers, body)
