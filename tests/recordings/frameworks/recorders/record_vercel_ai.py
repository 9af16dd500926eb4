# ruff: noqa  # a recorder script, run by hand (see ../README.md), not part of the suite
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from spanfold.testing import WEATHER, MockLLMServer, scenarios

with MockLLMServer(scenarios.weather_agent) as server:
    env = dict(os.environ, BASE_URL=server.base_url, SYSTEM=WEATHER.system, QUESTION=WEATHER.question)
    env.update(dict(a.split("=", 1) for a in sys.argv[3:]))  # e.g. MODE=stream
    out = subprocess.run(
        ["node", shutil.copy(Path(__file__).with_name("vercel_ai_agent.mjs"), sys.argv[2])],  # beside node_modules
        cwd=sys.argv[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
print(out.stderr, file=sys.stderr)
json.dump(json.loads(out.stdout), open(sys.argv[1], "w"), indent=1, ensure_ascii=False)
