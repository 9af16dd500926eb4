"""smolagents (Hugging Face): its runs, model steps and tool runs (:mod:`.instrumentor` says what is patched).

:mod:`.agents`: agent runs and ``ToolCallingAgent`` tool runs; :mod:`.code`: ``CodeAgent`` steps; :mod:`.model`:
model calls as model steps; :mod:`.messages`: smolagents' text protocol turned back into tool calls and outputs."""
