"""``spanfold serve``: request bodies as clients really compress and time-stamp them, over real HTTP on loopback."""

from __future__ import annotations

import gzip
import json
import time
from typing import Any

import pytest

pytest.importorskip("aiohttp")
from opentelemetry.sdk.trace import ReadableSpan

from ..bridge.conftest import WEATHER_ROLES, folded_in_process, otlp_json, proto_body


def test_every_member_of_a_multi_member_gzip_body_is_read(served: Any, weather_spans: list[ReadableSpan]) -> None:
    """``cat a.gz b.gz`` is one gzip stream (RFC 1952): both halves' spans arrive, as ``gzip -d`` would read them."""
    s = served(wait=60)
    first = json.dumps(otlp_json(weather_spans[:3])).encode()
    second = json.dumps(otlp_json(weather_spans[3:])).encode()
    # two requests' JSON concatenated is not one JSON document: use protobuf, where concatenation merges messages
    body = gzip.compress(proto_body(weather_spans[:3])) + gzip.compress(proto_body(weather_spans[3:]))
    status, _, _ = s.post(body, "application/x-protobuf", Content_Encoding="gzip")
    assert status == 200
    (trace,) = s.stop()
    assert trace == folded_in_process(weather_spans)
    assert [e["role"] for e in trace] == WEATHER_ROLES
    t = served(wait=60)
    status, _, _ = t.post(gzip.compress(first[:100]) + gzip.compress(first[100:]), "application/json",
                          Content_Encoding="gzip")  # fmt: skip
    assert status == 200
    status, _, _ = t.post(gzip.compress(second) + b"\x00" * 16, "application/json", Content_Encoding="gzip")
    assert status == 200  # zero padding after the last member, as gzip(1) accepts
    assert t.stop() == [folded_in_process(weather_spans)]


def test_gzip_members_count_together_against_the_body_limit(served: Any) -> None:
    s = served(max_body_bytes=4096)
    member = gzip.compress(b"\x00" * 3000)
    started = time.monotonic()
    status, _, _ = s.post(member + member, "application/x-protobuf", Content_Encoding="gzip")
    assert status == 413  # 6000 bytes once decompressed, though each member alone fits
    bomb = gzip.compress(b"\x00" * 1000) + gzip.compress(b"\x00" * 50_000_000)
    status, _, _ = s.post(bomb, "application/x-protobuf", Content_Encoding="gzip")
    assert status == 413
    assert time.monotonic() - started < 2
    status, _, body = s.post(member + b"garbage", "application/x-protobuf", Content_Encoding="gzip")
    assert status == 400 and b"bad gzip body" in body  # not a member, not zero padding: not silently cut
    assert s.stop() == []


def test_a_body_of_empty_gzip_members_is_refused_fast(served: Any) -> None:
    s = served()
    empty = gzip.compress(b"")
    started = time.monotonic()
    status, _, body = s.post(empty * (4 * 1024 * 1024 // len(empty)), "application/x-protobuf", Content_Encoding="gzip")
    assert status == 400 and b"gzip members" in body
    assert time.monotonic() - started < 2
    assert s.stop() == []


OUT_OF_RANGE = [str(10**30), "-5", str(2**64)]


def first_span(doc: dict[str, Any], prefix: str) -> tuple[str, dict[str, Any]]:
    """The first span whose name starts with ``prefix``, and where it is in the request."""
    for i, rs in enumerate(doc["resourceSpans"]):
        for j, ss in enumerate(rs["scopeSpans"]):
            for k, sp in enumerate(ss["spans"]):
                if sp["name"].startswith(prefix):
                    return f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]", sp
    raise AssertionError(prefix)


@pytest.mark.parametrize("bad", OUT_OF_RANGE)
def test_a_span_with_a_time_out_of_range_is_rejected_the_trace_kept(
    served: Any, weather_spans: list[ReadableSpan], bad: str
) -> None:
    s = served(wait=60)
    doc = otlp_json(weather_spans)
    where, tool = first_span(doc, "execute_tool")
    tool["startTimeUnixNano"] = bad
    status, _, body = s.post(json.dumps(doc).encode(), "application/json")
    answer = json.loads(body)["partialSuccess"]
    assert status == 200 and answer["rejectedSpans"] == "1"
    assert f"{where}: startTimeUnixNano {bad} is out of range" in answer["errorMessage"]
    (trace,) = s.stop()  # the root and every good span folded
    kept = [sp for sp in weather_spans if format(sp.context.span_id, "016x") != tool["spanId"]]
    assert len(kept) == len(weather_spans) - 1
    assert trace == folded_in_process(kept)
    assert [e["role"] for e in trace] == WEATHER_ROLES  # the tool result still comes from the next call's inputs


def test_an_event_time_out_of_range_rejects_its_span(served: Any, weather_spans: list[ReadableSpan]) -> None:
    s = served(wait=60)
    doc = otlp_json(weather_spans)
    _, chat = first_span(doc, "chat")
    chat["events"] = [{"name": "exception", "timeUnixNano": str(10**30)}]
    status, _, body = s.post(json.dumps(doc).encode(), "application/json")
    assert status == 200 and json.loads(body)["partialSuccess"]["rejectedSpans"] == "1"
    assert len(s.stop()) == 1
