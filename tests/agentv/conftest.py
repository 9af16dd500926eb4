"""tests/agentv run AgentV's own CLI (npm ``agentv``): collected only where ``.ci/agentv`` installed it and named it
in ``SPANFOLD_AGENTV``, so the main suite needs no Node.js and no npm."""

from __future__ import annotations

import os

collect_ignore_glob = [] if os.environ.get("SPANFOLD_AGENTV") else ["test_*.py"]
