"""DNS rebinding: a web page the user visits points its own name (``rebind.attacker.example``) at 127.0.0.1, and the
browser then lets it read what a loopback server answers. ``spanfold ui`` and ``spanfold serve`` answer only to
their own names (421 Misdirected Request otherwise), and the receiver refuses requests a browser sent from another
origin (403). Real servers (the real commands, or the receiver writing real trace files) over real HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from tests.ui.conftest import UiServer
from tests.ui.traces import trace, write

from spanfold.exporter.pipeline.receiver import Receiver, ReceiverThread, ServeOptions

from ..bridge.conftest import folded_in_process, proto_body, run_weather_agent

ATTACKER = "rebind.attacker.example"
PROTOBUF = "application/x-protobuf"


@pytest.fixture
def ui_server() -> Iterator[Any]:
    servers: list[UiServer] = []

    def start(paths: list[Path], *extra: str, env: dict[str, str] | None = None) -> UiServer:
        servers.append(UiServer(paths, *extra, env=env))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def weather_spans(_global_provider: Any, global_spans: Any) -> list[ReadableSpan]:
    run_weather_agent(_global_provider)
    return list(global_spans.get_finished_spans())


def _port(url: str) -> int:
    return int(url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


def _request(
    url: str, headers: dict[str, str], body: bytes | None = None, method: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One request with exactly these headers (``Host`` too: urllib then sends no other)."""
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


# --- spanfold ui -----------------------------------------------------------------------------------------------


def test_ui_answers_a_foreign_host_421_with_no_trace_data(tmp_path: Path, ui_server: Any) -> None:
    write(tmp_path, [trace(1, text="secret prompt 4711"), trace(2)])
    server = ui_server([tmp_path])
    server.wait_total(2)
    port = _port(server.url)
    run_id = server.json("/api/runs")["runs"][0]["id"]
    for host in (ATTACKER, f"{ATTACKER}:{port}", f"{ATTACKER.upper()}.:{port}", "127.0.0.1.evil.example"):
        for path in ("/", "/api/state", "/api/runs", f"/api/run/{run_id}", "/api/runs?q=secret", "/static/app.js"):
            status, headers, body = server.get(path, {"Host": host})
            assert status == 421, (host, path)
            assert headers["Content-Type"].startswith("text/plain")
            assert b"secret prompt" not in body and b"agent-" not in body and b"question number" not in body
            assert b"runs" not in body and b"<html" not in body.lower()
            assert headers["X-Content-Type-Options"] == "nosniff"  # the refusal keeps the security headers
    for bad in ("", "[::1", "local host", "::1", "localhost:http"):  # malformed values are refused too
        assert server.get("/api/state", {"Host": bad})[0] in (400, 421), bad


def test_ui_answers_its_own_names_on_any_port(tmp_path: Path, ui_server: Any) -> None:
    write(tmp_path, [trace(1, text="secret prompt 4711")])
    server = ui_server([tmp_path])
    server.wait_total(1)
    port = _port(server.url)
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"LocalHost.:{port}", "localhost"):
        status, _, body = server.get("/api/runs?q=secret", {"Host": host})
        assert status == 200, host
        assert json.loads(body)["total"] == 1
    # the port is not compared (an ssh -L tunnel or a container's port mapping changes it; a rebinding page picks it
    # freely with its URL): a loopback name on another port is served, a foreign name on the server's port is not
    assert server.get("/api/state", {"Host": "localhost:9999"})[0] == 200
    assert server.get("/api/state", {"Host": f"{ATTACKER}:{port}"})[0] == 421


def test_ui_answers_names_the_user_adds(tmp_path: Path, ui_server: Any) -> None:
    write(tmp_path, [trace(1)])
    server = ui_server([tmp_path], "--allow-host", "traces.example.internal", "--allow-host", "Box.LAN.")
    server.wait_total(1)
    for host in ("traces.example.internal", "traces.example.internal:443", "box.lan:8080", "localhost"):
        assert server.get("/api/state", {"Host": host})[0] == 200, host
    assert server.get("/api/state", {"Host": ATTACKER})[0] == 421
    from_env = ui_server([tmp_path], env={"SPANFOLD_ALLOWED_HOSTS": "a.example, b.example"})
    for host in ("a.example", "b.example:1234"):
        assert from_env.get("/api/state", {"Host": host})[0] == 200, host
    assert from_env.get("/api/state", {"Host": "c.example"})[0] == 421


def test_ui_on_a_wildcard_address_still_checks_the_host(tmp_path: Path) -> None:
    write(tmp_path, [trace(1)])
    server = UiServer([tmp_path], "--host", "0.0.0.0", "--token", "s3cret")
    try:
        server.url = server.url.replace("0.0.0.0", "127.0.0.1")
        auth = {"Authorization": "Bearer s3cret"}
        assert server.get("/api/state", {**auth, "Host": "localhost"})[0] == 200
        assert server.get("/api/state", {**auth, "Host": "0.0.0.0"})[0] == 421  # a wildcard names no server
        status, _, body = server.get("/api/runs", {**auth, "Host": ATTACKER})
        assert status == 421 and b"agent-" not in body  # refused before the token is even looked at
    finally:
        server.stop()


# --- the receiver ----------------------------------------------------------------------------------------------


class FileReceiver:
    """A receiver on a free loopback port writing real trace files into ``out``."""

    def __init__(self, out: Path, **options: Any) -> None:
        self.out = out
        self.thread = ReceiverThread(ServeOptions(port=0, output=str(out), wait=60, **options))
        self.receiver: Receiver = self.thread.__enter__()
        self.port = self.receiver.port

    def post(self, body: bytes, **headers: str) -> tuple[int, dict[str, str], bytes]:
        return _request(self.receiver.url, {"Content-Type": PROTOBUF, **headers}, body)

    def written(self) -> list[Any]:
        """The traces in the trace file, once everything held is written."""
        assert self.thread.stop()
        events = self.out / "traces.jsonl"
        return [json.loads(line) for line in events.read_text().splitlines()] if events.exists() else []


@pytest.fixture
def file_receiver(tmp_path: Path) -> Iterator[Any]:
    made: list[FileReceiver] = []

    def make(**options: Any) -> FileReceiver:
        made.append(FileReceiver(tmp_path / f"traces{len(made)}", **options))
        return made[-1]

    yield make
    for receiver in made:
        receiver.thread.stop()


def test_receiver_refuses_a_foreign_host_and_writes_nothing(
    file_receiver: Any, weather_spans: list[ReadableSpan]
) -> None:
    r = file_receiver()
    body = proto_body(weather_spans)
    for host in (ATTACKER, f"{ATTACKER}:{r.port}", f"{ATTACKER}.", "0.0.0.0", "[::2]"):
        status, _, _ = r.post(body, Host=host)
        assert status == 421, host
    assert r.written() == []
    assert not r.out.exists() or not any(p.stat().st_size for p in r.out.rglob("*") if p.is_file())


def test_receiver_refuses_browser_origins_and_writes_nothing(
    file_receiver: Any, weather_spans: list[ReadableSpan]
) -> None:
    r = file_receiver()
    body = proto_body(weather_spans)
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": f"http://{ATTACKER}:{r.port}"},  # the rebinding page's own origin
        {"Origin": "http://localhost:3000"},  # another local page: same site, another origin
        {"Origin": "null"},  # a sandboxed frame, a file: page
        {"Origin": f"https://127.0.0.1:{r.port}"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ):
        status, answer, _ = r.post(body, **headers)
        assert status == 403, headers
        assert "Access-Control-Allow-Origin" not in answer
    # a CORS preflight is not answered permissively: no Access-Control-Allow-* header, no 2xx
    preflight = {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type"}  # fmt: skip
    status, answer, _ = _request(r.receiver.url, preflight, method="OPTIONS")
    assert status >= 400 and not [h for h in answer if h.lower().startswith("access-control-allow")]
    assert r.written() == []


def test_receiver_accepts_its_own_origin_and_names_the_user_adds(
    file_receiver: Any, weather_spans: list[ReadableSpan]
) -> None:
    r = file_receiver(allowed_hosts=("collector.internal",))
    body = proto_body(weather_spans)
    assert r.post(body, Host="collector.internal:4318")[0] == 200
    assert r.post(body, Host=f"localhost:{r.port}", Origin=f"http://localhost:{r.port}")[0] == 200  # its own origin
    assert r.post(body, Host=f"localhost:{r.port}", Sec_Fetch_Site="same-origin")[0] == 200
    assert r.post(body, Host="other.internal")[0] == 421
    assert r.written() == [folded_in_process(weather_spans)]  # a span sent three times counts once


def test_the_sdk_exporter_sends_no_origin_and_is_folded(file_receiver: Any, weather_spans: list[ReadableSpan]) -> None:
    r = file_receiver()
    exporter = OTLPSpanExporter(endpoint=r.receiver.url, timeout=10)
    assert exporter.export(weather_spans) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert r.written() == [folded_in_process(weather_spans)]


def test_serve_command_with_ui_checks_both_servers(tmp_path: Path, weather_spans: list[ReadableSpan]) -> None:
    out = tmp_path / "traces"
    args = ["serve", "--port", "0", "--ui", "--ui-port", "0", "-o", str(out), "--allow-host", "spans.internal"]
    env = {**os.environ, "SPANFOLD_ALLOWED_HOSTS": "ignored.example"}  # an --allow-host given wins, as click does
    env.pop("SPANFOLD_SERVE_TOKEN", None)
    env.pop("SPANFOLD_UI_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "spanfold", *args], stderr=subprocess.PIPE, text=True, env=env,
                            stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        assert proc.stderr is not None
        lines = [proc.stderr.readline(), proc.stderr.readline()]
        ui = next(line.split("ui on ", 1)[1].strip() for line in lines if "ui on " in line)
        otlp = next(line.split("listening on ", 1)[1].split(",")[0] for line in lines if "listening on " in line)
        body = proto_body(weather_spans)
        assert _request(otlp, {"Content-Type": PROTOBUF, "Host": ATTACKER}, body)[0] == 421
        assert _request(otlp, {"Content-Type": PROTOBUF, "Origin": "http://evil.example"}, body)[0] == 403
        assert _request(otlp, {"Content-Type": PROTOBUF, "Host": "ignored.example"}, body)[0] == 421
        assert _request(otlp, {"Content-Type": PROTOBUF, "Host": "spans.internal:4318"}, body)[0] == 200
        assert _request(ui + "api/state", {"Host": ATTACKER})[0] == 421
        assert _request(ui + "api/state", {"Host": "spans.internal"})[0] == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert "Traceback" not in proc.stderr.read()
        assert (out / "traces.jsonl").read_text(encoding="utf-8").count("\n") == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def test_a_bad_allowed_name_is_a_usage_error(tmp_path: Path) -> None:
    for args, env, bad in (
        (["ui", str(tmp_path), "--allow-host", "bad name"], {}, "bad name"),
        (["serve", "-o", str(tmp_path / "t"), "--port", "0"], {"SPANFOLD_ALLOWED_HOSTS": "ok.example,bad/x"}, "bad/x"),
    ):
        done = subprocess.run([sys.executable, "-m", "spanfold", *args], capture_output=True, text=True, timeout=60,
                              env={**os.environ, **env})  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "--allow-host" in done.stderr and bad in done.stderr and "Traceback" not in done.stderr
        assert not (tmp_path / "t").exists()
