"""Claude Agent SDK (Anthropic's ``claude-agent-sdk``): runs, model steps and tool runs from its message stream.

:mod:`.patches`: what is patched; :mod:`.session`: a ``query()`` or a client's messages as runs, model steps, tool
runs and subagents; :mod:`.blocks`: the SDK's messages as typed parts."""
