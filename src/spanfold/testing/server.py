"""The HTTP plumbing: a stdlib ThreadingHTTPServer on 127.0.0.1 that routes each API to its renderer."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, cast
from urllib.parse import urlsplit

from spanfold.testing.conversation import Api
from spanfold.testing.errors import openai_error
from spanfold.testing.replay import RecordingReplay
from spanfold.testing.replies import Reply
from spanfold.testing.request import MockRequest
from spanfold.testing.scenarios import echo
from spanfold.testing.state import Ids, ResponseStore
from spanfold.testing.wire.anthropic import MessagesRenderer
from spanfold.testing.wire.base import RenderContext, Renderer
from spanfold.testing.wire.bedrock import ConverseRenderer, InvokeRenderer
from spanfold.testing.wire.chat import ChatRenderer
from spanfold.testing.wire.cohere import CohereRenderer
from spanfold.testing.wire.embeddings import EmbeddingsRenderer
from spanfold.testing.wire.gemini import GeminiRenderer
from spanfold.testing.wire.groq import GroqChatRenderer
from spanfold.testing.wire.mistral import MistralRenderer
from spanfold.testing.wire.ollama import OllamaRenderer
from spanfold.testing.wire.rag.bedrock import BedrockEmbedRenderer
from spanfold.testing.wire.rag.cohere import CohereEmbedRenderer, CohereRerankRenderer
from spanfold.testing.wire.rag.gemini import GeminiEmbedRenderer, VertexEmbedRenderer, VertexPredictRenderer
from spanfold.testing.wire.rag.mistral import MistralEmbeddingsRenderer
from spanfold.testing.wire.rag.ollama import OllamaEmbedRenderer
from spanfold.testing.wire.responses import ResponsesRenderer
from spanfold.testing.wire.sse import SSE_CONTENT_TYPE

Responder = Callable[[MockRequest], Reply]

RENDERERS: dict[Api, Renderer] = {
    "chat": ChatRenderer(),
    "messages": MessagesRenderer(),
    "responses": ResponsesRenderer(),
    "gemini": GeminiRenderer(),
    "converse": ConverseRenderer(),
    "invoke": InvokeRenderer(),
    "groq": GroqChatRenderer(),
    "mistral": MistralRenderer(),
    "ollama": OllamaRenderer(),
    "ollama_generate": OllamaRenderer(generate=True),
    "cohere": CohereRenderer(),
    "embeddings": EmbeddingsRenderer(),
    "cohere_embed": CohereEmbedRenderer(),
    "cohere_rerank": CohereRerankRenderer(),
    "gemini_embed": GeminiEmbedRenderer(),
    "vertex_embed": VertexEmbedRenderer(),
    "vertex_predict": VertexPredictRenderer(),
    "mistral_embed": MistralEmbeddingsRenderer(),
    "ollama_embed": OllamaEmbedRenderer(),
    "bedrock_embed": BedrockEmbedRenderer(),
}
#: The APIs answered by what their request asks (vectors, rankings), never by the script or the responder: the
#: replies :meth:`MockLLMServer.script_embeddings` queues, else a plain answer.
EMBEDDING_APIS: frozenset[Api] = frozenset(
    {
        "embeddings",
        "cohere_embed",
        "cohere_rerank",
        "gemini_embed",
        "vertex_embed",
        "vertex_predict",
        "mistral_embed",
        "ollama_embed",
        "bedrock_embed",
    }
)
#: Amazon Bedrock Runtime routes: ``/model/{modelId}/{operation}`` -> the API.
BEDROCK_OPERATIONS: dict[str, Api] = {
    "converse": "converse",
    "converse-stream": "converse",
    "invoke": "invoke",
    "invoke-with-response-stream": "invoke",
}


def _no_headers(*_: Any) -> dict[str, str]:
    return {}


def api_for_path(path: str) -> Api | None:
    """``.../chat/completions`` -> chat, ``.../messages`` -> messages, ``.../responses`` -> responses."""
    path = path.rstrip("/")
    if path.startswith("/model/") and path.count("/") == 3:
        _, model, operation = path.rsplit("/", 2)
        if operation == "invoke" and "embed" in model:  # an embedding model's InvokeModel (Titan, Cohere)
            return "bedrock_embed"
        return BEDROCK_OPERATIONS.get(operation)
    more = more_providers_api(path)
    if more is not None:
        return more
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/messages"):
        return "messages"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/embeddings"):  # OpenAI's (and the OpenAI-compatible servers')
        return "embeddings"
    if path.endswith((":generateContent", ":streamGenerateContent")):  # Gemini, Developer API and Vertex AI
        return "gemini"
    if path.endswith(":batchEmbedContents"):  # Gemini's embeddings (the Developer API's, and Vertex AI's)
        return "gemini_embed"
    if path.endswith(":embedContent"):  # Vertex AI's, a Gemini embedding model's
        return "vertex_embed"
    if path.endswith(":predict"):  # Vertex AI's text embedding models
        return "vertex_predict"
    return None


def more_providers_api(path: str) -> Api | None:
    """The APIs of groq, mistral, ollama and cohere, by their paths (checked before the OpenAI ones)."""
    if path.endswith("/openai/v1/chat/completions"):
        return "groq"
    if path.startswith("/mistral/") and path.endswith(("/chat/completions", "/agents/completions")):
        return "mistral"
    if path.startswith("/mistral/") and path.endswith("/embeddings"):
        return "mistral_embed"
    if path.endswith("/api/chat"):
        return "ollama"
    if path.endswith("/api/generate"):
        return "ollama_generate"
    if path.endswith("/api/embed"):
        return "ollama_embed"
    if path.endswith("/v2/chat"):
        return "cohere"
    if path.endswith("/v2/embed"):
        return "cohere_embed"
    if path.endswith("/v2/rerank"):
        return "cohere_rerank"
    return None


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _chunked(pieces: list[bytes], complete: bool) -> bytes:
    """HTTP/1.1 chunked framing; without the final zero-size chunk when the stream is to break."""
    framed = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces if piece)
    return framed + b"0\r\n\r\n" if complete else framed


class _State:
    """Everything the request threads share, behind one lock."""

    def __init__(self, responder: Responder | None) -> None:
        self.lock = threading.Lock()
        self.responder: Responder | None = responder
        self.queue: deque[Reply] = deque()
        self.requests: list[MockRequest] = []
        self.errors: list[BaseException] = []
        self.ids = Ids()
        self.store = ResponseStore()
        #: Replies for embeddings requests (``MockLLMServer.script_embeddings``): an embeddings request never takes
        #: a reply of the script or asks the responder, so a RAG agent's script holds its model replies only.
        self.embeddings: deque[Reply] = deque()

    def receive(self, api: Api, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[MockRequest, Reply]:
        """Log the request and decide the reply: the script first, then the responder, else ``echo``."""
        previous = body.get("previous_response_id") if api == "responses" else None
        history = self.store.get(str(previous)) if previous is not None else ()
        with self.lock:
            request = MockRequest(api, path, body, headers, len(self.requests), history or ())
            self.requests.append(request)
            if history is None:  # as the real API: an unknown previous_response_id is a 400
                return request, Reply.error(
                    400, f"Previous response with id '{previous}' not found.", code="previous_response_not_found"
                )
            if api in EMBEDDING_APIS:  # answers derived from the input; a scripted failure when one waits
                return request, self.embeddings.popleft() if self.embeddings else Reply()
            scripted = self.queue.popleft() if self.queue else None
            responder = self.responder
        if scripted is not None:
            return request, scripted
        try:
            return request, (responder or echo)(request)
        except Exception as exc:
            with self.lock:
                self.errors.append(exc)
            return request, Reply.error(500, f"mock responder raised {exc!r}", should_retry=False)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], state: _State) -> None:
        self.state = state
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self.connections_lock:
            connections = list(self.connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):  # a client went away: nothing to report
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    timeout = 60

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the request log is ``MockLLMServer.requests``."""

    def do_GET(self) -> None:
        self._send_json(404, openai_error(Reply.error(404, f"No route for GET {self.path}", code="not_found")), {})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = urlsplit(self.path).path
        api = api_for_path(path)
        if api is None:
            self._send_json(404, openai_error(Reply.error(404, f"No route for POST {path}", code="not_found")), {})
            return
        renderer = RENDERERS[api]
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        state = cast(_HTTPServer, self.server).state
        if not isinstance(body, dict):
            invalid = Reply.error(400, "The request body is not a JSON object.")
            self._send_json(400, renderer.error_body(invalid, RenderContext(MockRequest(api, path, {}))), {})
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        request, reply = state.receive(api, path, body, headers)
        ctx = RenderContext(request, state.ids, state.store)
        request_id = state.ids.next("req_mock_")
        extra = {"request-id" if api == "messages" else "x-request-id": request_id}
        if api in ("converse", "invoke", "bedrock_embed"):
            extra = {"x-amzn-RequestId": request_id}
        try:
            self._send_reply(renderer, reply, ctx, extra)
        except OSError:
            self.close_connection = True
        except Exception as exc:  # a renderer fault: answer 500 rather than hang the client
            with state.lock:
                state.errors.append(exc)
            failed = Reply.error(500, f"mock server failed to render the reply: {exc!r}")
            self._send_json(500, renderer.error_body(failed, ctx), {"x-should-retry": "false"})

    def _send_reply(self, renderer: Renderer, reply: Reply, ctx: RenderContext, extra: dict[str, str]) -> None:
        if reply.kind == "raw" and reply.raw_response is not None:
            raw = reply.raw_response
            body = raw.body.encode("utf-8")
            if raw.content_type.startswith("text/event-stream"):
                self._send_stream(raw.status, raw.content_type, [body], True, extra)
            else:
                self._send_body(raw.status, raw.content_type, body, extra)
            return
        if reply.kind == "error":
            if reply.should_retry is not None:
                extra["x-should-retry"] = "true" if reply.should_retry else "false"
            extra.update(getattr(renderer, "error_headers", _no_headers)(reply))
            self._send_json(reply.status, renderer.error_body(reply, ctx), extra)
            return
        body_json = reply.shaped_body if reply.shaped_body is not None else renderer.body(reply, ctx)
        broken = reply.kind == "broken"
        if ctx.request.stream:
            events = [event.encode() for event in renderer.events(body_json, ctx)]
            if broken:
                events = events[: min(reply.after_events, len(events) - 1)]  # never the final event
            content_type = getattr(renderer, "stream_content_type", SSE_CONTENT_TYPE)
            self._send_stream(200, content_type, events, not broken, extra)
            return
        extra.update(getattr(renderer, "body_headers", _no_headers)(body_json, ctx))
        if broken:
            data = _json_bytes(body_json)
            self._send_headers(200, "application/json", {**extra, "Content-Length": str(len(data))})
            self.wfile.write(data[: len(data) // 2])
            self.close_connection = True
        else:
            self._send_json(200, body_json, extra)

    def _send_headers(self, status: int, content_type: str, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def _send_body(self, status: int, content_type: str, body: bytes, extra: dict[str, str]) -> None:
        self._send_headers(status, content_type, {**extra, "Content-Length": str(len(body))})
        self.wfile.write(body)

    def _send_json(self, status: int, value: Any, extra: dict[str, str]) -> None:
        self._send_body(status, "application/json", _json_bytes(value), extra)

    def _send_stream(
        self, status: int, content_type: str, pieces: list[bytes], complete: bool, extra: dict[str, str]
    ) -> None:
        """A chunked stream; an incomplete one ends with the connection dropped, so the client sees it break."""
        self._send_headers(status, content_type, {**extra, "Cache-Control": "no-cache", "Transfer-Encoding": "chunked"})
        self.wfile.write(_chunked(pieces, complete))
        if not complete:
            self.close_connection = True


class MockLLMServer:
    """An OpenAI- and Anthropic-compatible LLM server on 127.0.0.1 for tests and demos.

    ``with MockLLMServer() as server:`` then point a client at ``server.base_url`` (OpenAI) or
    ``server.anthropic_base_url`` (Anthropic) with any API key and ``max_retries=0``. Script the replies with
    ``server.script(Reply.text(...), ...)`` (consumed in request order) or a responder
    ``(MockRequest) -> Reply``; with neither, the server answers ``echo``. ``server.requests`` logs what it got.
    """

    def __init__(self, responder: Responder | None = None, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._address = (host, port)
        self._state = _State(responder)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> MockLLMServer:
        """Bind and serve on a daemon thread (port 0: an ephemeral port). Starting a started server is a no-op."""
        if self._httpd is None:
            httpd = _HTTPServer(self._address, self._state)
            thread = threading.Thread(
                target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="spanfold-mock-llm", daemon=True
            )
            thread.start()
            self._httpd, self._thread = httpd, thread
        return self

    def stop(self) -> None:
        """Stop serving, close open keep-alive connections and the listening socket."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._httpd = self._thread = None
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> MockLLMServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("MockLLMServer is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://{self._address[0]}:{self.port}"

    @property
    def base_url(self) -> str:
        """For ``openai.OpenAI(base_url=...)``: ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """For ``anthropic.Anthropic(base_url=...)``: ``http://127.0.0.1:PORT`` (the SDK appends ``/v1/messages``)."""
        return self.url

    @property
    def gemini_base_url(self) -> str:
        """For ``genai.Client(http_options={"base_url": ...})``: ``http://127.0.0.1:PORT`` (the SDK appends
        ``/v1beta/models/{model}:generateContent``, or the Vertex AI path)."""
        return self.url

    @property
    def groq_base_url(self) -> str:
        """For ``groq.Groq(base_url=...)``: ``http://127.0.0.1:PORT`` (the SDK appends ``/openai/v1/...``)."""
        return self.url

    @property
    def mistral_server_url(self) -> str:
        """For ``Mistral(server_url=...)``: ``http://127.0.0.1:PORT/mistral`` (the SDK appends ``/v1/chat/completions``;
        the prefix tells Mistral's requests from OpenAI's, which use the same path)."""
        return f"{self.url}/mistral"

    @property
    def ollama_host(self) -> str:
        """For ``ollama.Client(host=...)``: ``http://127.0.0.1:PORT`` (the SDK appends ``/api/chat``)."""
        return self.url

    @property
    def cohere_base_url(self) -> str:
        """For ``cohere.ClientV2(base_url=...)``: ``http://127.0.0.1:PORT`` (the SDK appends ``/v2/chat``)."""
        return self.url

    @property
    def requests(self) -> list[MockRequest]:
        """The requests received so far, in order (a copy)."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def last_request(self) -> MockRequest:
        with self._state.lock:
            if not self._state.requests:
                raise LookupError("no request received")
            return self._state.requests[-1]

    @property
    def errors(self) -> list[BaseException]:
        """Exceptions raised by the responder or a renderer (each was answered with a 500)."""
        with self._state.lock:
            return list(self._state.errors)

    @property
    def pending(self) -> int:
        """Scripted replies not yet consumed."""
        with self._state.lock:
            return len(self._state.queue)

    @property
    def responder(self) -> Responder | None:
        return self._state.responder

    @responder.setter
    def responder(self, responder: Responder | None) -> None:
        with self._state.lock:
            self._state.responder = responder

    def script(self, *replies: Reply) -> MockLLMServer:
        """Queue replies, consumed one per request in order, before the responder is asked."""
        with self._state.lock:
            self._state.queue.extend(replies)
        return self

    def script_embeddings(self, *replies: Reply) -> MockLLMServer:
        """Queue replies for the next embeddings requests (a ``Reply.error`` to fail one; a plain ``Reply()`` answers
        as usual, ``Reply(usage=Usage(n, 0))`` reporting ``n`` prompt tokens); with none waiting, an embeddings
        request is answered with vectors derived from its input."""
        with self._state.lock:
            self._state.embeddings.extend(replies)
        return self

    def respond_with(self, responder: Responder | None) -> MockLLMServer:
        self.responder = responder
        return self

    def replay(self, path: str | Path) -> RecordingReplay:
        """Answer the following requests with a recording's responses, in order; returns the responder."""
        replay = RecordingReplay(path)
        self.responder = replay
        return replay

    def reset(self) -> None:
        """Forget the script, the request log, errors, id counters and stored responses (the responder stays)."""
        with self._state.lock:
            self._state.queue.clear()
            self._state.embeddings.clear()
            self._state.requests.clear()
            self._state.errors.clear()
        self._state.ids.reset()
        self._state.store.reset()
