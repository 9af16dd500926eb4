"""The mock server's Bedrock Runtime routes: the AWS event-stream framing decoded by botocore's own parser, errors as
botocore reads them, the request's model and stream flag from the path."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

from spanfold.testing import MockLLMServer
from spanfold.testing.server import api_for_path
from spanfold.testing.wire.eventstream import EventMessage, encode_message


def client_for(server: MockLLMServer) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=server.url,
        region_name="us-west-2",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
        config=Config(retries={"total_max_attempts": 1}),
    )


def test_botocore_decodes_the_encoder() -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(EventMessage("messageStart", {"role": "assistant"}).encode() + encode_message({"a": "b"}, b"xyz"))
    first, second = list(buffer)
    assert first.headers == {
        ":event-type": "messageStart",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert json.loads(first.payload) == {"role": "assistant"}
    assert (second.headers, second.payload) == ({"a": "b"}, b"xyz")


def test_a_corrupted_message_fails_botocore_crc_check() -> None:
    frame = bytearray(encode_message({"a": "b"}, b"payload"))
    frame[-6] ^= 0xFF
    buffer = EventStreamBuffer()
    buffer.add_data(bytes(frame))
    with pytest.raises(ChecksumMismatch):
        list(buffer)


def test_routes() -> None:
    assert api_for_path("/model/amazon.nova-pro-v1%3A0/converse") == "converse"
    assert api_for_path("/model/m/converse-stream") == "converse"
    assert api_for_path("/model/m/invoke") == "invoke"
    assert api_for_path("/model/m/invoke-with-response-stream") == "invoke"
    assert api_for_path("/model/m/count-tokens") is None


def test_request_model_stream_and_signature() -> None:
    with MockLLMServer() as server:
        client_for(server).converse_stream(
            modelId="us.anthropic.claude-3-haiku:0", messages=[{"role": "user", "content": [{"text": "Hi"}]}]
        )["stream"].close()
        request = server.last_request
    assert (request.api, request.model, request.stream) == ("converse", "us.anthropic.claude-3-haiku:0", True)
    assert request.last_user_text() == "Hi"
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/us-west-2/bedrock/aws4_request" in request.headers["authorization"]
