# ruff: noqa  # a recorder script, run by hand (see ../README.md), not part of the suite
import json
import os
import subprocess
import sys
from pathlib import Path

from spanfold.testing import WEATHER, MockLLMServer, scenarios

with MockLLMServer(scenarios.weather_agent) as server:
    env = dict(
        os.environ,
        GEMINI_BASE_URL=server.gemini_base_url,
        OPENAI_BASE_URL=server.base_url,
        SYSTEM=WEATHER.system,
        QUESTION=WEATHER.question,
        GOOGLE_API_KEY="test-key",
        GOOGLE_GENAI_USE_VERTEXAI="false",
    )
    env.update(dict(a.split("=", 1) for a in sys.argv[2:]))
    out = subprocess.run(
        [os.environ.get("ADK_PYTHON", "/work/venv-adk/bin/python"), str(Path(__file__).with_name("adk_agent.py"))],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
print(out.stderr[-3000:], file=sys.stderr)
json.dump(json.loads(out.stdout), open(sys.argv[1], "w"), indent=1, ensure_ascii=False)
