"""An OTLP/HTTP trace receiver (``spanfold serve``): spans in from any number of processes, flat traces out.

``POST /v1/traces`` takes an ``ExportTraceServiceRequest`` as protobuf (``application/x-protobuf``) or OTLP/JSON
(``application/json``), plain, ``gzip`` or ``deflate``, on aiohttp (extra ``spanfold[serve]``). Spans are grouped by
trace id across clients by the shared :class:`~spanfold.exporter.pipeline.assembler.Assembler` on a
:class:`~spanfold.exporter.pipeline.processor.FoldWorker` thread; a trace is folded once its root (the span with no
parent)
has arrived and no span of it came for ``wait`` seconds, and written as JSONL by the usual writers.

Answers, as the OTLP/HTTP specification asks (error bodies are a ``google.rpc.Status`` in the request's encoding):

* 200 with an ``ExportTraceServiceResponse``; spans that could not be read are left out and counted in its
  ``partial_success`` (``rejected_spans``, ``error_message``);
* 421 a ``Host`` that is not one of this receiver's names (loopback, ``host``, ``allowed_hosts``), 403 a request a
  browser sent from a page of another origin (an ``Origin`` but its own, or ``Sec-Fetch-Site`` cross-site or
  same-site; a CORS preflight too): :mod:`spanfold.host_check`, checked before anything else on every path, so a page
  that rebinds its name to this address (DNS rebinding), or posts to it, writes nothing. OTLP exporters, the
  Collector and curl send no ``Origin``;
* 400 a body that does not decode; 401 a missing or wrong bearer token (when one is set); 413 a body over
  ``max_body_bytes`` (as sent or once decompressed), or one that decodes to more spans than ``max_spans`` or more
  attribute bytes than ``max_buffered_bytes``; 415 another content type or encoding;
* 408 a body not received within ``read_timeout`` seconds (headers that take longer: the connection is closed);
* 503 with ``Retry-After`` while the request would take what is held past ``max_spans`` or ``max_buffered_bytes``
  (back-pressure: clients retry later, memory stays bounded). Traces whose root has not arrived do not count: the
  fold cuts the oldest of them to make room, so one client's orphans never lock the others out.

Bodies are inflated and decoded on a small thread pool, never on the event loop; limits are checked on the decoded
request.

When is a stitched run written? (Zero-code runs: one trace per model call, joined by
:mod:`spanfold.exporter.runs.stitch`.) As soon as it is provably over, not only after the idle window
(``stitch_idle``, 30 s):

* **the sending process is gone**: its keep-alive connection closed (an OTel SDK keeps one connection for its whole
  life and closes it at exit) and no request from that process (the same resource; for a resource that names no
  process, the same connection too: :func:`mark_senders`) came for ``final_wait`` seconds:
  its traces are folded without waiting ``wait`` and its conversations written (:class:`_Senders`). A request sent
  with ``Connection: close`` (a client that closes after every request) says nothing of the process;
* **a final answer**: the run's latest model call answered without a tool call and nothing more of that process
  came for ``final_wait`` seconds (after the trace's own ``wait``).

``final_wait=0`` turns both off: conversations are written after ``stitch_idle`` seconds idle, or at shutdown.

It listens on loopback unless told otherwise; SIGTERM / SIGINT / SIGHUP stop it after everything buffered is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import itertools
import json
import math
import operator
import signal
import threading
import zlib
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web
from google.rpc.status_pb2 import Status  # type: ignore[import-untyped]

from spanfold import config as config_module
from spanfold import counters, host_check
from spanfold.exporter.files.writers import Writer, writers_for
from spanfold.exporter.otlp import json_in as otlp_json
from spanfold.exporter.otlp import proto_in as otlp_proto
from spanfold.exporter.otlp.common import Decoded, OtlpError
from spanfold.exporter.pipeline.assembler import Policy, trace_root
from spanfold.exporter.pipeline.processor import FoldWorker
from spanfold.exporter.records import SenderResource, SpanRecord, attribute_bytes, process_key
from spanfold.sampling.decision import Sampler
from spanfold.semconv import names

TRACES_PATH: Final = "/v1/traces"
#: ``GET``: :meth:`Receiver.status` as JSON.
STATUS_PATH: Final = "/status"
PROTOBUF: Final = "application/x-protobuf"
JSON: Final = "application/json"
#: gRPC status codes for the ``google.rpc.Status`` error bodies.
_INVALID_ARGUMENT, _PERMISSION_DENIED, _RESOURCE_EXHAUSTED, _UNAVAILABLE, _UNAUTHENTICATED = 3, 7, 8, 14, 16
_GZIP: Final = 16 + zlib.MAX_WBITS
_CHUNK: Final = 64 * 1024
#: Gzip members read in one body: empty members cost time, not bytes.
_MAX_MEMBERS: Final = 1024
#: Content-Encoding -> zlib ``wbits`` (None: not compressed).
_ENCODINGS: Final[dict[str, int | None]] = {"identity": None, "gzip": _GZIP, "deflate": zlib.MAX_WBITS}
#: Bodies inflated and decoded at once (off the event loop; each may take up to ``max_body_bytes`` decompressed).
_DECODE_THREADS: Final = 2
#: Seconds an unread body is drained after the answer (so the client reads it) before the connection is closed.
_LINGER_S: Final = 1.0
_DECODERS: Final[dict[str, Callable[[bytes], Decoded]]] = {
    PROTOBUF: otlp_proto.decode_body,
    JSON: otlp_json.decode_body,
}


@dataclass(frozen=True, slots=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 4318
    output: str = "traces"
    format: str = "invariant"
    wait: float = 5.0
    token: str | None = None
    max_body_bytes: int = 16 * 1024 * 1024
    max_spans: int = 100_000
    #: Attribute bytes held across all traces (None: ``SPANFOLD_MAX_BUFFERED_BYTES`` or its default, 256 MiB).
    max_buffered_bytes: int | None = None
    #: Seconds a client has to send a request's headers (from connecting, or from the last answer on a kept-alive
    #: connection: idle connections close after it too) and, once they came, its body.
    read_timeout: float = 30.0
    #: Seconds after a final answer, or after the sending process's connection closed, before a stitched run is
    #: written (0: only after ``stitch_idle`` or at shutdown).
    final_wait: float = 2.0
    #: Names the receiver answers to beside loopback and ``host`` (``--allow-host``).
    allowed_hosts: tuple[str, ...] = ()
    #: Which runs are written (``--sample``, its spec files loaded; None: all).
    sampler: Sampler | None = None

    @property
    def retry_after(self) -> int:
        """Seconds a throttled client is told to wait: about one quiet period."""
        return max(1, math.ceil(self.wait))


class _TooLarge(Exception):
    pass


def inflate(body: bytes, wbits: int | None, limit: int) -> bytes:
    """``body`` decompressed, never past ``limit`` bytes (:class:`_TooLarge`); ``zlib.error`` when corrupt.

    A gzip body may hold several members (RFC 1952: ``cat a.gz b.gz``), each read in turn as ``gzip -d`` reads them
    (zero padding between or after them too); the limit counts all of them. Anything else after the end is an error.
    The input goes in by :data:`_CHUNK`, so what is left after a member is never copied whole."""
    if wbits is None:
        return body
    out = bytearray()
    view = memoryview(body)
    pos, tail = 0, b""
    inflater, fresh, members = zlib.decompressobj(wbits), True, 0
    while tail or pos < len(body):
        chunk: bytes | memoryview
        if tail:
            chunk, tail = tail, b""
        else:
            chunk, pos = view[pos : pos + _CHUNK], pos + _CHUNK
        if fresh and wbits == _GZIP:
            chunk = bytes(chunk).lstrip(b"\x00")
            if not chunk:
                continue
        fresh = False
        out += inflater.decompress(chunk, limit + 1 - len(out))  # never 0 (unbounded): len(out) <= limit here
        if len(out) > limit:
            raise _TooLarge
        if inflater.eof:
            members += 1
            if members > _MAX_MEMBERS:
                raise zlib.error(f"more than {_MAX_MEMBERS} gzip members")
            tail = inflater.unused_data
            if wbits != _GZIP and (tail or pos < len(body)):
                raise zlib.error("data after the end of the compressed body")
            inflater, fresh = zlib.decompressobj(wbits), True
    if not fresh or not members:
        raise zlib.error("truncated compressed body")
    return bytes(out)


def _decode(
    decode: Callable[[bytes], Decoded], body: bytes, wbits: int | None, limit: int, connection: int
) -> tuple[Decoded, int]:
    """Inflate and decode a body (off the event loop); the spans and their attribute bytes, as the fold counts them.
    A resource that names no process gets the connection as its sender (:func:`mark_senders`)."""
    decoded = decode(inflate(body, wbits, limit))
    mark_senders(decoded.records, connection)
    return decoded, sum(attribute_bytes(record) for record in decoded.records)


def mark_senders(records: Sequence[SpanRecord], connection: int) -> None:
    """Give each span whose resource has no ``service.instance.id`` a :class:`SenderResource` naming ``connection``:
    the processes of one service send identical resources without it (opentelemetry-sdk before 1.43 by default),
    and the receiver takes no two of them for one sender. A process is then its connection: its calls are stitched
    while they come over it (an SDK keeps one for its whole life, unless the receiver closes it idle)."""
    marked: dict[int, SenderResource] = {}  # the spans of one resourceSpans share their resource
    for record in records:
        resource = record.resource
        if names.SERVICE_INSTANCE_ID in resource:
            continue
        sender = marked.get(id(resource))
        if sender is None:
            sender = marked[id(resource)] = SenderResource(resource, connection)
        record.resource = sender


def bearer_token(authorization: str) -> bytes:
    """The credentials of an ``Authorization: Bearer ...`` header as the bytes the client sent (aiohttp keeps bytes
    that are not UTF-8 as surrogates); ``b""`` for another scheme. The scheme is case-insensitive (RFC 7235)."""
    scheme, _, credentials = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return b""
    return credentials.strip(" \t").encode("utf-8", "surrogateescape")


def _status_body(kind: str, code: int, message: str) -> bytes:
    if kind == JSON:
        return json.dumps({"code": code, "message": message}).encode()
    data: bytes = Status(code=code, message=message).SerializeToString()
    return data


def _success_body(kind: str, decoded: Decoded) -> bytes:
    message = "; ".join(decoded.messages)
    if kind == PROTOBUF:
        return otlp_proto.encode_response(decoded.rejected, message)
    if not decoded.rejected:
        return b"{}"
    return json.dumps({"partialSuccess": {"rejectedSpans": str(decoded.rejected), "errorMessage": message}}).encode()


_RESOURCE: Final = operator.attrgetter("resource")
_STATUS_COUNTERS: Final = ("receiver.spans", "spans_received", "traces_written", "dropped_spans", "faults")


def status_of(counted: Mapping[str, Any], now: Mapping[str, int]) -> dict[str, Any]:
    """A receiver's status from the counters and its fold's stats: totals, what is held now, and ``sampling``:
    ``{"kept": {"total", <reason>...}, "dropped": {"total", "rate"}}`` (empty when nothing was sampled)."""
    out: dict[str, Any] = {key: counted.get(key, 0) for key in _STATUS_COUNTERS}
    out.update(now)
    sampling: dict[str, dict[str, int]] = {}
    for key, value in counted.items():
        if key.startswith("sampling."):
            _, outcome, *reason = key.split(".", 2)
            sampling.setdefault(outcome, {})["total" if not reason else reason[0]] = value
    out["sampling"] = sampling
    return out


class _Senders:
    """Which sending processes (by resource, :func:`~spanfold.exporter.records.process_key`) each keep-alive
    connection carried, so that the last one closing tells the fold the process is gone (after ``grace`` seconds
    without a request from it). Event-loop thread only."""

    def __init__(self, grace: float, ended: Callable[[Mapping[str, Any]], None]) -> None:
        self.grace = grace
        self._ended = ended
        self._by_connection: dict[object, dict[Hashable, Mapping[str, Any]]] = {}
        self._connections: dict[Hashable, int] = {}  # process -> live connections that carried it
        self._last: dict[Hashable, float] = {}  # process -> when its last request came (loop time)

    def seen(self, connection: object, records: Sequence[Any], now: float) -> None:
        every = list(map(_RESOURCE, records))  # C loops: a 150,000-span request costs milliseconds on the loop
        resources = dict(zip(map(id, every), every, strict=True))
        carried = self._by_connection.setdefault(connection, {})
        for resource in resources.values():
            key = process_key(resource)
            self._last[key] = now
            if key not in carried:
                carried[key] = resource
                self._connections[key] = self._connections.get(key, 0) + 1

    def lost(self, connection: object, *, by_sender: bool = True) -> None:
        """A connection closed; ``by_sender=False`` when this server closed it (idle past ``read_timeout``, an error,
        shutdown): that says nothing of the process."""
        carried = self._by_connection.pop(connection, None)
        if not carried:
            return
        loop = asyncio.get_running_loop()
        closed = loop.time()
        for key, resource in carried.items():
            self._connections[key] -= 1
            if self._connections[key] <= 0:
                del self._connections[key]
                if by_sender:
                    loop.call_later(self.grace, self._check, key, resource, closed)

    def _check(self, key: Hashable, resource: Mapping[str, Any], closed: float) -> None:
        if key in self._connections or self._last.get(key, 0.0) > closed:
            return  # it came back (a new connection, or a request on another)
        self._last.pop(key, None)
        counters.incr("receiver.senders_gone")
        self._ended(resource)


class Receiver:
    """The aiohttp application, its listening site and the fold behind it."""

    def __init__(self, options: ServeOptions, writers: Sequence[Writer] | None = None) -> None:
        self.options = options
        # Every trace holds a span: the span bound (503 past it) bounds the traces too, before any is cut short.
        limits = {"max_traces_in_flight": options.max_spans, "max_buffered_bytes": options.max_buffered_bytes}
        self.config = config_module.load({"output": options.output, "format": options.format, **limits})
        final_idle = options.final_wait if options.final_wait > 0 else None
        policy = Policy(quiet=options.wait, root=trace_root, max_spans=options.max_spans, final_idle=final_idle)
        self._decoding = ThreadPoolExecutor(_DECODE_THREADS, thread_name_prefix="spanfold-serve-decode")
        self.fold = FoldWorker(writers or (), self.config, policy, name="spanfold-serve", sampler=options.sampler)
        self._senders = _Senders(options.final_wait, self.fold.process_ended) if final_idle is not None else None
        self._file_writers = writers is None  # made once listening: a failed start leaves no output directory
        self._token = options.token.encode() if options.token else None
        self._hosts = host_check.AllowedHosts.of(options.host, options.allowed_hosts)
        self._runner: web.AppRunner | None = None
        self.port: int | None = None
        #: Each open connection's number (never reused): the sender of a resource that names no process.
        self._connections: dict[object, int] = {}
        self._numbers = itertools.count(1)

    # --- lifecycle ---------------------------------------------------------------------------------------

    def application(self) -> web.Application:
        app = web.Application(client_max_size=self.options.max_body_bytes, middlewares=[self._own_requests_only])
        app.router.add_post(TRACES_PATH, self.handle)
        app.router.add_get(STATUS_PATH, self.handle_status)
        return app

    @web.middleware
    async def _own_requests_only(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """421 for a ``Host`` not of this receiver, 403 for a request a browser sent from another origin (a CORS
        preflight carries ``Origin`` too: refused, no ``Access-Control-Allow-*``); before routing, on every path."""
        hosts = request.headers.getall("Host", [])
        kind = request.content_type
        if not self._hosts.allows(hosts):
            message = "not a name of this receiver (add it with --allow-host or SPANFOLD_ALLOWED_HOSTS)"
            return self._error(kind, 421, _PERMISSION_DENIED, message)
        origin, fetch_site = request.headers.get("Origin"), request.headers.get("Sec-Fetch-Site")
        if host_check.cross_origin(origin, fetch_site, hosts[0] if hosts else None):
            return self._error(kind, 403, _PERMISSION_DENIED, "a browser's cross-origin request: refused")
        return await handler(request)

    async def start(self) -> None:
        """Listen (``port=0``: any free port; :attr:`port` says which)."""
        self._runner = web.AppRunner(
            self.application(),
            access_log=None,
            auto_decompress=False,
            keepalive_timeout=self.options.read_timeout,  # aiohttp: also the time allowed for a request's headers
            lingering_time=_LINGER_S,  # a body left unread (413, 408) is drained this long, then the connection closed
        )
        await self._runner.setup()
        self._watch_connections()
        site = web.TCPSite(self._runner, self.options.host, self.options.port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        if self._file_writers:
            self._file_writers = False
            for writer in writers_for(self.config):
                self.fold.add_writer(writer)

    def _connection_number(self, connection: object) -> int:
        number = self._connections.get(connection)
        if number is None:
            number = self._connections[connection] = next(self._numbers)
        return number

    def _watch_connections(self) -> None:
        """Hear each connection close (aiohttp's server tells nothing else of it)."""
        server, senders = self._runner.server if self._runner is not None else None, self._senders
        if server is None:
            return
        lost = server.connection_lost

        def connection_lost(handler: Any, exc: BaseException | None = None) -> None:
            # aiohttp marks a connection it closes itself (idle, error, shutdown) before telling the server; a
            # connection the client closed is marked only after this call
            by_sender = not (getattr(handler, "_force_close", False) or getattr(handler, "_close", False))
            lost(handler, exc)
            self._connections.pop(handler, None)
            try:
                if senders is not None:
                    senders.lost(handler, by_sender=by_sender)
            except Exception as exc:  # never in the way of aiohttp's own bookkeeping
                counters.fault("receiver.connection_lost", exc)

        setattr(server, "connection_lost", connection_lost)  # noqa: B010 (an instance attribute, not the method)

    async def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop listening, then fold and write everything buffered; False if that took over ``timeout_s``."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._decoding.shutdown(wait=False)
        return await asyncio.to_thread(self.fold.flush, timeout_s, final=True)

    @property
    def url(self) -> str:
        return f"http://{self.options.host}:{self.port}{TRACES_PATH}"

    # --- one request -------------------------------------------------------------------------------------

    def _busy(self, spans: int, attribute_bytes: int) -> bool:
        """Would a request of ``spans`` and ``attribute_bytes`` go past the bounds? What is queued and the traces whose
        root arrived count; traces still waiting for theirs do not: the fold cuts the oldest of them to make room
        (:meth:`~spanfold.exporter.pipeline.assembler.Assembler.shed`), so that no client's orphans lock the others
        out."""
        fold = self.fold
        assembler = fold.assembler
        held = assembler.held
        committed_spans = fold.pending + assembler.spans - held.rootless_spans
        committed_bytes = fold.pending_bytes + held.bytes - held.rootless_bytes
        return (
            committed_spans + spans > self.options.max_spans
            or committed_bytes + attribute_bytes > self.config.max_buffered_bytes
        )

    def _authorized(self, request: web.Request) -> bool:
        if self._token is None:
            return True
        return hmac.compare_digest(bearer_token(request.headers.get("Authorization", "")), self._token)

    def status(self) -> dict[str, Any]:
        """What the receiver did so far: spans received, traces written, what it holds now, and the runs sampling
        kept and dropped, by reason (``GET /status``, and the line ``spanfold serve`` says when it stops)."""
        return status_of(counters.snapshot(), self.fold.stats())

    async def handle_status(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.Response(
                status=401, text="missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
            )
        return web.json_response(self.status())

    async def handle(self, request: web.Request) -> web.Response:
        counters.incr("receiver.requests")
        kind = request.content_type
        if not self._authorized(request):
            return self._error(kind, 401, _UNAUTHENTICATED, "missing or wrong bearer token", auth=True)
        decode = _DECODERS.get(kind)
        if decode is None:
            return self._error(
                kind, 415, _INVALID_ARGUMENT, f"unsupported content type {kind!r}: use {PROTOBUF} or {JSON}"
            )
        encoding = request.headers.get("Content-Encoding", "identity").strip().lower() or "identity"
        if encoding not in _ENCODINGS:
            return self._error(kind, 415, _INVALID_ARGUMENT, f"unsupported content encoding {encoding!r}: use gzip")
        limit = self.options.max_body_bytes
        if request.content_length is not None and request.content_length > limit:
            return self._error(kind, 413, _RESOURCE_EXHAUSTED, f"request body over {limit} bytes")
        if self._busy(0, 0):
            return self._throttled(kind)
        try:
            body = await asyncio.wait_for(request.read(), self.options.read_timeout)
            loop = asyncio.get_running_loop()
            connection = self._connection_number(request.protocol)
            decoded, size = await loop.run_in_executor(
                self._decoding, _decode, decode, body, _ENCODINGS[encoding], limit, connection
            )
        except asyncio.TimeoutError:  # not TimeoutError before Python 3.11
            counters.incr("receiver.read_timeouts")
            response = self._error(kind, 408, _INVALID_ARGUMENT, f"body not received in {self.options.read_timeout} s")
            response.force_close()
            return response
        except (web.HTTPRequestEntityTooLarge, _TooLarge):
            return self._error(kind, 413, _RESOURCE_EXHAUSTED, f"request body over {limit} bytes")
        except zlib.error as exc:
            return self._error(kind, 400, _INVALID_ARGUMENT, f"bad {encoding} body: {exc}")
        except OtlpError as exc:
            return self._error(kind, 400, _INVALID_ARGUMENT, str(exc))
        spans = len(decoded.records)
        if spans > self.options.max_spans or size > self.config.max_buffered_bytes:
            return self._error(
                kind,
                413,
                _RESOURCE_EXHAUSTED,
                f"request of {spans} spans and {size} bytes of attributes: more than this receiver holds"
                f" ({self.options.max_spans} spans, {self.config.max_buffered_bytes} bytes)",
            )
        if self._busy(spans, size):
            return self._throttled(kind)
        self.fold.submit(decoded.records, size)
        if self._senders is not None and request.keep_alive and decoded.records:
            self._senders.seen(request.protocol, decoded.records, asyncio.get_running_loop().time())
        counters.incr("receiver.spans", len(decoded.records))
        if decoded.rejected:
            counters.incr("receiver.rejected_spans", decoded.rejected)
        return web.Response(status=200, body=_success_body(kind, decoded), content_type=kind)

    def _throttled(self, kind: str) -> web.Response:
        counters.incr("receiver.throttled")
        return self._error(kind, 503, _UNAVAILABLE, "busy: too many spans or bytes waiting to be folded", retry=True)

    def _error(
        self, kind: str, status: int, code: int, message: str, *, auth: bool = False, retry: bool = False
    ) -> web.Response:
        counters.incr(f"receiver.status_{status}")
        headers = {}
        if auth:
            headers["WWW-Authenticate"] = "Bearer"
        if retry:
            headers["Retry-After"] = str(self.options.retry_after)
        if kind not in _DECODERS:
            return web.Response(status=status, text=message, headers=headers)
        return web.Response(status=status, body=_status_body(kind, code, message), content_type=kind, headers=headers)


# --- running it ---------------------------------------------------------------------------------------------


#: Something started on the receiver's event loop once it listens (``spanfold serve --ui``): it returns what stops it.
Companion = Callable[["Receiver"], Awaitable[Callable[[], Awaitable[None]]]]


async def _serve(
    options: ServeOptions,
    ready: Callable[[Receiver], None],
    stopping: Callable[[], None],
    companion: Companion | None = None,
    said: Callable[[dict[str, Any]], None] = lambda _: None,
) -> bool:
    receiver = Receiver(options)
    await receiver.start()
    try:
        stop_companion = await companion(receiver) if companion is not None else None
    except BaseException:
        await receiver.stop()
        raise
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # each would end it: what it holds is written first
        loop.add_signal_handler(sig, stop.set)
    ready(receiver)
    await stop.wait()
    stopping()
    if stop_companion is not None:
        try:
            await stop_companion()
        except Exception as exc:  # the traces still get written
            counters.fault("receiver.companion", exc)
    flushed = await receiver.stop()
    said(receiver.status())
    return flushed


def serve(
    options: ServeOptions,
    ready: Callable[[Receiver], None] = lambda _: None,
    stopping: Callable[[], None] = lambda: None,
    companion: Companion | None = None,
    said: Callable[[dict[str, Any]], None] = lambda _: None,
) -> bool:
    """Run until SIGTERM or SIGINT, then write everything buffered (True when all of it was written in time).
    ``companion``: started on the same event loop once listening, stopped first (the ``--ui`` page); ``said``: given
    the receiver's status once everything is written."""
    return asyncio.run(_serve(options, ready, stopping, companion, said))


class ReceiverThread:
    """A receiver on its own event loop in a daemon thread (tests, embedding): ``with ReceiverThread(opts) as r:``."""

    def __init__(self, options: ServeOptions, writers: Sequence[Writer] | None = None) -> None:
        self.receiver = Receiver(options, writers)
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="spanfold-serve-loop", daemon=True)
        self._error: BaseException | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self.receiver.start())
        except BaseException as exc:
            self._error = exc
            self._started.set()
            return
        self._started.set()
        self._loop.run_forever()

    def __enter__(self) -> Receiver:
        self._thread.start()
        self._started.wait()
        if self._error is not None:
            raise self._error
        return self.receiver

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop listening and write everything buffered."""
        if not self._thread.is_alive():
            return True
        future = asyncio.run_coroutine_threadsafe(self.receiver.stop(timeout_s), self._loop)
        flushed = future.result(timeout_s + 5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout_s)
        with contextlib.suppress(RuntimeError):
            self._loop.close()
        return flushed

    def __exit__(self, *exc: Any) -> None:
        self.stop()
