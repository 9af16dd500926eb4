"""A child process for the signal tests: ``python signal_child.py OUTPUT [app-handler]``.

A weather agent inside ``spanfold.agent`` (the real openai SDK over HTTP to the embedded mock server, three model
calls and three ``@spanfold.tool`` runs): the third tool run prints ``ready`` and waits to be stopped, so the signal
comes mid-run, with the agent span, a tool span and the run open. ``app-handler``: the application's own SIGTERM
handler, installed before ``init()``, writes ``OUTPUT/app-handler-ran`` and exits with status 3. ``sigint-default``:
the application set SIGINT to its default action (no KeyboardInterrupt: the signal ends the process). ``daemon``: the
agent runs in a daemon thread while the main thread waits (Ctrl-C unwinds the main thread only: the agent's spans are
still open at exit).
Run with ``SPANFOLD_DISABLED=1`` it is the same program without spanfold (the exit status to compare with).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import openai

import spanfold
from spanfold.testing import WEATHER, MockLLMServer
from spanfold.testing.agents import run_agent

OUTPUT = Path(sys.argv[1])
MODE = sys.argv[2] if len(sys.argv) > 2 else ""
if MODE == "sigint-default":
    signal.signal(signal.SIGINT, signal.SIG_DFL)
if MODE == "app-handler":

    def handler(signum: int, frame: Any) -> None:
        (OUTPUT / "app-handler-ran").write_text(str(signum))
        sys.exit(3)

    signal.signal(signal.SIGTERM, handler)

spanfold.init(output=str(OUTPUT))
ran = 0


def tool(name: str) -> Any:
    function = next(t.function for t in WEATHER.tools if t.name == name)

    def run(tool_call_id: str | None = None, **arguments: Any) -> str:  # the id is recorded by spanfold.tool
        global ran
        ran += 1
        if ran == 3:  # mid-run: two calls answered, two tools run, this one running (for a second, then stopped)
            time.sleep(1.0)
            print("ready", flush=True)
            time.sleep(60)
        return function(**arguments)

    return spanfold.tool(name=name)(run)


def agent(base_url: str) -> None:
    client = openai.OpenAI(api_key="test-key", base_url=base_url, max_retries=0)
    with spanfold.agent("weather"):
        run_agent("openai", client, tools={t.name: tool(t.name) for t in WEATHER.tools})


with MockLLMServer(WEATHER.replies) as server:
    if MODE == "daemon":
        done = threading.Event()
        threading.Thread(target=lambda: (agent(server.base_url), done.set()), daemon=True).start()
        while not done.wait(0.05):  # Ctrl-C raises KeyboardInterrupt here, in the main thread
            pass
    else:
        agent(server.base_url)
print("finished", flush=True)
