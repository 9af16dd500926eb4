"""``spanfold ui`` over a trace directory whose blobs the ``media`` option stored: the server's ``/api/media/`` route
serves them from that directory's ``media/`` only (content-addressed names, nothing a symbolic link leads elsewhere,
the Host and token checks first), and the page shows an image inline, audio as a player, a document as a link, after
the whole directory was moved (the uris name the old place; the ui finds each blob by its name)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

pytest.importorskip("aiohttp")

from tests.conftest import traced_into
from tests.media.conftest import PIXEL, b64, name_of, silence
from tests.ui.conftest import UiServer

from spanfold.content.media import Media
from spanfold.testing import MockLLMServer

PDF = b"%PDF-1.4\n% a document the model was sent\n" + b"0" * 2048 + b"\n%%EOF\n"
AUDIO = silence()


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory, _global_provider: Any) -> Path:
    """A real openai call with an image, audio and a PDF, every blob stored (``min_bytes=0``), then the trace directory
    moved elsewhere."""
    written = tmp_path_factory.mktemp("written") / "traces"
    content = [
        {"type": "text", "text": "look, listen, read"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PIXEL)}"}},
        {"type": "input_audio", "input_audio": {"data": b64(AUDIO), "format": "wav"}},
        {"type": "file", "file": {"filename": "a.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"}},
    ]
    with traced_into(written, media=Media(min_bytes=0)) as traced, MockLLMServer() as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": content}])  # type: ignore[arg-type,misc]
        (trace,) = traced.traces()
    assert [c["type"] for c in trace[0]["content"]] == ["text", "image", "audio", "document"]
    there = tmp_path_factory.mktemp("moved") / "traces"
    shutil.move(str(written), str(there))
    return there


@pytest.fixture
def ui() -> Iterator[Any]:
    servers: list[UiServer] = []

    def start(paths: list[Path], *extra: str) -> UiServer:
        server = UiServer(paths, *extra)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def test_the_media_route_serves_stored_blobs_and_nothing_else(moved: Path, ui: Any, tmp_path: Path) -> None:
    server = ui([moved])
    status, headers, body = server.get(f"/api/media/{name_of(PIXEL, 'png')}")
    assert (status, headers["Content-Type"], body) == (200, "image/png", PIXEL)
    assert headers["X-Content-Type-Options"] == "nosniff" and "default-src 'self'" in headers["Content-Security-Policy"]
    status, headers, body = server.get(f"/api/media/{name_of(AUDIO, 'wav')}")
    assert (status, headers["Content-Type"], body) == (200, "audio/wav", AUDIO)
    status, headers, body = server.get(f"/api/media/{name_of(PDF, 'pdf')}")  # not shown by the page: a download
    assert (status, headers["Content-Type"], body) == (200, "application/octet-stream", PDF)
    assert headers["Content-Disposition"] == f'attachment; filename="{name_of(PDF, "pdf")}"'

    outside = tmp_path / "secret.png"
    outside.write_bytes(b"not yours")
    planted = moved / "media" / ("a" * 64 + ".png")
    planted.symlink_to(outside)  # a name of the right shape, leading out of the media directory
    try:
        for path in (
            f"/api/media/{'0' * 64}.png",  # the right shape, not stored
            f"/api/media/{planted.name}",
            "/api/media/..%2Ftraces.jsonl",
            "/api/media/%2E%2E%2F%2E%2E%2Fsecret.png",
            "/api/media/traces.jsonl",
            f"/api/media/{name_of(PIXEL, 'PNG')}",
        ):
            status, _, body = server.get(path)
            assert status == 404 and b"not yours" not in body, path
    finally:
        planted.unlink()
    assert server.get(f"/api/media/{name_of(PIXEL, 'png')}", {"Host": "evil.example"})[0] == 421


def test_the_media_route_needs_the_token(moved: Path, ui: Any) -> None:
    server = ui([moved], "--token", "s3cret")
    path = f"/api/media/{name_of(PIXEL, 'png')}"
    assert server.get(path)[0] == 401
    assert server.get(path, {"Authorization": "Bearer s3cret"})[:3:2] == (200, PIXEL)
    status, headers, _ = server.get(path + "?token=s3cret")
    assert status == 200 and "spanfold_ui_token=s3cret" in headers.get("Set-Cookie", "")


def test_the_page_shows_stored_media(moved: Path, ui: Any, page: Any) -> None:
    server = ui([moved / "traces.jsonl"])  # a file given: its directory's media/
    server.wait_total(1)
    run = server.json("/api/runs")["runs"][0]["id"]
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{server.url}#/run/{run}")
    page.wait_for_selector("img.trace-image")
    page.wait_for_function("document.querySelector('img.trace-image').complete")
    assert page.evaluate("document.querySelector('img.trace-image').naturalWidth") == 1
    assert page.get_attribute("img.trace-image", "src") == f"/api/media/{name_of(PIXEL, 'png')}"
    page.wait_for_function("document.querySelector('audio.trace-audio').duration > 0")
    assert page.evaluate("document.querySelector('audio.trace-audio').duration") == pytest.approx(1.0, abs=0.01)
    link = page.locator("a.trace-media")
    assert link.get_attribute("href") == f"/api/media/{name_of(PDF, 'pdf')}"
    assert link.inner_text() == f"[document: {name_of(PDF, 'pdf')}]"
    assert all(r.startswith(server.url) for r in requests), requests
    assert errors == []
