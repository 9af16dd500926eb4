"""``spanfold serve --ui``: the receiver and the page in one process. Spans sent over OTLP appear in an open page
without a reload; SIGTERM stops both cleanly (the traces written, exit 0, both ports closed)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest


def _port_open(url: str) -> bool:
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, int(port))) == 0


def test_spans_sent_to_serve_appear_in_the_open_page(tmp_path: Path, otlp_dir: Path, page: Any) -> None:
    expect = pytest.importorskip("playwright.sync_api").expect
    out = tmp_path / "traces"
    args = ["serve", "--port", "0", "--ui", "--ui-port", "0", "-o", str(out), "--wait", "0.2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "spanfold", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        assert proc.stderr is not None
        lines = [proc.stderr.readline(), proc.stderr.readline()]
        ui = next(line.split("ui on ", 1)[1].strip() for line in lines if "ui on " in line)
        otlp = next(line.split("listening on ", 1)[1].split(",")[0] for line in lines if "listening on " in line)
        page.goto(ui)
        expect(page.locator("#waiting")).to_contain_text("No traces yet")  # and how the receiver makes them
        expect(page.locator("#waiting")).to_contain_text("This receiver writes each trace here")
        body = (otlp_dir / "traces.otlp.jsonl").read_bytes()  # one OTLP/JSON export request: a real run's spans
        request = urllib.request.Request(otlp, data=body, method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
        row = page.locator("#runs tr.run").first
        expect(row).to_contain_text("otlp-bot", timeout=15_000)  # no reload: the live update picked it up
        assert "get_weather \u00d72" in row.inner_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert "Traceback" not in proc.stderr.read()
        assert not _port_open(ui) and not _port_open(otlp)
        assert (out / "traces.jsonl").read_text(encoding="utf-8").count("\n") == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_ctrl_c_stops_the_receiver_and_the_page(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "spanfold", "serve", "--port", "0", "--ui", "--ui-port", "0", "-o", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        lines = [proc.stderr.readline(), proc.stderr.readline()]
        ui = next(line.split("ui on ", 1)[1].strip() for line in lines if "ui on " in line)
        with urllib.request.urlopen(ui + "api/state", timeout=30) as response:
            assert response.status == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert "Traceback" not in proc.stderr.read()
        assert not _port_open(ui)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
