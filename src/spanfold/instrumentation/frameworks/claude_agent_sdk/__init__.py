"""Claude Agent SDK (Anthropic's ``claude-agent-sdk``): runs, model steps and tool runs from its message stream.

:mod:`.patches`: what is patched; :mod:`.session`: a ``query()`` or a client's messages as runs, tool runs and
subagents; :mod:`.threads`: one agent's conversation and its model steps; :mod:`.blocks`: the SDK's messages as
typed parts."""
