"""A child process for the signal tests: ``python signal_child.py OUTPUT [app-handler]``.

A weather agent inside ``spanfold.agent`` (the real openai SDK over HTTP to the embedded mock server, three model
calls and three ``@spanfold.tool`` runs): the third tool run prints ``ready`` and waits to be stopped, so the signal
comes mid-run, with the agent span, a tool span and the run open. ``app-handler``: the application's own SIGTERM
handler, installed before ``init()``, writes ``OUTPUT/app-handler-ran`` and exits with status 3.
Run with ``SPANFOLD_DISABLED=1`` it is the same program without spanfold (the exit status to compare with).
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Any

import openai

import spanfold
from spanfold.testing import WEATHER, MockLLMServer
from spanfold.testing.agents import run_agent

OUTPUT = Path(sys.argv[1])
if len(sys.argv) > 2 and sys.argv[2] == "app-handler":

    def handler(signum: int, frame: Any) -> None:
        (OUTPUT / "app-handler-ran").write_text(str(signum))
        sys.exit(3)

    signal.signal(signal.SIGTERM, handler)

spanfold.init(output=str(OUTPUT))
ran = 0


def tool(name: str) -> Any:
    function = next(t.function for t in WEATHER.tools if t.name == name)

    def run(**arguments: Any) -> str:
        global ran
        ran += 1
        if ran == 3:  # mid-run: two calls answered, two tools run, this one running (for a second, then stopped)
            time.sleep(1.0)
            print("ready", flush=True)
            time.sleep(60)
        return function(**arguments)

    return spanfold.tool(name=name)(run)


with MockLLMServer(WEATHER.replies) as server:
    client = openai.OpenAI(api_key="test-key", base_url=server.base_url, max_retries=0)
    with spanfold.agent("weather"):
        run_agent("openai", client, tools={t.name: tool(t.name) for t in WEATHER.tools})
print("finished", flush=True)
