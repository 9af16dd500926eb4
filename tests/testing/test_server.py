"""The HTTP plumbing: keep-alive, framing, routing, concurrency, lifecycle, the request log."""

from __future__ import annotations

import http.client
import json
import threading
import time
from typing import Any

import openai
import pytest

from spanfold.testing import MockLLMServer, MockRequest, Reply, count_tokens, prompt_of

HI: list[Any] = [{"role": "user", "content": "hi"}]


def _post(connection: http.client.HTTPConnection, path: str, body: Any) -> http.client.HTTPResponse:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    connection.request("POST", path, data, {"content-type": "application/json"})
    return connection.getresponse()


def test_urls(server: MockLLMServer) -> None:
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
    assert server.anthropic_base_url == f"http://127.0.0.1:{server.port}"
    assert server.port > 0


def test_not_started() -> None:
    server = MockLLMServer()
    with pytest.raises(RuntimeError):
        _ = server.base_url
    server.stop()  # stopping a server that never started is fine


def test_keep_alive_and_framing(server: MockLLMServer) -> None:
    """One connection serves a JSON reply (Content-Length), a chunked SSE reply, then JSON again."""
    server.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    connection = http.client.HTTPConnection("127.0.0.1", server.port)
    first = _post(connection, "/v1/chat/completions", {"model": "m", "messages": HI})
    assert first.version == 11 and first.getheader("content-length") is not None
    assert json.loads(first.read())["choices"][0]["message"]["content"] == "one"
    sock = connection.sock
    second = _post(connection, "/v1/responses", {"model": "m", "input": "hi", "stream": True})
    assert second.getheader("transfer-encoding") == "chunked"
    assert second.read().decode().endswith('"sequence_number":8}\n\n')
    third = _post(connection, "/v1/messages", {"model": "m", "max_tokens": 5, "messages": HI})
    assert json.loads(third.read())["content"][0]["text"] == "three"
    assert connection.sock is sock  # never reconnected
    connection.close()


def test_chat_stream_ends_with_done(server: MockLLMServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port)
    response = _post(connection, "/v1/chat/completions", {"model": "m", "messages": HI, "stream": True})
    raw = response.read().decode()
    connection.close()
    assert response.getheader("content-type") == "text/event-stream; charset=utf-8"
    assert raw.endswith("data: [DONE]\n\n")
    assert all(line.startswith("data: ") for line in raw.splitlines() if line)


def test_routing_and_bad_requests(server: MockLLMServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port)
    missing = _post(connection, "/v1/moderations", {"model": "m"})
    assert missing.status == 404 and json.loads(missing.read())["error"]["code"] == "not_found"
    invalid = _post(connection, "/v1/messages", b"{not json")
    assert invalid.status == 400
    assert json.loads(invalid.read())["type"] == "error"
    without_v1 = _post(connection, "/chat/completions", {"model": "m", "messages": HI})
    assert without_v1.status == 200 and json.loads(without_v1.read())["object"] == "chat.completion"
    connection.close()
    assert [r.path for r in server.requests] == ["/chat/completions"]  # only routed, parsed requests are logged


def test_default_responder_echoes(server: MockLLMServer, oai: openai.OpenAI) -> None:
    assert oai.chat.completions.create(model="m", messages=HI).choices[0].message.content == "You said: hi"
    assert oai.responses.create(model="m", input="hello").output_text == "You said: hello"


def test_script_before_responder(server: MockLLMServer, oai: openai.OpenAI) -> None:
    seen: list[MockRequest] = []

    def responder(request: MockRequest) -> Reply:
        seen.append(request)
        return Reply.text(f"{request.api}:{request.model}:{request.stream}")

    server.respond_with(responder).script(Reply.text("scripted"))
    assert oai.chat.completions.create(model="m", messages=HI).choices[0].message.content == "scripted"
    assert oai.chat.completions.create(model="x", messages=HI).choices[0].message.content == "chat:x:False"
    assert [r.index for r in seen] == [1]


def test_concurrent_clients(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.responder = lambda request: Reply.text(str(request.body["messages"][0]["content"]))
    results: dict[int, str | None] = {}

    def ask(n: int) -> None:
        stream = n % 2 == 0
        if stream:
            chunks = oai.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"n{n}"}], stream=True
            )
            results[n] = "".join(c.choices[0].delta.content or "" for c in chunks)
        else:
            completion = oai.chat.completions.create(model="m", messages=[{"role": "user", "content": f"n{n}"}])
            results[n] = completion.choices[0].message.content

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {n: f"n{n}" for n in range(16)}
    assert len(server.requests) == 16
    assert sorted(r.index for r in server.requests) == list(range(16))


def test_request_log_and_reset(server: MockLLMServer, oai: openai.OpenAI) -> None:
    oai.chat.completions.create(model="m", messages=HI, temperature=0)
    request = server.last_request
    assert request.body == {"model": "m", "messages": HI, "temperature": 0}
    assert request.headers["content-type"] == "application/json"
    assert request.input_tokens == count_tokens(prompt_of(request.body))
    server.script(Reply.text("left over"))
    server.reset()
    assert server.requests == [] and server.pending == 0
    assert oai.chat.completions.create(model="m", messages=HI).id == "chatcmpl-mock-1"


def test_stop_closes_keep_alive_connections() -> None:
    server = MockLLMServer().start()
    connection = http.client.HTTPConnection("127.0.0.1", server.port)
    _post(connection, "/v1/chat/completions", {"model": "m", "messages": HI}).read()
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 1
    connection.sock.settimeout(2)  # type: ignore[union-attr]
    assert connection.sock.recv(1) == b""  # type: ignore[union-attr]
    connection.close()
    server.stop()


def test_restart_gets_a_fresh_port_and_keeps_state() -> None:
    with MockLLMServer() as server:
        server.script(Reply.text("kept"))
    with server, openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0) as client:
        assert client.chat.completions.create(model="m", messages=HI).choices[0].message.content == "kept"
