"""Fixtures for the ``spanfold ui`` tests: the real command on a free loopback port, and a real headless browser
(Debian's chromium driven by Playwright; the browser tests skip, saying why, when either is missing, and fail
instead in CI: ``CI=true``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("SPANFOLD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


class UiServer:
    """``spanfold ui PATHS --port 0`` as a child process; its URL is read from its first line on stderr."""

    def __init__(
        self, paths: list[Path], *extra: str, env: dict[str, str] | None = None, user: int | None = None
    ) -> None:
        # setpriv (util-linux): subprocess's own user= cannot start this interpreter, which lives under root's 0700 home
        as_user = [] if user is None else ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"]
        self.proc = subprocess.Popen(
            [*as_user, sys.executable, "-m", "spanfold", "ui", *map(str, paths), "--port", "0", *extra],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **(env or {})},
            cwd="/" if user is not None else None,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        assert "spanfold ui: http://" in line, line
        self.url = line.split("spanfold ui: ", 1)[1].split("?")[0].strip()

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        request = urllib.request.Request(self.url.rstrip("/") + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def json(self, path: str) -> Any:
        status, _, body = self.get(path)
        assert status == 200, body
        return json.loads(body)

    def wait_total(self, total: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.json("/api/state")["total"] >= total:
                return
            time.sleep(0.1)
        raise AssertionError(f"the index never reached {total} runs: {self.json('/api/state')}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@pytest.fixture
def ui_server() -> Iterator[Any]:
    servers: list[UiServer] = []

    def start(paths: list[Path], *extra: str, env: dict[str, str] | None = None, user: int | None = None) -> UiServer:
        """``user``: run the command as that user (and group) id: root cannot be refused a file."""
        server = UiServer(paths, *extra, env=env, user=user)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Traces from ``spanfold demo`` (the real agent against the embedded mock server)."""
    out = tmp_path_factory.mktemp("demo") / "traces"
    subprocess.run([sys.executable, "-m", "spanfold", "demo", "-o", str(out)], check=True, capture_output=True)
    assert (out / "traces.jsonl").is_file()
    return out


def in_ci() -> bool:
    """Whether the tests run in CI (``CI=true``, as CI services and ``.ci/run`` set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def cannot_run(reason: str) -> None:
    """A browser test that cannot run: skipped, saying why; in CI a failure (a browser test never skips there)."""
    if in_ci():
        pytest.fail(f"{reason}: in CI the browser tests must run (.ci/run installs chromium)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        cannot_run("Playwright for Python is not installed (pip install playwright; CI installs it)")
    if not os.path.exists(CHROMIUM):
        cannot_run(f"no chromium at {CHROMIUM} (apt-get install -y chromium; CI installs it)")
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    yield opened
    context.close()


#: A real process running the demo's agent with spanfold.init() writing format otlp-json (SPANFOLD_FORMAT).
OTLP_RUN = """
import openai, spanfold
from spanfold.testing import MockLLMServer, run_agent, scenarios
spanfold.init()
with MockLLMServer(scenarios.weather_agent) as server:
    client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    with spanfold.agent("otlp-bot"):
        run_agent("openai", client)
"""


@pytest.fixture(scope="session")
def otlp_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding only ``traces.otlp.jsonl``: one run's spans as OTLP JSON."""
    out = tmp_path_factory.mktemp("otlp") / "traces"
    env = {**os.environ, "SPANFOLD_FORMAT": "otlp-json", "SPANFOLD_OUTPUT": str(out)}
    subprocess.run([sys.executable, "-c", OTLP_RUN], check=True, capture_output=True, env=env, timeout=120)
    assert sorted(p.name for p in out.iterdir()) == ["traces.otlp.jsonl"]
    return out


@pytest.fixture(scope="session")
def recorded_dir(tmp_path_factory: pytest.TempPathFactory, _global_provider: Any) -> Path:
    """Runs written by ``spanfold.init()`` with default settings (the Invariant file and its ``.meta.jsonl``) from the
    real openai SDK over real HTTP to the mock server (:mod:`tests.ui.agents`): the weather agent (``weather-bot``),
    a run with a slow tool (``slow-bot``), one whose model call fails with a 500 (``failing-bot``)."""
    import openai
    from tests.ui import agents

    import spanfold
    from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

    out = tmp_path_factory.mktemp("recorded") / "traces"
    spanfold.init(output=str(out))
    try:
        with MockLLMServer() as server:
            agents.weather(server)
            server.script(Reply.tools([ToolCallSpec("slow_weather", {"city": "Paris"})]), Reply.text("18°C."))
            with spanfold.agent("slow-bot"):
                agents.run(agents.client(server), "Weather in Paris?", system=None)
            server.script(Reply.error(500, "upstream exploded", should_retry=False))
            with pytest.raises(openai.InternalServerError), spanfold.agent("failing-bot"):
                agents.run(agents.client(server), "hi", system=None)
        assert spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()
    return out
