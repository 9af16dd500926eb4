"""A framework's invocations, typed, each with the one handler that owns its span: an agent run (``agent_runs``), a
model step read at the framework's level (``model_steps``), a tool run (``tool_runs``). A framework is a patch table
and readers that fill them."""
